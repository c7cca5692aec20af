//! Hooks: the user's own code run at fixed points of a run — a session's or a child's start,
//! a submitted prompt, before a tool call runs, when it waits for approval, after it ran,
//! before a compaction, when a turn would stop, at the session's end — in every context of
//! the tree, whichever loop drives it. The configuration is Claude Code's (`hooks` of
//! `.claude/settings.json`, in its shape and with its tool names) and may also sit in
//! wonopcode's config file, a `registry.yaml` module or an agent file. A *command* hook gets
//! Claude Code's JSON on its stdin and answers as it would there (exit 2 to block, or JSON
//! with `permissionDecision`, `updatedInput`, `decision: "block"`), so an existing script
//! works unchanged; it runs confined by the run's sandbox. A *component* hook is a
//! WebAssembly component of the `wonopcode:hooks` world, answering the same questions typed,
//! with nothing but what its entry grants. Each runs under a timeout and is reported as a
//! `hook` item. `docs/hooks.md` maps Claude Code's fields to wonopcode's.

mod answer;
mod command;
mod component;
mod discover;
mod event;
mod table;

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use tracing::Instrument;
use wonopcode_agent_loop::hook::{
    HookDecision, HookSite, Hooks, PostToolUse, PreToolUse, TurnAnswer, TurnEvent,
};
use wonopcode_protocol::call::Call;
use wonopcode_protocol::event::{EventKind, HookItem, HookVerdict, Item, ItemDetails};

pub use answer::Answer;
pub use command::{HookEnv, Ran, run as run_command};
pub use discover::{discover, settings_files};
pub use event::HookEvent;
pub use table::{
    ComponentHook, DEFAULT_TIMEOUT, FailureMode, HookEntry, HookGroup, HookKind, HookTable,
};

use component::Question;

/// Why hooks could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HookError {
    /// An entry of a hook table has the wrong shape.
    #[error("{file}: {at}: {why}")]
    Config {
        /// The file it is in.
        file: String,
        /// Where in it (`hooks.PreToolUse[0]`).
        at: String,
        /// What is wrong.
        why: String,
    },
    /// A component hook could not be loaded.
    #[error("{file}: a component hook: {why}")]
    Component {
        /// The file that configures it.
        file: String,
        /// Why (the component's path and what is wrong with it).
        why: String,
    },
    /// A settings file could not be read or is not JSON.
    #[error("{file}: {why}")]
    Read {
        /// The file.
        file: String,
        /// Why (with the line and column of a JSON error).
        why: String,
    },
}

/// The configured hooks of a run, commands and components: asked at every tool call and
/// turn of every context.
#[derive(Clone)]
pub struct ConfiguredHooks {
    table: Arc<HookTable>,
    env: HookEnv,
}

impl std::fmt::Debug for ConfiguredHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfiguredHooks")
            .field("table", &self.table)
            .finish_non_exhaustive()
    }
}

impl ConfiguredHooks {
    /// The hooks of `table`, run in `env`.
    pub fn new(table: HookTable, env: HookEnv) -> Self {
        Self {
            table: Arc::new(table),
            env,
        }
    }

