//! Assembling one model response from its stream: text, thinking (with signatures) and tool
//! calls from fragments, emitting `agent_message` and `reasoning` items as they stream. The
//! native loop and the WebAssembly host both assemble through here, so the events and the
//! stored message are the same whichever loop runs.

use std::time::Duration;

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use wonopcode_protocol::event::{Emitter, EventKind, Item, ItemDetails};
use wonopcode_protocol::message::{Message, Part, Role};
use wonopcode_protocol::model::{
    ChunkStream, ModelError, ModelRequest, SharedModel, StopReason, StreamChunk,
};
use wonopcode_protocol::status::LoopError;
use wonopcode_protocol::usage::Usage;

/// What one model response amounted to.
#[derive(Debug, Default, Clone)]
pub struct AssembledResponse {
    /// Parts in the order they streamed.
    pub parts: Vec<Part>,
    /// Usage reported during the stream.
    pub usage: Usage,
    /// Why the model stopped, when it said.
    pub stop_reason: Option<StopReason>,
    /// Set when the stream failed, timed out or was cancelled.
    pub failure: Option<StreamFailure>,
}

/// Opens the text part that marks a stored answer as cut off (`[incomplete: why]`).
pub const INCOMPLETE_MARK: &str = "\n\n[incomplete: ";

/// How a stream ended early.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamFailure {
    /// The provider sent an error.
    Provider(String),
    /// The conversation does not fit the model's context window.
    ContextOverflow(String),
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

/// Assembles a response chunk by chunk, emitting its items.
pub struct ResponseAssembler {
    emitter: Emitter,
    turn: AssembledResponse,
    open: Option<OpenItem>,
}

impl ResponseAssembler {
    /// An assembler emitting through `emitter`.
    pub fn new(emitter: Emitter) -> Self {
        Self {
            emitter,
            turn: AssembledResponse::default(),
            open: None,
        }
    }

    /// Records that the stream failed.
    pub fn fail(&mut self, failure: StreamFailure) {
        self.turn.failure = Some(failure);
    }

    /// Usage reported so far.
    pub fn usage(&self) -> &Usage {
        &self.turn.usage
    }

    /// Closes the open item and returns the response. A stream cut after it showed something
    /// ends with an error item saying the answer is incomplete, so the user (and a `--json`
    /// reader) does not take what was shown for a whole answer.
    pub fn finish(mut self) -> AssembledResponse {
        self.close_open();
        let cut = match &self.turn.failure {
            Some(StreamFailure::Cancelled) | None => None,
            Some(_) => self
                .turn
                .error()
                .filter(|_| !self.turn.stored_parts().is_empty()),
        };
        if let Some(error) = cut {
            self.emitter.emit(EventKind::ItemCompleted {
                item: Item {
                    id: self.emitter.next_item_id(),
                    details: ItemDetails::Error {
                        message: format!("the answer above is incomplete: {error}"),
                    },
                },
            });
        }
        self.turn
    }

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

