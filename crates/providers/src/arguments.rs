//! A tool call's arguments as the JSON object APIs that take structured arguments
//! (Anthropic's `input`, Gemini's `args`) want: the model's text passed through unparsed when
//! it is an object, `{}` when it is not (broken arguments were already answered with an
//! error).

use serde::Serialize;
use serde_json::value::RawValue;

/// A call's arguments, ready to serialize.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Arguments<'a> {
    /// The model's arguments, a JSON object.
    Given(&'a RawValue),
    /// `{}`, for arguments that were not one.
    Empty(EmptyObject),
}

/// Serializes as `{}`.
#[derive(Debug, Serialize)]
pub struct EmptyObject {}

/// The arguments `text` stands for.
pub fn object(text: &str) -> Arguments<'_> {
    match serde_json::from_str::<&RawValue>(text) {
        Ok(raw) if raw.get().starts_with('{') => Arguments::Given(raw),
        _ => Arguments::Empty(EmptyObject {}),
    }
}
