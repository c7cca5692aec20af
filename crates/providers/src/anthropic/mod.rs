//! The Anthropic Messages API: request body and headers, and (in `decode`) its stream.
//!
//! Requests ask the API to cache ([`PromptCache`]): one breakpoint after the stable prefix
//! (the tools and the system prompt, which the API reads in that order) and a moving one on
//! the newest message, plus the one the request before put on its newest message, so a
//! step that adds more than the API's 20-block lookback still reads what the last one
//! wrote. Three of the four breakpoints the API allows; below a model's minimum cacheable
//! length the API caches nothing and bills as without.

pub mod decode;

use serde::Serialize;
use serde_json::Value;
use wonopcode_protocol::attachment::AttachmentLimits;
use wonopcode_protocol::{Message, ModelRequest, Part, Role};

use crate::arguments::{self, Arguments};
use crate::prompt_cache::PromptCache;
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
    system: Option<System>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<ToolDefinition<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Thinking>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
}

/// A cache breakpoint: everything up to and including the block it marks is cached.
#[derive(Debug, Clone, Copy, Serialize)]
struct CacheControl {
    r#type: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    ttl: Option<&'static str>,
}

impl CacheControl {
    const FIVE_MINUTES: Self = Self {
        r#type: "ephemeral",
        ttl: None,
    };
}

/// The markers `cache` asks for: on the stable prefix, and on the newest messages.
impl CacheControl {
    /// The marker on the stable prefix, if any.
    fn prefix(cache: PromptCache) -> Option<Self> {
        match cache {
            PromptCache::FiveMinutes => Some(Self::FIVE_MINUTES),
            PromptCache::OneHour => Some(Self {
                r#type: "ephemeral",
                ttl: Some("1h"),
            }),
            PromptCache::Off => None,
        }
    }

    /// The marker on the newest messages, if any.
    fn moving(cache: PromptCache) -> Option<Self> {
        (cache != PromptCache::Off).then_some(Self::FIVE_MINUTES)
    }
}

/// The system prompt: a plain string without caching (as before caching, so such a body is
/// what it was), one text block with its breakpoint with.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum System {
    Text(String),
    Blocks([SystemBlock; 1]),
}

#[derive(Debug, Serialize)]
struct SystemBlock {
    r#type: &'static str,
    text: String,
    cache_control: CacheControl,
}

/// One turn of `messages`: a role and its content blocks.
#[derive(Debug, Serialize)]
struct Turn<'a> {
    role: &'static str,
    content: Vec<Marked<'a>>,
}

/// A content block, and the breakpoint on it if it has one.
#[derive(Debug, Serialize)]
struct Marked<'a> {
    #[serde(flatten)]
    block: Block<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
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
        /// Sent only when true: false is the API's default, and every request would carry
        /// it again for each result in the history.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
    Image {
        source: Source<'a>,
    },
    /// A PDF; `title` is the file's name, which the model is shown.
    Document {
        source: Source<'a>,
        title: &'a str,
    },
}

/// An image's or document's bytes, inline.
#[derive(Debug, Serialize)]
struct Source<'a> {
    r#type: &'static str,
    media_type: &'a str,
    data: &'a str,
}

impl<'a> Source<'a> {
    fn base64(media_type: &'a str, data: &'a str) -> Self {
        Self {
            r#type: "base64",
            media_type,
            data,
        }
    }
}

/// A tool offered to the model.
#[derive(Debug, Serialize)]
struct ToolDefinition<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

/// Extended thinking with a token budget.
#[derive(Debug, Serialize)]
struct Thinking {
    r#type: &'static str,
    budget_tokens: u32,
}

/// How the body differs with who serves the Messages API. Anthropic reads the model and
/// the wish to stream from the body; Bedrock and Vertex take the model from the URL
/// (Bedrock the streaming too) and want their own `anthropic_version` in the body instead
/// of a header. Each cloud's module states its own (`bedrock::HOST`, `vertex::HOST`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Host {
    /// The body names the model.
    pub model_in_body: bool,
    /// The `anthropic_version` the body carries, when the host wants one there.
    pub version_in_body: Option<&'static str>,
    /// The body asks to stream (`"stream": true`).
    pub stream_in_body: bool,
}

impl Host {
    /// Anthropic's API, or a server that speaks it.
    pub const ANTHROPIC: Host = Host {
        model_in_body: true,
        version_in_body: None,
        stream_in_body: true,
    };
}

