//! OpenAI-compatible Chat Completions (OpenAI, OpenRouter, DeepSeek, Groq, vLLM, Ollama,
//! llama.cpp): request body, and (in `decode`) its stream.

pub mod decode;

use std::borrow::Cow;
use wonopcode_protocol::attachment::AttachmentLimits;

use serde::Serialize;
use serde_json::Value;
use wonopcode_protocol::attachment::DataUrl;
use wonopcode_protocol::{ModelRequest, Part, Role};

pub use crate::api::MaxTokensField;

/// The request body for `POST {base}/chat/completions`, borrowing the history and
/// serialized straight to JSON (as the Anthropic body is, and for the same reason).
#[derive(Debug, Serialize)]
pub struct RequestBody<'a> {
    model: &'a str,
    messages: Vec<ChatMessage<'a>>,
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<FunctionTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
}

/// Asks for a last chunk with the usage.
#[derive(Debug, Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// One entry of `messages`. `content` is `null` only for an assistant message that is all
/// tool calls.
#[derive(Debug, Serialize)]
struct ChatMessage<'a> {
    role: &'static str,
    content: Option<Content<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<ToolCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

impl<'a> ChatMessage<'a> {
    fn text(role: &'static str, content: impl Into<Cow<'a, str>>) -> Self {
        Self {
            role,
            content: Some(Content::Text(content.into())),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    /// A user message: its text as a string, as every compatible server takes it, or a list
    /// of parts when it carries images or documents.
    fn user(message: &'a wonopcode_protocol::Message) -> Self {
        let attached = message
            .parts
            .iter()
            .any(|p| matches!(p, Part::Image { .. } | Part::Document { .. }));
        if !attached {
            return Self::text("user", message.text_content());
        }
        let parts = message
            .parts
            .iter()
            .filter_map(|part| match part {
                Part::Text { text } if !text.is_empty() => Some(ChatPart::Text { text }),
                Part::Image { media_type, data } => Some(ChatPart::ImageUrl {
                    image_url: ImageUrl {
                        url: DataUrl { media_type, data },
                    },
                }),
                Part::Document {
                    media_type,
                    data,
                    name,
                } => Some(ChatPart::File {
                    file: FileData {
                        filename: name,
                        file_data: DataUrl { media_type, data },
                    },
                }),
                _ => None,
            })
            .collect();
        Self {
            content: Some(Content::Parts(parts)),
            ..Self::text("user", "")
        }
    }
}

/// A message's content: text, or parts when it carries attachments.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Content<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<ChatPart<'a>>),
}

/// One part of a user message's content.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ChatPart<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: ImageUrl<'a> },
    File { file: FileData<'a> },
}

/// An image, inline as a data URL.
#[derive(Debug, Serialize)]
struct ImageUrl<'a> {
    url: DataUrl<'a>,
}

/// A PDF, inline as a data URL, with its name.
#[derive(Debug, Serialize)]
struct FileData<'a> {
    filename: &'a str,
    file_data: DataUrl<'a>,
}

/// One call in an assistant message.
#[derive(Debug, Serialize)]
struct ToolCall<'a> {
    id: &'a str,
    r#type: &'static str,
    function: FunctionCall<'a>,
}

/// A call's function and its arguments, the JSON text as the model wrote it.
#[derive(Debug, Serialize)]
struct FunctionCall<'a> {
    name: &'a str,
    arguments: &'a str,
}

/// A tool offered to the model.
#[derive(Debug, Serialize)]
struct FunctionTool<'a> {
    r#type: &'static str,
    function: FunctionDefinition<'a>,
}

/// A tool's name, description and argument schema.
#[derive(Debug, Serialize)]
struct FunctionDefinition<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

