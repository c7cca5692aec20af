//! The permission policy shared by every loop: rules decide allow / ask / deny per tool and
//! subject; `ask` prompts through a `Prompter` (once / always for this key / deny) and caches
//! "always" answers for the session; with nobody to ask, `ask` becomes a denial the model is
//! told about, or a suspension of the run.

mod mode;
mod rules;
pub mod shell;

use std::collections::HashSet;
use std::sync::Arc;

use parking_lot::Mutex;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use wonopcode_protocol::{
    PermissionDecision, PermissionGate, PermissionRequest, PermissionStatus, ToolKind,
};

pub use mode::{FILE_EDIT_TOOLS, Mode};
pub use rules::{Action, BadPatternError, Rule, RuleParseError, UnknownToolError};
use shell::Script;

/// An answer to a permission prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Allow this call only.
    Once,
    /// Allow this and every later call with the same key, for the session.
    Always,
    /// Refuse.
    Deny,
    /// Refuse, and tell the model this instead (what to do, or why not): it reads it as
    /// the call's result.
    DenyWith(String),
}

/// Asks a person. The CLI implements it on the terminal.
#[async_trait]
pub trait Prompter: Send + Sync {
    /// Asks whether the call `request` describes may run (its tool, subject and, for a file
    /// change, the diff it would make). An "always" answer covers the request's
    /// [`PermissionPolicy::approval_keys`] for the rest of the session.
    async fn ask(&self, request: &PermissionRequest) -> Answer;

    /// Asks whether a call repeated `count` times in a row may run again.
    async fn confirm_repetition(&self, tool: &str, count: usize) -> bool;

    /// Asks whether `tool`'s call on `subject`, which the sandbox stopped (`blocked` says
    /// what it denied), may run again outside the sandbox. Prompters that cannot ask a
    /// person refuse.
    async fn ask_escalation(&self, _tool: &str, _subject: &str, _blocked: &str) -> Answer {
        Answer::Deny
    }
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
    /// Calls refused because they needed approval and nobody could be asked.
    unapproved: std::sync::atomic::AtomicUsize,
    /// The mode over the rules, which the person may switch during the session.
    mode: Mutex<Mode>,
}

