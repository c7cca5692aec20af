//! The Anthropic Messages API: request body and headers, and (in `decode`) its stream.

pub mod decode;

use serde::Serialize;
use serde_json::Value;
use wonopcode_agent_loop::{Message, ModelRequest, Part, Role};

use crate::arguments::{self, Arguments};
use crate::signature;

/// The API version header every request carries.
pub const API_VERSION: &str = "2023-06-01";

/// The request body for `POST {base}/messages`, borrowing the history: it is serialized
/// straight to JSON once per request, with no `serde_json::Value` tree of the whole history
/// built, sorted and dropped in between (that tree was most of a long session's per-response
/// cost).
#[derive(Debug, Serialize)]
pub struct RequestBody<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    anthropic_version: Option<&'static str>,
    max_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream: Option<bool>,
    messages: Vec<Turn<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<ToolDefinition<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Thinking>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
}

/// One turn of `messages`: a role and its content blocks.
#[derive(Debug, Serialize)]
struct Turn<'a> {
    role: &'static str,
    content: Vec<Block<'a>>,
}

/// One content block, as the API names its fields.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: &'a str,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Arguments<'a>,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: &'a str,
        is_error: bool,
    },
}

/// A tool offered to the model.
#[derive(Debug, Serialize)]
struct ToolDefinition<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
}

/// Extended thinking with a token budget.
#[derive(Debug, Serialize)]
struct Thinking {
    r#type: &'static str,
    budget_tokens: u32,
}

/// Who serves the Messages API. Anthropic reads the model and the wish to stream from the
/// body; Bedrock and Vertex take the model from the URL (Bedrock the streaming too) and want
/// their own `anthropic_version` in the body instead of a header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    /// Anthropic's API, or a server that speaks it.
    Anthropic,
    /// Amazon Bedrock's `InvokeModelWithResponseStream`.
    Bedrock,
    /// Google Vertex AI's `streamRawPredict`.
    Vertex,
}

/// The request body for `POST {base}/messages`, or its Bedrock or Vertex form.
pub fn request_body<'a>(
    host: Host,
    model: &'a str,
    max_output: u64,
    request: &'a ModelRequest,
) -> RequestBody<'a> {
    let mut system: Vec<String> = request.system.iter().cloned().collect();
    let mut messages: Vec<Turn<'a>> = Vec::new();
    for message in request.messages.iter() {
        let role = match message.role {
            // A system message inside the history joins the system prompt: the API has no
            // system role in `messages`.
            Role::System => {
                system.push(message.text_content());
                continue;
            }
            Role::User | Role::Tool => "user",
            Role::Assistant => "assistant",
        };
        let blocks = content_blocks(message);
        if blocks.is_empty() {
            continue;
        }
        // The API wants user and assistant turns to alternate: merge neighbours.
        match messages.last_mut() {
            Some(last) if last.role == role => last.content.extend(blocks),
            _ => messages.push(Turn {
                role,
                content: blocks,
            }),
        }
    }
    let options = &request.options;
    RequestBody {
        model: (host == Host::Anthropic).then_some(model),
        anthropic_version: match host {
            Host::Anthropic => None,
            Host::Bedrock => Some(crate::bedrock::ANTHROPIC_VERSION),
            Host::Vertex => Some(crate::vertex::ANTHROPIC_VERSION),
        },
        max_tokens: options.max_tokens.map_or(max_output, u64::from),
        stream: (host != Host::Bedrock).then_some(true),
        messages,
        system: (!system.is_empty()).then(|| system.join("\n\n")),
        tools: request
            .tools
            .iter()
            .map(|t| ToolDefinition {
                name: &t.name,
                description: &t.description,
                input_schema: &t.parameters,
            })
            .collect(),
        thinking: options.thinking_budget.map(|budget| Thinking {
            r#type: "enabled",
            budget_tokens: budget,
        }),
        // The API refuses a temperature together with extended thinking.
        temperature: options
            .temperature
            .filter(|_| options.thinking_budget.is_none()),
    }
}

/// The content blocks of one message. Unsigned thinking cannot be sent back and is dropped;
/// signed and redacted thinking go back verbatim, as the API requires.
fn content_blocks(message: &Message) -> Vec<Block<'_>> {
    message
        .parts
        .iter()
        .filter_map(|part| match part {
            Part::Text { text } if text.is_empty() => None,
            Part::Text { text } => Some(Block::Text { text }),
            // Another API's reasoning cannot be read by this one.
            Part::Thinking {
                signature: Some(signature),
                ..
            } if signature::is_marked(signature) => None,
            Part::Thinking {
                text,
                signature: Some(signature),
            } => Some(Block::Thinking {
                thinking: text,
                signature,
            }),
            Part::Thinking { .. } => None,
            Part::RedactedThinking { data } => Some(Block::RedactedThinking { data }),
            Part::ToolCall {
                id,
                name,
                arguments,
            } => Some(Block::ToolUse {
                id,
                name,
                input: arguments::object(arguments),
            }),
            Part::ToolResult {
                call_id,
                content,
                is_error,
            } => Some(Block::ToolResult {
                tool_use_id: call_id,
                content,
                is_error: *is_error,
            }),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use wonopcode_agent_loop::{ContextPath, RequestOptions, ToolSchema};

    #[test]
    fn history_maps_to_alternating_blocks() {
        let request = ModelRequest {
            context: ContextPath::root(),
            system: Some("be brief".into()),
            messages: vec![
                Message::user("list files"),
                Message::new(
                    Role::Assistant,
                    vec![
                        Part::Thinking {
                            text: "hm".into(),
                            signature: Some("sig".into()),
                        },
                        Part::ToolCall {
                            id: "t1".into(),
                            name: "glob".into(),
                            arguments: "".into(),
                        },
                    ],
                ),
                Message::new(
                    Role::Tool,
                    vec![Part::ToolResult {
                        call_id: "t1".into(),
                        content: "a.rs".into(),
                        is_error: false,
                    }],
                ),
                Message::user("and now?"),
            ]
            .into(),
            tools: vec![ToolSchema {
                name: "glob".into(),
                description: "find files".into(),
                parameters: json!({"type": "object"}),
            }],
            options: RequestOptions::default(),
        };
        let body = serde_json::to_value(request_body(Host::Anthropic, "claude-x", 8192, &request))
            .unwrap();
        assert_eq!(body["system"], "be brief");
        assert_eq!(body["max_tokens"], 8192);
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(
            messages.len(),
            3,
            "tool results and the next prompt merge: {body}"
        );
        assert_eq!(messages[1]["content"][0]["signature"], "sig");
        assert_eq!(messages[1]["content"][1]["input"], json!({}));
        assert_eq!(messages[2]["content"][0]["type"], "tool_result");
        assert_eq!(messages[2]["content"][1]["text"], "and now?");
        assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
    }
}
