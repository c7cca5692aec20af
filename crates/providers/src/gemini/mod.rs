//! Gemini's own API (`POST {base}/models/{model}:streamGenerateContent?alt=sse`): its
//! endpoint, request body, and (in `decode`) its stream.
//!
//! A Gemini 3 model signs its reasoning: a part comes back with a `thoughtSignature`, which
//! must go back on the same part (a function call's, above all: the server refuses a call
//! without it). The decoder keeps each signature as a thinking part marked as Gemini's
//! (`crate::signature`), just before the call it came with; this body puts it back on that
//! call, or on an empty text part where it came with text.

pub mod decode;

use std::collections::HashMap;
use wonopcode_protocol::attachment::AttachmentLimits;

use serde::Serialize;
use serde_json::Value;
use wonopcode_protocol::{Message, ModelRequest, Part, Role};

use crate::arguments::{self, Arguments};
use crate::http::path_segment;
use crate::signature::Marked;

/// A base model's id, given as its id (`gemini-2.5-flash`) or as the resource name
/// `models.list` prints (`models/gemini-2.5-flash`): the catalog knows it by its id.
pub fn base_model_id(model: &str) -> &str {
    model.strip_prefix("models/").unwrap_or(model)
}

/// The streaming endpoint of `model` under `base` (`https://generativelanguage.googleapis.com/v1beta`).
/// The model is named as Google's SDKs accept it: a base model's id or resource name
/// (`base_model_id`), or a tuned model's (`tunedModels/my-model-123`). The id itself is one
/// encoded path segment.
pub fn endpoint(base: &str, model: &str) -> String {
    let resource = match model.strip_prefix("tunedModels/") {
        Some(tuned) => format!("tunedModels/{}", path_segment(tuned)),
        None => format!("models/{}", path_segment(base_model_id(model))),
    };
    format!("{base}/{resource}:streamGenerateContent?alt=sse")
}

/// The request body, borrowing the history and serialized straight to JSON.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestBody<'a> {
    contents: Vec<Content<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    system_instruction: Option<SystemInstruction>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tools<'a>>,
    generation_config: GenerationConfig,
}

/// One turn: `user` or `model`, and its parts.
#[derive(Debug, Serialize)]
struct Content<'a> {
    role: &'static str,
    parts: Vec<PartOut<'a>>,
}

/// The system prompt, as parts.
#[derive(Debug, Serialize)]
struct SystemInstruction {
    parts: Vec<TextOnly>,
}

/// A text part of the system prompt.
#[derive(Debug, Serialize)]
struct TextOnly {
    text: String,
}

/// One part of a turn.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum PartOut<'a> {
    /// Text, with the signature that came with it, if any.
    Text {
        text: &'a str,
        #[serde(rename = "thoughtSignature", skip_serializing_if = "Option::is_none")]
        thought_signature: Option<&'a str>,
    },
    /// A call the model made, with its signature.
    Call {
        #[serde(rename = "functionCall")]
        function_call: FunctionCall<'a>,
        #[serde(rename = "thoughtSignature", skip_serializing_if = "Option::is_none")]
        thought_signature: Option<&'a str>,
    },
    /// A call's result.
    Result {
        #[serde(rename = "functionResponse")]
        function_response: FunctionResponse<'a>,
    },
    /// An image or PDF, inline.
    Inline {
        #[serde(rename = "inlineData")]
        inline_data: InlineData<'a>,
    },
}

/// Bytes sent in the request, base64.
#[derive(Debug, Serialize)]
struct InlineData<'a> {
    #[serde(rename = "mimeType")]
    mime_type: &'a str,
    data: &'a str,
}

/// A call: the function's name and its arguments object.
#[derive(Debug, Serialize)]
struct FunctionCall<'a> {
    name: &'a str,
    args: Arguments<'a>,
}

/// A call's result, under the function's name.
#[derive(Debug, Serialize)]
struct FunctionResponse<'a> {
    name: &'a str,
    response: Outcome<'a>,
}

/// What a call returned (`content`), or how it failed (`error`).
#[derive(Debug, Serialize)]
struct Outcome<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
}

/// The functions offered.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Tools<'a> {
    function_declarations: Vec<FunctionDeclaration<'a>>,
}

/// One function, its arguments described by JSON Schema as the tools write it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct FunctionDeclaration<'a> {
    name: &'a str,
    description: &'a str,
    parameters_json_schema: &'a Value,
}

/// Output cap, temperature and thinking.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct GenerationConfig {
    max_output_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_config: Option<ThinkingConfig>,
}