impl PermissionPolicy {
    /// How many calls were refused because they needed approval and nobody could be
    /// asked: work the run did not do, which a command line reports with its exit code.
    pub fn unapproved(&self) -> usize {
        self.unapproved.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A policy from config. `yes` turns every `ask` into `allow`; `prompter` is who to ask.
    pub fn new(config: PolicyConfig, yes: bool, prompter: Option<Arc<dyn Prompter>>) -> Self {
        Self {
            config,
            yes,
            prompter,
            approved: Mutex::new(HashSet::new()),
            prompt_lock: tokio::sync::Mutex::new(()),
            unapproved: std::sync::atomic::AtomicUsize::new(0),
            mode: Mutex::new(Mode::Ask),
        }
    }

    /// The policy in `mode` from the start.
    pub fn in_mode(self, mode: Mode) -> Self {
        *self.mode.lock() = mode;
        self
    }

    /// The mode over the rules now.
    pub fn mode(&self) -> Mode {
        *self.mode.lock()
    }

    /// Switches the mode: the calls after this are judged in `mode`.
    pub fn set_mode(&self, mode: Mode) {
        *self.mode.lock() = mode;
    }

    /// The action the rules and the mode give a call, before prompts and cached approvals.
    pub fn action(&self, request: &PermissionRequest) -> Action {
        let (ruled, written) = self.ruled(request);
        self.mode()
            .over(&request.tool, request.kind, ruled, written)
    }

    /// The action the rules alone give a call, and whether a rule (not the default for
    /// its kind) gave it.
    fn ruled(&self, request: &PermissionRequest) -> (Action, bool) {
        if request.tool == "bash"
            && let Some(command) = &request.subject
        {
            return (
                self.command_action(&Script::parse(command), request.kind),
                true,
            );
        }
        let subject = request.subject.as_deref();
        match self
            .config
            .rules
            .iter()
            .find(|r| r.matches(&request.tool, subject))
        {
            Some(rule) => (rule.action, true),
            None => (self.default_action(request.kind), false),
        }
    }

    fn default_action(&self, kind: ToolKind) -> Action {
        match kind {
            ToolKind::ReadOnly => self.config.read_only,
            ToolKind::Mutating => self.config.mutating,
        }
    }

    /// The action for a `bash` command: each simple command gets the first rule that matches
    /// it, and the strictest of those wins. A command the parser cannot prove to be only its
    /// simple commands (see [`shell`]) is at least asked about, unless a rule without a
    /// pattern allows every `bash` command.
    fn command_action(&self, script: &Script, kind: ToolKind) -> Action {
        // Each simple command's deciding rule (None: the default), the empty command's being
        // the first rule without a pattern.
        let deciding: Vec<Option<&Rule>> = if script.commands().is_empty() {
            let rule = self.config.rules.iter();
            vec![
                rule.into_iter()
                    .find(|r| r.names("bash") && r.pattern.is_none()),
            ]
        } else {
            script
                .commands()
                .iter()
                .zip(script.written())
                .map(|(words, written)| {
                    self.config
                        .rules
                        .iter()
                        .find(|r| r.names("bash") && r.matches_command(words, written))
                })
                .collect()
        };
        let action = deciding
            .iter()
            .map(|rule| rule.map_or_else(|| self.default_action(kind), |r| r.action))
            .fold(Action::Allow, stricter);
        let outright = deciding
            .iter()
            .all(|rule| rule.is_some_and(|r| r.pattern.is_none()));
        if script.is_plain() || outright {
            action
        } else {
            stricter(action, Action::Ask)
        }
    }

    /// The keys an "always" answer is cached under. For a plain `bash` command, one per
    /// simple command, written so that it names that command exactly
    /// ([`Script::written`]): `ls -la` approved does not approve `ls && touch x`, and
    /// `echo '$(touch x)'` or `rm '*'` (literal words) do not approve `echo $(touch x)` or
    /// `rm *`; for any other command, its exact text, which never reads as plain and so
    /// never meets a plain command's key; for other tools, the subject.
    pub fn approval_keys(request: &PermissionRequest) -> Vec<String> {
        let subject = request.subject.as_deref().unwrap_or("");
        if request.tool == "bash" {
            let script = Script::parse(subject);
            if script.is_plain() && !script.commands().is_empty() {
                return script
                    .written()
                    .iter()
                    .map(|words| format!("bash:{}", words.join(" ")))
                    .collect();
            }
            return vec![format!("bash:{subject}")];
        }
        vec![format!("{}:{subject}", request.tool)]
    }

    /// The "always" answers given so far in this session, as their keys (see
    /// [`PermissionPolicy::approval_keys`]; a command let out of the sandbox is
    /// `unsandboxed` + NUL + tool + NUL + command), sorted.
    pub fn approvals(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.approved.lock().iter().cloned().collect();
        keys.sort();
        keys
    }

    /// An approval key in words: `` `bash` `ls -la` ``, `` `edit` on `src/x.rs` ``,
    /// `` `bash` outside the sandbox: `cp a /etc/b` ``.
    pub fn describe_approval(key: &str) -> String {
        if let Some(rest) = key.strip_prefix(UNSANDBOXED) {
            let (tool, subject) = rest.split_once('\0').unwrap_or((rest, ""));
            return format!("`{tool}` outside the sandbox: `{subject}`");
        }
        match key.split_once(':') {
            Some(("bash", command)) => format!("`bash` `{command}`"),
            Some((tool, "")) => format!("every `{tool}` call"),
            Some((tool, subject)) => format!("`{tool}` on `{subject}`"),
            None => key.to_owned(),
        }
    }

    /// Takes back the "always" answer stored under `key`: the next such call is asked about
    /// again. False when there was none.
    pub fn revoke(&self, key: &str) -> bool {
        self.approved.lock().remove(key)
    }

    fn is_approved(&self, keys: &[String]) -> bool {
        let approved = self.approved.lock();
        keys.iter().all(|k| approved.contains(k))
    }

    fn approve(&self, keys: Vec<String>) {
        self.approved.lock().extend(keys);
    }

    /// Puts `request` to the person (one prompt at a time), or answers as the policy says
    /// when nobody can be asked; `remembered`: an approval given while waiting counts.
    async fn prompt(
        &self,
        request: &PermissionRequest,
        keys: Vec<String>,
        remembered: bool,
    ) -> PermissionDecision {
        let Some(prompter) = &self.prompter else {
            return self.unattended(request);
        };
        // One prompt at a time; a parallel call may have been approved while we waited.
        let _guard = self.prompt_lock.lock().await;
        if remembered && self.is_approved(&keys) {
            return PermissionDecision::Allow;
        }
        match prompter.ask(request).await {
            Answer::Once => PermissionDecision::Allow,
            Answer::Always => {
                self.approve(keys);
                PermissionDecision::Allow
            }
            Answer::Deny => {
                PermissionDecision::Deny(format!("the user refused {}", describe(request)))
            }
            Answer::DenyWith(said) => PermissionDecision::Deny(format!(
                "the user refused {} and said: {said}",
                describe(request)
            )),
        }
    }

    fn unattended(&self, request: &PermissionRequest) -> PermissionDecision {
        let what = describe(request);
        match self.config.unattended {
            Unattended::Deny => {
                self.unapproved
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let rules: Vec<String> = Self::approval_keys(request)
                    .iter()
                    .map(|key| format!("--allow '{key}'"))
                    .collect();
                PermissionDecision::Deny(format!(
                    "{what} needs approval and nobody can be asked; run with --yes, or {}",
                    rules.join(" ")
                ))
            }
            Unattended::Suspend => PermissionDecision::Suspend(format!("{what} needs approval")),
        }
    }
}

/// How the key of an approval to run a command outside the sandbox starts (then the tool,
/// NUL, the command).
const UNSANDBOXED: &str = "unsandboxed\0";

/// The stricter of two actions: deny over ask over allow.
fn stricter(a: Action, b: Action) -> Action {
    let rank = |x| match x {
        Action::Allow => 0,
        Action::Ask => 1,
        Action::Deny => 2,
    };
    if rank(b) > rank(a) { b } else { a }
}

fn describe(request: &PermissionRequest) -> String {
    match &request.subject {
        Some(s) => format!("`{}` on `{s}`", request.tool),
        None => format!("`{}`", request.tool),
    }
}

/// The refusal of a call the rules (or, for a file edit, plan mode) deny.
fn denied(request: &PermissionRequest, mode: Mode) -> PermissionDecision {
    if mode.refuses(&request.tool) {
        return PermissionDecision::Deny(format!(
            "{} is refused in plan mode: nothing is changed until the person approves the plan",
            describe(request)
        ));
    }
    PermissionDecision::Deny(format!(
        "{} is denied by the permission policy",
        describe(request)
    ))
}

#[async_trait]
impl PermissionGate for PermissionPolicy {
    async fn decide(&self, request: &PermissionRequest) -> PermissionDecision {
        match self.action(request) {
            Action::Allow => return PermissionDecision::Allow,
            Action::Deny => return denied(request, self.mode()),
            Action::Ask => {}
        }
        let keys = Self::approval_keys(request);
        if self.yes || self.is_approved(&keys) {
            return PermissionDecision::Allow;
        }
        self.prompt(request, keys, true).await
    }

