//! Chat Completions stream chunks to the loop's chunks: text, reasoning in any of the
//! fields servers use (`reasoning_content`, `reasoning`, `reasoning_details`), parallel tool
//! calls assembled by `index` from fragments, the final usage chunk, and errors sent inside
//! an ordinary chunk.

use wonopcode_protocol::{StopReason, StreamChunk, Usage};

use crate::http::decoder::{Decoder, parse_json, str_field, u64_field};
use crate::http::failure::{Failure, is_overflow, retryable_status};

/// One tool call being assembled.
struct ToolSlot {
    index: u64,
    id: String,
    name: String,
    /// Arguments that came before the name did (held until the call can start).
    held: String,
    any_arguments: bool,
    started: bool,
}

/// Decoder state of one Chat Completions stream.
#[derive(Default)]
pub struct OpenAiDecoder {
    tools: Vec<ToolSlot>,
    usage: Option<Usage>,
    stop_reason: Option<StopReason>,
    done_marker: bool,
    finished: bool,
}

fn stop_reason(text: &str) -> StopReason {
    match text {
        "stop" | "end_turn" | "eos" => StopReason::EndTurn,
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "length" => StopReason::MaxTokens,
        "content_filter" => StopReason::Refusal,
        _ => StopReason::Other,
    }
}

impl OpenAiDecoder {
    fn take_usage(&mut self, usage: &serde_json::Value) {
        if !usage.is_object() {
            return;
        }
        let prompt = u64_field(usage, "prompt_tokens").unwrap_or(0);
        let cached = usage
            .get("prompt_tokens_details")
            .and_then(|d| u64_field(d, "cached_tokens"))
            .or_else(|| u64_field(usage, "prompt_cache_hit_tokens"))
            .unwrap_or(0);
        let reasoning = usage
            .get("completion_tokens_details")
            .and_then(|d| u64_field(d, "reasoning_tokens"))
            .unwrap_or(0);
        self.usage = Some(Usage {
            input_tokens: prompt.saturating_sub(cached),
            output_tokens: u64_field(usage, "completion_tokens").unwrap_or(0),
            cache_read_tokens: cached,
            reasoning_tokens: reasoning,
            ..Usage::default()
        });
        // OpenRouter reports what the request cost, in USD.
        if let (Some(usage_out), Some(cost)) = (
            self.usage.as_mut(),
            usage.get("cost").and_then(|c| c.as_f64()),
        ) && cost.is_finite()
            && cost >= 0.0
        {
            usage_out.cost_micro_cents = Some((cost * 1e8).round() as u64);
        }
    }

    /// Usage seen so far, pushed once: at the end, or before a failure so billed tokens
    /// are still counted.
    fn flush_usage(&mut self, out: &mut Vec<StreamChunk>) {
        if let Some(usage) = self.usage.take() {
            out.push(StreamChunk::Usage { usage });
        }
    }

    fn slot(&mut self, position: usize, call: &serde_json::Value) -> usize {
        let id = str_field(call, "id");
        let index = u64_field(call, "index");
        let found = match index {
            Some(i) => self.tools.iter().position(|s| s.index == i),
            // Servers that omit `index` (older Ollama) send whole calls: match by id, or
            // take the position in this chunk's list.
            None if !id.is_empty() => self.tools.iter().position(|s| s.id == id),
            None => self.tools.iter().position(|s| s.index == position as u64),
        };
        if let Some(found) = found {
            return found;
        }
        let index = index.unwrap_or(if id.is_empty() {
            position as u64
        } else {
            self.tools.len() as u64
        });
        self.tools.push(ToolSlot {
            index,
            id: if id.is_empty() {
                format!("call_{index}")
            } else {
                id.to_owned()
            },
            name: String::new(),
            held: String::new(),
            any_arguments: false,
            started: false,
        });
        self.tools.len() - 1
    }

    fn tool_fragment(
        &mut self,
        position: usize,
        call: &serde_json::Value,
        out: &mut Vec<StreamChunk>,
    ) {
        let at = self.slot(position, call);
        let function = call.get("function").unwrap_or(&serde_json::Value::Null);
        let name = str_field(function, "name");
        let arguments = match function.get("arguments") {
            Some(serde_json::Value::String(s)) => s.clone(),
            // Some servers send the arguments as an object rather than JSON text.
            Some(v @ serde_json::Value::Object(_)) => v.to_string(),
            _ => String::new(),
        };
        let slot = &mut self.tools[at];
        if !slot.started && !name.is_empty() {
            slot.name = name.to_owned();
        }
        if !arguments.is_empty() {
            slot.any_arguments = true;
            if slot.started {
                out.push(StreamChunk::ToolCallDelta {
                    id: slot.id.clone(),
                    arguments_delta: arguments,
                });
            } else {
                slot.held.push_str(&arguments);
            }
        }
        if !slot.started && !slot.name.is_empty() {
            start(slot, out);
        }
    }

