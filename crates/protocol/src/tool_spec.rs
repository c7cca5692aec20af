//! What a tool is, as the registry, the model and a guest see it: its name, description,
//! argument schema, whether it only observes, and its broad category. The `Tool` trait that
//! runs one is the engine's (`wonopcode-agent-loop`'s `tool`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Whether a tool may run alongside others. Read-only tools of one turn run concurrently;
/// a mutating tool runs alone (a read/write lock, as Codex does).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    /// Only observes.
    ReadOnly,
    /// Changes files, runs processes, or otherwise has effects.
    Mutating,
}

/// Broad grouping, mirrored by the WIT `tool-category` enum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ToolCategory {
    /// Reads or writes files.
    FileSystem,
    /// Runs processes.
    Process,
    /// Talks to the network.
    Network,
    /// Provided by an MCP server.
    Mcp,
    /// Bookkeeping inside wonopcode (todo list).
    Internal,
    /// Registered by a guest.
    Custom,
}

/// What a tool is, as the registry and the model see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Unique name the model calls it by.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: serde_json::Value,
    /// Read-only or mutating.
    pub kind: ToolKind,
    /// Category.
    pub category: ToolCategory,
}
