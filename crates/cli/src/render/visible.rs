//! Text that a model, a tool, a guest or a server controls, made safe to print on a
//! terminal: control characters (escape sequences, carriage returns, backspaces) and
//! bidirectional overrides are shown as escapes (`\r`, `\u{1b}`) instead of acting on the
//! screen, so nobody can repaint a line, forge an approval prompt, or hide a command. `--json`
//! output is data and stays as it was.

use std::borrow::Cow;

use serde_json::Value;
use wonopcode_agent_loop::Event;

/// `text` with its hidden characters shown; newlines and tabs are kept (an answer keeps its
/// layout).
pub fn visible(text: &str) -> Cow<'_, str> {
    shown(text, true)
}

/// `text` on one line: newlines and tabs shown as escapes as well.
pub fn one_line(text: &str) -> Cow<'_, str> {
    shown(text, false)
}

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

fn hidden(c: char, keep_layout: bool) -> bool {
    (c.is_control() && !(keep_layout && matches!(c, '\n' | '\t')))
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn shown(text: &str, keep_layout: bool) -> Cow<'_, str> {
    if !text.chars().any(|c| hidden(c, keep_layout)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if hidden(c, keep_layout) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_and_bidi_overrides_are_shown() {
        assert_eq!(
            visible("touch X\r\u{1b}[2Kecho hello"),
            "touch X\\r\\u{1b}[2Kecho hello"
        );
        assert_eq!(visible("a\u{202e}b\u{8}c"), "a\\u{202e}b\\u{8}c");
        assert_eq!(visible("two\nlines\tand é"), "two\nlines\tand é");
        assert_eq!(one_line("two\nlines"), "two\\nlines");
        assert!(matches!(visible("plain"), Cow::Borrowed(_)));
    }
}