    /// Asks `hooks` of `event` `question`, in parallel, each reported as a `hook` item;
    /// their answers in configuration order. A command hook is given `input` (Claude Code's
    /// JSON) on its stdin; it is made only when a command hook is among them, so a call that
    /// only components answer does not pay for it.
    async fn ask<'h>(
        &self,
        event: HookEvent,
        hooks: Vec<&'h HookEntry>,
        site: &HookSite<'_>,
        question: Question<'_>,
        input: impl FnOnce() -> serde_json::Value,
    ) -> Vec<(&'h HookEntry, Answer)> {
        if hooks.is_empty() {
            return Vec::new();
        }
        let commands = hooks.iter().any(|h| matches!(h.kind, HookKind::Command(_)));
        let input = if commands {
            input().to_string()
        } else {
            String::new()
        };
        let context = site.context.to_string();
        let call = match question {
            Question::Call { call, .. } => Some(call),
            Question::Turn { .. } => None,
        };
        let tool = call.map_or("", |c| c.name.as_str());
        let runs = hooks.into_iter().map(|hook| {
            let (input, context) = (&input, &context);
            let name = hook.name();
            let span = tracing::info_span!("hook", event = event.name(), context = %context, depth = site.context.depth(), tool, hook = %name);
            async move {
                let started = Instant::now();
                let answer = match &hook.kind {
                    HookKind::Command(command) => {
                        let ran = command::run(command, hook.timeout, input.as_bytes(), &self.env, context).await;
                        Answer::of(event, hook, ran)
                    }
                    HookKind::Component(c) => match &c.loaded {
                        Some(component) => component::ask(component, event, hook, site, question).await,
                        None => Answer::failed(event, hook, "its component was not loaded".to_owned()),
                    },
                };
                let duration = started.elapsed();
                tracing::info!(verdict = ?answer.verdict, latency_ms = duration.as_millis(), "hook ran");
                report(site, event, name, call, &answer, duration);
                (hook, answer)
            }
            .instrument(span)
        });
        futures::future::join_all(runs).await
    }
}

/// What the hooks that answered one call decided together: any denial refuses it (their
/// reasons joined), else an ask puts it to the person, else an allow lets it run.
fn folded(answers: &[(&HookEntry, Answer)]) -> Option<HookDecision> {
    let denials: Vec<String> = answers
        .iter()
        .filter(|(_, answer)| answer.verdict == HookVerdict::Deny)
        .map(|(hook, answer)| {
            let why = answer.reason.as_deref().unwrap_or("no reason given");
            format!("`{}`: {why}", hook.name())
        })
        .collect();
    let said = |verdict| answers.iter().any(|(_, a)| a.verdict == verdict);
    // A workspace's hook may refuse or ask, never approve: the workspace never widens.
    let allowed = answers
        .iter()
        .any(|(hook, a)| a.verdict == HookVerdict::Allow && !hook.from_workspace);
    if !denials.is_empty() {
        Some(HookDecision::Deny(denials.join("; ")))
    } else if said(HookVerdict::Ask) {
        Some(HookDecision::Ask)
    } else if allowed {
        Some(HookDecision::Allow)
    } else {
        None
    }
}

/// A `hook` item for one hook that ran.
fn report(
    site: &HookSite<'_>,
    event: HookEvent,
    hook: String,
    call: Option<&Call>,
    answer: &Answer,
    duration: std::time::Duration,
) {
    site.events.emit(EventKind::ItemCompleted {
        item: Item {
            id: site.events.next_item_id(),
            details: ItemDetails::Hook(HookItem {
                event: event.name().to_owned(),
                hook,
                call_id: call.map(|c| c.id.clone()),
                tool: call.map(|c| c.name.clone()),
                decision: answer.verdict,
                reason: answer.reason.clone(),
                duration_ms: u64::try_from(duration.as_millis()).unwrap_or(u64::MAX),
            }),
        },
    });
}

#[async_trait]
impl Hooks for ConfiguredHooks {
    async fn pre_tool_use(&self, site: &HookSite<'_>, call: &Call) -> PreToolUse {
        let event = HookEvent::PreToolUse;
        let input = || answer::tool_input(event, site, call, None);
        let hooks = self.table.matching(event, Some(&call.name));
        let question = Question::Call { call, output: None };
        let answers = self.ask(event, hooks, site, question, input).await;
        // The last hook that rewrote the call wins, as the configuration orders them.
        let arguments = answers
            .iter()
            .rev()
            .find_map(|(_, answer)| answer.arguments.clone());
        PreToolUse {
            arguments,
            decision: folded(&answers),
        }
    }

    async fn permission_request(&self, site: &HookSite<'_>, call: &Call) -> Option<HookDecision> {
        let event = HookEvent::PermissionRequest;
        let input = || answer::tool_input(event, site, call, None);
        let hooks = self.table.matching(event, Some(&call.name));
        let question = Question::Call { call, output: None };
        let answers = self.ask(event, hooks, site, question, input).await;
        // Asking is what happens anyway when no hook decides.
        folded(&answers).filter(|d| *d != HookDecision::Ask)
    }

