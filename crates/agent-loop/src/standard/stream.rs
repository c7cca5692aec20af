//! Consuming one model stream: assembling text, thinking and tool calls from fragments,
//! emitting `agent_message` and `reasoning` items as they stream.

use std::time::Duration;

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::event::{Emitter, EventKind, Item, ItemDetails};
use crate::message::Part;
use crate::model::{ChunkStream, StopReason, StreamChunk};
use crate::usage::Usage;

/// What one model response amounted to.
#[derive(Debug, Default)]
pub(crate) struct AssembledTurn {
    /// Parts in the order they streamed.
    pub parts: Vec<Part>,
    /// Usage reported during the stream.
    pub usage: Usage,
    /// Why the model stopped, when it said.
    pub stop_reason: Option<StopReason>,
    /// Set when the stream failed, timed out or was cancelled.
    pub failure: Option<StreamFailure>,
}

/// How a stream ended early.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum StreamFailure {
    /// The provider sent an error.
    Provider(String),
    /// No chunk arrived within the idle timeout.
    Timeout(Duration),
    /// The run was cancelled.
    Cancelled,
}

/// The kind of streamed-text item currently open.
#[derive(Clone, Copy, PartialEq, Eq)]
enum OpenKind {
    Text,
    Thinking,
}

struct OpenItem {
    kind: OpenKind,
    id: String,
}

struct Assembler<'a> {
    emitter: &'a Emitter,
    turn: AssembledTurn,
    open: Option<OpenItem>,
}

impl<'a> Assembler<'a> {
    fn close_open(&mut self) {
        let Some(open) = self.open.take() else { return };
        let text = match self.turn.parts.last() {
            Some(Part::Text { text }) | Some(Part::Thinking { text, .. }) => text.clone(),
            _ => String::new(),
        };
        let details = match open.kind {
            OpenKind::Text => ItemDetails::AgentMessage { text },
            OpenKind::Thinking => ItemDetails::Reasoning { text },
        };
        self.emitter.emit(EventKind::ItemCompleted {
            item: Item {
                id: open.id,
                details,
            },
        });
    }

    fn append_text(&mut self, kind: OpenKind, delta: String) {
        if self.open.as_ref().map(|o| o.kind) != Some(kind) {
            self.close_open();
            let id = self.emitter.next_item_id();
            let details = match kind {
                OpenKind::Text => ItemDetails::AgentMessage {
                    text: String::new(),
                },
                OpenKind::Thinking => ItemDetails::Reasoning {
                    text: String::new(),
                },
            };
            self.emitter.emit(EventKind::ItemStarted {
                item: Item {
                    id: id.clone(),
                    details,
                },
            });
            self.turn.parts.push(match kind {
                OpenKind::Text => Part::Text {
                    text: String::new(),
                },
                OpenKind::Thinking => Part::Thinking {
                    text: String::new(),
                    signature: None,
                },
            });
            self.open = Some(OpenItem { kind, id });
        }
        if let Some(Part::Text { text } | Part::Thinking { text, .. }) = self.turn.parts.last_mut()
        {
            text.push_str(&delta);
        }
        if let Some(open) = &self.open {
            self.emitter.emit(EventKind::ItemDelta {
                item_id: open.id.clone(),
                text: delta,
            });
        }
    }

    fn tool_call_mut(&mut self, id: &str) -> Option<&mut String> {
        self.turn.parts.iter_mut().rev().find_map(|p| match p {
            Part::ToolCall {
                id: pid, arguments, ..
            } if pid == id => Some(arguments),
            _ => None,
        })
    }

    fn apply(&mut self, chunk: StreamChunk) -> bool {
        match chunk {
            StreamChunk::TextDelta { text } => self.append_text(OpenKind::Text, text),
            StreamChunk::ThinkingDelta { text } => self.append_text(OpenKind::Thinking, text),
            StreamChunk::ThinkingSignature { signature } => {
                let target = self.turn.parts.iter_mut().rev().find_map(|p| match p {
                    Part::Thinking { signature, .. } => Some(signature),
                    _ => None,
                });
                match target {
                    Some(slot) => *slot = Some(signature),
                    None => self.turn.parts.push(Part::Thinking {
                        text: String::new(),
                        signature: Some(signature),
                    }),
                }
            }
            StreamChunk::RedactedThinking { data } => {
                self.close_open();
                self.turn.parts.push(Part::RedactedThinking { data });
            }
            StreamChunk::ToolCallStart { id, name } => {
                self.close_open();
                self.turn.parts.push(Part::ToolCall {
                    id,
                    name,
                    arguments: String::new(),
                });
            }
            StreamChunk::ToolCallDelta {
                id,
                arguments_delta,
            } => match self.tool_call_mut(&id) {
                Some(args) => args.push_str(&arguments_delta),
                // A fragment for a call never started: keep it, the tool name is empty and the
                // registry will report it to the model as an unknown tool.
                None => self.turn.parts.push(Part::ToolCall {
                    id,
                    name: String::new(),
                    arguments: arguments_delta,
                }),
            },
            StreamChunk::ToolCallEnd { .. } => {}
            StreamChunk::Usage { usage } => self.turn.usage.add(&usage),
            StreamChunk::Done { stop_reason } => {
                self.turn.stop_reason = Some(stop_reason);
                return false;
            }
            StreamChunk::Error { message } => {
                self.turn.failure = Some(StreamFailure::Provider(message));
                return false;
            }
        }
        true
    }
}

/// Reads a stream to its end (or failure), under an idle timeout and the cancellation token.
pub(crate) async fn consume(
    mut stream: ChunkStream,
    emitter: &Emitter,
    cancel: &CancellationToken,
    idle_timeout: Duration,
) -> AssembledTurn {
    let mut asm = Assembler {
        emitter,
        turn: AssembledTurn::default(),
        open: None,
    };
    loop {
        let next = tokio::select! {
            biased;
            () = cancel.cancelled() => {
                asm.turn.failure = Some(StreamFailure::Cancelled);
                break;
            }
            next = tokio::time::timeout(idle_timeout, stream.next()) => next,
        };
        match next {
            Ok(Some(chunk)) => {
                if !asm.apply(chunk) {
                    break;
                }
            }
            // A stream that ends without `done` ended all the same.
            Ok(None) => break,
            Err(_) => {
                asm.turn.failure = Some(StreamFailure::Timeout(idle_timeout));
                break;
            }
        }
    }
    asm.close_open();
    asm.turn
}
