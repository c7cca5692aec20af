//! Hooks: the user's own code at fixed points of a run — when a session or a child starts,
//! a prompt is submitted, before a tool call runs (and when it waits for approval), after it
//! ran, before the history is compacted, when a turn would stop, when the session ends. The run asks them there, in every
//! context of the tree and whichever loop drives it (the turn and the tool round are the
//! run's, so a guest's calls and a child's pass the same places). What
//! a hook is (a command, a component) and how hooks are matched and combined belongs to the
//! implementation (`crates/hooks`); the loop only needs the answers.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;

use wonopcode_protocol::call::Call;
use wonopcode_protocol::context_path::ContextPath;
use wonopcode_protocol::event::Emitter;
use wonopcode_protocol::permission::{
    PermissionDecision, PermissionGate, PermissionRequest, PermissionStatus,
};

/// Where a hook fires: which context, in which session and workspace, and where to report
/// each hook that ran (a `hook` item).
#[derive(Clone, Copy)]
pub struct HookSite<'a> {
    /// The context the call belongs to (`0.1.2`).
    pub context: &'a ContextPath,
    /// The context's events.
    pub events: &'a Emitter,
    /// The session's id.
    pub session_id: &'a str,
    /// The workspace the run works in.
    pub cwd: &'a Path,
    /// The loop or agent the context runs (empty when it has no name).
    pub agent: &'a str,
}

impl<'a> HookSite<'a> {
    /// The site of the context `events` reports for, which runs `agent`.
    pub fn new(events: &'a Emitter, session_id: &'a str, cwd: &'a Path, agent: &'a str) -> Self {
        Self {
            context: events.context(),
            events,
            session_id,
            cwd,
            agent,
        }
    }
}

/// What the `PreToolUse` hooks made of a call.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PreToolUse {
    /// Arguments to run the call with instead of the model's (`updatedInput`).
    pub arguments: Option<String>,
    /// What they decided; `None`: the permission rules decide as always.
    pub decision: Option<HookDecision>,
}

/// A hook's say over a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookDecision {
    /// Run it without asking anyone; the user's deny rules still hold.
    Allow,
    /// Ask the person before it runs, even where the rules would allow it (`PreToolUse`
    /// only); what the rules deny stays denied.
    Ask,
    /// Do not run it; the model is told why.
    Deny(String),
}

/// What the `PostToolUse` hooks said about a finished call.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PostToolUse {
    /// Told to the model after the call's output (`decision: block` with its reason, or a
    /// hook's exit-2 stderr).
    pub feedback: Option<String>,
}

/// A point of a run, besides its tool calls, where hooks are asked.
#[derive(Debug, Clone, Copy)]
pub enum TurnEvent<'a> {
    /// The session started (`SessionStart`), at the root, before its first prompt.
    SessionStarted {
        /// `startup`, or `resume` when it goes on from a history.
        source: &'a str,
        /// The model it answers with.
        model: &'a str,
    },
    /// A child context starts its first turn (`SubagentStart`).
    SubagentStarted {
        /// The module or agent it runs.
        agent_type: &'a str,
    },
    /// A prompt is about to run: the root's prompt, or a child's task or follow-up
    /// (`UserPromptSubmit`).
    PromptSubmitted {
        /// The prompt as given.
        prompt: &'a str,
    },
    /// The context's history is about to be compacted (`PreCompact`).
    Compacting {
        /// `manual` (the person asked, `/compact`) or `auto` (the history outgrew the
        /// threshold or the model's window, or a loop asked).
        trigger: &'a str,
    },
    /// The session ends (`SessionEnd`), at the root, after its last turn.
    SessionEnded {
        /// Why: `prompt_input_exit` (the person left the REPL) or `other`.
        reason: &'a str,
    },
    /// The context's turn answered (`Stop` at the root, `SubagentStop` in a child).
    Stopped {
        /// The answer.
        answer: &'a str,
        /// Whether a hook already sent this turn on once (Claude Code's
        /// `stop_hook_active`): a hook that always objects must let it end some time.
        again: bool,
    },
}

