//! What every context of one run shares, from the root to its deepest child, set once where
//! the run starts: the hooks, an interrupted run's calls, the paths no file tool opens, the
//! run's tool names, the editor's files and where changes are recorded. It sits beside a
//! context's limits (`LoopConfig`), not in them: a child narrows its limits, but it is
//! given its parent's `RunShared` and may only add to it (an agent file's own hooks), never
//! drop any of it. One `Arc`, so a child, a tool round or a tool call copies a pointer.

use std::path::PathBuf;
use std::sync::Arc;

use wonopcode_protocol::checkpoint::SharedCheckpoints;
use wonopcode_protocol::earlier_calls::EarlierCalls;
use wonopcode_protocol::editor_files::SharedEditorFiles;

use crate::hook::SharedHooks;

/// What every context of one run shares (see the module documentation).
#[derive(Debug, Clone, Default)]
pub struct RunShared {
    /// The user's hooks, asked at every tool call of every context.
    pub hooks: Option<SharedHooks>,
    /// On a resume: the interrupted run's calls, answered from its journal in every
    /// context; `None`: a run of its own.
    pub earlier: Option<Arc<EarlierCalls>>,
    /// Paths (canonical) the file tools of every context may not open or list: the same
    /// credentials the sandbox hides from commands, so one list holds for both. Empty:
    /// nothing hidden (an embedder without a sandbox).
    pub hidden_paths: Arc<[PathBuf]>,
    /// Every tool name of the run (its root's tools, before any context narrowed them), so
    /// a spawn naming a tool no context has is told from one its parent only lacks. Empty:
    /// not known (an embedder that does not say), and no name is refused for it.
    pub tool_names: Arc<[String]>,
    /// The editor the run is driven from, when it offers its files: the file tools of every
    /// context read through it.
    pub editor_files: Option<SharedEditorFiles>,
    /// Where the file tools of every context record what they change, so it can be taken
    /// back; `None`: nothing recorded (a run without a journal).
    pub checkpoints: Option<SharedCheckpoints>,
}

impl RunShared {
    /// What a child shares: this, with `own` hooks (an agent file's or a module's) run
    /// after the inherited ones.
    pub fn with_own_hooks(mut self, own: Option<SharedHooks>) -> Self {
        self.hooks = crate::hook::layered(self.hooks.take(), own);
        self
    }
}
