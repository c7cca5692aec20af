//! One streamed model turn, collected.

use crate::bindings::wonopcode::agent_loop::providers::{self, StreamChunk, StreamOptions};
use crate::{Message, ToolCall};

/// What one model response amounted to.
#[derive(Debug, Default, Clone)]
pub struct Turn {
    /// The host's handle of the finished stream (for `storage::add_streamed_message`).
    pub handle: u64,
    /// Visible text.
    pub text: String,
    /// Thinking text.
    pub thinking: String,
    /// Tool calls with their complete arguments, in order.
    pub tool_calls: Vec<ToolCall>,
    /// Set when the stream failed.
    pub error: Option<String>,
}

/// Streams one request made of `messages` and collects it. The host shows the text and
/// thinking to the user and counts usage as the chunks are read; the guest only decides what
/// to do next.
pub fn stream_turn(
    messages: &[Message],
    tools: &[String],
    options: &StreamOptions,
) -> Result<Turn, String> {
    collect(providers::stream_prompt(messages, tools, *options)?)
}

/// Streams one request made of this context's stored history and collects it. Prefer it to
/// [`stream_turn`] whenever the request is the history as stored: the conversation does not
/// cross the boundary, and the host keeps thinking signatures intact.
pub fn stream_history(tools: &[String], options: &StreamOptions) -> Result<Turn, String> {
    collect(providers::stream_history(tools, *options)?)
}

/// Runs one whole turn on the host: compacts the stored history if it needs it, streams a
/// request made of it, stores the answer and returns it. The same as
/// `storage::compact_if_needed`, [`stream_history`] and `storage::add_streamed_message` in
/// one host call instead of one per chunk; use [`stream_history`] to see chunks as they come.
pub fn run_turn(tools: &[String], options: &StreamOptions) -> Result<Turn, String> {
    let turn = providers::run_turn(tools, *options)?;
    Ok(Turn {
        handle: turn.handle,
        text: turn.text,
        thinking: turn.thinking,
        tool_calls: turn.tool_calls,
        error: turn.error,
    })
}

/// Reads a stream to its end.
fn collect(handle: providers::StreamHandle) -> Result<Turn, String> {
    let mut turn = Turn {
        handle,
        ..Turn::default()
    };
    while let Some(chunk) = providers::read_stream_chunk(handle) {
        match chunk {
            StreamChunk::TextDelta(t) => turn.text.push_str(&t),
            StreamChunk::ThinkingDelta(t) => turn.thinking.push_str(&t),
            StreamChunk::ToolCallStart(start) => turn.tool_calls.push(ToolCall {
                id: start.id,
                name: start.name,
                arguments: String::new(),
            }),
            StreamChunk::ToolCallDelta(delta) => {
                match turn.tool_calls.iter_mut().rev().find(|c| c.id == delta.id) {
                    Some(call) => call.arguments.push_str(&delta.arguments_delta),
                    None => turn.tool_calls.push(ToolCall {
                        id: delta.id,
                        name: String::new(),
                        arguments: delta.arguments_delta,
                    }),
                }
            }
            StreamChunk::ToolCallEnd(_) | StreamChunk::Usage(_) => {}
            StreamChunk::Done => break,
            StreamChunk::Error(e) => {
                turn.error = Some(e);
                break;
            }
        }
    }
    Ok(turn)
}
