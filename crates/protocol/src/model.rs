//! The `LanguageModel` trait: a streaming request to a model provider.

use std::pin::Pin;

use async_trait::async_trait;
use futures::Stream;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::context_path::ContextPath;
use crate::message::SharedHistory;
use crate::usage::{ModelInfo, Usage};

/// A tool as the model sees it: name, description and JSON Schema of its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolSchema {
    /// Tool name.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: serde_json::Value,
}

/// Per-request generation options.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RequestOptions {
    /// Cap on generated tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Extended-thinking budget in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_budget: Option<u32>,
}

/// One streaming request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    /// The context making the request (`0` for the root); replay keys on it.
    pub context: ContextPath,
    /// System prompt, kept apart from the history as most providers want it.
    pub system: Option<String>,
    /// The conversation so far, shared with the run that made the request.
    pub messages: SharedHistory,
    /// Tools the model may call.
    pub tools: Vec<ToolSchema>,
    /// Generation options.
    pub options: RequestOptions,
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its answer.
    EndTurn,
    /// The model wants tool results.
    ToolUse,
    /// The output token cap was hit.
    MaxTokens,
    /// A stop sequence matched.
    StopSequence,
    /// The provider declined to answer (Anthropic's `refusal`, OpenAI's `content_filter`,
    /// Gemini's `SAFETY` and its kin).
    Refusal,
    /// Anything else the provider reported.
    Other,
}

/// One streamed event from a model. The same shape is recorded to and replayed from
/// transcripts, so it is serializable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamChunk {
    /// Visible text.
    TextDelta {
        /// The new text.
        text: String,
    },
    /// Extended-thinking text.
    ThinkingDelta {
        /// The new thinking text.
        text: String,
    },
    /// The signature closing the current thinking block.
    ThinkingSignature {
        /// Opaque signature.
        signature: String,
    },
    /// An encrypted thinking block, passed back opaque.
    RedactedThinking {
        /// Opaque data.
        data: String,
    },
    /// A tool call begins.
    ToolCallStart {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
    },
    /// A fragment of a tool call's JSON arguments.
    ToolCallDelta {
        /// Call id.
        id: String,
        /// The fragment; fragments concatenate to the arguments.
        arguments_delta: String,
    },
    /// A tool call's arguments are complete.
    ToolCallEnd {
        /// Call id.
        id: String,
    },
    /// Token usage (may arrive several times; each is added).
    Usage {
        /// The usage reported.
        usage: Usage,
    },
    /// The stream finished normally.
    Done {
        /// Why the model stopped.
        stop_reason: StopReason,
    },
    /// The stream failed mid-way.
    Error {
        /// What the provider said.
        message: String,
    },
    /// The request was refused because the conversation does not fit the model's context
    /// window; the loop compacts the history and tries once more.
    ContextOverflow {
        /// What the provider said.
        message: String,
    },
    /// The provider is retrying a failed attempt after a wait; nothing was shown yet. A
    /// notice for the user, not part of the answer.
    Retry {
        /// The attempt about to be made (2 for the first retry).
        attempt: u32,
        /// How long the provider waits before it.
        delay_ms: u64,
        /// Why the previous attempt failed.
        reason: String,
    },
}

/// A stream of chunks.
pub type ChunkStream = Pin<Box<dyn Stream<Item = StreamChunk> + Send>>;

/// Errors starting a model request.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ModelError {
    /// The provider refused the request (HTTP 4xx/5xx or equivalent).
    #[error("{message}{}", status.map(|s| format!(" (HTTP {s})")).unwrap_or_default())]
    Provider {
        /// HTTP status, when there was one.
        status: Option<u16>,
        /// The provider's message.
        message: String,
    },
    /// A recorded transcript does not match what the loop asked for.
    #[error("{0}")]
    Replay(String),
    /// The run's budget would not cover the request's worst case; it was not sent.
    #[error("budget exceeded: {0}")]
    BudgetExceeded(String),
    /// The request holds what the model or its API cannot take (an image for a model that
    /// reads only text, a file over the API's limit); it was not sent.
    #[error("{0}")]
    Unsupported(String),
    /// Anything else (I/O, configuration).
    #[error("{0}")]
    Other(String),
}

/// A model shared between the loop, the host and sub-contexts.
pub type SharedModel = std::sync::Arc<dyn LanguageModel>;

/// A model provider the loop can stream from. Implementations: replay (offline), Anthropic,
/// OpenAI-compatible; a recorder wraps any of them.
#[async_trait]
pub trait LanguageModel: Send + Sync {
    /// Metadata of the model requests go to.
    fn info(&self) -> &ModelInfo;

    /// Starts a streaming request.
    async fn stream(&self, request: ModelRequest) -> Result<ChunkStream, ModelError>;

    /// A response of `context` was answered elsewhere (from a resumed run's journal): a
    /// model that numbers each context's responses (a replay) counts it, so the next one it
    /// answers is numbered after it. Others have nothing to do.
    fn skip_response(&self, _context: &ContextPath) {}

    /// A context that asks this model began: the loop or agent it runs (`module`) and the
    /// `custom-data` its parent gave it (`role`). A replay that answers each context by its
    /// module or role keeps them (`loops test`); others have nothing to do.
    fn context_began(&self, _context: &ContextPath, _module: &str, _role: Option<&str>) {}
}
