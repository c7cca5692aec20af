//! Grants: what a context may use beyond its tools, narrowing its parent's. A context's
//! *lineage* is every grant on its way from the root — a named module's (`registry.yaml`),
//! a spawn's (`spawn-with-grants`) — in order; the embedder's resolver folds the sandbox
//! parts over the run's policy (each may only narrow), and the host applies the cost parts
//! as budgets of their own, nested in the ancestors'.

use crate::context_tools::ContextTools;

/// One narrowing on a context's way from the root.
#[derive(Debug, Clone, PartialEq)]
pub enum Grant {
    /// What `registry.yaml` grants the module of this name.
    Module(String),
    /// What a parent granted the child at `context` when it spawned it.
    Spawn {
        /// The child's context path.
        context: String,
        /// Its sandbox, as the parent asked for it.
        sandbox: SpawnSandbox,
    },
}

/// The sandbox part of a spawn's grants, as the guest wrote it (checked by the resolver).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpawnSandbox {
    /// `read-only`, `workspace-write` or `full-access`; `None`: the parent's mode.
    pub mode: Option<String>,
    /// Paths its commands may write.
    pub write: Vec<String>,
    /// Hidden paths its commands may read.
    pub read: Vec<String>,
    /// `HOST:PORT` its commands may reach.
    pub network: Vec<String>,
    /// The most processes one command may have.
    pub max_processes: Option<u32>,
}

impl SpawnSandbox {
    /// Whether it asks for nothing (the parent's sandbox stays).
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }
}

/// What a context gets from a host that has no resolver (or one that keeps the default):
/// nothing besides its parent's tools, and no sandbox grants, which only an embedder that
/// makes sandboxes can honour.
pub fn without_resolver(lineage: &[Grant]) -> Result<ContextTools, String> {
    if lineage.iter().any(|g| matches!(g, Grant::Spawn { .. })) {
        return Err("this host cannot narrow a child's sandbox".to_owned());
    }
    Ok(ContextTools::default())
}