    async fn post_tool_use(
        &self,
        site: &HookSite<'_>,
        call: &Call,
        output: &str,
        is_error: bool,
    ) -> PostToolUse {
        let event = HookEvent::PostToolUse;
        let input = || answer::tool_input(event, site, call, Some((output, is_error)));
        let hooks = self.table.matching(event, Some(&call.name));
        let question = Question::Call {
            call,
            output: Some((output, is_error)),
        };
        let feedback: Vec<String> = self
            .ask(event, hooks, site, question, input)
            .await
            .into_iter()
            .filter_map(|(hook, answer)| {
                answer
                    .feedback
                    .map(|said| format!("PostToolUse hook `{}`: {said}", hook.name()))
            })
            .collect();
        PostToolUse {
            feedback: (!feedback.is_empty()).then(|| feedback.join("\n")),
        }
    }

    async fn turn_event(&self, site: &HookSite<'_>, event: TurnEvent<'_>) -> TurnAnswer {
        let again = matches!(event, TurnEvent::Stopped { again: true, .. });
        // Each point's event, what its matcher is matched against (a start's source or
        // agent type, a compaction's trigger, as Claude Code's), what it is about, and its
        // JSON.
        let (event, matched, subject, mut input) = match event {
            TurnEvent::SessionStarted { source, model } => {
                let mut input = answer::common_input(HookEvent::SessionStart, site);
                input["source"] = source.into();
                input["model"] = model.into();
                (HookEvent::SessionStart, Some(source), source, input)
            }
            TurnEvent::SubagentStarted { agent_type } => {
                let mut input = answer::common_input(HookEvent::SubagentStart, site);
                input["agent_id"] = site.context.to_string().into();
                input["agent_type"] = agent_type.into();
                (
                    HookEvent::SubagentStart,
                    Some(agent_type),
                    agent_type,
                    input,
                )
            }
            TurnEvent::PromptSubmitted { prompt } => {
                let mut input = answer::common_input(HookEvent::UserPromptSubmit, site);
                input["prompt"] = prompt.into();
                (HookEvent::UserPromptSubmit, None, prompt, input)
            }
            TurnEvent::Compacting { trigger } => {
                let mut input = answer::common_input(HookEvent::PreCompact, site);
                input["trigger"] = trigger.into();
                input["custom_instructions"] = "".into();
                (HookEvent::PreCompact, Some(trigger), trigger, input)
            }
            TurnEvent::SessionEnded { reason } => {
                let mut input = answer::common_input(HookEvent::SessionEnd, site);
                input["reason"] = reason.into();
                (HookEvent::SessionEnd, None, reason, input)
            }
            TurnEvent::Stopped { answer, again } => {
                // Claude Code's name for a subagent's stop.
                let event = if site.context.depth() == 0 {
                    HookEvent::Stop
                } else {
                    HookEvent::SubagentStop
                };
                let mut input = answer::common_input(event, site);
                input["stop_hook_active"] = again.into();
                input["last_assistant_message"] = answer.into();
                // A child's stop is matched against its agent, as its start is.
                let matched = (event == HookEvent::SubagentStop).then_some(site.agent);
                (event, matched, answer, input)
            }
        };
        if event == HookEvent::SubagentStop {
            input["agent_id"] = site.context.to_string().into();
            input["agent_type"] = site.agent.into();
        }
        let hooks = self.table.matching(event, matched);
        let question = Question::Turn { subject, again };
        let answers = self.ask(event, hooks, site, question, || input).await;
        let mut blocks = Vec::new();
        let mut context = Vec::new();
        for (_, answer) in answers {
            match (answer.verdict, answer.feedback) {
                (HookVerdict::Block, Some(said)) => blocks.push(said),
                (_, Some(said)) => context.push(said),
                _ => {}
            }
        }
        TurnAnswer {
            block: (!blocks.is_empty()).then(|| blocks.join("\n")),
            context: (!context.is_empty()).then(|| context.join("\n")),
        }
    }
}
