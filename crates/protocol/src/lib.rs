//! The words of wonopcode: messages and their parts, attachments, usage and prices, the
//! `LanguageModel` trait and where models come from, generation settings, what a tool is
//! and the permission gate asked before one runs, the event stream and how a run ends, the
//! record of an interrupted run's calls that its resume answers from, the traits a
//! front-end gives a run (checkpoints, an editor's files) and Claude Code's names for
//! tools. Serde types and traits only — no runtime, no I/O, no sibling crate — so the run
//! engine (`wonopcode-agent-loop`), the WebAssembly host, the providers, the journal and
//! every front-end stand on one vocabulary, and an embedder can read a run's events
//! without the engine.

#![deny(missing_docs)]

pub mod attachment;
pub mod call;
pub mod checkpoint;
pub mod claude_code;
pub mod context_path;
pub mod earlier_calls;
pub mod editor_files;
pub mod environment;
pub mod event;
pub mod generation;
pub mod message;
pub mod model;
pub mod model_source;
pub mod permission;
pub mod shown;
pub mod status;
pub mod tool_spec;
pub mod usage;

pub use call::Call;
pub use context_path::ContextPath;
pub use earlier_calls::{EarlierCall, EarlierCalls, Interrupted, OnInterrupted};
pub use event::{Emitter, Event, EventKind, EventSink};
pub use message::{Message, Part, Role, SharedHistory};
pub use model::{
    ChunkStream, LanguageModel, ModelError, ModelRequest, RequestOptions, SharedModel, StopReason,
    StreamChunk, ToolSchema,
};
pub use model_source::{ModelSource, ProviderListing, SingleModel};
pub use permission::{
    AllowAll, PermissionDecision, PermissionGate, PermissionRequest, PermissionStatus, SharedGate,
};
pub use status::{ContextStatus, LoopError, LoopStatus, PendingCall};
pub use tool_spec::{ToolCategory, ToolKind, ToolSpec};
pub use usage::{ModelInfo, Pricing, Usage};
