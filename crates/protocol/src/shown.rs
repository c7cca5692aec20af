//! Text from anyone but the person at the terminal — a repository's files (hook fields,
//! agent descriptions, server names), stored prompts, a model's text, tool output — made
//! safe to print: control characters (escape sequences, carriage returns, backspaces),
//! bidirectional controls and zero-width characters are shown as escapes (`\r`,
//! `\u{1b}`, `\u{202e}`, `\u{200b}`) instead of acting on the screen or hiding between
//! letters, so nothing can repaint a line, set the clipboard or the title, forge a prompt,
//! or make two different texts look the same. Every renderer and subcommand that prints
//! such text goes through [`visible`] or [`one_line`]; data for programs (`--json`) stays
//! as it was.

use std::borrow::Cow;

/// `text` with its hidden characters shown; newlines and tabs are kept (an answer keeps its
/// layout).
pub fn visible(text: &str) -> Cow<'_, str> {
    shown(text, true)
}

/// `text` on one line: newlines and tabs shown as escapes as well.
pub fn one_line(text: &str) -> Cow<'_, str> {
    shown(text, false)
}

/// Whether `c` is shown as an escape: a control character (but a newline or tab where the
/// layout is kept), a bidirectional control (the Arabic letter mark, the marks, embeddings,
/// overrides and isolates) or a character of no width (zero-width space, joiners, word
/// joiner and the invisible operators, the byte-order mark).
fn hidden(c: char, keep_layout: bool) -> bool {
    (c.is_control() && !(keep_layout && matches!(c, '\n' | '\t')))
        || matches!(
            c,
            '\u{061c}'
                | '\u{200b}'..='\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2060}'..='\u{2064}'
                | '\u{2066}'..='\u{2069}'
                | '\u{feff}'
        )
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_bidi_and_zero_width_characters_are_shown() {
        assert_eq!(
            visible("touch X\r\u{1b}[2Kecho hello"),
            "touch X\\r\\u{1b}[2Kecho hello"
        );
        assert_eq!(visible("a\u{202e}b\u{8}c"), "a\\u{202e}b\\u{8}c");
        assert_eq!(
            visible("r\u{200b}m \u{61c}x\u{feff}"),
            "r\\u{200b}m \\u{61c}x\\u{feff}"
        );
        assert_eq!(visible("two\nlines\tand é"), "two\nlines\tand é");
        assert_eq!(one_line("two\nlines"), "two\\nlines");
        assert_eq!(
            one_line("\u{1b}]52;c;ZXZpbA==\u{7}"),
            "\\u{1b}]52;c;ZXZpbA==\\u{7}"
        );
        assert!(matches!(visible("plain"), Cow::Borrowed(_)));
    }
}