/// Thought summaries asked for, and the budget when one is set.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ThinkingConfig {
    include_thoughts: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_budget: Option<u32>,
}

/// The request body. `reasons` is set for a thinking model: only those take a thinking
/// configuration.
pub fn request_body<'a>(
    max_output: u64,
    reasons: bool,
    request: &'a ModelRequest,
) -> RequestBody<'a> {
    let mut system: Vec<String> = request.system.iter().cloned().collect();
    let mut contents: Vec<Content<'a>> = Vec::new();
    let mut names: HashMap<&'a str, &'a str> = HashMap::new();
    for message in request.messages.iter() {
        let role = match message.role {
            // A system message inside the history joins the system instruction.
            Role::System => {
                system.push(message.text_content());
                continue;
            }
            Role::User | Role::Tool => "user",
            Role::Assistant => "model",
        };
        let parts = parts(message, &mut names);
        if parts.is_empty() {
            continue;
        }
        // Turns alternate: neighbours of one role merge.
        match contents.last_mut() {
            Some(last) if last.role == role => last.parts.extend(parts),
            _ => contents.push(Content { role, parts }),
        }
    }
    let options = &request.options;
    RequestBody {
        contents,
        system_instruction: (!system.is_empty()).then(|| SystemInstruction {
            parts: vec![TextOnly {
                text: system.join("\n\n"),
            }],
        }),
        tools: if request.tools.is_empty() {
            Vec::new()
        } else {
            vec![Tools {
                function_declarations: request
                    .tools
                    .iter()
                    .map(|t| FunctionDeclaration {
                        name: &t.name,
                        description: &t.description,
                        parameters_json_schema: &t.parameters,
                    })
                    .collect(),
            }]
        },
        generation_config: GenerationConfig {
            max_output_tokens: options.max_tokens.map_or(max_output, u64::from),
            temperature: options.temperature,
            thinking_config: reasons.then_some(ThinkingConfig {
                include_thoughts: true,
                thinking_budget: options.thinking_budget,
            }),
        },
    }
}

/// The parts of one message. Each call's name is remembered for its result, which Gemini
/// wants under the function's name. Thought summaries are not sent back (the signatures
/// carry the reasoning); another API's signed thinking is left out.
fn parts<'a>(message: &'a Message, names: &mut HashMap<&'a str, &'a str>) -> Vec<PartOut<'a>> {
    let mut out = Vec::new();
    let mut signature: Option<&'a str> = None;
    for part in message.parts.iter() {
        match part {
            Part::Thinking {
                signature: Some(s), ..
            } => {
                if let Some(own) = Marked::Gemini.unmark(s)
                    && let Some(earlier) = signature.replace(own)
                {
                    out.push(signed_text("", Some(earlier)));
                }
            }
            Part::ToolCall {
                id,
                name,
                arguments,
            } => {
                names.insert(id, name);
                out.push(PartOut::Call {
                    function_call: FunctionCall {
                        name,
                        args: arguments::object(arguments),
                    },
                    thought_signature: signature.take(),
                });
            }
            other => {
                // A signature that came after text (or alone) goes back on its own part.
                if let Some(own) = signature.take() {
                    out.push(signed_text("", Some(own)));
                }
                match other {
                    Part::Text { text } if !text.is_empty() => out.push(signed_text(text, None)),
                    Part::Image { media_type, data }
                    | Part::Document {
                        media_type, data, ..
                    } => {
                        out.push(PartOut::Inline {
                            inline_data: InlineData {
                                mime_type: media_type,
                                data,
                            },
                        });
                    }
                    Part::ToolResult {
                        call_id,
                        content,
                        is_error,
                    } => out.push(PartOut::Result {
                        function_response: FunctionResponse {
                            name: names.get(call_id.as_str()).copied().unwrap_or(call_id),
                            response: if *is_error {
                                Outcome {
                                    content: None,
                                    error: Some(content),
                                }
                            } else {
                                Outcome {
                                    content: Some(content),
                                    error: None,
                                }
                            },
                        },
                    }),
                    _ => {}
                }
            }
        }
    }
    if let Some(own) = signature {
        out.push(signed_text("", Some(own)));
    }
    out
}

fn signed_text<'a>(text: &'a str, thought_signature: Option<&'a str>) -> PartOut<'a> {
    PartOut::Text {
        text,
        thought_signature,
    }
}

/// Gemini's own API (`{base}/models/{model}:streamGenerateContent?alt=sse`).
pub(crate) struct GeminiWire;

