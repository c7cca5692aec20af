//! Responses API stream events to the loop's chunks: output text, reasoning summaries (with
//! the item's encrypted content as the signature that sends it back), function calls by
//! `call_id` with their argument fragments, usage with cached and reasoning tokens, and the
//! ways a stream fails (`error`, `response.failed`). Events are told apart by the `type` in
//! their data, so a stream with or without `event:` lines reads the same.

use serde_json::Value;
use wonopcode_protocol::{StopReason, StreamChunk, Usage};

use crate::http::decoder::{Decoder, parse_json, str_field, u64_field};
use crate::http::failure::Failure;
use crate::openai::decode::error_failure;
use crate::responses::reasoning_signature;

/// One function call of the response.
struct Call {
    /// The output item's id, which argument fragments name.
    item_id: String,
    /// The id its result goes back under.
    call_id: String,
    any_arguments: bool,
    ended: bool,
}

/// Decoder state of one Responses API stream.
#[derive(Default)]
pub struct ResponsesDecoder {
    calls: Vec<Call>,
    /// The reasoning summary part streaming now, `(item id, summary index)`.
    summary: Option<(String, u64)>,
    usage: Option<Usage>,
    stop_reason: Option<StopReason>,
    finished: bool,
    /// Some text went out already.
    any_text: bool,
    /// A new message item began after text: its text starts a new paragraph.
    paragraph: bool,
}

impl ResponsesDecoder {
    fn take_usage(&mut self, response: &Value) {
        let Some(usage) = response.get("usage").filter(|u| u.is_object()) else {
            return;
        };
        let input = u64_field(usage, "input_tokens").unwrap_or(0);
        let cached = usage
            .get("input_tokens_details")
            .and_then(|d| u64_field(d, "cached_tokens"))
            .unwrap_or(0);
        self.usage = Some(Usage {
            input_tokens: input.saturating_sub(cached),
            output_tokens: u64_field(usage, "output_tokens").unwrap_or(0),
            cache_read_tokens: cached,
            reasoning_tokens: usage
                .get("output_tokens_details")
                .and_then(|d| u64_field(d, "reasoning_tokens"))
                .unwrap_or(0),
            ..Usage::default()
        });
    }

    /// Usage seen so far, pushed once: at the end, or before a failure so billed tokens
    /// are still counted.
    fn flush_usage(&mut self, out: &mut Vec<StreamChunk>) {
        if let Some(usage) = self.usage.take() {
            out.push(StreamChunk::Usage { usage });
        }
    }

    fn item_added(&mut self, item: &Value, out: &mut Vec<StreamChunk>) {
        match str_field(item, "type") {
            "function_call" => {}
            "message" => {
                self.paragraph = self.any_text;
                return;
            }
            _ => return,
        }
        let call_id = match str_field(item, "call_id") {
            "" => str_field(item, "id"),
            id => id,
        };
        let call = Call {
            item_id: str_field(item, "id").to_owned(),
            call_id: call_id.to_owned(),
            any_arguments: false,
            ended: false,
        };
        out.push(StreamChunk::ToolCallStart {
            id: call.call_id.clone(),
            name: str_field(item, "name").to_owned(),
        });
        self.calls.push(call);
        // A server may send a call whole, its arguments already in the added item.
        self.arguments(self.calls.len() - 1, str_field(item, "arguments"), out);
    }

    fn arguments(&mut self, at: usize, delta: &str, out: &mut Vec<StreamChunk>) {
        if delta.is_empty() {
            return;
        }
        let call = &mut self.calls[at];
        call.any_arguments = true;
        out.push(StreamChunk::ToolCallDelta {
            id: call.call_id.clone(),
            arguments_delta: delta.to_owned(),
        });
    }

    fn item_done(&mut self, item: &Value, out: &mut Vec<StreamChunk>) {
        match str_field(item, "type") {
            "reasoning" => {
                self.summary = None;
                let encrypted = str_field(item, "encrypted_content");
                if !encrypted.is_empty() {
                    out.push(StreamChunk::ThinkingSignature {
                        signature: reasoning_signature(encrypted),
                    });
                }
            }
            "function_call" => {
                let id = str_field(item, "id");
                let Some(at) = self.calls.iter().position(|c| c.item_id == id) else {
                    // Never announced: the whole call is in this event.
                    self.item_added(item, out);
                    self.end_call(self.calls.len() - 1, out);
                    return;
                };
                if !self.calls[at].any_arguments {
                    self.arguments(at, str_field(item, "arguments"), out);
                }
                self.end_call(at, out);
            }
            _ => {}
        }
    }

