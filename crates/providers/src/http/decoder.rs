//! The one thing each API's stream format differs in: turning server-sent events into the
//! loop's `StreamChunk`s.

use wonopcode_protocol::StreamChunk;

use super::failure::Failure;

/// Decodes one API's event stream. A decoder holds the state of one attempt; a retry starts
/// a fresh one.
pub trait Decoder: Send {
    /// Decodes one event (`name` is the SSE `event:` field, empty when absent), pushing the
    /// chunks it yields. An error event, a malformed payload or an error object in the data
    /// ends the attempt with that failure.
    fn event(&mut self, name: &str, data: &str, out: &mut Vec<StreamChunk>) -> Result<(), Failure>;

    /// True once the stream's end marker (or stop reason) arrived.
    fn is_done(&self) -> bool;

    /// Called when the body ends: closes open tool calls and pushes the usage and `done`; a
    /// body that ended before the model finished is a failure.
    fn finish(&mut self, out: &mut Vec<StreamChunk>) -> Result<(), Failure>;
}

/// Parses an event's JSON payload, naming the event in the error.
pub fn parse_json(name: &str, data: &str) -> Result<serde_json::Value, Failure> {
    serde_json::from_str(data).map_err(|e| {
        let what = if name.is_empty() { "a chunk" } else { name };
        Failure::fatal(format!("the provider sent malformed JSON in {what}: {e}"))
    })
}

/// A JSON value's string field, or `""`.
pub fn str_field<'a>(value: &'a serde_json::Value, key: &str) -> &'a str {
    value.get(key).and_then(|v| v.as_str()).unwrap_or("")
}

/// A JSON value's unsigned integer field, when present.
pub fn u64_field(value: &serde_json::Value, key: &str) -> Option<u64> {
    value.get(key).and_then(|v| v.as_u64())
}
