//! Text that a model, a tool, a guest, a server or a repository controls, made safe to
//! print on a terminal with the one sanitizer of `wonopcode_protocol::shown`: here, for a
//! whole event at once, and clipped to a width. `--json` output is data and stays as it was.

use std::borrow::Cow;

use serde_json::Value;
use wonopcode_protocol::Event;

pub use wonopcode_protocol::shown::{one_line, visible};

/// `text` cut to at most `max` characters, at the last space when there is one in its
/// second half, with `…` when anything was cut.
pub fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let cut: String = text.chars().take(max.saturating_sub(1)).collect();
    let at_word = cut
        .rfind(' ')
        .filter(|&i| i > cut.len() / 2)
        .map_or(cut.as_str(), |i| &cut[..i]);
    format!("{}…", at_word.trim_end())
}

/// `event` with every string in it made [`visible`]: the event itself when there is nothing
/// to show differently (no copy), `None` in the impossible case that the changed event no
/// longer reads back (it is then not shown at all rather than shown raw).
pub fn visible_event(event: &Event) -> Option<Cow<'_, Event>> {
    let Ok(mut value) = serde_json::to_value(event) else {
        return None;
    };
    if !make_visible(&mut value) {
        return Some(Cow::Borrowed(event));
    }
    serde_json::from_value(value).ok().map(Cow::Owned)
}

/// Makes every string in `value` visible; whether any changed.
fn make_visible(value: &mut Value) -> bool {
    match value {
        Value::String(s) => match visible(s) {
            Cow::Borrowed(_) => false,
            Cow::Owned(changed) => {
                *s = changed;
                true
            }
        },
        Value::Array(items) => items.iter_mut().fold(false, |any, v| make_visible(v) | any),
        Value::Object(map) => map.values_mut().fold(false, |any, v| make_visible(v) | any),
        _ => false,
    }
}