/// What the hooks said about a [`TurnEvent`]: `block` is heeded on a prompt and a stop,
/// `context` on a prompt (added to it) and at a session's or a child's start (added to what
/// the context is told besides its system prompt).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TurnAnswer {
    /// Why the prompt must not run, or (on `Stopped`) what the context must do before it
    /// may stop: `decision: block` with its reason, or a hook's exit-2 stderr.
    pub block: Option<String>,
    /// Added to the prompt for the model (`additionalContext`, or the plain text a
    /// `UserPromptSubmit` hook printed).
    pub context: Option<String>,
}

/// The hooks of a run, asked at each tool call and turn of each context.
#[async_trait]
pub trait Hooks: Send + Sync + std::fmt::Debug {
    /// Asked before `call` runs (and before anyone is asked to approve it).
    async fn pre_tool_use(&self, site: &HookSite<'_>, call: &Call) -> PreToolUse;

    /// Asked when `call` would wait for a person's approval (`PermissionRequest`): `Allow`
    /// approves it for them, `Deny` refuses it, `None` asks them as usual.
    async fn permission_request(&self, _site: &HookSite<'_>, _call: &Call) -> Option<HookDecision> {
        None
    }

    /// Asked after `call` ran, with what it answered.
    async fn post_tool_use(
        &self,
        site: &HookSite<'_>,
        call: &Call,
        output: &str,
        is_error: bool,
    ) -> PostToolUse;

    /// Asked at a point of a context's turn.
    async fn turn_event(&self, site: &HookSite<'_>, event: TurnEvent<'_>) -> TurnAnswer;
}

/// The hooks of a context whose module or agent has hooks of its own: its parent's
/// (inherited, never removed) and its own, both asked; `None` when neither has any.
pub fn layered(inherited: Option<SharedHooks>, own: Option<SharedHooks>) -> Option<SharedHooks> {
    match (inherited, own) {
        (Some(outer), Some(own)) => Some(Arc::new(Layered { outer, own })),
        (outer, own) => outer.or(own),
    }
}

/// Two sets of hooks asked one after the other, the inherited ones first. A refusal by
/// either stands; the own hooks see the call as the inherited ones left it; what both say to
/// the model is joined.
#[derive(Debug)]
struct Layered {
    outer: SharedHooks,
    own: SharedHooks,
}

/// The stricter of two decisions: deny, then ask, then allow.
fn stricter(a: Option<HookDecision>, b: Option<HookDecision>) -> Option<HookDecision> {
    let rank = |d: &Option<HookDecision>| match d {
        Some(HookDecision::Deny(_)) => 3,
        Some(HookDecision::Ask) => 2,
        Some(HookDecision::Allow) => 1,
        None => 0,
    };
    if rank(&b) > rank(&a) { b } else { a }
}

/// Two optional texts as one, on separate lines.
fn joined(a: Option<String>, b: Option<String>) -> Option<String> {
    match (a, b) {
        (Some(a), Some(b)) => Some(format!("{a}\n{b}")),
        (a, b) => a.or(b),
    }
}

#[async_trait]
impl Hooks for Layered {
    async fn pre_tool_use(&self, site: &HookSite<'_>, call: &Call) -> PreToolUse {
        let outer = self.outer.pre_tool_use(site, call).await;
        if matches!(outer.decision, Some(HookDecision::Deny(_))) {
            return outer;
        }
        let rewritten = outer.arguments.clone().map(|arguments| Call {
            arguments,
            ..call.clone()
        });
        let own = self
            .own
            .pre_tool_use(site, rewritten.as_ref().unwrap_or(call))
            .await;
        PreToolUse {
            arguments: own.arguments.or(outer.arguments),
            decision: stricter(outer.decision, own.decision),
        }
    }

    async fn permission_request(&self, site: &HookSite<'_>, call: &Call) -> Option<HookDecision> {
        let outer = self.outer.permission_request(site, call).await;
        if matches!(outer, Some(HookDecision::Deny(_))) {
            return outer;
        }
        stricter(outer, self.own.permission_request(site, call).await)
    }

