//! The Anthropic Messages API: request body and headers, and (in `decode`) its stream.

pub mod decode;

use serde_json::{Value, json};
use wonopcode_agent_loop::{Message, ModelRequest, Part, Role};

/// The API version header every request carries.
pub const API_VERSION: &str = "2023-06-01";

/// The request body for `POST {base}/messages`.
pub fn request_body(model: &str, max_output: u64, request: &ModelRequest) -> Value {
    let mut system: Vec<String> = request.system.iter().cloned().collect();
    let mut messages: Vec<(&'static str, Vec<Value>)> = Vec::new();
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
            Some((last, content)) if *last == role => content.extend(blocks),
            _ => messages.push((role, blocks)),
        }
    }
    let mut body = json!({
        "model": model,
        "max_tokens": request.options.max_tokens.map_or(max_output, u64::from),
        "stream": true,
        "messages": messages
            .into_iter()
            .map(|(role, content)| json!({ "role": role, "content": content }))
            .collect::<Vec<_>>(),
    });
    if !system.is_empty() {
        body["system"] = json!(system.join("\n\n"));
    }
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "description": t.description,
                    "input_schema": t.parameters,
                })
            })
            .collect();
    }
    if let Some(budget) = request.options.thinking_budget {
        body["thinking"] = json!({ "type": "enabled", "budget_tokens": budget });
    } else if let Some(t) = request.options.temperature {
        // The API refuses a temperature together with extended thinking.
        body["temperature"] = json!(t);
    }
    body
}

/// The content blocks of one message. Unsigned thinking cannot be sent back and is dropped;
/// signed and redacted thinking go back verbatim, as the API requires.
fn content_blocks(message: &Message) -> Vec<Value> {
    message
        .parts
        .iter()
        .filter_map(|part| match part {
            Part::Text { text } if text.is_empty() => None,
            Part::Text { text } => Some(json!({ "type": "text", "text": text })),
            Part::Thinking {
                text,
                signature: Some(signature),
            } => Some(json!({ "type": "thinking", "thinking": text, "signature": signature })),
            Part::Thinking { .. } => None,
            Part::RedactedThinking { data } => {
                Some(json!({ "type": "redacted_thinking", "data": data }))
            }
            Part::ToolCall {
                id,
                name,
                arguments,
            } => Some(json!({
                "type": "tool_use",
                "id": id,
                "name": name,
                "input": tool_input(arguments),
            })),
            Part::ToolResult {
                call_id,
                content,
                is_error,
            } => Some(json!({
                "type": "tool_result",
                "tool_use_id": call_id,
                "content": content,
                "is_error": is_error,
            })),
        })
        .collect()
}

/// A tool call's arguments as the JSON object the API wants; arguments the model produced
/// broken (already answered with an error) go back as `{}`.
fn tool_input(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => json!({}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
        let body = request_body("claude-x", 8192, &request);
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