impl crate::http::Wire for GeminiWire {
    /// Inline data must keep the whole request under 20 MB; base64 adds a third.
    fn attachment_limits(&self) -> AttachmentLimits {
        AttachmentLimits {
            api: "Gemini",
            image_bytes: 15 * 1024 * 1024,
            document_bytes: Some(15 * 1024 * 1024),
        }
    }

    fn endpoint(&self, base: &str, model: &str) -> String {
        endpoint(base, model)
    }

    fn body(
        &self,
        model: &wonopcode_protocol::ModelInfo,
        request: &ModelRequest,
        _cache: crate::prompt_cache::PromptCache,
    ) -> serde_json::Result<Vec<u8>> {
        serde_json::to_vec(&request_body(
            model.max_output,
            model.capabilities.thinking,
            request,
        ))
    }

    fn decoder(&self) -> Box<dyn crate::http::decoder::Decoder> {
        Box::<decode::GeminiDecoder>::default()
    }

    fn native_key(&self) -> crate::http::NativeKey {
        crate::http::NativeKey::Header("x-goog-api-key")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use wonopcode_protocol::{ContextPath, RequestOptions, ToolSchema};

    #[test]
    fn a_model_is_named_by_its_id_or_its_resource_name() {
        let base = "https://generativelanguage.googleapis.com/v1beta";
        let endpoint = |model| endpoint(base, model).replace(base, "");
        let sse = ":streamGenerateContent?alt=sse";
        assert_eq!(
            endpoint("gemini-2.5-flash"),
            format!("/models/gemini-2.5-flash{sse}")
        );
        assert_eq!(
            endpoint("models/gemini-2.5-flash"),
            format!("/models/gemini-2.5-flash{sse}")
        );
        assert_eq!(
            endpoint("tunedModels/number-gen-123"),
            format!("/tunedModels/number-gen-123{sse}")
        );
        // Anything else stays inside its segment.
        assert_eq!(
            endpoint("gemini 2?x/../y"),
            format!("/models/gemini%202%3Fx%2F..%2Fy{sse}")
        );
    }

    #[test]
    fn a_signed_call_and_its_result_map_to_parts() {
        let request = ModelRequest {
            context: ContextPath::root(),
            system: Some("be brief".into()),
            messages: vec![
                Message::user("weather in SF?"),
                Message::new(
                    Role::Assistant,
                    vec![
                        Part::Thinking {
                            text: String::new(),
                            signature: Some(Marked::Gemini.mark("EpEg")),
                        },
                        Part::ToolCall {
                            id: "call_0".into(),
                            name: "weather".into(),
                            arguments: r#"{"location":"San Francisco"}"#.into(),
                        },
                    ],
                ),
                Message::new(
                    Role::Tool,
                    vec![Part::ToolResult {
                        call_id: "call_0".into(),
                        content: "foggy".into(),
                        is_error: false,
                    }],
                ),
                Message::new(
                    Role::Assistant,
                    vec![
                        Part::Text {
                            text: "Foggy.".into(),
                        },
                        Part::Thinking {
                            text: String::new(),
                            signature: Some(Marked::Gemini.mark("EqsF")),
                        },
                        Part::Thinking {
                            text: "anthropic's".into(),
                            signature: Some("EqQB".into()),
                        },
                    ],
                ),
            ]
            .into(),
            tools: vec![ToolSchema {
                name: "weather".into(),
                description: "the weather".into(),
                parameters: json!({"type": "object", "additionalProperties": false}),
            }],
            options: RequestOptions {
                thinking_budget: Some(1024),
                ..RequestOptions::default()
            },
        };
        let body = serde_json::to_value(request_body(1000, true, &request)).unwrap();
        assert_eq!(
            body["contents"],
            json!([
                {"role": "user", "parts": [{"text": "weather in SF?"}]},
                {"role": "model", "parts": [{"functionCall": {"name": "weather", "args": {"location": "San Francisco"}}, "thoughtSignature": "EpEg"}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "weather", "response": {"content": "foggy"}}}]},
                {"role": "model", "parts": [{"text": "Foggy."}, {"text": "", "thoughtSignature": "EqsF"}]},
            ])
        );
        assert_eq!(body["systemInstruction"]["parts"][0]["text"], "be brief");
        assert_eq!(
            body["tools"][0]["functionDeclarations"][0]["parametersJsonSchema"]["additionalProperties"],
            false
        );
        assert_eq!(
            body["generationConfig"],
            json!({"maxOutputTokens": 1000, "thinkingConfig": {"includeThoughts": true, "thinkingBudget": 1024}})
        );
    }
}
