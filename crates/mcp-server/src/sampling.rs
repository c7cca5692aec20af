//! The calling agent's model as a served run's model (`--provider mcp-client`): each request
//! becomes an MCP `sampling/createMessage` to the client, which answers with its own model
//! (the user approves there), so wonopcode needs no key of its own. The history maps over
//! message by message; tool calls and results travel as sampling tool use (SEP-1577) when the
//! client supports it, and otherwise the model is asked for text only.

// MCP sampling is deprecated by SEP-2577 (2026), and still the way a 2025-11-25 client lends
// its model.
#![allow(deprecated)]

use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::{
    ContentBlock, CreateMessageRequestParams, ImageContent, Role as SamplingRole, SamplingMessage,
    SamplingMessageContentBlock, Tool as McpTool,
};
use rmcp::{Peer, RoleServer};
use wonopcode_protocol::model::{ChunkStream, ModelError, ModelRequest, StopReason, StreamChunk};
use wonopcode_protocol::usage::{ModelCapabilities, ModelInfo};
use wonopcode_protocol::{LanguageModel, Message, Part, Role};

/// The provider name that asks for the client's model.
pub const CLIENT_PROVIDER: &str = "mcp-client";

/// How long the client (and its user, who may be asked to approve) has to answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(600);

/// Output limit asked for when the loop sets none.
const DEFAULT_MAX_TOKENS: u32 = 8192;

/// The model of the client on the other end of `peer`.
pub struct ClientModel {
    peer: Peer<RoleServer>,
    info: ModelInfo,
    tools: bool,
}

impl ClientModel {
    /// Asks through `peer`; tools go along when the client said it samples with tools.
    pub fn new(peer: Peer<RoleServer>) -> Self {
        let tools = peer
            .peer_info()
            .and_then(|info| info.capabilities.sampling.clone())
            .is_some_and(|sampling| sampling.tools.is_some());
        Self {
            peer,
            info: ModelInfo {
                id: CLIENT_PROVIDER.to_owned(),
                provider: CLIENT_PROVIDER.to_owned(),
                context_window: 200_000,
                max_output: u64::from(DEFAULT_MAX_TOKENS),
                pricing: None,
                capabilities: ModelCapabilities {
                    tools,
                    ..ModelCapabilities::default()
                },
            },
            tools,
        }
    }

    /// Whether the client can sample at all.
    pub fn available(peer: &Peer<RoleServer>) -> bool {
        peer.peer_info()
            .is_some_and(|info| info.capabilities.sampling.is_some())
    }
}

/// `message` as sampling messages: text, tool calls (assistant) and results (user); thinking
/// stays with wonopcode.
fn sampling_message(message: &Message) -> Option<SamplingMessage> {
    let role = match message.role {
        Role::Assistant => SamplingRole::Assistant,
        _ => SamplingRole::User,
    };
    let blocks: Vec<SamplingMessageContentBlock> = message
        .parts
        .iter()
        .filter_map(|part| match part {
            Part::Text { text } => Some(SamplingMessageContentBlock::text(text.clone())),
            Part::ToolCall {
                id,
                name,
                arguments,
            } => {
                let input = serde_json::from_str(arguments).unwrap_or_default();
                Some(SamplingMessageContentBlock::tool_use(
                    id.clone(),
                    name.clone(),
                    input,
                ))
            }
            Part::ToolResult {
                call_id, content, ..
            } => Some(SamplingMessageContentBlock::tool_result(
                call_id.clone(),
                vec![ContentBlock::text(content.clone())],
            )),
            Part::Image { media_type, data } => Some(SamplingMessageContentBlock::Image(
                ImageContent::new(data.clone(), media_type.clone()),
            )),
            // Sampling has no document content: the client's model is told it was left out.
            Part::Document { name, .. } => Some(SamplingMessageContentBlock::text(format!(
                "(the document {name} was attached; MCP sampling cannot carry it)"
            ))),
            Part::Thinking { .. } | Part::RedactedThinking { .. } => None,
        })
        .collect();
    (!blocks.is_empty()).then(|| SamplingMessage::new_multiple(role, blocks))
}

#[async_trait]
impl LanguageModel for ClientModel {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    async fn stream(&self, request: ModelRequest) -> Result<ChunkStream, ModelError> {
        if !Self::available(&self.peer) {
            return Err(ModelError::Other(
                "the MCP client does not offer its model (no sampling capability); start the server with a provider of its own".to_owned(),
            ));
        }
        let messages = request
            .messages
            .iter()
            .filter_map(sampling_message)
            .collect();
        let max_tokens = request.options.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
        let mut params = CreateMessageRequestParams::new(messages, max_tokens);
        params.system_prompt = request.system.clone();
        params.temperature = request.options.temperature;
        if self.tools && !request.tools.is_empty() {
            params.tools = Some(
                request
                    .tools
                    .iter()
                    .map(|tool| {
                        let schema = match &tool.parameters {
                            serde_json::Value::Object(map) => map.clone(),
                            _ => serde_json::Map::new(),
                        };
                        McpTool::new(
                            tool.name.clone(),
                            tool.description.clone(),
                            std::sync::Arc::new(schema),
                        )
                    })
                    .collect(),
            );
        }
        let answer = tokio::time::timeout(ANSWER_TIMEOUT, self.peer.create_message(params))
            .await
            .map_err(|_| ModelError::Other("the MCP client's model did not answer in time".into()))?
            .map_err(|e| ModelError::Provider {
                status: None,
                message: format!("the MCP client's model: {e}"),
            })?;
        let mut chunks = Vec::new();
        let mut called = false;
        for block in answer.message.content.into_vec() {
            match block {
                SamplingMessageContentBlock::Text(text) => {
                    chunks.push(StreamChunk::TextDelta { text: text.text });
                }
                SamplingMessageContentBlock::ToolUse(call) => {
                    called = true;
                    chunks.push(StreamChunk::ToolCallStart {
                        id: call.id.clone(),
                        name: call.name,
                    });
                    chunks.push(StreamChunk::ToolCallDelta {
                        id: call.id.clone(),
                        arguments_delta: serde_json::Value::Object(call.input).to_string(),
                    });
                    chunks.push(StreamChunk::ToolCallEnd { id: call.id });
                }
                // Images, sounds and results in an answer: not something a loop reads.
                _ => {}
            }
        }
        let stop_reason = match answer.stop_reason.as_deref() {
            _ if called => StopReason::ToolUse,
            Some("maxTokens") => StopReason::MaxTokens,
            _ => StopReason::EndTurn,
        };
        chunks.push(StreamChunk::Done { stop_reason });
        Ok(Box::pin(futures::stream::iter(chunks)))
    }
}
