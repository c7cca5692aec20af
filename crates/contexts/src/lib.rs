//! The context tree's vocabulary, shared by the native loop's delegation, a guest's
//! `context` calls and the embedder that answers them: which loop runs a context
//! ([`LoopSource`], an [`AgentDefinition`] among them), where named modules come from
//! ([`ModuleResolver`]), what a context is granted ([`Grant`], [`ContextTools`]), the
//! budgets its model draws on ([`TokenBudget`]) and the files it changed
//! ([`FileChanges`]). None of it knows WebAssembly: the registry and the session name loops
//! and grants through this crate, and `wonopcode-wasm-host` loads the guests.

#![deny(missing_docs)]

pub mod agent_definition;
pub mod budget;
pub mod context_tools;
pub mod file_changes;
pub mod grants;
pub mod loop_source;
pub mod resolver;

pub use agent_definition::AgentDefinition;
pub use budget::{BudgetedModel, TokenBudget};
pub use context_tools::ContextTools;
pub use file_changes::{ChildSink, FileChanges};
pub use grants::{Grant, SpawnSandbox};
pub use loop_source::LoopSource;
pub use resolver::{ContextLimits, ModuleResolver};

/// The native loop's delegation tools: `spawn_agent` starts a child context, the others
/// talk to it, wait for it, end it and list them. An agent file that names one of them
/// delegates.
pub const DELEGATION_TOOLS: [&str; 5] = [
    "spawn_agent",
    "send_input",
    "wait",
    "close_agent",
    "list_agents",
];
