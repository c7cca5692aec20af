//! Conversation messages: the history a loop sends to the model and the consumer persists.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Who authored a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions from the host or the loop.
    System,
    /// The person (or parent context) asking.
    User,
    /// The model.
    Assistant,
    /// Results of tool calls, answering the previous assistant message.
    Tool,
}

/// One piece of a message. Provider-specific data (thinking signatures, redacted thinking) is
/// kept opaque so it can be sent back verbatim where the provider requires it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// Extended thinking, with the provider's signature when it gave one.
    Thinking {
        /// The reasoning text.
        text: String,
        /// Opaque signature the provider needs to accept the block back.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// Thinking the provider returned encrypted; never shown, only sent back.
    RedactedThinking {
        /// Opaque provider data.
        data: String,
    },
    /// The model asks for a tool to run.
    ToolCall {
        /// Provider-assigned call id.
        id: String,
        /// Tool name.
        name: String,
        /// Arguments as the model produced them (JSON text, possibly invalid).
        arguments: String,
    },
    /// The answer to one tool call.
    ToolResult {
        /// The call this answers.
        call_id: String,
        /// Output shown to the model.
        content: String,
        /// True when the call failed; the model is expected to correct itself.
        #[serde(default)]
        is_error: bool,
    },
    /// An image the person attached (PNG, JPEG, GIF or WebP), sent as each API takes one.
    Image {
        /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`, read from the bytes.
        media_type: String,
        /// The bytes, base64 (standard alphabet, padded).
        data: String,
    },
    /// A document the person attached (a PDF), for the APIs that read one.
    Document {
        /// `application/pdf`.
        media_type: String,
        /// The bytes, base64 (standard alphabet, padded).
        data: String,
        /// The file's name, which some APIs show the model.
        name: String,
    },
}

/// A conversation shared without copying: a run's history and the requests made of it hold
/// one list, so a request costs a pointer rather than a copy of every message, and the run
/// adds to it through `Arc::make_mut`, which copies the list only while a request still
/// holds it (none does once its response is in).
pub type SharedHistory = Arc<Vec<Message>>;

/// A message in the conversation history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Message {
    /// The author.
    pub role: Role,
    // Shared (`Arc`): copying a history into a request, which every turn does, copies
    // pointers rather than every text of the conversation. A message is immutable once made;
    // compaction replaces parts through `Arc::make_mut`.
    /// The content, in order.
    pub parts: Arc<[Part]>,
}

impl Message {
    /// A message made of these parts.
    pub fn new(role: Role, parts: Vec<Part>) -> Self {
        Self {
            role,
            parts: parts.into(),
        }
    }

    /// A message holding one text part.
    pub fn text(role: Role, text: impl Into<String>) -> Self {
        Self::new(role, vec![Part::Text { text: text.into() }])
    }

    /// A user message.
    pub fn user(text: impl Into<String>) -> Self {
        Self::text(Role::User, text)
    }

    /// All text parts joined, without thinking or tool parts.
    pub fn text_content(&self) -> String {
        let mut out = String::new();
        for part in self.parts.iter() {
            if let Part::Text { text } = part {
                out.push_str(text);
            }
        }
        out
    }

    /// The tool calls this message makes, as `(id, name, arguments)`.
    pub fn tool_calls(&self) -> impl Iterator<Item = (&str, &str, &str)> {
        self.parts.iter().filter_map(|p| match p {
            Part::ToolCall {
                id,
                name,
                arguments,
            } => Some((id.as_str(), name.as_str(), arguments.as_str())),
            _ => None,
        })
    }

    /// The ids of the tool calls this message answers.
    pub fn answered_call_ids(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::ToolResult { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
    }

    /// A rough token estimate (4 bytes per token), used for compaction decisions.
    pub fn estimated_tokens(&self) -> usize {
        let bytes: usize = self
            .parts
            .iter()
            .map(|p| match p {
                Part::Text { text } | Part::Thinking { text, .. } => text.len(),
                Part::RedactedThinking { data } => data.len(),
                Part::ToolCall {
                    name, arguments, ..
                } => name.len() + arguments.len(),
                Part::ToolResult { content, .. } => content.len(),
                Part::Image { .. } | Part::Document { .. } => estimated_bytes(p),
            })
            .sum();
        bytes.div_ceil(4) + 4
    }
}

/// Tool calls of the last assistant message that no later tool message answers. A history
/// ending with such calls is a suspended (or interrupted) run.
pub fn pending_tool_calls(messages: &[Message]) -> Vec<(String, String, String)> {
    let Some(last_assistant) = messages.iter().rposition(|m| m.role == Role::Assistant) else {
        return Vec::new();
    };
    let answered: std::collections::HashSet<&str> = messages[last_assistant + 1..]
        .iter()
        .flat_map(|m| m.answered_call_ids())
        .collect();
    messages[last_assistant]
        .tool_calls()
        .filter(|(id, _, _)| !answered.contains(id))
        .map(|(id, name, args)| (id.to_owned(), name.to_owned(), args.to_owned()))
        .collect()
}

/// Tokens an image is counted as before the provider reports it: the APIs scale an image
/// down to about 1.15 megapixels, which Anthropic bills at about 1,600 tokens and OpenAI's
/// high detail at less.
const IMAGE_TOKENS: usize = 1_600;

/// Bytes of a PDF per token it is counted as before the provider reports it: a page of text
/// and its picture cost about 2,000 to 3,000 tokens, and a typical page is 30–100 KB.
const DOCUMENT_BYTES_PER_TOKEN: usize = 30;

/// The bytes an attachment counts as in the run's token estimate (4 bytes a token).
fn estimated_bytes(part: &Part) -> usize {
    let tokens = match part {
        Part::Image { .. } => IMAGE_TOKENS,
        Part::Document { data, .. } => {
            usize::try_from(decoded_len(data)).unwrap_or(usize::MAX) / DOCUMENT_BYTES_PER_TOKEN
        }
        _ => 0,
    };
    tokens.saturating_mul(4)
}

/// The decoded size of base64 `data` (an attachment's bytes, without decoding them).
pub fn decoded_len(data: &str) -> u64 {
    let padding = data.bytes().rev().take_while(|b| *b == b'=').count();
    ((data.len() / 4 * 3).saturating_sub(padding)) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_calls_are_the_unanswered_ones() {
        let history = vec![
            Message::user("hi"),
            Message {
                role: Role::Assistant,
                parts: vec![
                    Part::ToolCall {
                        id: "a".into(),
                        name: "read".into(),
                        arguments: "{}".into(),
                    },
                    Part::ToolCall {
                        id: "b".into(),
                        name: "bash".into(),
                        arguments: "{}".into(),
                    },
                ]
                .into(),
            },
            Message {
                role: Role::Tool,
                parts: vec![Part::ToolResult {
                    call_id: "a".into(),
                    content: "ok".into(),
                    is_error: false,
                }]
                .into(),
            },
        ];
        let pending = pending_tool_calls(&history);
        assert_eq!(pending.len(), 1);
        assert_eq!(pending[0].0, "b");
    }

    #[test]
    fn part_serializes_tagged() {
        let json = serde_json::to_string(&Part::Thinking {
            text: "hm".into(),
            signature: Some("sig".into()),
        })
        .unwrap_or_default();
        assert_eq!(json, r#"{"type":"thinking","text":"hm","signature":"sig"}"#);
    }
}
