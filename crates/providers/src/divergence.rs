//! Saying how a request differs from the one a transcript recorded: which part (the prompt,
//! the system prompt, the tools, a message, the count, the options), and, for a message,
//! a short diff of the recorded message against the live one. A record keeps a readable
//! copy of the messages its request added to its context's history (`AddedMessages`), so
//! the recorded side of any message can be found by walking back through the context's
//! records.

use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use wonopcode_protocol::{Message, Part, Role, attachment};

/// Characters of one message kept in a record.
const MESSAGE_CHARS: usize = 2000;

/// Lines of a message diff shown.
const DIFF_LINES: usize = 12;

/// The messages a request added to what its context sent the time before, readable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddedMessages {
    /// The index of the first of them among the request's messages (0 when the history was
    /// not a continuation of the last request's: the first request, or one after compaction).
    pub from: usize,
    /// Each of them, rendered by [`render`].
    pub messages: Vec<String>,
}

impl AddedMessages {
    /// The request's `messages` from `from` on (the first `from` continue the context's last
    /// request).
    pub fn of(messages: &[Message], from: usize) -> Self {
        Self {
            from,
            messages: messages
                .get(from..)
                .unwrap_or(&[])
                .iter()
                .map(render)
                .collect(),
        }
    }

    /// Message `index` of the request, when it is one of these.
    pub fn get(&self, index: usize) -> Option<&str> {
        index
            .checked_sub(self.from)
            .and_then(|i| self.messages.get(i))
            .map(String::as_str)
    }
}

/// A message as a person reads it in a diff: its role, then each part on its own lines, cut
/// to [`MESSAGE_CHARS`].
pub fn render(message: &Message) -> String {
    let role = match message.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    let mut text = format!("[{role}]");
    for part in message.parts.iter() {
        text.push('\n');
        match part {
            Part::Text { text: t } => text.push_str(t),
            Part::Thinking { text: t, .. } => {
                text.push_str("(thinking) ");
                text.push_str(t);
            }
            Part::RedactedThinking { .. } => text.push_str("(redacted thinking)"),
            Part::ToolCall {
                id,
                name,
                arguments,
            } => text.push_str(&format!("call {id} {name} {arguments}")),
            Part::ToolResult {
                call_id,
                content,
                is_error,
            } => {
                let failed = if *is_error { " (error)" } else { "" };
                text.push_str(&format!("result {call_id}{failed}: {content}"));
            }
            // The bytes are told apart by their digest: two screenshots of one size differ.
            Part::Image { data, .. } | Part::Document { data, .. } => {
                let described = attachment::describe(part).unwrap_or_default();
                let digest = hex::encode(&Sha256::digest(data.as_bytes())[..4]);
                text.push_str(&format!("(attached {described}, sha256 {digest}…)"));
            }
        }
    }
    match text.char_indices().nth(MESSAGE_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

/// The lines where `recorded` and `live` differ (a unified diff without headers, one line
/// of context), indented, at most [`DIFF_LINES`] of them.
pub fn message_diff(recorded: &str, live: &str) -> String {
    if recorded == live {
        return format!("    (the first {MESSAGE_CHARS} characters are the same)");
    }
    let diff = similar::TextDiff::from_lines(recorded, live);
    let mut lines: Vec<String> = Vec::new();
    for group in diff.grouped_ops(1) {
        for op in group {
            for change in diff.iter_changes(&op) {
                let sign = match change.tag() {
                    similar::ChangeTag::Delete => "- recorded ",
                    similar::ChangeTag::Insert => "+ this run ",
                    similar::ChangeTag::Equal => "           ",
                };
                lines.push(format!("    {sign}{}", change.value().trim_end()));
            }
        }
    }
    let more = lines.len().saturating_sub(DIFF_LINES);
    lines.truncate(DIFF_LINES);
    if more > 0 {
        lines.push(format!("    … {more} more line(s)"));
    }
    lines.join("\n")
}

/// What differs between a recorded request and a live one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Difference {
    /// The prompt (the last user message's text).
    Prompt {
        /// The recording's.
        recorded: String,
        /// This run's.
        live: String,
    },
    /// The system prompt.
    System,
    /// The tools offered.
    Tools {
        /// The recording's names.
        recorded: Vec<String>,
        /// This run's.
        live: Vec<String>,
    },
    /// Message `index` (of `role`).
    Message {
        /// Its place in the request.
        index: usize,
        /// Its role.
        role: String,
    },
    /// How many messages there are.
    Count {
        /// The recording's.
        recorded: usize,
        /// This run's.
        live: usize,
    },
    /// The generation options or the tools' schemas.
    Options,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Prompt { recorded, live } => write!(
                f,
                "the recording's prompt is \"{recorded}\", this run's is \"{live}\""
            ),
            Self::System => f.write_str("the system prompt differs"),
            Self::Tools { recorded, live } => write!(
                f,
                "the tools differ: recorded [{}], requested [{}]",
                recorded.join(", "),
                live.join(", ")
            ),
            Self::Message { index, role } => {
                write!(f, "message {index} ({role}) differs from the recording")
            }
            Self::Count { recorded, live } => write!(
                f,
                "the recording has {recorded} messages, the request has {live}"
            ),
            Self::Options => f.write_str("the generation options or tool schemas differ"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_diff_shows_the_lines_that_differ() {
        let recorded = render(&Message::user("line one\nline two\nline three"));
        let live = render(&Message::user("line one\nline 2\nline three"));
        let diff = message_diff(&recorded, &live);
        assert!(diff.contains("- recorded line two"), "{diff}");
        assert!(diff.contains("+ this run line 2"), "{diff}");
        assert!(
            diff.contains("line one") && diff.contains("line three"),
            "{diff}"
        );
    }

    #[test]
    fn what_a_request_added_is_the_tail_after_the_kept_ones() {
        let messages = [Message::user("a"), Message::user("b"), Message::user("c")];
        let added = AddedMessages::of(&messages, 2);
        assert_eq!(added.from, 2);
        assert_eq!(added.get(2), Some("[user]\nc"));
        assert_eq!(added.get(1), None);
        // After a compaction the history is not a continuation: all of it is kept.
        assert_eq!(AddedMessages::of(&messages, 0).messages.len(), 3);
    }
}