/// The request body for `POST {base}/messages`, or its Bedrock or Vertex form, with the
/// breakpoints `cache` asks for.
pub fn request_body<'a>(
    host: Host,
    model: &'a str,
    max_output: u64,
    request: &'a ModelRequest,
    cache: PromptCache,
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
        let blocks: Vec<Marked<'a>> = content_blocks(message)
            .into_iter()
            .map(|block| Marked {
                block,
                cache_control: None,
            })
            .collect();
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
    mark_newest(&mut messages, cache);
    let system = (!system.is_empty()).then(|| system.join("\n\n"));
    let prefix = CacheControl::prefix(cache);
    let last_tool = request.tools.len().checked_sub(1);
    let options = &request.options;
    RequestBody {
        model: host.model_in_body.then_some(model),
        anthropic_version: host.version_in_body,
        max_tokens: options.max_tokens.map_or(max_output, u64::from),
        stream: host.stream_in_body.then_some(true),
        messages,
        // The prefix's breakpoint closes the system prompt, or the tools when there is none.
        tools: request
            .tools
            .iter()
            .enumerate()
            .map(|(i, t)| ToolDefinition {
                name: &t.name,
                description: &t.description,
                input_schema: &t.parameters,
                cache_control: prefix.filter(|_| system.is_none() && Some(i) == last_tool),
            })
            .collect(),
        system: system.map(|text| match prefix {
            Some(cache_control) => System::Blocks([SystemBlock {
                r#type: "text",
                text,
                cache_control,
            }]),
            None => System::Text(text),
        }),
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

/// Puts the moving breakpoints: on the last block of the newest turn, and of the newest
/// user turn before it (the newest one of the request before, when that ended on a user
/// turn, as a tool loop's do). Thinking blocks cannot carry one; no turn ends on one.
fn mark_newest(messages: &mut [Turn<'_>], cache: PromptCache) {
    let Some(marker) = CacheControl::moving(cache) else {
        return;
    };
    let Some(newest) = messages.len().checked_sub(1) else {
        return;
    };
    let earlier = messages[..newest].iter().rposition(|t| t.role == "user");
    for turn in [Some(newest), earlier].into_iter().flatten() {
        if let Some(last) = messages[turn].content.last_mut() {
            last.cache_control = Some(marker);
        }
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
            Part::Image { media_type, data } => Some(Block::Image {
                source: Source::base64(media_type, data),
            }),
            Part::Document {
                media_type,
                data,
                name,
            } => Some(Block::Document {
                source: Source::base64(media_type, data),
                title: name,
            }),
        })
        .collect()
}

/// The Messages API as Anthropic serves it (Bedrock and Vertex wrap the same body in their
/// own endpoint, framing and signature: `bedrock::BedrockWire`, `vertex::VertexWire`).
pub(crate) struct MessagesWire(pub Host);

impl crate::http::Wire for MessagesWire {
    /// 5 MB an image, a 32 MB request (the API's documented limits).
    fn attachment_limits(&self) -> AttachmentLimits {
        AttachmentLimits {
            api: "Anthropic Messages",
            image_bytes: 5 * 1024 * 1024,
            document_bytes: Some(32 * 1024 * 1024),
        }
    }

    /// Anthropic's base URL is given with or without its version, as `ANTHROPIC_BASE_URL`
    /// is for the SDKs and proxies (`https://api.anthropic.com`).
    fn endpoint(&self, base: &str, _model: &str) -> String {
        let versioned = reqwest::Url::parse(base)
            .is_ok_and(|url| url.path().trim_end_matches('/').ends_with("/v1"));
        if versioned {
            format!("{base}/messages")
        } else {
            format!("{base}/v1/messages")
        }
    }

    fn body(
        &self,
        model: &wonopcode_protocol::ModelInfo,
        request: &ModelRequest,
        cache: PromptCache,
    ) -> serde_json::Result<Vec<u8>> {
        serde_json::to_vec(&request_body(
            self.0,
            &model.id,
            model.max_output,
            request,
            cache,
        ))
    }

    fn decoder(&self) -> Box<dyn crate::http::decoder::Decoder> {
        Box::<decode::AnthropicDecoder>::default()
    }

    fn own_headers(&self) -> &'static [(&'static str, &'static str)] {
        &[("anthropic-version", API_VERSION)]
    }

    fn native_key(&self) -> crate::http::NativeKey {
        crate::http::NativeKey::Header("x-api-key")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use wonopcode_protocol::{ContextPath, RequestOptions, ToolSchema};

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
        let body = body_of(&request, PromptCache::Off);
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

    /// A failed result says so; a good one leaves `is_error` to the API's default (false),
    /// so the history does not carry it once per result on every request.
    #[test]
    fn only_a_failed_result_is_marked() {
        let result = |is_error| {
            Message::new(
                Role::Tool,
                vec![Part::ToolResult {
                    call_id: "t1".into(),
                    content: "out".into(),
                    is_error,
                }],
            )
        };
        let request = ModelRequest {
            context: ContextPath::root(),
            system: None,
            messages: vec![Message::user("go"), result(false), result(true)].into(),
            tools: Vec::new(),
            options: RequestOptions::default(),
        };
        let body = body_of(&request, PromptCache::Off);
        let blocks = &body["messages"][0]["content"];
        assert_eq!(blocks[1]["type"], "tool_result");
        assert!(blocks[1].get("is_error").is_none(), "{body}");
        assert_eq!(blocks[2]["is_error"], true, "{body}");
    }

    /// A tool loop's requests as the loop makes them: each adds the answer and its result.
    fn tool_loop(steps: usize) -> Vec<ModelRequest> {
        let mut messages = vec![Message::user("read the files")];
        let mut requests = Vec::new();
        for step in 0..steps {
            requests.push(ModelRequest {
                context: ContextPath::root(),
                system: Some("be brief".into()),
                messages: messages.clone().into(),
                tools: vec![
                    ToolSchema {
                        name: "read".into(),
                        description: "read a file".into(),
                        parameters: json!({"type": "object"}),
                    },
                    ToolSchema {
                        name: "glob".into(),
                        description: "find files".into(),
                        parameters: json!({"type": "object"}),
                    },
                ],
                options: RequestOptions::default(),
            });
            let id = format!("t{step}");
            messages.push(Message::new(
                Role::Assistant,
                vec![Part::ToolCall {
                    id: id.clone(),
                    name: "read".into(),
                    arguments: format!(r#"{{"path": "f{step}.rs"}}"#),
                }],
            ));
            messages.push(Message::new(
                Role::Tool,
                vec![Part::ToolResult {
                    call_id: id,
                    content: format!("fn f{step}() {{}}"),
                    is_error: false,
                }],
            ));
        }
        requests
    }

    fn body_of(request: &ModelRequest, cache: PromptCache) -> Value {
        serde_json::to_value(request_body(
            Host::ANTHROPIC,
            "claude-x",
            8192,
            request,
            cache,
        ))
        .unwrap()
    }

    /// Where a body's breakpoints are: `tools/I`, `system`, `messages/T/B`, with their TTL.
    fn breakpoints(body: &Value) -> Vec<(String, Value)> {
        let mut found = Vec::new();
        for (i, tool) in body["tools"].as_array().into_iter().flatten().enumerate() {
            if !tool["cache_control"].is_null() {
                found.push((format!("tools/{i}"), tool["cache_control"].clone()));
            }
        }
        if let Some(blocks) = body["system"].as_array() {
            for block in blocks.iter().filter(|b| !b["cache_control"].is_null()) {
                found.push(("system".to_owned(), block["cache_control"].clone()));
            }
        }
        for (t, turn) in body["messages"].as_array().unwrap().iter().enumerate() {
            for (b, block) in turn["content"].as_array().unwrap().iter().enumerate() {
                if !block["cache_control"].is_null() {
                    found.push((format!("messages/{t}/{b}"), block["cache_control"].clone()));
                }
            }
        }
        found
    }

    /// `body` without its breakpoints: what the API's cache compares.
    fn unmarked(mut body: Value) -> Value {
        fn strip(value: &mut Value) {
            match value {
                Value::Object(map) => {
                    map.remove("cache_control");
                    map.values_mut().for_each(strip);
                }
                Value::Array(items) => items.iter_mut().for_each(strip),
                _ => {}
            }
        }
        strip(&mut body);
        if let Some(blocks) = body["system"].as_array() {
            body["system"] = blocks[0]["text"].clone();
        }
        body
    }

    #[test]
    fn breakpoints_close_the_prefix_and_follow_the_newest_messages() {
        let requests = tool_loop(3);
        let five = json!({"type": "ephemeral"});
        let first = body_of(&requests[0], PromptCache::FiveMinutes);
        assert_eq!(
            breakpoints(&first),
            [
                ("system".into(), five.clone()),
                ("messages/0/0".into(), five.clone())
            ]
        );
        let third = body_of(&requests[2], PromptCache::FiveMinutes);
        // The newest turn, and the one the request before marked.
        assert_eq!(
            breakpoints(&third),
            [
                ("system".into(), five.clone()),
                ("messages/2/0".into(), five.clone()),
                ("messages/4/0".into(), five.clone()),
            ]
        );
        let hour = body_of(&requests[2], PromptCache::OneHour);
        assert_eq!(
            breakpoints(&hour)[0].1,
            json!({"type": "ephemeral", "ttl": "1h"})
        );
        assert_eq!(
            breakpoints(&hour)[1].1,
            five,
            "the moving ones stay at 5 minutes"
        );
        // Without a system prompt, the last tool closes the prefix.
        let mut bare = requests[0].clone();
        bare.system = None;
        assert_eq!(
            breakpoints(&body_of(&bare, PromptCache::FiveMinutes))[0].0,
            "tools/1"
        );
        // Off: the body is what it was before caching.
        let off = body_of(&requests[2], PromptCache::Off);
        assert!(breakpoints(&off).is_empty());
        assert_eq!(off["system"], "be brief");
        assert_eq!(unmarked(third), off);
    }

    #[test]
    fn each_request_starts_with_what_the_one_before_cached() {
        let requests = tool_loop(6);
        for pair in requests.windows(2) {
            let (before, after) = (
                body_of(&pair[0], PromptCache::FiveMinutes),
                body_of(&pair[1], PromptCache::FiveMinutes),
            );
            let marked = breakpoints(&before);
            let (last, _) = marked.last().unwrap();
            let turn: usize = last.split('/').nth(1).unwrap().parse().unwrap();
            let (before, after) = (unmarked(before), unmarked(after));
            assert_eq!(before["tools"], after["tools"]);
            assert_eq!(before["system"], after["system"]);
            let cached = &before["messages"].as_array().unwrap()[..=turn];
            assert_eq!(cached, &after["messages"].as_array().unwrap()[..=turn]);
            // And the next request marks the block the one before cached last.
            assert!(
                breakpoints(&body_of(&pair[1], PromptCache::FiveMinutes))
                    .iter()
                    .any(|(at, _)| at == last),
                "{last}"
            );
        }
    }

    #[test]
    fn a_compaction_and_a_child_keep_the_cached_prefix_and_start_a_new_moving_one() {
        let requests = tool_loop(4);
        let last = requests.last().unwrap();
        let before = body_of(last, PromptCache::FiveMinutes);
        // A compaction: the summary and the kept tail replace the history, once.
        let mut compacted = last.clone();
        compacted.messages = vec![
            Message::user("[Summary of the earlier conversation]\nread a.rs and b.rs"),
            last.messages.last().unwrap().clone(),
        ]
        .into();
        let after = body_of(&compacted, PromptCache::FiveMinutes);
        // The tools and the system prompt, up to the prefix's breakpoint, are unchanged.
        assert_eq!(breakpoints(&after)[0].0, "system");
        let (before_plain, after_plain) = (unmarked(before), unmarked(after.clone()));
        assert_eq!(before_plain["tools"], after_plain["tools"]);
        assert_eq!(before_plain["system"], after_plain["system"]);
        // The request after it starts with what the compacted one cached.
        let mut next = compacted.clone();
        let mut messages = next.messages.to_vec();
        messages.push(Message::new(
            Role::Assistant,
            vec![Part::Text { text: "ok".into() }],
        ));
        messages.push(Message::user("go on"));
        next.messages = messages.into();
        let marked = breakpoints(&after);
        let turn: usize = marked
            .last()
            .unwrap()
            .0
            .split('/')
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        let next_plain = unmarked(body_of(&next, PromptCache::FiveMinutes));
        assert_eq!(
            &after_plain["messages"].as_array().unwrap()[..=turn],
            &next_plain["messages"].as_array().unwrap()[..=turn]
        );
        // (Whether a child sends its parent's prefix is not this body's to say: it never
        // reads the request's context, so a child's request with the parent's prompt and
        // tools gives the same prefix by construction. What a child is given is the context
        // tree's (`crates/contexts`), not the provider's.)
    }
}
