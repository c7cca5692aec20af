//! Gemini stream chunks (each a whole `GenerateContentResponse`) to the loop's chunks: text,
//! thought summaries (`thought: true`), function calls (whole, each in one part), the
//! `thoughtSignature` a part carries (as a marked signature, just before the call it signs),
//! the usage of the last chunk (thinking tokens billed as output), and errors sent as an
//! `error` object.

use serde_json::Value;
use wonopcode_protocol::{StopReason, StreamChunk, Usage};

use crate::http::decoder::{Decoder, parse_json, str_field, u64_field};
use crate::http::failure::Failure;
use crate::openai::decode::error_failure;
use crate::signature::Marked;

/// Decoder state of one Gemini stream.
#[derive(Default)]
pub struct GeminiDecoder {
    /// Calls seen, for ids where the server gives none.
    calls: usize,
    usage: Option<Usage>,
    stop_reason: Option<StopReason>,
    finished: bool,
}

fn stop_reason(text: &str) -> StopReason {
    match text {
        "STOP" => StopReason::EndTurn,
        "MAX_TOKENS" => StopReason::MaxTokens,
        "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "IMAGE_SAFETY" => {
            StopReason::Refusal
        }
        _ => StopReason::Other,
    }
}

impl GeminiDecoder {
    /// Usage is cumulative in every chunk: the last one counts.
    fn take_usage(&mut self, usage: &Value) {
        let prompt = u64_field(usage, "promptTokenCount").unwrap_or(0);
        let cached = u64_field(usage, "cachedContentTokenCount").unwrap_or(0);
        let thoughts = u64_field(usage, "thoughtsTokenCount").unwrap_or(0);
        self.usage = Some(Usage {
            input_tokens: prompt.saturating_sub(cached),
            output_tokens: u64_field(usage, "candidatesTokenCount").unwrap_or(0) + thoughts,
            cache_read_tokens: cached,
            reasoning_tokens: thoughts,
            ..Usage::default()
        });
    }

    fn flush_usage(&mut self, out: &mut Vec<StreamChunk>) {
        if let Some(usage) = self.usage.take() {
            out.push(StreamChunk::Usage { usage });
        }
    }

    fn part(&mut self, part: &Value, response_id: &str, out: &mut Vec<StreamChunk>) {
        let signature = str_field(part, "thoughtSignature");
        if let Some(call) = part.get("functionCall") {
            // The signature goes first: it belongs with the call that follows.
            if !signature.is_empty() {
                out.push(StreamChunk::ThinkingSignature {
                    signature: Marked::Gemini.mark(signature),
                });
            }
            let id = match str_field(call, "id") {
                "" if response_id.is_empty() => format!("call_{}", self.calls),
                "" => format!("{response_id}_{}", self.calls),
                id => id.to_owned(),
            };
            self.calls += 1;
            let arguments = match call.get("args") {
                Some(args @ Value::Object(_)) => args.to_string(),
                _ => "{}".to_owned(),
            };
            out.push(StreamChunk::ToolCallStart {
                id: id.clone(),
                name: str_field(call, "name").to_owned(),
            });
            out.push(StreamChunk::ToolCallDelta {
                id: id.clone(),
                arguments_delta: arguments,
            });
            out.push(StreamChunk::ToolCallEnd { id });
            return;
        }
        let text = str_field(part, "text");
        if !text.is_empty() {
            let chunk = if part.get("thought").and_then(Value::as_bool) == Some(true) {
                StreamChunk::ThinkingDelta {
                    text: text.to_owned(),
                }
            } else {
                StreamChunk::TextDelta {
                    text: text.to_owned(),
                }
            };
            out.push(chunk);
        }
        if !signature.is_empty() {
            out.push(StreamChunk::ThinkingSignature {
                signature: Marked::Gemini.mark(signature),
            });
        }
    }
}

impl Decoder for GeminiDecoder {
    fn event(&mut self, name: &str, data: &str, out: &mut Vec<StreamChunk>) -> Result<(), Failure> {
        let data = data.trim();
        if self.finished || data.is_empty() {
            return Ok(());
        }
        let chunk = parse_json(name, data)?;
        if let Some(usage) = chunk.get("usageMetadata").filter(|u| u.is_object()) {
            self.take_usage(usage);
        }
        if let Some(error) = chunk.get("error").filter(|e| e.is_object()) {
            self.flush_usage(out);
            return Err(error_failure(error));
        }
        let response_id = str_field(&chunk, "responseId");
        // Only the first candidate: wonopcode asks for one.
        let Some(candidate) = chunk
            .get("candidates")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
        else {
            return Ok(());
        };
        if let Some(parts) = candidate
            .get("content")
            .and_then(|c| c.get("parts"))
            .and_then(Value::as_array)
        {
            for part in parts {
                self.part(part, response_id, out);
            }
        }
        if let Some(reason) = candidate.get("finishReason").and_then(Value::as_str) {
            self.stop_reason = Some(stop_reason(reason));
        }
        Ok(())
    }

    fn is_done(&self) -> bool {
        false
    }

    fn finish(&mut self, out: &mut Vec<StreamChunk>) -> Result<(), Failure> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        self.flush_usage(out);
        let Some(mut stop) = self.stop_reason else {
            return Err(Failure::transient(
                "the stream ended before the model finished",
            ));
        };
        // Gemini says STOP for a turn that calls functions.
        if stop == StopReason::EndTurn && self.calls > 0 {
            stop = StopReason::ToolUse;
        }
        out.push(StreamChunk::Done { stop_reason: stop });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_declined_answer_stops_as_a_refusal() {
        for word in ["SAFETY", "RECITATION", "PROHIBITED_CONTENT"] {
            assert_eq!(stop_reason(word), StopReason::Refusal, "{word}");
        }
    }
}
