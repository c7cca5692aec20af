//! The WIT shapes of the core's values, both ways: a message as `providers` and `storage`
//! pass it, a streamed chunk as `read-stream-chunk` hands it out, a finished response as
//! `run-turn`'s `collected-turn`, usage as `usage-details`. Shared by the interfaces that
//! speak them, so each conversion is written once.

use wonopcode_protocol::StreamChunk as Chunk;
use wonopcode_protocol::attachment;
use wonopcode_protocol::{Message, Part, Role, Usage};

use crate::bindings::providers::{
    self as wit, CollectedTurn, StreamChunk, StreamHandle, ToolCallDeltaData, ToolCallStartData,
    UsageData, UsageDetails,
};
use crate::bindings::storage::Attachment;

/// A core message as the WIT `message` (text, tool calls, tool results; thinking is kept by
/// the host only).
pub(crate) fn message_to_wit(message: &Message) -> wit::Message {
    let calls: Vec<wit::ToolCall> = message
        .tool_calls()
        .map(|(id, name, arguments)| wit::ToolCall {
            id: id.to_owned(),
            name: name.to_owned(),
            arguments: arguments.to_owned(),
        })
        .collect();
    let results: Vec<wit::ToolResult> = message
        .parts
        .iter()
        .filter_map(|p| match p {
            Part::ToolResult {
                call_id,
                content,
                is_error,
            } => Some(wit::ToolResult {
                call_id: call_id.clone(),
                content: content.clone(),
                is_error: *is_error,
            }),
            _ => None,
        })
        .collect();
    wit::Message {
        role: match message.role {
            Role::System => wit::MessageRole::System,
            Role::User => wit::MessageRole::User,
            Role::Assistant => wit::MessageRole::Assistant,
            Role::Tool => wit::MessageRole::Tool,
        },
        content: message.text_content(),
        tool_calls: (!calls.is_empty()).then_some(calls),
        tool_results: (!results.is_empty()).then_some(results),
    }
}

/// A WIT message as a core message (its strings moved, not copied).
pub(crate) fn message_from_wit(message: wit::Message) -> Message {
    let mut parts = Vec::new();
    if !message.content.is_empty() {
        parts.push(Part::Text {
            text: message.content,
        });
    }
    for call in message.tool_calls.into_iter().flatten() {
        parts.push(Part::ToolCall {
            id: call.id,
            name: call.name,
            arguments: call.arguments,
        });
    }
    for result in message.tool_results.into_iter().flatten() {
        parts.push(Part::ToolResult {
            call_id: result.call_id,
            content: result.content,
            is_error: result.is_error,
        });
    }
    let role = match message.role {
        wit::MessageRole::System => Role::System,
        wit::MessageRole::User => Role::User,
        wit::MessageRole::Assistant => Role::Assistant,
        wit::MessageRole::Tool => Role::Tool,
    };
    Message::new(role, parts)
}

/// The most attachments a guest passes with one task.
const MAX_ATTACHMENTS: usize = 20;

/// A message's images and documents as the guest reads them (`storage.get-attachments`).
pub(crate) fn attachments_to_wit(message: &Message) -> Vec<Attachment> {
    message
        .parts
        .iter()
        .filter_map(|part| {
            let data = attachment::bytes_of(part)?;
            match part {
                Part::Image { media_type, .. } => Some(Attachment {
                    media_type: media_type.clone(),
                    data,
                    name: None,
                }),
                Part::Document {
                    media_type, name, ..
                } => Some(Attachment {
                    media_type: media_type.clone(),
                    data,
                    name: Some(name.clone()),
                }),
                _ => None,
            }
        })
        .collect()
}

/// A guest's attachments as parts, each checked as a person's file is: an image or PDF by
/// its bytes, of the type the guest says, within the size every API's limits are under.
pub(crate) fn attachments_from_wit(list: Vec<Attachment>) -> Result<Vec<Part>, String> {
    if list.len() > MAX_ATTACHMENTS {
        return Err(format!(
            "{} attachments: at most {MAX_ATTACHMENTS} go with one task",
            list.len()
        ));
    }
    list.into_iter()
        .enumerate()
        .map(|(i, a)| {
            let name = a.name.unwrap_or_else(|| format!("attachment {}", i + 1));
            attachment::as_claimed(&a.data, &a.media_type, &name).map_err(|e| e.to_string())
        })
        .collect()
}

/// A chunk as the guest reads it; `None` for what stays with the host.
pub(crate) fn wit_chunk(chunk: &Chunk) -> Option<StreamChunk> {
    Some(match chunk {
        Chunk::TextDelta { text } => StreamChunk::TextDelta(text.clone()),
        Chunk::ThinkingDelta { text } => StreamChunk::ThinkingDelta(text.clone()),
        Chunk::ToolCallStart { id, name } => StreamChunk::ToolCallStart(ToolCallStartData {
            id: id.clone(),
            name: name.clone(),
        }),
        Chunk::ToolCallDelta {
            id,
            arguments_delta,
        } => StreamChunk::ToolCallDelta(ToolCallDeltaData {
            id: id.clone(),
            arguments_delta: arguments_delta.clone(),
        }),
        Chunk::ToolCallEnd { id } => StreamChunk::ToolCallEnd(id.clone()),
        Chunk::Usage { usage } => StreamChunk::Usage(UsageData {
            input_tokens: u32::try_from(usage.input_tokens).unwrap_or(u32::MAX),
            output_tokens: u32::try_from(usage.output_tokens).unwrap_or(u32::MAX),
        }),
        Chunk::Done { .. } => StreamChunk::Done,
        Chunk::Error { message } | Chunk::ContextOverflow { message } => {
            StreamChunk::Error(message.clone())
        }
        // Signatures and redacted thinking stay with the host (see `add-streamed-message`);
        // retry notices go to the event stream only.
        Chunk::ThinkingSignature { .. } | Chunk::RedactedThinking { .. } | Chunk::Retry { .. } => {
            return None;
        }
    })
}

/// A finished turn's parts as the guest's `collected-turn`, their strings moved.
pub(crate) fn collected(
    handle: StreamHandle,
    parts: Vec<Part>,
    error: Option<String>,
) -> CollectedTurn {
    let mut turn = CollectedTurn {
        handle,
        text: String::new(),
        thinking: String::new(),
        tool_calls: Vec::new(),
        error,
    };
    let join = |into: &mut String, text: String| {
        if into.is_empty() {
            *into = text;
        } else {
            into.push_str(&text);
        }
    };
    for part in parts {
        match part {
            Part::Text { text } => join(&mut turn.text, text),
            Part::Thinking { text, .. } => join(&mut turn.thinking, text),
            Part::ToolCall {
                id,
                name,
                arguments,
            } => turn.tool_calls.push(wit::ToolCall {
                id,
                name,
                arguments,
            }),
            Part::RedactedThinking { .. }
            | Part::ToolResult { .. }
            | Part::Image { .. }
            | Part::Document { .. } => {}
        }
    }
    turn
}

/// Usage as the guest reads it.
pub(crate) fn details(usage: &Usage) -> UsageDetails {
    UsageDetails {
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        cache_read_tokens: usage.cache_read_tokens,
        cache_write_tokens: usage.cache_write_tokens,
        reasoning_tokens: usage.reasoning_tokens,
        cost_microcents: usage.cost_micro_cents,
    }
}
