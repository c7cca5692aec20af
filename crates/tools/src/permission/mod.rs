//! The permission policy shared by every loop: rules decide allow / ask / deny per tool and
//! subject; `ask` prompts through a `Prompter` (once / always for this key / deny) and caches
//! "always" answers for the session; with nobody to ask, `ask` becomes a denial the model is
//! told about, or a suspension of the run.

mod rules;

use std::collections::HashSet;
use std::sync::Arc;

use parking_lot::Mutex;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use wonopcode_agent_loop::{
    PermissionDecision, PermissionGate, PermissionRequest, PermissionStatus, ToolKind,
};

pub use rules::{Action, Rule, RuleParseError, UnknownToolError};

/// An answer to a permission prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Allow this call only.
    Once,
    /// Allow this and every later call with the same key, for the session.
    Always,
    /// Refuse.
    Deny,
}

/// Asks a person. The CLI implements it on the terminal.
#[async_trait]
pub trait Prompter: Send + Sync {
    /// Asks whether `tool` may act on `subject`.
    async fn ask(&self, tool: &str, subject: Option<&str>) -> Answer;

    /// Asks whether a call repeated `count` times in a row may run again.
    async fn confirm_repetition(&self, tool: &str, count: usize) -> bool;
}

/// What `ask` becomes when there is no prompter and no `--yes`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unattended {
    /// The call is refused and the model is told.
    #[default]
    Deny,
    /// The run stops with status `suspended`.
    Suspend,
}

/// The `permissions:` section of the config file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PolicyConfig {
    /// Action for read-only tools no rule matches (default allow).
    pub read_only: Action,
    /// Action for mutating tools no rule matches (default ask).
    pub mutating: Action,
    /// Rules, first match wins.
    pub rules: Vec<Rule>,
    /// What `ask` becomes without a terminal.
    pub unattended: Unattended,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        Self {
            read_only: Action::Allow,
            mutating: Action::Ask,
            rules: Vec::new(),
            unattended: Unattended::Deny,
        }
    }
}

/// The policy: rules, an optional prompter, `--yes`, and the session's cached approvals.
pub struct PermissionPolicy {
    config: PolicyConfig,
    yes: bool,
    prompter: Option<Arc<dyn Prompter>>,
    approved: Mutex<HashSet<String>>,
    prompt_lock: tokio::sync::Mutex<()>,
}

impl PermissionPolicy {
    /// A policy from config. `yes` turns every `ask` into `allow`; `prompter` is who to ask.
    pub fn new(config: PolicyConfig, yes: bool, prompter: Option<Arc<dyn Prompter>>) -> Self {
        Self {
            config,
            yes,
            prompter,
            approved: Mutex::new(HashSet::new()),
            prompt_lock: tokio::sync::Mutex::new(()),
        }
    }

    /// The action rules give a call, before prompts and cached approvals.
    pub fn action(&self, request: &PermissionRequest) -> Action {
        let subject = request.subject.as_deref();
        self.config
            .rules
            .iter()
            .find(|r| r.matches(&request.tool, subject))
            .map(|r| r.action)
            .unwrap_or(match request.kind {
                ToolKind::ReadOnly => self.config.read_only,
                ToolKind::Mutating => self.config.mutating,
            })
    }

    /// The key an "always" answer is cached under: the tool and, for `bash`, the command's
    /// first word; for other tools, the subject.
    pub fn approval_key(request: &PermissionRequest) -> String {
        let subject = request.subject.as_deref().unwrap_or("");
        let key = if request.tool == "bash" {
            subject.split_whitespace().next().unwrap_or("")
        } else {
            subject
        };
        format!("{}:{key}", request.tool)
    }

    fn is_approved(&self, key: &str) -> bool {
        self.approved.lock().contains(key)
    }

    fn approve(&self, key: String) {
        self.approved.lock().insert(key);
    }

    fn unattended(&self, request: &PermissionRequest) -> PermissionDecision {
        let what = describe(request);
        match self.config.unattended {
            Unattended::Deny => PermissionDecision::Deny(format!(
                "{what} needs approval and nobody can be asked (run with --yes or add an allow rule)"
            )),
            Unattended::Suspend => PermissionDecision::Suspend(format!("{what} needs approval")),
        }
    }
}

fn describe(request: &PermissionRequest) -> String {
    match &request.subject {
        Some(s) => format!("`{}` on `{s}`", request.tool),
        None => format!("`{}`", request.tool),
    }
}