    async fn ask(&self, request: &PermissionRequest) -> PermissionDecision {
        if matches!(self.action(request), Action::Deny) {
            return denied(request, self.mode());
        }
        if self.yes {
            return PermissionDecision::Allow;
        }
        // A hook wants this call put to the person: an earlier "always" does not answer it.
        self.prompt(request, Self::approval_keys(request), false)
            .await
    }

    fn status(&self, request: &PermissionRequest) -> PermissionStatus {
        match self.action(request) {
            Action::Allow => PermissionStatus::Allowed,
            Action::Deny => PermissionStatus::Denied,
            Action::Ask if self.yes || self.is_approved(&Self::approval_keys(request)) => {
                PermissionStatus::Allowed
            }
            Action::Ask => PermissionStatus::NeedsApproval,
        }
    }

    async fn escalate(&self, tool: &str, subject: &str, blocked: &str) -> bool {
        // Never `--yes` nor a rule: the sandbox is what holds when nobody watches.
        let Some(prompter) = &self.prompter else {
            return false;
        };
        let key = vec![format!("{UNSANDBOXED}{tool}\0{subject}")];
        let _guard = self.prompt_lock.lock().await;
        if self.is_approved(&key) {
            return true;
        }
        match prompter.ask_escalation(tool, subject, blocked).await {
            Answer::Once => true,
            Answer::Always => {
                self.approve(key);
                true
            }
            Answer::Deny | Answer::DenyWith(_) => false,
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
            preview: None,
        }
    }

