//! Asking a component hook: the event in the `wonopcode:hooks` world's types, its typed
//! answer in the same [`Answer`] a command hook's JSON becomes, so both kinds are combined,
//! reported and fail alike.

use wonopcode_agent_loop::hook::HookSite;
use wonopcode_protocol::call::Call;
use wonopcode_protocol::event::HookVerdict;
use wonopcode_wasm_host::hook::{
    BeforeToolAnswer, HookComponent, Site, ToolCall, ToolVerdict, TurnEvent, TurnPoint,
};

use crate::answer::Answer;
use crate::event::HookEvent;
use crate::table::HookEntry;

/// What hooks are asked about: a tool call (before it runs, when it needs approval, after
/// it ran), or a point of a turn.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Question<'a> {
    /// A tool call; `output` and whether it failed once it ran.
    Call {
        /// The call.
        call: &'a Call,
        /// What it answered, after it ran.
        output: Option<(&'a str, bool)>,
    },
    /// A point of a turn and what it is about.
    Turn {
        /// What it is about (a prompt, an answer, a source, an agent type).
        subject: &'a str,
        /// Whether a hook already sent this turn on.
        again: bool,
    },
}

/// Asks `component` (the hook `hook` of `event`) `question`.
pub(crate) async fn ask(
    component: &HookComponent,
    event: HookEvent,
    hook: &HookEntry,
    site: &HookSite<'_>,
    question: Question<'_>,
) -> Answer {
    let at = Site {
        session_id: site.session_id.to_owned(),
        context: site.context.to_string(),
        depth: u32::try_from(site.context.depth()).unwrap_or(u32::MAX),
        cwd: site.cwd.display().to_string(),
        agent: site.agent.to_owned(),
    };
    let timeout = hook.timeout;
    let answered = match question {
        Question::Call { call, output } => {
            let call = ToolCall {
                id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            };
            match (event, output) {
                (HookEvent::PermissionRequest, _) => component
                    .permission_request(at, call, timeout)
                    .await
                    .map(|verdict| {
                        before_tool(BeforeToolAnswer {
                            verdict,
                            arguments: None,
                        })
                    }),
                (_, Some((output, is_error))) => component
                    .after_tool(at, call, output.to_owned(), is_error, timeout)
                    .await
                    .map(|said| said.map_or_else(|| Answer::telling(None), Answer::blocking)),
                (_, None) => component
                    .before_tool(at, call, timeout)
                    .await
                    .map(before_tool),
            }
        }
        Question::Turn { subject, again } => {
            let event = TurnEvent {
                point: point(event),
                subject: subject.to_owned(),
                again,
            };
            component
                .on_turn(at, event, timeout)
                .await
                .map(|said| match said.block {
                    Some(block) => Answer::blocking(block),
                    None => Answer::telling(said.context),
                })
        }
    };
    answered.unwrap_or_else(|fault| Answer::failed(event, hook, fault.to_string()))
}

/// A component's say over a call as a hook's answer.
fn before_tool(said: BeforeToolAnswer) -> Answer {
    let (verdict, reason) = match said.verdict {
        ToolVerdict::Pass if said.arguments.is_some() => (HookVerdict::Rewrite, None),
        ToolVerdict::Pass => (HookVerdict::None, None),
        ToolVerdict::Allow => (HookVerdict::Allow, None),
        ToolVerdict::Deny(why) => (HookVerdict::Deny, Some(why)),
        ToolVerdict::Ask(why) => (HookVerdict::Ask, Some(why)),
    };
    let mut answer = Answer::new(verdict, reason);
    answer.arguments = said.arguments;
    answer
}

/// The world's name for the point of a turn `event` is.
fn point(event: HookEvent) -> TurnPoint {
    match event {
        HookEvent::SessionStart => TurnPoint::SessionStart,
        HookEvent::UserPromptSubmit => TurnPoint::UserPromptSubmit,
        HookEvent::SubagentStart => TurnPoint::SubagentStart,
        HookEvent::SubagentStop => TurnPoint::SubagentStop,
        HookEvent::PreCompact => TurnPoint::PreCompact,
        HookEvent::SessionEnd => TurnPoint::SessionEnd,
        // Tool events are asked as calls, never as points of a turn.
        HookEvent::Stop
        | HookEvent::PreToolUse
        | HookEvent::PostToolUse
        | HookEvent::PermissionRequest => TurnPoint::Stop,
    }
}
