//! What a spawn asks for and what it gets back, in the tree's own terms: a guest's
//! `context` calls (`wonopcode-wasm-host` converts the WIT records) and the native loop's
//! `spawn_agent` both speak these.

use wonopcode_protocol::generation::Generation;
use wonopcode_protocol::{ContextStatus, Part, PendingCall, Usage};

use crate::grants::SpawnSandbox;

/// Which loop a child runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModuleRef {
    /// A fresh instance of the parent's own guest.
    Same,
    /// A loop of the registry, or an agent, by name.
    Named(String),
    /// A component file, relative to the workspace.
    Path(String),
}

/// A child's parameters (`context-params`).
#[derive(Debug, Clone, PartialEq)]
pub struct SpawnRequest {
    /// Which loop it runs.
    pub module: ModuleRef,
    /// Its task: the first prompt of its first turn.
    pub task: String,
    /// The only tools of its parent's it may have (`None`: all of them).
    pub allowed_tools: Option<Vec<String>>,
    /// Tools of its parent's it must not have.
    pub denied_tools: Option<Vec<String>>,
    /// The provider it asks for; `None`: its parent's.
    pub preferred_provider: Option<String>,
    /// The model it asks for; `None`: its parent's.
    pub preferred_model: Option<String>,
    /// Model requests in one turn before it stops.
    pub max_iterations: Option<u32>,
    /// Tokens it and its descendants may spend.
    pub max_tokens: Option<u64>,
    /// How long one turn may take.
    pub timeout_ms: Option<u64>,
    /// Whether it starts with a copy of its parent's history.
    pub inherit_messages: bool,
    /// Anything the parent passes along, for the child's guest to read.
    pub custom_data: Option<String>,
    /// Its system prompt; `None`: its parent's (or its agent file's).
    pub system_prompt: Option<String>,
    /// Images and documents its task's message carries (its first turn's only).
    pub attachments: Vec<Part>,
}

impl SpawnRequest {
    /// A request for `module` to do `task`, every other setting its parent's.
    pub fn new(module: ModuleRef, task: impl Into<String>) -> Self {
        Self {
            module,
            task: task.into(),
            allowed_tools: None,
            denied_tools: None,
            preferred_provider: None,
            preferred_model: None,
            max_iterations: None,
            max_tokens: None,
            timeout_ms: None,
            inherit_messages: false,
            custom_data: None,
            system_prompt: None,
            attachments: Vec::new(),
        }
    }
}

/// A spawn's grants: a sandbox narrower than its parent's (checked by the resolver) and a
/// cost limit of its own.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SpawnGrants {
    /// Its sandbox; `None`: its parent's.
    pub sandbox: Option<SpawnSandbox>,
    /// The dollars it and its descendants may spend.
    pub max_cost_usd: Option<f64>,
}

/// What a spawn asks for besides its parameters: grants narrowing the child and generation
/// settings for its model. A fork repeats both.
#[derive(Debug, Clone, Default)]
pub struct SpawnAsks {
    /// Its grants; `None`: its parent's.
    pub grants: Option<SpawnGrants>,
    /// Its generation settings, over its module's, its agent file's and its parent's.
    pub generation: Generation,
}

impl SpawnAsks {
    /// Grants alone.
    pub fn granted(grants: Option<SpawnGrants>) -> Self {
        Self {
            grants,
            generation: Generation::default(),
        }
    }
}

/// How a child's turn ended (`context-result`).
#[derive(Debug, Clone, PartialEq)]
pub struct ChildResult {
    /// Its answer.
    pub response: String,
    /// Its structured result (`__result_data__` of its state), when it set one.
    pub data: Option<String>,
    /// What it and its descendants have spent, all its turns so far.
    pub usage: Usage,
    /// How it ended.
    pub status: ContextStatus,
    /// Why, when it did not complete.
    pub error: Option<String>,
    /// Files it and its descendants changed, relative to the workspace.
    pub modified_files: Vec<String>,
    /// How long its turn took.
    pub duration_ms: u64,
    /// When it suspended: the calls it waits on, in its context or deeper (the parent that
    /// reads this result suspends on them).
    pub pending: Vec<PendingCall>,
}

impl ChildResult {
    /// Its status as the 0.2 WIT's `context-status` has it, with the text only an error
    /// carries: that WIT has no suspended or budget case, so those are errors whose text
    /// says so. The words a parent reads, for a guest's result and the native loop's `wait`
    /// alike.
    pub fn reported(&self) -> (ContextStatus, Option<String>) {
        let error = self.error.clone().unwrap_or_default();
        match self.status {
            ContextStatus::Error | ContextStatus::BudgetExceeded => {
                (ContextStatus::Error, Some(error))
            }
            ContextStatus::Suspended => (ContextStatus::Error, Some(format!("suspended: {error}"))),
            other => (other, None),
        }
    }

    /// A turn that stopped without a result (its task panicked): an error.
    pub fn failed(error: String) -> Self {
        Self {
            response: String::new(),
            data: None,
            usage: Usage::default(),
            status: ContextStatus::Error,
            error: Some(error),
            modified_files: Vec::new(),
            duration_ms: 0,
            pending: Vec::new(),
        }
    }
}