/// The request body for `POST {base}/chat/completions`.
pub fn request_body<'a>(
    model: &'a str,
    max_output: u64,
    cap_field: MaxTokensField,
    request: &'a ModelRequest,
) -> RequestBody<'a> {
    let mut messages = Vec::new();
    if let Some(system) = &request.system {
        messages.push(ChatMessage::text("system", system.as_str()));
    }
    for message in request.messages.iter() {
        match message.role {
            Role::System => messages.push(ChatMessage::text("system", message.text_content())),
            Role::User => messages.push(ChatMessage::user(message)),
            Role::Assistant => {
                let tool_calls: Vec<ToolCall<'a>> = message
                    .tool_calls()
                    .map(|(id, name, arguments)| ToolCall {
                        id,
                        r#type: "function",
                        function: FunctionCall { name, arguments },
                    })
                    .collect();
                // Thinking is not sent back: DeepSeek refuses `reasoning_content` in input.
                let text = message.text_content();
                // `null`, not `""`, beside tool calls and no text.
                let content = (!text.is_empty() || tool_calls.is_empty()).then_some(text);
                messages.push(ChatMessage {
                    role: "assistant",
                    content: content.map(|text| Content::Text(Cow::Owned(text))),
                    tool_calls,
                    tool_call_id: None,
                });
            }
            Role::Tool => {
                for part in message.parts.iter() {
                    if let Part::ToolResult {
                        call_id, content, ..
                    } = part
                    {
                        messages.push(ChatMessage {
                            tool_call_id: Some(call_id),
                            ..ChatMessage::text("tool", content.as_str())
                        });
                    }
                }
            }
        }
    }
    let cap = request.options.max_tokens.map_or(max_output, u64::from);
    RequestBody {
        model,
        messages,
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        max_tokens: (cap_field == MaxTokensField::MaxTokens).then_some(cap),
        max_completion_tokens: (cap_field == MaxTokensField::MaxCompletionTokens).then_some(cap),
        tools: request
            .tools
            .iter()
            .map(|t| FunctionTool {
                r#type: "function",
                function: FunctionDefinition {
                    name: &t.name,
                    description: &t.description,
                    parameters: &t.parameters,
                },
            })
            .collect(),
        temperature: request.options.temperature,
    }
}

/// Chat Completions (`POST {base}/chat/completions`), its output cap in `field`.
pub(crate) struct ChatWire(pub MaxTokensField);

impl crate::http::Wire for ChatWire {
    /// OpenAI's limits; a compatible server that takes less says so in its refusal.
    fn attachment_limits(&self) -> AttachmentLimits {
        AttachmentLimits {
            api: "Chat Completions",
            image_bytes: 20 * 1024 * 1024,
            document_bytes: Some(32 * 1024 * 1024),
        }
    }

    fn endpoint(&self, base: &str, _model: &str) -> String {
        format!("{base}/chat/completions")
    }

    fn body(
        &self,
        model: &wonopcode_protocol::ModelInfo,
        request: &ModelRequest,
        _cache: crate::prompt_cache::PromptCache,
    ) -> serde_json::Result<Vec<u8>> {
        serde_json::to_vec(&request_body(&model.id, model.max_output, self.0, request))
    }

    fn decoder(&self) -> Box<dyn crate::http::decoder::Decoder> {
        Box::<decode::OpenAiDecoder>::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wonopcode_protocol::{ContextPath, Message, RequestOptions};

    #[test]
    fn tool_round_maps_to_assistant_calls_and_tool_messages() {
        let request = ModelRequest {
            context: ContextPath::root(),
            system: Some("sys".into()),
            messages: vec![
                Message::user("go"),
                Message::new(
                    Role::Assistant,
                    vec![
                        Part::Thinking {
                            text: "secret".into(),
                            signature: None,
                        },
                        Part::ToolCall {
                            id: "c1".into(),
                            name: "read".into(),
                            arguments: r#"{"path":"a"}"#.into(),
                        },
                        Part::ToolCall {
                            id: "c2".into(),
                            name: "read".into(),
                            arguments: r#"{"path":"b"}"#.into(),
                        },
                    ],
                ),
                Message::new(
                    Role::Tool,
                    vec![
                        Part::ToolResult {
                            call_id: "c1".into(),
                            content: "A".into(),
                            is_error: false,
                        },
                        Part::ToolResult {
                            call_id: "c2".into(),
                            content: "B".into(),
                            is_error: true,
                        },
                    ],
                ),
            ]
            .into(),
            tools: Vec::new(),
            options: RequestOptions::default(),
        };
        let body = serde_json::to_value(request_body(
            "m",
            100,
            MaxTokensField::MaxCompletionTokens,
            &request,
        ))
        .unwrap();
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 5);
        assert_eq!(messages[2]["content"], Value::Null);
        assert_eq!(messages[2]["tool_calls"][1]["id"], "c2");
        assert_eq!(messages[4]["tool_call_id"], "c2");
        assert_eq!(body["max_completion_tokens"], 100);
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert!(!body.to_string().contains("secret"));
    }
}