    /// Applies one chunk; returns `false` when the stream is over (done or failed).
    pub fn apply(&mut self, chunk: StreamChunk) -> bool {
        match chunk {
            StreamChunk::TextDelta { text } => self.append_text(OpenKind::Text, text),
            StreamChunk::ThinkingDelta { text } => self.append_text(OpenKind::Thinking, text),
            // It closes the thinking just streamed; a signature with none before it (a
            // reasoning item without a summary) is a thinking part of its own, so it never
            // replaces an earlier block's signature.
            StreamChunk::ThinkingSignature { signature } => {
                let target = match self.turn.parts.last_mut() {
                    Some(Part::Thinking {
                        signature: slot @ None,
                        ..
                    }) => Some(slot),
                    _ => None,
                };
                match target {
                    Some(slot) => *slot = Some(signature),
                    // A part of its own (after text, as Gemini sends one) ends the item shown
                    // before it, which keeps its own text.
                    None => {
                        self.close_open();
                        self.turn.parts.push(Part::Thinking {
                            text: String::new(),
                            signature: Some(signature),
                        });
                    }
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
            StreamChunk::ContextOverflow { message } => {
                self.turn.failure = Some(StreamFailure::ContextOverflow(message));
                return false;
            }
            StreamChunk::Retry {
                attempt,
                delay_ms,
                reason,
            } => self.emitter.emit(EventKind::ModelRetry {
                attempt,
                delay_ms,
                reason,
            }),
        }
        true
    }
}

/// Starts a request and reads its stream to the end, under the idle timeout and the
/// cancellation token; fills in the cost from the model's prices when the provider did not.
pub async fn stream_request(
    provider: &SharedModel,
    request: ModelRequest,
    events: &Emitter,
    cancel: &CancellationToken,
    idle_timeout: Duration,
) -> Result<AssembledResponse, LoopError> {
    let stream = start_stream(provider, request, cancel, idle_timeout).await?;
    let mut turn = consume(stream, events, cancel, idle_timeout).await;
    price(provider, &mut turn.usage);
    Ok(turn)
}

/// Reports a finished response (`response.completed`) with its priced usage; `started` is
/// when its request was made, `first_chunk` how long its first chunk took. A response the provider refused as too long and that is asked
/// again after compacting is not reported (both loops treat it as a retry).
pub fn report_response(
    events: &Emitter,
    model: &wonopcode_protocol::usage::ModelInfo,
    turn: &AssembledResponse,
    started: std::time::Instant,
    first_chunk: Option<Duration>,
) {
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    events.emit(EventKind::ResponseCompleted {
        provider: model.provider.clone(),
        model: model.id.clone(),
        usage: turn.usage,
        duration_ms: ms(started.elapsed()),
        first_chunk_ms: first_chunk.map(ms),
        stop_reason: turn.stop_reason,
        error: turn.error().map(|e| e.to_string()),
    });
}

/// Starts a request under the idle timeout and the cancellation token.
pub async fn start_stream(
    provider: &SharedModel,
    request: ModelRequest,
    cancel: &CancellationToken,
    idle_timeout: Duration,
) -> Result<ChunkStream, LoopError> {
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(LoopError::Cancelled),
        s = tokio::time::timeout(idle_timeout, provider.stream(request)) => match s {
            Ok(Ok(stream)) => Ok(stream),
            Ok(Err(ModelError::BudgetExceeded(limit))) => Err(LoopError::BudgetExceeded(limit)),
            Ok(Err(e)) => Err(LoopError::Provider(e.to_string())),
            Err(_) => Err(LoopError::Provider(format!(
                "the model did not start answering within {} s",
                idle_timeout.as_secs()
            ))),
        },
    }
}

/// Fills in a usage's cost from the model's prices when the provider did not report one.
pub fn price(provider: &SharedModel, usage: &mut Usage) {
    if usage.cost_micro_cents.is_none()
        && let Some(pricing) = &provider.info().pricing
    {
        usage.cost_micro_cents = Some(pricing.cost(usage));
    }
}

/// Reads a stream to its end (or failure), under an idle timeout and the cancellation token.
pub async fn consume(
    mut stream: ChunkStream,
    emitter: &Emitter,
    cancel: &CancellationToken,
    idle_timeout: Duration,
) -> AssembledResponse {
    let mut asm = ResponseAssembler::new(emitter.clone());
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
    asm.finish()
}

impl AssembledResponse {
    /// The visible text of the turn, its text parts joined.
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .filter_map(|p| match p {
                Part::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The parts to store: every part (empty text dropped) when the stream finished, or only
    /// what was said (text, signed thinking) when it failed.
    pub fn stored_parts(&self) -> Vec<Part> {
        self.parts
            .iter()
            .filter(|p| !matches!(p, Part::Text { text } if text.is_empty()))
            .filter(|p| {
                self.failure.is_none()
                    || matches!(
                        p,
                        Part::Text { .. }
                            | Part::Thinking {
                                signature: Some(_),
                                ..
                            }
                    )
            })
            .cloned()
            .collect()
    }

    /// The assistant message to store, `None` when a failed stream said nothing. What a
    /// failed stream said is kept, marked as cut off so neither the user reading the history
    /// nor the model on the next request takes it for a whole answer.
    pub fn message(&self) -> Option<Message> {
        let mut parts = self.stored_parts();
        if let Some(error) = self.error().filter(|_| !parts.is_empty()) {
            parts.push(Part::Text {
                text: format!("{INCOMPLETE_MARK}{error}]"),
            });
        }
        (self.failure.is_none() || !parts.is_empty()).then(|| Message::new(Role::Assistant, parts))
    }

    /// True when the stream was refused because the conversation is too long.
    pub fn overflowed(&self) -> bool {
        matches!(self.failure, Some(StreamFailure::ContextOverflow(_)))
    }

    /// The error a failed stream ends the run with.
    pub fn error(&self) -> Option<LoopError> {
        self.failure.as_ref().map(|f| match f {
            StreamFailure::Cancelled => LoopError::Cancelled,
            StreamFailure::Provider(message) | StreamFailure::ContextOverflow(message) => {
                LoopError::Provider(message.clone())
            }
            StreamFailure::Timeout(after) => {
                LoopError::Provider(format!("no data from the model for {} s", after.as_secs()))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use wonopcode_protocol::ContextPath;

    /// Gemini signs after the text it streamed: the message shown keeps its text, and the
    /// signature is a part of its own that goes back with the response.
    #[test]
    fn a_signature_after_text_leaves_the_message_its_text() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut assembler = ResponseAssembler::new(Emitter::new(Arc::new(tx), ContextPath::root()));
        for chunk in [
            StreamChunk::TextDelta {
                text: "There are **3**".into(),
            },
            StreamChunk::TextDelta {
                text: " \"r\"s".into(),
            },
            StreamChunk::ThinkingSignature {
                signature: "gemini:sig".into(),
            },
        ] {
            assert!(assembler.apply(chunk));
        }
        let response = assembler.finish();
        let mut completed = Vec::new();
        while let Ok(event) = rx.try_recv() {
            if let EventKind::ItemCompleted { item } = event.kind {
                completed.push(item.details);
            }
        }
        assert_eq!(
            completed,
            [ItemDetails::AgentMessage {
                text: "There are **3** \"r\"s".into()
            }]
        );
        assert_eq!(
            response.parts,
            [
                Part::Text {
                    text: "There are **3** \"r\"s".into()
                },
                Part::Thinking {
                    text: String::new(),
                    signature: Some("gemini:sig".into())
                }
            ]
        );
    }
}
