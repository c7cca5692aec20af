//! The words of wonopcode: messages and their parts, usage and prices, the `LanguageModel`
//! trait, what a tool is and the permission gate asked before one runs, the event stream
//! and how a run ends. Serde types and traits only — no runtime, no I/O, no sibling crate —
//! so the run engine (`wonopcode-agent-loop`), the WebAssembly host, the providers, the
//! journal and every front-end stand on one vocabulary, and an embedder can read a run's
//! events without the engine.

#![deny(missing_docs)]

pub mod call;
pub mod context_path;
pub mod event;
pub mod message;
pub mod model;
pub mod permission;
pub mod status;
pub mod tool_spec;
pub mod usage;

pub use call::Call;
pub use context_path::ContextPath;
pub use event::{Emitter, Event, EventKind, EventSink};
pub use message::{Message, Part, Role, SharedHistory};
pub use model::{
    ChunkStream, LanguageModel, ModelError, ModelRequest, RequestOptions, SharedModel, StopReason,
    StreamChunk, ToolSchema,
};
pub use permission::{
    AllowAll, PermissionDecision, PermissionGate, PermissionRequest, PermissionStatus, SharedGate,
};
pub use status::{ContextStatus, LoopError, LoopStatus, PendingCall};
pub use tool_spec::{ToolCategory, ToolKind, ToolSpec};
pub use usage::{ModelInfo, Pricing, Usage};
