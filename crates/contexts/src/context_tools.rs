//! What a context that runs a named module gets besides its parent's tools: the module's
//! own tool sources (its MCP servers in `registry.yaml`, started for the context and stopped
//! when it ends) and the allowlist it keeps to. The registry says what a module asks for;
//! the embedder (the session) starts the servers; this module puts them into a context's
//! tools, the same way for a root run and for a child. With them come what the context's
//! grants make of its inherited tools (a `bash` under a narrower sandbox) and its limits.

use std::sync::Arc;

use wonopcode_agent_loop::{Tool, ToolRegistry, ToolSource};
use wonopcode_protocol::{Emitter, EventKind};

/// A module's own tools for one context, and the names it may use.
#[derive(Default)]
pub struct ContextTools {
    /// Tools that take the place of the inherited tools of the same name (a `bash` confined
    /// by the context's narrower sandbox); a name the context lacks is not added.
    pub replacements: Vec<Arc<dyn Tool>>,
    /// The dollars its module's grants let the context (and its descendants) spend.
    pub max_cost_usd: Option<f64>,
    /// The tokens its module's grants let it spend.
    pub max_tokens: Option<u64>,
    /// Tool sources of its own (its MCP servers); they stop when this is dropped.
    pub sources: Vec<Arc<dyn ToolSource>>,
    /// The only tools the context may use (`mcp__SERVER` names all of a server's); `None`:
    /// every tool it has.
    pub allowlist: Option<Vec<String>>,
    /// Its servers that could not be used: `(server, one line)`.
    pub failures: Vec<(String, String)>,
    /// Hooks of its module or agent, asked after the ones it inherits (which it cannot
    /// remove); `None`: none of its own.
    pub hooks: Option<wonopcode_agent_loop::hook::SharedHooks>,
    /// Its module's generation settings, over its parent's.
    pub generation: wonopcode_protocol::generation::Generation,
    /// What must live as long as the context (the servers' connections).
    pub keep: Option<Box<dyn std::any::Any + Send + Sync>>,
}

impl ContextTools {
    /// `tools` with these sources added (a name clash is a failure, said) and the allowlist
    /// applied; what could not be added comes back as failures.
    pub fn apply(&self, tools: &ToolRegistry) -> (ToolRegistry, Vec<String>) {
        let mut tools = tools.clone();
        let mut failures = Vec::new();
        for tool in &self.replacements {
            if let Err(e) = tools.replace(tool.clone()) {
                failures.push(e.to_string());
            }
        }
        for source in &self.sources {
            failures.extend(tools.watch(source.clone()).iter().map(|e| e.to_string()));
        }
        let Some(allowlist) = &self.allowlist else {
            return (tools, failures);
        };
        let allowlist = allowlist.clone();
        let allowed = move |name: &str| {
            allowlist.iter().any(|entry| {
                entry == name
                    || (entry.starts_with("mcp__")
                        && !entry["mcp__".len()..].contains("__")
                        && name.starts_with(&format!("{entry}__")))
            })
        };
        (tools.filtered_by(Arc::new(allowed)), failures)
    }
}

/// Reports, once each, a module's servers that could not start and tools that could not be
/// offered, as `mcp.server_failed` events of the context.
pub fn report_failures(events: &Emitter, own: &ContextTools, clashes: Vec<String>) {
    for (server, error) in &own.failures {
        events.emit(EventKind::McpServerFailed {
            server: server.clone(),
            error: error.clone(),
        });
    }
    for clash in clashes {
        events.emit(EventKind::McpServerFailed {
            server: String::new(),
            error: format!("a tool cannot be offered: {clash}"),
        });
    }
}