    struct Always;
    #[async_trait]
    impl Prompter for Always {
        async fn ask(&self, _request: &PermissionRequest) -> Answer {
            Answer::Always
        }
        async fn confirm_repetition(&self, _tool: &str, _count: usize) -> bool {
            false
        }
    }

    struct Tells;
    #[async_trait]
    impl Prompter for Tells {
        async fn ask(&self, _request: &PermissionRequest) -> Answer {
            Answer::DenyWith("use cargo clean instead".to_owned())
        }
        async fn confirm_repetition(&self, _tool: &str, _count: usize) -> bool {
            false
        }
    }

    #[tokio::test]
    async fn a_refusal_with_words_gives_the_model_the_words() {
        let p = PermissionPolicy::new(PolicyConfig::default(), false, Some(Arc::new(Tells)));
        let decision = p
            .decide(&req("bash", ToolKind::Mutating, "rm -rf build"))
            .await;
        assert_eq!(
            decision,
            PermissionDecision::Deny(
                "the user refused `bash` on `rm -rf build` and said: use cargo clean instead"
                    .to_owned()
            )
        );
        assert!(p.approvals().is_empty());
    }

    #[test]
    fn approvals_read_as_words() {
        let described: Vec<String> = [
            "bash:ls -la",
            "edit:src/x.rs",
            "todo:",
            "unsandboxed\0bash\0cp a /etc/b",
        ]
        .iter()
        .map(|k| PermissionPolicy::describe_approval(k))
        .collect();
        assert_eq!(
            described,
            [
                "`bash` `ls -la`",
                "`edit` on `src/x.rs`",
                "every `todo` call",
                "`bash` outside the sandbox: `cp a /etc/b`"
            ]
        );
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

    /// Answers "always" to escalations, counting how often it was asked.
    #[derive(Default)]
    struct Escalations(std::sync::atomic::AtomicUsize);
    #[async_trait]
    impl Prompter for Escalations {
        async fn ask(&self, _request: &PermissionRequest) -> Answer {
            Answer::Deny
        }
        async fn confirm_repetition(&self, _tool: &str, _count: usize) -> bool {
            false
        }
        async fn ask_escalation(&self, _tool: &str, _subject: &str, _blocked: &str) -> Answer {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Answer::Always
        }
    }

    #[tokio::test]
    async fn escalation_is_a_persons_answer_cached_per_exact_command() {
        // Neither --yes nor an allow rule lets a blocked command out.
        let allow = PolicyConfig {
            rules: vec![Rule::parse("bash", Action::Allow).unwrap()],
            ..PolicyConfig::default()
        };
        let yes = PermissionPolicy::new(allow, true, Some(Arc::new(Always)));
        assert!(!yes.escalate("bash", "touch /x", "write to /x denied").await);
        let asked = Arc::new(Escalations::default());
        let p = PermissionPolicy::new(PolicyConfig::default(), false, Some(asked.clone()));
        assert!(p.escalate("bash", "touch /x", "write to /x denied").await);
        assert!(p.escalate("bash", "touch /x", "write to /x denied").await);
        assert_eq!(asked.0.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert!(p.escalate("bash", "touch /y", "write to /y denied").await);
        assert_eq!(asked.0.load(std::sync::atomic::Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn always_answers_are_cached_per_exact_command() {
        let p = PermissionPolicy::new(PolicyConfig::default(), false, Some(Arc::new(Always)));
        let bash = |command| req("bash", ToolKind::Mutating, command);
        assert_eq!(p.decide(&bash("ls -la")).await, PermissionDecision::Allow);
        assert_eq!(p.status(&bash("ls -la")), PermissionStatus::Allowed);
        assert_eq!(p.status(&bash("ls -la; ls -la")), PermissionStatus::Allowed);
        for other in ["ls", "ls -la && touch x", "ls -la > x", "ls -la $(touch x)"] {
            assert_eq!(
                p.status(&bash(other)),
                PermissionStatus::NeedsApproval,
                "{other}"
            );
        }
        // A command that is not plain is cached as its exact text.
        assert_eq!(
            p.decide(&bash("echo $HOME")).await,
            PermissionDecision::Allow
        );
        assert_eq!(p.status(&bash("echo $HOME")), PermissionStatus::Allowed);
        assert_eq!(
            p.status(&bash("echo $HOME; rm x")),
            PermissionStatus::NeedsApproval
        );
    }

    fn policy(rules: &[(&str, Action)]) -> PermissionPolicy {
        let cfg = PolicyConfig {
            rules: rules
                .iter()
                .map(|(text, action)| Rule::parse(text, *action).unwrap())
                .collect(),
            ..PolicyConfig::default()
        };
        PermissionPolicy::new(cfg, false, None)
    }

    #[test]
    fn an_allow_rule_must_match_every_simple_command() {
        let p = policy(&[("bash:ls", Action::Allow)]);
        let action = |command| p.action(&req("bash", ToolKind::Mutating, command));
        assert_eq!(action("ls -la"), Action::Allow);
        assert_eq!(action("ls a; ls b | ls c"), Action::Allow);
        for hostile in [
            "ls && touch PWNED",
            "ls; touch PWNED",
            "ls | sh",
            "ls $(touch PWNED)",
            "ls `touch PWNED`",
            "ls > PWNED",
            "./ls",
            "X=1 ls",
            "env ls",
            "bash -c ls",
        ] {
            assert_eq!(action(hostile), Action::Ask, "{hostile}");
        }
    }

    #[test]
    fn a_deny_rule_sees_through_syntax() {
        let p = policy(&[("bash:rm", Action::Deny), ("bash:ls", Action::Allow)]);
        let action = |command| p.action(&req("bash", ToolKind::Mutating, command));
        for hostile in [
            "true; rm x",
            "/bin/rm x",
            "\\rm x",
            "'rm' x",
            "ls && rm x",
            "echo $(rm x)",
            "sudo env rm x",
            "bash -c 'rm x'",
            "find . -exec rm {} +",
            "(rm x)",
        ] {
            assert_eq!(action(hostile), Action::Deny, "{hostile}");
        }
        assert_eq!(action("ls"), Action::Allow);
        assert_eq!(action("echo rm"), Action::Ask);
    }

    #[test]
    fn a_rule_without_pattern_decides_every_command() {
        let p = policy(&[("bash:rm", Action::Deny), ("bash", Action::Allow)]);
        let action = |command| p.action(&req("bash", ToolKind::Mutating, command));
        assert_eq!(action("echo $(date) > out"), Action::Allow);
        assert_eq!(action("echo $(rm x)"), Action::Deny);
        assert_eq!(action(""), Action::Allow);
        let p = policy(&[]);
        assert_eq!(
            p.action(&req("bash", ToolKind::Mutating, "ls")),
            Action::Ask
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
