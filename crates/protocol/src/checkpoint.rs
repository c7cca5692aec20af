//! Where a run records what it changes in the workspace, so every change can be taken
//! back (`wonopcode rewind`): each `write`, `edit` and `apply_patch` gives the exact content
//! of each file before and after it, in the context that made the change; a command's
//! changes are found by looking at the workspace before and after it. The journal keeps
//! them (`wonopcode_journal::CheckpointStore`); the engine brackets each command
//! (`wonopcode_agent_loop::checkpoint::CommandEffects`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::ContextPath;

/// A record of the files a run changes.
pub trait Checkpoints: Send + Sync {
    /// `context` changed `path` (relative to the workspace) from `before` to `after`
    /// (`None`: there was no file, or there is none now).
    fn changed(
        &self,
        context: &ContextPath,
        path: &str,
        before: Option<&[u8]>,
        after: Option<&[u8]>,
    );

    /// A command is about to run in `workspace` (canonical): the files there are looked at
    /// now — all of them the first time, after that what changed since — never `hidden`.
    /// Blocking; may take long the first time.
    fn command_starts(&self, workspace: &Path, hidden: &[PathBuf]);

    /// The command `context` ran has ended: what changed in the workspace since it
    /// started is recorded as its change. Blocking.
    fn command_ended(&self, context: &ContextPath);
}

impl std::fmt::Debug for dyn Checkpoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Checkpoints")
    }
}

/// A shared [`Checkpoints`].
pub type SharedCheckpoints = Arc<dyn Checkpoints>;
