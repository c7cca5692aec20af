//! What every file tool does around a write, written once: before it, the person's say for
//! a protected name (`protected.rs`) and the refusal of a file changed since the context
//! last saw it (`file_times.rs`); after it, the file as written recorded as seen.

use std::path::Path;
use std::sync::Arc;

use wonopcode_agent_loop::{ToolEnv, ToolError};

use crate::file_times::FileTimes;
use crate::protected::ProtectedWrites;

/// The checks of one run's file tools (cheap to clone: every tool shares the same ones).
#[derive(Clone, Default)]
pub(crate) struct WriteGuard {
    protected: ProtectedWrites,
    /// What each context read, which writes are held to.
    times: Arc<FileTimes>,
}

impl WriteGuard {
    /// The guard of a run with these protected names and this record of reads.
    pub(crate) fn new(protected: ProtectedWrites, times: Arc<FileTimes>) -> Self {
        Self { protected, times }
    }

    /// `Ok` when `tool` may now write `path` (canonical, inside the workspace; `rel` as the
    /// model names it): the person allowed a protected name, and the file is as the call's
    /// context last saw it.
    pub(crate) async fn before(
        &self,
        tool: &str,
        env: &ToolEnv,
        path: &Path,
        rel: &str,
    ) -> Result<(), ToolError> {
        self.protected.check(tool, env, path).await?;
        self.times.check(&env.context, path, rel).await
    }

    /// Records that the call's context wrote `path`: it has seen what it holds now.
    pub(crate) async fn wrote(&self, env: &ToolEnv, path: &Path) {
        self.times.saw(&env.context, path).await;
    }
}
