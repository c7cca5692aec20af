//! Where the file tools record what they change, so every change a run makes can be taken
//! back (`wonopcode rewind`): each `write`, `edit` and `apply_patch` gives the exact
//! content of each file before and after it, in the context that made the change. The
//! journal keeps them (`wonopcode_journal::CheckpointStore`); a run without a journal
//! records nothing.

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
}

impl std::fmt::Debug for dyn Checkpoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Checkpoints")
    }
}

/// A shared [`Checkpoints`].
pub type SharedCheckpoints = Arc<dyn Checkpoints>;