    async fn post_tool_use(
        &self,
        site: &HookSite<'_>,
        call: &Call,
        output: &str,
        is_error: bool,
    ) -> PostToolUse {
        let outer = self.outer.post_tool_use(site, call, output, is_error).await;
        let own = self.own.post_tool_use(site, call, output, is_error).await;
        PostToolUse {
            feedback: joined(outer.feedback, own.feedback),
        }
    }

    async fn turn_event(&self, site: &HookSite<'_>, event: TurnEvent<'_>) -> TurnAnswer {
        let outer = self.outer.turn_event(site, event).await;
        let own = self.own.turn_event(site, event).await;
        TurnAnswer {
            block: joined(outer.block, own.block),
            context: joined(outer.context, own.context),
        }
    }
}

/// How many times hooks may send one turn on before it ends anyway.
pub const MAX_STOP_BLOCKS: usize = 3;

/// The hooks a run (and every context under it) asks.
pub type SharedHooks = Arc<dyn Hooks>;

/// The permission gate of one call as its hooks leave it: a `PreToolUse` allow spares the
/// person the question, an ask puts it to them where the rules would allow, and where a
/// person would be asked the `PermissionRequest` hooks may answer first. What the user's
/// rules deny stays denied whatever a hook says.
pub struct HookedGate<'a> {
    /// The run's gate.
    pub gate: &'a dyn PermissionGate,
    /// What the `PreToolUse` hooks decided (`Allow` or `Ask`; a denial never gets here).
    pub decision: Option<&'a HookDecision>,
    /// The hooks to ask at a `PermissionRequest`, where they fire, and about which call.
    pub hooks: Option<(&'a dyn Hooks, HookSite<'a>, &'a Call)>,
}

#[async_trait]
impl PermissionGate for HookedGate<'_> {
    async fn decide(&self, request: &PermissionRequest) -> PermissionDecision {
        let status = self.gate.status(request);
        let ask = matches!(self.decision, Some(HookDecision::Ask));
        match status {
            PermissionStatus::Denied => return self.gate.decide(request).await,
            _ if matches!(self.decision, Some(HookDecision::Allow)) => {
                return PermissionDecision::Allow;
            }
            PermissionStatus::Allowed if !ask => return PermissionDecision::Allow,
            PermissionStatus::Allowed | PermissionStatus::NeedsApproval => {}
        }
        // A person would be asked: the `PermissionRequest` hooks may answer for them.
        if let Some((hooks, site, call)) = &self.hooks {
            match hooks.permission_request(site, call).await {
                Some(HookDecision::Allow) => return PermissionDecision::Allow,
                Some(HookDecision::Deny(why)) => return PermissionDecision::Deny(why),
                Some(HookDecision::Ask) | None => {}
            }
        }
        if ask {
            self.gate.ask(request).await
        } else {
            self.gate.decide(request).await
        }
    }

    fn status(&self, request: &PermissionRequest) -> PermissionStatus {
        match (self.gate.status(request), self.decision) {
            (PermissionStatus::Denied, _) => PermissionStatus::Denied,
            (_, Some(HookDecision::Allow)) => PermissionStatus::Allowed,
            (_, Some(HookDecision::Ask)) => PermissionStatus::NeedsApproval,
            (status, _) => status,
        }
    }

    async fn ask(&self, request: &PermissionRequest) -> PermissionDecision {
        self.gate.ask(request).await
    }

    async fn escalate(&self, tool: &str, subject: &str, blocked: &str) -> bool {
        self.gate.escalate(tool, subject, blocked).await
    }

