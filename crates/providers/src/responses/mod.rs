//! OpenAI's Responses API (`POST {base}/responses`): request body, and (in `decode`) its
//! stream. It is what OpenAI's reasoning models keep their reasoning across tool calls
//! through, and what Codex speaks.
//!
//! Nothing depends on state kept by the server: every request has `store: false` and carries
//! the whole conversation, reasoning included. A reasoning item comes back with
//! `encrypted_content` (asked for with `include: ["reasoning.encrypted_content"]`), is kept in
//! the history as a thinking part whose signature is that content marked as this API's (see
//! [`reasoning_signature`]), and is sent back as a `reasoning` item on the next request. Its
//! item id is not: with `store: false` the server has no item by that id and refuses one.

pub mod decode;

use serde::Serialize;
use serde_json::Value;
use wonopcode_protocol::attachment::AttachmentLimits;
use wonopcode_protocol::attachment::DataUrl;
use wonopcode_protocol::{Message, ModelRequest, Part, Role};

use crate::prompt_cache::{PromptCache, prefix_key};
use crate::signature::Marked;

/// The thinking signature that stands for a reasoning item's encrypted content.
pub fn reasoning_signature(encrypted_content: &str) -> String {
    Marked::Responses.mark(encrypted_content)
}

/// The encrypted content a thinking signature stands for, when it came from this API.
pub fn encrypted_content(signature: &str) -> Option<&str> {
    Marked::Responses.unmark(signature)
}

/// The request body, borrowing the history and serialized straight to JSON.
#[derive(Debug, Serialize)]
pub struct RequestBody<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    instructions: Option<String>,
    input: Vec<InputItem<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<FunctionTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<ReasoningOptions>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    include: Vec<&'static str>,
    max_output_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    store: bool,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<String>,
}

/// One item of `input`.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum InputItem<'a> {
    /// Text from the user, the developer (system messages inside the history) or the model.
    Message {
        role: &'static str,
        content: Vec<ContentPart<'a>>,
    },
    /// Reasoning the model did, sent back so it goes on from it.
    Reasoning {
        summary: Vec<SummaryText<'a>>,
        encrypted_content: &'a str,
    },
    /// A call the model made.
    FunctionCall {
        call_id: &'a str,
        name: &'a str,
        arguments: &'a str,
    },
    /// A call's result.
    FunctionCallOutput { call_id: &'a str, output: &'a str },
}

/// A message's text: `input_text` for what was said to the model, `output_text` for
/// what it said.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ContentPart<'a> {
    InputText {
        text: &'a str,
    },
    OutputText {
        text: &'a str,
    },
    InputImage {
        image_url: DataUrl<'a>,
    },
    InputFile {
        filename: &'a str,
        file_data: DataUrl<'a>,
    },
}

/// One paragraph of a reasoning summary.
#[derive(Debug, Serialize)]
struct SummaryText<'a> {
    r#type: &'static str,
    text: &'a str,
}

/// A function offered to the model.
#[derive(Debug, Serialize)]
struct FunctionTool<'a> {
    r#type: &'static str,
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

/// How a reasoning model reasons: summaries asked for, so the user sees what it thinks.
#[derive(Debug, Serialize)]
struct ReasoningOptions {
    #[serde(skip_serializing_if = "Option::is_none")]
    effort: Option<&'static str>,
    summary: &'static str,
}

/// The effort a thinking budget asks for: the API takes a level, not a token count.
fn effort(budget: u32) -> &'static str {
    match budget {
        0..=2_048 => "low",
        2_049..=16_384 => "medium",
        _ => "high",
    }
}

/// The request body for `POST {base}/responses`. `reasons` is set for a reasoning model:
/// only those take `reasoning` and `include`, and they refuse `temperature`.
pub fn request_body<'a>(
    model: &'a str,
    max_output: u64,
    reasons: bool,
    request: &'a ModelRequest,
    cache: PromptCache,
) -> RequestBody<'a> {
    let mut input = Vec::new();
    for message in request.messages.iter() {
        items(message, &mut input);
    }
    let options = &request.options;
    let has_tools = !request.tools.is_empty();
    RequestBody {
        model,
        instructions: request.system.clone(),
        input,
        tools: request
            .tools
            .iter()
            .map(|t| FunctionTool {
                r#type: "function",
                name: &t.name,
                description: &t.description,
                parameters: &t.parameters,
            })
            .collect(),
        tool_choice: has_tools.then_some("auto"),
        parallel_tool_calls: has_tools.then_some(true),
        reasoning: reasons.then(|| ReasoningOptions {
            effort: options.thinking_budget.map(effort),
            summary: "auto",
        }),
        include: if reasons {
            vec!["reasoning.encrypted_content"]
        } else {
            Vec::new()
        },
        max_output_tokens: options.max_tokens.map_or(max_output, u64::from),
        temperature: options.temperature.filter(|_| !reasons),
        store: false,
        stream: true,
        // OpenAI caches by itself; the key keeps a context's requests on one cache.
        prompt_cache_key: (cache != PromptCache::Off).then(|| prefix_key(request)),
    }
}