#[async_trait]
impl PermissionGate for PermissionPolicy {
    async fn decide(&self, request: &PermissionRequest) -> PermissionDecision {
        match self.action(request) {
            Action::Allow => return PermissionDecision::Allow,
            Action::Deny => {
                return PermissionDecision::Deny(format!(
                    "{} is denied by the permission policy",
                    describe(request)
                ));
            }
            Action::Ask => {}
        }
        if self.yes {
            return PermissionDecision::Allow;
        }
        let key = Self::approval_key(request);
        if self.is_approved(&key) {
            return PermissionDecision::Allow;
        }
        let Some(prompter) = &self.prompter else {
            return self.unattended(request);
        };
        // One prompt at a time; a parallel call may have been approved while we waited.
        let _guard = self.prompt_lock.lock().await;
        if self.is_approved(&key) {
            return PermissionDecision::Allow;
        }
        match prompter
            .ask(&request.tool, request.subject.as_deref())
            .await
        {
            Answer::Once => PermissionDecision::Allow,
            Answer::Always => {
                self.approve(key);
                PermissionDecision::Allow
            }
            Answer::Deny => {
                PermissionDecision::Deny(format!("the user refused {}", describe(request)))
            }
        }
    }

    fn status(&self, request: &PermissionRequest) -> PermissionStatus {
        match self.action(request) {
            Action::Allow => PermissionStatus::Allowed,
            Action::Deny => PermissionStatus::Denied,
            Action::Ask if self.yes || self.is_approved(&Self::approval_key(request)) => {
                PermissionStatus::Allowed
            }
            Action::Ask => PermissionStatus::NeedsApproval,
        }
    }

    async fn confirm_repetition(&self, tool: &str, count: usize) -> bool {
        match &self.prompter {
            Some(p) => {
                let _guard = self.prompt_lock.lock().await;
                p.confirm_repetition(tool, count).await
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(tool: &str, kind: ToolKind, subject: &str) -> PermissionRequest {
        PermissionRequest {
            tool: tool.into(),
            kind,
            subject: Some(subject.into()),
        }
    }

    struct Always;
    #[async_trait]
    impl Prompter for Always {
        async fn ask(&self, _tool: &str, _subject: Option<&str>) -> Answer {
            Answer::Always
        }
        async fn confirm_repetition(&self, _tool: &str, _count: usize) -> bool {
            false
        }
    }

    #[tokio::test]
    async fn defaults_allow_reads_and_deny_unattended_writes() {
        let p = PermissionPolicy::new(PolicyConfig::default(), false, None);
        assert_eq!(
            p.decide(&req("read", ToolKind::ReadOnly, "a")).await,
            PermissionDecision::Allow
        );
        assert!(
            matches!(p.decide(&req("write", ToolKind::Mutating, "a")).await, PermissionDecision::Deny(m) if m.contains("--yes"))
        );
        assert_eq!(
            p.status(&req("write", ToolKind::Mutating, "a")),
            PermissionStatus::NeedsApproval
        );
    }

    #[tokio::test]
    async fn rules_match_first_and_yes_only_lifts_ask() {
        let cfg = PolicyConfig {
            rules: vec![
                Rule::parse("bash:rm", Action::Deny).unwrap(),
                Rule::parse("bash", Action::Ask).unwrap(),
            ],
            ..PolicyConfig::default()
        };
        let p = PermissionPolicy::new(cfg, true, None);
        assert!(matches!(
            p.decide(&req("bash", ToolKind::Mutating, "rm -rf x")).await,
            PermissionDecision::Deny(_)
        ));
        assert_eq!(
            p.decide(&req("bash", ToolKind::Mutating, "ls")).await,
            PermissionDecision::Allow
        );
    }

    #[tokio::test]
    async fn always_answers_are_cached_per_key() {
        let p = PermissionPolicy::new(PolicyConfig::default(), false, Some(Arc::new(Always)));
        assert_eq!(
            p.decide(&req("bash", ToolKind::Mutating, "cargo build"))
                .await,
            PermissionDecision::Allow
        );
        assert_eq!(
            p.status(&req("bash", ToolKind::Mutating, "cargo test")),
            PermissionStatus::Allowed
        );
        assert_eq!(
            p.status(&req("bash", ToolKind::Mutating, "rm x")),
            PermissionStatus::NeedsApproval
        );
    }

    #[tokio::test]
    async fn unattended_suspend_suspends() {
        let cfg = PolicyConfig {
            unattended: Unattended::Suspend,
            ..PolicyConfig::default()
        };
        let p = PermissionPolicy::new(cfg, false, None);
        assert!(matches!(
            p.decide(&req("write", ToolKind::Mutating, "a")).await,
            PermissionDecision::Suspend(_)
        ));
    }
}