    fn end_call(&mut self, at: usize, out: &mut Vec<StreamChunk>) {
        let call = &mut self.calls[at];
        if call.ended {
            return;
        }
        call.ended = true;
        if !call.any_arguments {
            out.push(StreamChunk::ToolCallDelta {
                id: call.call_id.clone(),
                arguments_delta: "{}".to_owned(),
            });
        }
        out.push(StreamChunk::ToolCallEnd {
            id: call.call_id.clone(),
        });
    }

    fn summary_delta(&mut self, event: &Value, out: &mut Vec<StreamChunk>) {
        let part = (
            str_field(event, "item_id").to_owned(),
            u64_field(event, "summary_index").unwrap_or(0),
        );
        let mut text = String::new();
        // A second summary part of the same item reads as a new paragraph.
        if let Some((item, _)) = &self.summary
            && *item == part.0
            && self.summary.as_ref() != Some(&part)
        {
            text.push_str("\n\n");
        }
        self.summary = Some(part);
        text.push_str(str_field(event, "delta"));
        out.push(StreamChunk::ThinkingDelta { text });
    }

    fn ended(&mut self, response: &Value, stop: StopReason) {
        self.take_usage(response);
        self.stop_reason = Some(stop);
    }
}

impl Decoder for ResponsesDecoder {
    fn event(&mut self, name: &str, data: &str, out: &mut Vec<StreamChunk>) -> Result<(), Failure> {
        let data = data.trim();
        if self.finished || data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        let event = parse_json(name, data)?;
        let kind = match str_field(&event, "type") {
            "" => name,
            kind => kind,
        };
        let null = Value::Null;
        match kind {
            "response.output_text.delta" | "response.refusal.delta" => {
                let delta = str_field(&event, "delta");
                if !delta.is_empty() {
                    let text = if std::mem::take(&mut self.paragraph) {
                        format!("\n\n{delta}")
                    } else {
                        delta.to_owned()
                    };
                    self.any_text = true;
                    out.push(StreamChunk::TextDelta { text });
                }
            }
            "response.reasoning_summary_text.delta" => self.summary_delta(&event, out),
            "response.output_item.added" => {
                self.item_added(event.get("item").unwrap_or(&null), out)
            }
            "response.function_call_arguments.delta" => {
                let id = str_field(&event, "item_id");
                if let Some(at) = self.calls.iter().position(|c| c.item_id == id) {
                    self.arguments(at, str_field(&event, "delta"), out);
                }
            }
            "response.output_item.done" => self.item_done(event.get("item").unwrap_or(&null), out),
            "response.completed" => {
                let stop = if self.calls.is_empty() {
                    StopReason::EndTurn
                } else {
                    StopReason::ToolUse
                };
                self.ended(event.get("response").unwrap_or(&null), stop);
            }
            "response.incomplete" => {
                let response = event.get("response").unwrap_or(&null);
                let reason = response
                    .get("incomplete_details")
                    .map(|d| str_field(d, "reason"))
                    .unwrap_or("");
                let stop = match reason {
                    "max_output_tokens" => StopReason::MaxTokens,
                    "content_filter" => StopReason::Refusal,
                    _ => StopReason::Other,
                };
                self.ended(response, stop);
            }
            "response.failed" => {
                let response = event.get("response").unwrap_or(&null);
                self.take_usage(response);
                self.flush_usage(out);
                let error = response.get("error").filter(|e| e.is_object());
                return Err(match error {
                    Some(error) => error_failure(error),
                    None => Failure::transient("the provider failed the response without a reason"),
                });
            }
            "error" => {
                self.flush_usage(out);
                let error = event.get("error").filter(|e| e.is_object());
                return Err(error_failure(error.unwrap_or(&event)));
            }
            _ => {}
        }
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.stop_reason.is_some()
    }

    fn finish(&mut self, out: &mut Vec<StreamChunk>) -> Result<(), Failure> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        let Some(stop) = self.stop_reason else {
            self.flush_usage(out);
            return Err(Failure::transient(
                "the stream ended before the model finished",
            ));
        };
        for at in 0..self.calls.len() {
            self.end_call(at, out);
        }
        self.flush_usage(out);
        out.push(StreamChunk::Done { stop_reason: stop });
        Ok(())
    }
}