    async fn confirm_repetition(&self, tool: &str, count: usize) -> bool {
        self.gate.confirm_repetition(tool, count).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use wonopcode_protocol::event::NullSink;
    use wonopcode_protocol::tool_spec::ToolKind;

    /// A gate with fixed rules that records whether it decided or asked.
    struct Rules {
        status: PermissionStatus,
        calls: Mutex<Vec<&'static str>>,
    }

    #[async_trait]
    impl PermissionGate for Rules {
        async fn decide(&self, _request: &PermissionRequest) -> PermissionDecision {
            self.calls.lock().unwrap().push("decide");
            match self.status {
                PermissionStatus::Denied => PermissionDecision::Deny("a rule".into()),
                _ => PermissionDecision::Allow,
            }
        }

        fn status(&self, _request: &PermissionRequest) -> PermissionStatus {
            self.status
        }

        async fn ask(&self, _request: &PermissionRequest) -> PermissionDecision {
            self.calls.lock().unwrap().push("ask");
            PermissionDecision::Deny("the person said no".into())
        }
    }

    /// Hooks whose `PermissionRequest` answer is fixed.
    #[derive(Debug)]
    struct Approver(Option<HookDecision>);

    #[async_trait]
    impl Hooks for Approver {
        async fn pre_tool_use(&self, _site: &HookSite<'_>, _call: &Call) -> PreToolUse {
            PreToolUse::default()
        }
        async fn permission_request(
            &self,
            _site: &HookSite<'_>,
            _call: &Call,
        ) -> Option<HookDecision> {
            self.0.clone()
        }
        async fn post_tool_use(
            &self,
            _site: &HookSite<'_>,
            _call: &Call,
            _output: &str,
            _is_error: bool,
        ) -> PostToolUse {
            PostToolUse::default()
        }
        async fn turn_event(&self, _site: &HookSite<'_>, _event: TurnEvent<'_>) -> TurnAnswer {
            TurnAnswer::default()
        }
    }

    /// What the gate decides for rules saying `status`, a `PreToolUse` decision, and a
    /// `PermissionRequest` answer; and what it asked the rules.
    async fn decided(
        status: PermissionStatus,
        decision: Option<HookDecision>,
        approver: Option<HookDecision>,
    ) -> (PermissionDecision, Vec<&'static str>) {
        let rules = Rules {
            status,
            calls: Mutex::new(Vec::new()),
        };
        let events = Emitter::new(Arc::new(NullSink), ContextPath::root());
        let site = HookSite::new(&events, "s", Path::new("/"), "standard");
        let call = Call {
            id: "c1".into(),
            name: "bash".into(),
            arguments: "{}".into(),
        };
        let hooks = Approver(approver);
        let gate = HookedGate {
            gate: &rules,
            decision: decision.as_ref(),
            hooks: Some((&hooks, site, &call)),
        };
        let request = PermissionRequest {
            tool: "bash".into(),
            kind: ToolKind::Mutating,
            subject: Some("ls".into()),
            preview: None,
        };
        let said = gate.decide(&request).await;
        let calls = rules.calls.lock().unwrap().clone();
        (said, calls)
    }

    #[tokio::test]
    async fn a_hook_answers_for_the_person_but_never_over_a_deny_rule() {
        use PermissionDecision as D;
        use PermissionStatus as S;
        let allow = Some(HookDecision::Allow);
        let deny = Some(HookDecision::Deny("not today".into()));
        let ask = Some(HookDecision::Ask);
        // `PermissionRequest` hooks answer only where a person would be asked.
        assert_eq!(
            decided(S::NeedsApproval, None, allow.clone()).await,
            (D::Allow, vec![])
        );
        assert_eq!(
            decided(S::NeedsApproval, None, deny.clone()).await,
            (D::Deny("not today".into()), vec![])
        );
        assert_eq!(
            decided(S::NeedsApproval, None, None).await,
            (D::Allow, vec!["decide"])
        );
        assert_eq!(
            decided(S::Allowed, None, deny.clone()).await,
            (D::Allow, vec![])
        );
        // A `PreToolUse` allow spares the question; an ask puts it where rules allow.
        assert_eq!(
            decided(S::NeedsApproval, allow.clone(), None).await,
            (D::Allow, vec![])
        );
        assert_eq!(
            decided(S::Allowed, ask.clone(), None).await,
            (D::Deny("the person said no".into()), vec!["ask"])
        );
        assert_eq!(
            decided(S::Allowed, ask, allow.clone()).await,
            (D::Allow, vec![])
        );
        // A deny rule stands whatever a hook says.
        for decision in [allow.clone(), None] {
            assert_eq!(
                decided(S::Denied, decision, allow.clone()).await,
                (D::Deny("a rule".into()), vec!["decide"])
            );
        }
    }
}
