//! The run engine of wonopcode: the `AgentLoop` trait, the native `StandardLoop`, a run's
//! steps (response, tool round, compaction, budget, doom loop, earlier calls, hooks) and the
//! tool registry's dispatch path. Its words — messages, usage, the `LanguageModel` trait,
//! events, statuses — are `wonopcode-protocol`'s; a crate imports them from there, and only
//! the engine's own items from here.
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
pub mod hook;
pub mod live_output;
pub mod repeated_result;
pub mod response;
pub mod result;
pub mod resumed_calls;
pub mod run;
pub mod services;
pub mod shared;
pub mod standard;
pub mod steering;
pub mod tool;
pub mod tool_names;
pub mod tool_registry;
pub mod tool_round;
pub mod truncate;
pub mod typed_tool;

pub use agent::{AgentLoop, LoopCapabilities, LoopConfig, LoopContext, RunStats};
pub use result::{LoopResult, resume_turn, run_turn};
pub use run::{Next, Response, Round, Run};
pub use services::RunServices;
pub use shared::RunShared;
pub use standard::StandardLoop;
pub use steering::Steering;
pub use tool::{BreakLoop, Tool, ToolEnv, ToolError, ToolOutput};
pub use tool_names::{
    OPTIONAL_TOOLS, TOOL_ALIASES, canonical_tool_name, nearest_name, unknown_tool_line,
};
pub use tool_registry::{
    ArgumentCheck, Dispatch, DispatchLimits, ToolFilter, ToolRegistry, ToolSource, unavailable_tool,
};
pub use typed_tool::{TypedTool, parameters_of};