    fn choice(&mut self, choice: &serde_json::Value, out: &mut Vec<StreamChunk>) {
        let delta = choice
            .get("delta")
            .or_else(|| choice.get("message"))
            .unwrap_or(&serde_json::Value::Null);
        let reasoning = match (
            delta.get("reasoning_content").and_then(|v| v.as_str()),
            delta.get("reasoning").and_then(|v| v.as_str()),
        ) {
            (Some(r), _) | (None, Some(r)) => r.to_owned(),
            // `reasoning_details` repeats `reasoning` when both come; alone, its text
            // entries are the reasoning (encrypted entries are skipped).
            (None, None) => delta
                .get("reasoning_details")
                .and_then(|d| d.as_array())
                .map(|items| {
                    items
                        .iter()
                        .filter_map(|i| i.get("text").or_else(|| i.get("summary")))
                        .filter_map(|t| t.as_str())
                        .collect::<String>()
                })
                .unwrap_or_default(),
        };
        if !reasoning.is_empty() {
            out.push(StreamChunk::ThinkingDelta { text: reasoning });
        }
        let content = str_field(delta, "content");
        if !content.is_empty() {
            out.push(StreamChunk::TextDelta {
                text: content.to_owned(),
            });
        }
        if let Some(calls) = delta.get("tool_calls").and_then(|c| c.as_array()) {
            for (position, call) in calls.iter().enumerate() {
                self.tool_fragment(position, call, out);
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(|r| r.as_str()) {
            self.stop_reason = Some(stop_reason(reason));
        }
    }
}

fn start(slot: &mut ToolSlot, out: &mut Vec<StreamChunk>) {
    slot.started = true;
    out.push(StreamChunk::ToolCallStart {
        id: slot.id.clone(),
        name: slot.name.clone(),
    });
    if !slot.held.is_empty() {
        out.push(StreamChunk::ToolCallDelta {
            id: slot.id.clone(),
            arguments_delta: std::mem::take(&mut slot.held),
        });
    }
}

/// The failure an `error` object describes (inside a chunk, or a named `error` event).
pub(crate) fn error_failure(error: &serde_json::Value) -> Failure {
    let message = match error.get("message").and_then(|m| m.as_str()) {
        Some(m) => m.to_owned(),
        None => error.to_string(),
    };
    let code = error.get("code");
    let status = code
        .and_then(|c| c.as_u64())
        .and_then(|c| u16::try_from(c).ok());
    let code_text = code.and_then(|c| c.as_str()).unwrap_or("");
    let kind = str_field(error, "type");
    let retryable = status.is_some_and(retryable_status)
        || ["rate_limit", "overloaded", "server_error", "timeout"]
            .iter()
            .any(|k| code_text.contains(k) || kind.contains(k));
    let label = match (status, code_text) {
        (Some(s), _) => format!(" ({s})"),
        (None, "") => String::new(),
        (None, c) => format!(" ({c})"),
    };
    Failure {
        overflow: code_text == "context_length_exceeded" || is_overflow(&message),
        retryable,
        rate_limited: status == Some(429) || code_text.contains("rate_limit"),
        ..Failure::fatal(format!("the provider reported an error{label}: {message}"))
    }
}

impl Decoder for OpenAiDecoder {
    fn event(&mut self, name: &str, data: &str, out: &mut Vec<StreamChunk>) -> Result<(), Failure> {
        let data = data.trim();
        if self.finished || data.is_empty() {
            return Ok(());
        }
        if data == "[DONE]" {
            self.done_marker = true;
            return Ok(());
        }
        let chunk = parse_json(name, data)?;
        // Groq reports usage under `x_groq`.
        let usage = chunk
            .get("usage")
            .filter(|u| u.is_object())
            .or_else(|| chunk.get("x_groq").and_then(|x| x.get("usage")));
        if let Some(usage) = usage {
            self.take_usage(usage);
        }
        let error = chunk.get("error").filter(|e| !e.is_null());
        if name == "error" || error.is_some() {
            self.flush_usage(out);
            return Err(error_failure(error.unwrap_or(&chunk)));
        }
        if let Some(choices) = chunk.get("choices").and_then(|c| c.as_array()) {
            // Only the first choice: wonopcode asks for one.
            if let Some(choice) = choices
                .iter()
                .find(|c| u64_field(c, "index").unwrap_or(0) == 0)
            {
                self.choice(choice, out);
            }
        }
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.done_marker
    }

    fn finish(&mut self, out: &mut Vec<StreamChunk>) -> Result<(), Failure> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        // A missing `[DONE]` is fine once a finish reason came.
        if !self.done_marker && self.stop_reason.is_none() {
            self.flush_usage(out);
            return Err(Failure::transient(
                "the stream ended before the model finished",
            ));
        }
        for slot in &mut self.tools {
            if !slot.started {
                start(slot, out);
            }
            if !slot.any_arguments {
                out.push(StreamChunk::ToolCallDelta {
                    id: slot.id.clone(),
                    arguments_delta: "{}".to_owned(),
                });
            }
            out.push(StreamChunk::ToolCallEnd {
                id: slot.id.clone(),
            });
        }
        self.flush_usage(out);
        let mut reason = self.stop_reason.unwrap_or(StopReason::EndTurn);
        // Some servers say `stop` for a turn that calls tools.
        if reason == StopReason::EndTurn && !self.tools.is_empty() {
            reason = StopReason::ToolUse;
        }
        out.push(StreamChunk::Done {
            stop_reason: reason,
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_declined_answer_stops_as_a_refusal() {
        assert_eq!(stop_reason("content_filter"), StopReason::Refusal);
        assert_eq!(stop_reason("stop"), StopReason::EndTurn);
    }
}
