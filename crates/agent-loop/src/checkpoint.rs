//! Where a run records what it changes in the workspace, so every change can be taken
//! back (`wonopcode rewind`): each `write`, `edit` and `apply_patch` gives the exact
//! content of each file before and after it, in the context that made the change; a
//! command (`bash`) is bracketed by [`CommandEffects`], and what it changed is found by
//! looking at the workspace when it ends. The journal keeps them
//! (`wonopcode_journal::CheckpointStore`); a run without a journal records nothing. The
//! record's trait is the protocol's; the bracket a tool holds around a command is here.

use wonopcode_protocol::ContextPath;
use wonopcode_protocol::checkpoint::SharedCheckpoints;

use crate::ToolEnv;

/// One command's bracket: the workspace looked at before it runs, and what it changed
/// recorded when it ends — also when the call is dropped half-way (cancelled), so a
/// command's changes are never taken for someone else's.
#[must_use = "a command's changes are recorded when its effects end"]
pub struct CommandEffects {
    checkpoints: Option<SharedCheckpoints>,
    context: ContextPath,
}

impl CommandEffects {
    /// Looks at the workspace before a command of `env`'s context runs (off the async
    /// threads: the first look reads every file).
    pub async fn start(env: &ToolEnv) -> Self {
        let checkpoints = env.shared.checkpoints.clone();
        if let Some(checkpoints) = checkpoints.clone() {
            let (workspace, hidden) = (env.workspace_root.clone(), env.shared.hidden_paths.clone());
            let looked = tokio::task::spawn_blocking(move || {
                checkpoints.command_starts(&workspace, &hidden)
            })
            .await;
            if let Err(e) = looked {
                tracing::warn!(error = %e, "cannot look at the workspace before a command");
            }
        }
        Self {
            checkpoints,
            context: env.context.clone(),
        }
    }

    /// The command has ended: records what it changed.
    pub async fn end(mut self) {
        if let Some(checkpoints) = self.checkpoints.take() {
            let context = self.context.clone();
            let recorded =
                tokio::task::spawn_blocking(move || checkpoints.command_ended(&context)).await;
            if let Err(e) = recorded {
                tracing::warn!(error = %e, "cannot record what a command changed");
            }
        }
    }
}

impl Drop for CommandEffects {
    fn drop(&mut self) {
        let Some(checkpoints) = self.checkpoints.take() else {
            return;
        };
        let context = self.context.clone();
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn_blocking(move || checkpoints.command_ended(&context));
            }
            Err(_) => checkpoints.command_ended(&context),
        }
    }
}
