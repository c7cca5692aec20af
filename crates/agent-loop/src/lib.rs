//! The run engine of wonopcode: the `AgentLoop` trait, the native `StandardLoop`, a run's
//! steps (response, tool round, compaction, budget, doom loop, earlier calls, hooks) and the
//! tool registry's dispatch path. Its words — messages, usage, the `LanguageModel` trait,
//! events, statuses — are `wonopcode-protocol`'s, re-exported here at their old paths so a
//! crate that imports them from the engine keeps working while it moves to the protocol.
//!
//! Everything here is free of WebAssembly and of I/O beyond what tools do, so the native
//! loop, the WebAssembly host and embedders share one engine. What several crates ask of
//! the operating system (opening beneath a root, fsync, wonopcode's own processes) is
//! `wonopcode-os`'s.

#![deny(missing_docs)]

pub mod agent;
pub mod assemble;
pub mod budget;
pub mod checkpoint;
pub mod compaction;
pub mod doom_loop;
pub mod earlier;
pub mod hook;
pub mod live_output;
pub mod registry;
pub mod repeated_result;
pub mod response;
pub mod result;
pub mod run;
pub mod standard;
pub mod steering;
pub mod tool;
pub mod tool_names;
pub mod tool_round;
pub mod truncate;

pub use wonopcode_protocol::{
    attachment, call, claude_code, context_path, editor_files, environment, event, generation,
    message, model, model_source, permission, shown, status, tool_spec, usage,
};

pub use agent::{
    AgentLoop, LoopCapabilities, LoopConfig, LoopContext, LoopError, PendingCall, RunStats,
};
pub use context_path::ContextPath;
pub use earlier::{EarlierCall, EarlierCalls, Interrupted, OnInterrupted};
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
pub use registry::{
    ArgumentCheck, Dispatch, DispatchLimits, ToolFilter, ToolRegistry, ToolSource, unavailable_tool,
};
pub use result::{ContextStatus, LoopResult, LoopStatus, resume_turn, run_turn};
pub use run::{Next, Response, Round, Run, RunServices};
pub use standard::StandardLoop;
pub use steering::Steering;
pub use tool::{BreakLoop, Tool, ToolCategory, ToolEnv, ToolError, ToolKind, ToolOutput, ToolSpec};
pub use tool_names::{
    OPTIONAL_TOOLS, TOOL_ALIASES, canonical_tool_name, nearest_name, unknown_tool_line,
};
pub use usage::{ModelInfo, Pricing, Usage};