/// The input items of one message, in order: its text as a message, each reasoning, call
/// and result as an item of its own. Thinking from another API (no mark) is left out: the
/// server could not read it.
fn items<'a>(message: &'a Message, out: &mut Vec<InputItem<'a>>) {
    let (role, assistant) = match message.role {
        Role::System => ("developer", false),
        Role::User | Role::Tool => ("user", false),
        Role::Assistant => ("assistant", true),
    };
    let mut texts = Vec::new();
    let flush = |texts: &mut Vec<ContentPart<'a>>, out: &mut Vec<InputItem<'a>>| {
        if !texts.is_empty() {
            out.push(InputItem::Message {
                role,
                content: std::mem::take(texts),
            });
        }
    };
    for part in message.parts.iter() {
        match part {
            Part::Text { text } if text.is_empty() => {}
            Part::Text { text } if assistant => texts.push(ContentPart::OutputText { text }),
            Part::Text { text } => texts.push(ContentPart::InputText { text }),
            Part::Thinking {
                text,
                signature: Some(signature),
            } => {
                if let Some(encrypted_content) = encrypted_content(signature) {
                    flush(&mut texts, out);
                    out.push(InputItem::Reasoning {
                        summary: if text.is_empty() {
                            Vec::new()
                        } else {
                            vec![SummaryText {
                                r#type: "summary_text",
                                text,
                            }]
                        },
                        encrypted_content,
                    });
                }
            }
            Part::Thinking { .. } | Part::RedactedThinking { .. } => {}
            Part::ToolCall {
                id,
                name,
                arguments,
            } => {
                flush(&mut texts, out);
                out.push(InputItem::FunctionCall {
                    call_id: id,
                    name,
                    arguments,
                });
            }
            Part::ToolResult {
                call_id, content, ..
            } => {
                flush(&mut texts, out);
                out.push(InputItem::FunctionCallOutput {
                    call_id,
                    output: content,
                });
            }
            Part::Image { media_type, data } => texts.push(ContentPart::InputImage {
                image_url: DataUrl { media_type, data },
            }),
            Part::Document {
                media_type,
                data,
                name,
            } => texts.push(ContentPart::InputFile {
                filename: name,
                file_data: DataUrl { media_type, data },
            }),
        }
    }
    flush(&mut texts, out);
}

/// OpenAI's Responses API (`POST {base}/responses`).
pub(crate) struct ResponsesWire;

impl crate::http::Wire for ResponsesWire {
    /// 20 MB an image, 32 MB a file (OpenAI's documented limits).
    fn attachment_limits(&self) -> AttachmentLimits {
        AttachmentLimits {
            api: "OpenAI Responses",
            image_bytes: 20 * 1024 * 1024,
            document_bytes: Some(32 * 1024 * 1024),
        }
    }

    fn endpoint(&self, base: &str, _model: &str) -> String {
        format!("{base}/responses")
    }

    fn body(
        &self,
        model: &wonopcode_protocol::ModelInfo,
        request: &ModelRequest,
        cache: PromptCache,
    ) -> serde_json::Result<Vec<u8>> {
        serde_json::to_vec(&request_body(
            &model.id,
            model.max_output,
            model.capabilities.thinking,
            request,
            cache,
        ))
    }

    fn decoder(&self) -> Box<dyn crate::http::decoder::Decoder> {
        Box::<decode::ResponsesDecoder>::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use wonopcode_protocol::{ContextPath, RequestOptions, ToolSchema};

    fn request(messages: Vec<Message>, options: RequestOptions) -> ModelRequest {
        ModelRequest {
            context: ContextPath::root(),
            system: Some("be brief".into()),
            messages: messages.into(),
            tools: vec![ToolSchema {
                name: "calculator".into(),
                description: "adds".into(),
                parameters: json!({"type": "object"}),
            }],
            options,
        }
    }

    #[test]
    fn a_tool_round_with_reasoning_maps_to_items() {
        let request = request(
            vec![
                Message::user("12 + 7?"),
                Message::new(
                    Role::Assistant,
                    vec![
                        Part::Thinking {
                            text: "add them".into(),
                            signature: Some(reasoning_signature("gAAAA")),
                        },
                        Part::Thinking {
                            text: "from another API".into(),
                            signature: Some("EqQB".into()),
                        },
                        Part::ToolCall {
                            id: "call_1".into(),
                            name: "calculator".into(),
                            arguments: r#"{"a":12,"b":7}"#.into(),
                        },
                    ],
                ),
                Message::new(
                    Role::Tool,
                    vec![Part::ToolResult {
                        call_id: "call_1".into(),
                        content: "19".into(),
                        is_error: false,
                    }],
                ),
            ],
            RequestOptions {
                thinking_budget: Some(4_000),
                temperature: Some(0.5),
                ..RequestOptions::default()
            },
        );
        let body = serde_json::to_value(request_body(
            "gpt-5",
            1000,
            true,
            &request,
            PromptCache::Off,
        ))
        .unwrap();
        assert_eq!(body["instructions"], "be brief");
        assert_eq!(body["store"], false);
        assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
        assert_eq!(
            body["reasoning"],
            json!({"effort": "medium", "summary": "auto"})
        );
        assert_eq!(body.get("temperature"), None, "reasoning models refuse it");
        assert_eq!(
            body["input"],
            json!([
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "12 + 7?"}]},
                {"type": "reasoning", "summary": [{"type": "summary_text", "text": "add them"}], "encrypted_content": "gAAAA"},
                {"type": "function_call", "call_id": "call_1", "name": "calculator", "arguments": "{\"a\":12,\"b\":7}"},
                {"type": "function_call_output", "call_id": "call_1", "output": "19"},
            ])
        );
        assert_eq!(body["tools"][0]["name"], "calculator");
        assert_eq!(body["max_output_tokens"], 1000);
    }

    #[test]
    fn a_model_that_does_not_reason_gets_no_reasoning_fields() {
        let request = request(
            vec![Message::user("hi")],
            RequestOptions {
                temperature: Some(0.5),
                ..RequestOptions::default()
            },
        );
        let body = serde_json::to_value(request_body(
            "gpt-4.1",
            1000,
            false,
            &request,
            PromptCache::Off,
        ))
        .unwrap();
        assert_eq!(body.get("reasoning"), None);
        assert_eq!(body.get("include"), None);
        assert_eq!(body["temperature"], 0.5);
    }
}
