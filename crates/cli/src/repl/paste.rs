//! Pasting at the prompt. The editor turns bracketed paste on (`ESC[?2004h`), so a terminal
//! hands over a paste as one event and its newlines never submit the line. A short paste
//! goes into the line as it is (a dropped file's path stays a path the REPL attaches); a
//! long one is shown as `[Pasted text #1 +12 lines]`, as Claude Code shows it, and its text
//! is put back when the line is sent.

use std::sync::{Arc, Mutex};

/// A paste with more lines than this is shown as a placeholder.
const INLINE_LINES: usize = 3;

/// A paste with more characters than this is shown as a placeholder.
const INLINE_CHARS: usize = 800;

/// The texts pasted in this REPL, by number (`#1` is the first). Kept for the session, so a
/// line taken back from the history still expands.
#[derive(Clone, Default)]
pub struct Pastes(Arc<Mutex<Vec<String>>>);

impl Pastes {
    /// What goes into the line for `body`: the text itself, or its placeholder (the text
    /// kept to be put back by [`Pastes::expand`]).
    pub fn insert(&self, body: &str) -> String {
        let body = body.replace("\r\n", "\n").replace('\r', "\n");
        let lines = body.lines().count();
        if lines <= INLINE_LINES && body.chars().count() <= INLINE_CHARS {
            return body;
        }
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        kept.push(body);
        format!("[Pasted text #{} +{lines} lines]", kept.len())
    }

    /// `line` with each placeholder of a paste replaced by the text pasted.
    pub fn expand(&self, line: &str) -> String {
        let kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = String::with_capacity(line.len());
        let mut rest = line;
        while let Some(start) = rest.find("[Pasted text #") {
            out.push_str(&rest[..start]);
            let after = &rest[start..];
            match placeholder(after).and_then(|(n, len)| Some((kept.get(n - 1)?, len))) {
                Some((text, len)) => {
                    out.push_str(text);
                    rest = &after[len..];
                }
                None => {
                    out.push('[');
                    rest = &after[1..];
                }
            }
        }
        out.push_str(rest);
        out
    }
}

/// The paste's number and the placeholder's length, where `text` starts with
/// `[Pasted text #N +L lines]`.
fn placeholder(text: &str) -> Option<(usize, usize)> {
    let end = text.find(']')?;
    let inner = text[..end].strip_prefix("[Pasted text #")?;
    let (number, lines) = inner.split_once(" +")?;
    lines.strip_suffix(" lines")?.parse::<usize>().ok()?;
    let number = number.parse::<usize>().ok().filter(|n| *n > 0)?;
    Some((number, end + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_paste_goes_in_as_it_is_and_a_long_one_as_its_placeholder() {
        let pastes = Pastes::default();
        assert_eq!(pastes.insert("'/tmp/shot one.png'"), "'/tmp/shot one.png'");
        assert_eq!(pastes.insert("a\r\nb"), "a\nb");
        let long = "one\rtwo\rthree\rfour\r";
        let shown = pastes.insert(long);
        assert_eq!(shown, "[Pasted text #1 +4 lines]");
        let wide = "x".repeat(900);
        assert_eq!(pastes.insert(&wide), "[Pasted text #2 +1 lines]");
        assert_eq!(
            pastes.expand(&format!("fix this: {shown} please")),
            "fix this: one\ntwo\nthree\nfour\n please"
        );
    }

    #[test]
    fn text_that_only_looks_like_a_placeholder_stays_as_typed() {
        let pastes = Pastes::default();
        pastes.insert("1\n2\n3\n4");
        for typed in [
            "[Pasted text #9 +4 lines]",
            "[Pasted text #0 +4 lines]",
            "[Pasted text #1 lines]",
            "[Pasted text #1 +4 lines",
            "[[Pasted text #x] [",
        ] {
            assert_eq!(pastes.expand(typed), typed);
        }
        assert_eq!(pastes.expand("[[Pasted text #1 +4 lines]]"), "[1\n2\n3\n4]");
    }
}
