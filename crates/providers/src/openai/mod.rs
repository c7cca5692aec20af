//! OpenAI-compatible Chat Completions (OpenAI, OpenRouter, DeepSeek, Groq, vLLM, Ollama,
//! llama.cpp): request body, and (in `decode`) its stream.

pub mod decode;

use serde_json::{Value, json};
use wonopcode_agent_loop::{ModelRequest, Part, Role};

/// How a server wants the output cap named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaxTokensField {
    /// `max_tokens`: every compatible server.
    MaxTokens,
    /// `max_completion_tokens`: OpenAI itself (its reasoning models refuse `max_tokens`).
    MaxCompletionTokens,
}

/// The request body for `POST {base}/chat/completions`.
pub fn request_body(
    model: &str,
    max_output: u64,
    cap_field: MaxTokensField,
    request: &ModelRequest,
) -> Value {
    let mut messages = Vec::new();
    if let Some(system) = &request.system {
        messages.push(json!({ "role": "system", "content": system }));
    }
    for message in request.messages.iter() {
        match message.role {
            Role::System => {
                messages.push(json!({ "role": "system", "content": message.text_content() }))
            }
            Role::User => {
                messages.push(json!({ "role": "user", "content": message.text_content() }))
            }
            Role::Assistant => {
                let calls: Vec<Value> = message
                    .tool_calls()
                    .map(|(id, name, arguments)| {
                        json!({
                            "id": id,
                            "type": "function",
                            "function": { "name": name, "arguments": arguments },
                        })
                    })
                    .collect();
                // Thinking is not sent back: DeepSeek refuses `reasoning_content` in input.
                let text = message.text_content();
                let mut entry = json!({ "role": "assistant", "content": text });
                if !calls.is_empty() {
                    if text.is_empty() {
                        entry["content"] = Value::Null;
                    }
                    entry["tool_calls"] = Value::Array(calls);
                }
                messages.push(entry);
            }
            Role::Tool => {
                for part in message.parts.iter() {
                    if let Part::ToolResult {
                        call_id, content, ..
                    } = part
                    {
                        messages.push(json!({
                            "role": "tool",
                            "tool_call_id": call_id,
                            "content": content,
                        }));
                    }
                }
            }
        }
    }
    let cap = request.options.max_tokens.map_or(max_output, u64::from);
    let mut body = json!({
        "model": model,
        "messages": messages,
        "stream": true,
        "stream_options": { "include_usage": true },
    });
    let key = match cap_field {
        MaxTokensField::MaxTokens => "max_tokens",
        MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
    };
    body[key] = json!(cap);
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    },
                })
            })
            .collect();
    }
    if let Some(t) = request.options.temperature {
        body["temperature"] = json!(t);
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use wonopcode_agent_loop::{ContextPath, Message, RequestOptions};

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
        let body = request_body("m", 100, MaxTokensField::MaxCompletionTokens, &request);
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
