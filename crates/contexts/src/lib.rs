//! The context tree: a root run's children, started by a guest's `context` calls and by the
//! native loop's delegation tools alike ([`LiveChild`], [`Delegation`]), under the tree's
//! limits ([`ContextTree`]), their grants ([`Grant`], [`ContextTools`]), the budgets their
//! models draw on ([`TokenBudget`]) and the files they change ([`FileChanges`]); which loop
//! runs a context ([`LoopSource`], an [`AgentDefinition`] among them) and where named
//! modules come from ([`ModuleResolver`]). None of it knows WebAssembly: a guest loop is
//! loaded through [`LoopLoader`], which `wonopcode-wasm-host` implements.

#![deny(missing_docs)]

pub mod agent_definition;
pub mod budget;
pub mod child;
pub mod child_turns;
pub mod context_tools;
pub mod delegation;
pub mod file_changes;
pub mod grants;
pub mod loader;
pub mod loop_source;
pub mod resolver;
pub mod spawn;
pub mod tree;

pub use agent_definition::AgentDefinition;
pub use budget::TokenBudget;
pub use child::{LiveChild, ParentPlace, ParentView, RESULT_DATA_KEY, run_child};
pub use child_turns::{ChildTurns, TurnState};
pub use context_tools::ContextTools;
pub use delegation::Delegation;
pub use file_changes::{ChildSink, FileChanges};
pub use grants::{Grant, SpawnSandbox};
pub use loader::{ChildSeat, Inheritance, LoopLoader};
pub use loop_source::LoopSource;
pub use resolver::{ContextLimits, ModuleResolver};
pub use spawn::{ChildResult, ModuleRef, SpawnAsks, SpawnGrants, SpawnRequest};
pub use tree::{ContextTree, LiveSlot};

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
