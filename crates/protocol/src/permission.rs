//! The permission gate: what the loop asks before running a tool. The policy behind it
//! (allow / ask / deny rules, prompts, cached approvals) lives in the tools crate; the loop
//! only needs the answer.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::tool_spec::ToolKind;

/// What is being asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionRequest {
    /// Tool name.
    pub tool: String,
    /// Whether the tool changes anything.
    pub kind: ToolKind,
    /// What the call acts on (a path, a command line), when the tool says.
    pub subject: Option<String>,
    /// The change the call would make, as a unified diff, when it needs approval and the
    /// tool can say (see `Tool::preview`).
    pub preview: Option<String>,
}

/// The answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PermissionDecision {
    /// Run it.
    Allow,
    /// Do not run it; the model is told why.
    Deny(String),
    /// Stop the run and hand the call back to the caller (status `suspended`).
    Suspend(String),
}

/// What the policy would say without asking anyone (the WIT `check-permission`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionStatus {
    /// Allowed by a rule or a cached approval.
    Allowed,
    /// Denied by a rule.
    Denied,
    /// Would need someone's approval.
    NeedsApproval,
}

/// A permission gate shared between loops and contexts.
pub type SharedGate = std::sync::Arc<dyn PermissionGate>;

/// Decides whether a tool call may run.
#[async_trait]
pub trait PermissionGate: Send + Sync {
    /// Decides, prompting someone if the policy says to ask.
    async fn decide(&self, request: &PermissionRequest) -> PermissionDecision;

    /// What the policy says without prompting.
    fn status(&self, request: &PermissionRequest) -> PermissionStatus;

    /// Asks the person even where the rules would allow the call (a hook asked for it);
    /// what the rules deny stays denied. By default, the same as [`decide`](Self::decide).
    async fn ask(&self, request: &PermissionRequest) -> PermissionDecision {
        self.decide(request).await
    }

    /// Asked when the sandbox stopped a call of `tool` on `subject` (`blocked` says what it
    /// denied); `true` runs that one call again outside the sandbox. Only a person can say
    /// yes: no rule and no `--yes` does.
    async fn escalate(&self, _tool: &str, _subject: &str, _blocked: &str) -> bool {
        false
    }

    /// Asked when the same call repeats (doom loop); `true` lets the run go on.
    async fn confirm_repetition(&self, _tool: &str, _count: usize) -> bool {
        false
    }
}

/// A gate that allows everything (tests, benchmarks, `--yes` embedders).
#[derive(Debug, Default, Clone, Copy)]
pub struct AllowAll;

#[async_trait]
impl PermissionGate for AllowAll {
    async fn decide(&self, _request: &PermissionRequest) -> PermissionDecision {
        PermissionDecision::Allow
    }

    fn status(&self, _request: &PermissionRequest) -> PermissionStatus {
        PermissionStatus::Allowed
    }
}
