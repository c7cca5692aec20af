//! File tools and the workspace's protected names (`.git`, `.claude`, `.wonopcode`,
//! `.codex`, `.mcp.json`: what they hold makes git or an agent run something the next time
//! it starts there). A write inside one, at any depth, needs the person at the terminal as a
//! command the sandbox stopped does: no rule and no `--yes` allows it, so a model cannot
//! plant a hook for the next run of a workspace someone trusts. A `write` grant naming the
//! path allows it; `full-access` and a run without a sandbox leave it alone.

use std::path::Path;
use std::sync::Arc;

use wonopcode_agent_loop::{ToolEnv, ToolError};
use wonopcode_sandbox::Sandbox;

use crate::workspace::display;

/// The check file tools make before they write: the run's sandbox, if it has one.
#[derive(Clone, Default)]
pub struct ProtectedWrites {
    sandbox: Option<Arc<Sandbox>>,
}

impl ProtectedWrites {
    /// The protection of a run confined by `sandbox` (none without one).
    pub fn of(sandbox: Option<Arc<Sandbox>>) -> Self {
        Self { sandbox }
    }

    /// `Ok` when `tool` may write `path` (canonical, inside the workspace): it is not in a
    /// protected name, a grant names it, or the person at the terminal said yes.
    pub(crate) async fn check(
        &self,
        tool: &str,
        env: &ToolEnv,
        path: &Path,
    ) -> Result<(), ToolError> {
        let Some(sandbox) = &self.sandbox else {
            return Ok(());
        };
        let Some(name) = sandbox.guards_write(path, &env.workspace_root) else {
            return Ok(());
        };
        let shown = display(&env.workspace_root, path);
        let blocked = format!(
            "`{shown}` is in `{name}`, which can make git, a shell, an editor, Claude Code or wonopcode run commands later, outside the sandbox"
        );
        let approved = match &env.gate {
            Some(gate) => gate.escalate(tool, &shown, &blocked).await,
            None => false,
        };
        if approved {
            Ok(())
        } else {
            Err(ToolError::Failed(format!(
                "blocked by the sandbox: {blocked}; only the person at the terminal, or a `write` grant naming it, allows that"
            )))
        }
    }
}
