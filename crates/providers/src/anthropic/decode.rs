//! Anthropic Messages streaming events to chunks: text, thinking with its signature,
//! redacted thinking, tool use assembled from `input_json_delta` fragments, usage from
//! `message_start` and `message_delta` (cache tokens included), and `event: error`.

use std::collections::HashMap;

use wonopcode_protocol::{StopReason, StreamChunk, Usage};

use crate::http::decoder::{Decoder, parse_json, str_field, u64_field};
use crate::http::failure::{Failure, is_overflow};

/// Decoder state of one Anthropic stream.
#[derive(Default)]
pub struct AnthropicDecoder {
    /// Tool-use blocks by content-block index: call id, and whether any argument came.
    tools: HashMap<u64, (String, bool)>,
    usage: Usage,
    stop_reason: Option<StopReason>,
    stopped: bool,
    finished: bool,
}

fn stop_reason(text: &str) -> StopReason {
    match text {
        "end_turn" | "pause_turn" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" | "model_context_window_exceeded" => StopReason::MaxTokens,
        "stop_sequence" => StopReason::StopSequence,
        "refusal" => StopReason::Refusal,
        _ => StopReason::Other,
    }
}

impl AnthropicDecoder {
    /// Later reports of a usage field replace earlier ones: `message_delta` carries the
    /// running totals, and some servers repeat the input counts there. When the usage lists
    /// `iterations` (server-side compaction runs a billed compaction iteration before the
    /// message; its top-level fields are the message iteration's alone), what was billed is
    /// their sum, cache reads and writes included.
    fn take_usage(&mut self, usage: &serde_json::Value) {
        let iterations = usage
            .get("iterations")
            .and_then(|i| i.as_array())
            .filter(|i| !i.is_empty());
        let slots = [
            ("input_tokens", &mut self.usage.input_tokens),
            ("output_tokens", &mut self.usage.output_tokens),
            (
                "cache_creation_input_tokens",
                &mut self.usage.cache_write_tokens,
            ),
            ("cache_read_input_tokens", &mut self.usage.cache_read_tokens),
        ];
        for (key, slot) in slots {
            let reported = match iterations {
                Some(iterations) => Some(
                    iterations
                        .iter()
                        .filter_map(|i| u64_field(i, key))
                        .fold(0_u64, u64::saturating_add),
                ),
                None => u64_field(usage, key),
            };
            if let Some(n) = reported {
                *slot = n;
            }
        }
        // The hour-long writes, inside `cache_creation` (the rest are 5-minute ones).
        let hour = |u: &serde_json::Value| {
            u.get("cache_creation")
                .and_then(|c| u64_field(c, "ephemeral_1h_input_tokens"))
        };
        let reported = match iterations {
            Some(iterations) => iterations
                .iter()
                .filter_map(hour)
                .reduce(u64::saturating_add),
            None => hour(usage),
        };
        if let Some(n) = reported {
            self.usage.cache_write_1h_tokens = n;
        }
    }

    /// Usage seen so far, pushed before a failure so billed tokens are still counted.
    fn flush_usage(&mut self, out: &mut Vec<StreamChunk>) {
        let usage = std::mem::take(&mut self.usage);
        if usage.total_tokens() > 0 {
            out.push(StreamChunk::Usage { usage });
        }
    }

    fn block_start(&mut self, event: &serde_json::Value, out: &mut Vec<StreamChunk>) {
        let index = u64_field(event, "index").unwrap_or(0);
        let block = event
            .get("content_block")
            .unwrap_or(&serde_json::Value::Null);
        match str_field(block, "type") {
            "text" => push_text(out, str_field(block, "text"), false),
            "thinking" => push_text(out, str_field(block, "thinking"), true),
            "redacted_thinking" => out.push(StreamChunk::RedactedThinking {
                data: str_field(block, "data").to_owned(),
            }),
            "tool_use" => {
                let id = str_field(block, "id").to_owned();
                out.push(StreamChunk::ToolCallStart {
                    id: id.clone(),
                    name: str_field(block, "name").to_owned(),
                });
                // Some servers put the whole input in the start block.
                let input = block.get("input");
                let given = input.is_some_and(|i| i.as_object().is_some_and(|o| !o.is_empty()));
                if let Some(input) = input.filter(|_| given) {
                    out.push(StreamChunk::ToolCallDelta {
                        id: id.clone(),
                        arguments_delta: input.to_string(),
                    });
                }
                self.tools.insert(index, (id, given));
            }
            other => tracing::debug!(block_type = other, "ignoring an unknown content block"),
        }
    }

    fn block_delta(&mut self, event: &serde_json::Value, out: &mut Vec<StreamChunk>) {
        let index = u64_field(event, "index").unwrap_or(0);
        let delta = event.get("delta").unwrap_or(&serde_json::Value::Null);
        match str_field(delta, "type") {
            "text_delta" => push_text(out, str_field(delta, "text"), false),
            "thinking_delta" => push_text(out, str_field(delta, "thinking"), true),
            "signature_delta" => out.push(StreamChunk::ThinkingSignature {
                signature: str_field(delta, "signature").to_owned(),
            }),
            "input_json_delta" => {
                let fragment = str_field(delta, "partial_json");
                if let Some((id, any)) = self.tools.get_mut(&index)
                    && !fragment.is_empty()
                {
                    *any = true;
                    out.push(StreamChunk::ToolCallDelta {
                        id: id.clone(),
                        arguments_delta: fragment.to_owned(),
                    });
                }
            }
            other => tracing::debug!(delta_type = other, "ignoring an unknown block delta"),
        }
    }

    fn block_stop(&mut self, index: u64, out: &mut Vec<StreamChunk>) {
        if let Some((id, any)) = self.tools.remove(&index) {
            // A tool without arguments sends one empty fragment: its input is `{}`.
            if !any {
                out.push(StreamChunk::ToolCallDelta {
                    id: id.clone(),
                    arguments_delta: "{}".to_owned(),
                });
            }
            out.push(StreamChunk::ToolCallEnd { id });
        }
    }

    fn close_all(&mut self, out: &mut Vec<StreamChunk>) {
        let mut open: Vec<u64> = self.tools.keys().copied().collect();
        open.sort_unstable();
        for index in open {
            self.block_stop(index, out);
        }
    }
}

fn push_text(out: &mut Vec<StreamChunk>, text: &str, thinking: bool) {
    if text.is_empty() {
        return;
    }
    let text = text.to_owned();
    out.push(if thinking {
        StreamChunk::ThinkingDelta { text }
    } else {
        StreamChunk::TextDelta { text }
    });
}

/// The failure an `error` event (or an error object) describes.
pub fn error_failure(error: &serde_json::Value) -> Failure {
    let kind = str_field(error, "type");
    let message = str_field(error, "message");
    let line = format!(
        "anthropic: {}{}",
        if kind.is_empty() { "error" } else { kind },
        if message.is_empty() {
            String::new()
        } else {
            format!(": {message}")
        }
    );
    let retryable = matches!(
        kind,
        "overloaded_error" | "api_error" | "rate_limit_error" | "timeout_error"
    );
    Failure {
        overflow: kind == "invalid_request_error" && is_overflow(message),
        retryable,
        rate_limited: kind == "rate_limit_error",
        ..Failure::fatal(line)
    }
}

impl Decoder for AnthropicDecoder {
    fn event(&mut self, name: &str, data: &str, out: &mut Vec<StreamChunk>) -> Result<(), Failure> {
        if self.finished || data.trim().is_empty() {
            return Ok(());
        }
        let event = parse_json(name, data)?;
        // The `type` inside the data is authoritative; the SSE name is only a fallback.
        let kind = match str_field(&event, "type") {
            "" => name,
            kind => kind,
        };
        match kind {
            "message_start" => {
                if let Some(usage) = event.get("message").and_then(|m| m.get("usage")) {
                    self.take_usage(usage);
                }
            }
            "content_block_start" => self.block_start(&event, out),
            "content_block_delta" => self.block_delta(&event, out),
            "content_block_stop" => self.block_stop(u64_field(&event, "index").unwrap_or(0), out),
            "message_delta" => {
                if let Some(usage) = event.get("usage") {
                    self.take_usage(usage);
                }
                let reason = event
                    .get("delta")
                    .and_then(|d| d.get("stop_reason"))
                    .and_then(|r| r.as_str());
                if let Some(reason) = reason {
                    self.stop_reason = Some(stop_reason(reason));
                }
            }
            "message_stop" => self.stopped = true,
            "ping" => {}
            "error" => {
                self.flush_usage(out);
                let error = event.get("error").unwrap_or(&event);
                return Err(error_failure(error));
            }
            other => tracing::debug!(event = other, "ignoring an unknown stream event"),
        }
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.stopped
    }

    fn finish(&mut self, out: &mut Vec<StreamChunk>) -> Result<(), Failure> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        // Without `message_stop`, a stop reason still says the model finished.
        if !self.stopped && self.stop_reason.is_none() {
            self.flush_usage(out);
            return Err(Failure::transient(
                "anthropic: the stream ended before the model finished",
            ));
        }
        self.close_all(out);
        out.push(StreamChunk::Usage { usage: self.usage });
        out.push(StreamChunk::Done {
            stop_reason: self.stop_reason.unwrap_or(StopReason::EndTurn),
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_declined_answer_stops_as_a_refusal() {
        assert_eq!(stop_reason("refusal"), StopReason::Refusal);
        assert_eq!(stop_reason("end_turn"), StopReason::EndTurn);
    }
}
