//! Where a session stands among the runs before it (what it resumes, forks or goes on
//! with) and its first events: it started, from which run, what its hooks add at its start,
//! the project instructions it read.

use std::path::Path;
use std::sync::Arc;

use wonopcode_agent_loop::hook::{HookSite, SharedHooks, TurnEvent};
use wonopcode_agent_loop::{LoopConfig, RunShared};
use wonopcode_journal::EarlierRun;
use wonopcode_protocol::{ContextPath, Emitter, EventKind, Message, ModelInfo, OnInterrupted};

use super::super::{Fork, new_session_id};
use super::Conversation;
use crate::error::SessionError;
use crate::history::History;
use crate::instructions::ProjectInstructions;

/// The run this one resumes or forks: for its `run.json`, its first events, and the calls
/// the resumed run finished (answered from its journal).
pub(super) struct Predecessor {
    pub(super) resumes: Option<String>,
    pub(super) continues: Option<String>,
    pub(super) origin: Option<String>,
    pub(super) events: Vec<EventKind>,
}

impl Predecessor {
    pub(super) fn of(
        continued_from: Option<String>,
        resuming: Option<(EarlierRun, OnInterrupted)>,
        fork: Option<Fork>,
        shared: &mut RunShared,
        notices: &mut Vec<String>,
    ) -> Self {
        let resumes = resuming.as_ref().map(|(e, _)| e.meta.id.clone());
        let origin = fork.as_ref().map(|f| format!("{}@{}", f.origin, f.point()));
        let mut events = Vec::new();
        if let Some((earlier, on_interrupted)) = resuming {
            let mut calls = earlier.calls;
            calls.on_interrupted = on_interrupted;
            let mut unfinished: Vec<&ContextPath> = calls.unfinished.iter().collect();
            unfinished.sort();
            events.push(EventKind::RunResumed {
                from: earlier.meta.id.clone(),
                unfinished: unfinished.iter().map(|c| c.to_string()).collect(),
                calls: u32::try_from(calls.finished_count()).unwrap_or(u32::MAX),
            });
            if let Some(torn) = &earlier.torn {
                notices.push(format!(
                    "run {}'s journal ended in a record cut short (line {}): the run goes on from the record before it",
                    earlier.meta.id, torn.line
                ));
            }
            shared.earlier = Some(Arc::new(calls));
        }
        if let Some(fork) = fork {
            events.push(EventKind::RunForked {
                at: fork.point(),
                from: fork.origin,
            });
        }
        Self {
            resumes,
            continues: continued_from,
            origin,
            events,
        }
    }
}

/// The session's first events: it started (and from which run), what its hooks add to the
/// instructions at its start, the project instructions it read.
pub(super) struct Announcement<'a> {
    pub(super) events: &'a Emitter,
    pub(super) session_id: &'a str,
    pub(super) root: &'a Path,
    pub(super) loop_name: String,
    pub(super) model: String,
    /// It goes on with a conversation.
    pub(super) resumed: bool,
}

impl<'a> Announcement<'a> {
    /// The announcement of `conversation`'s session in `root`, running `loop_name` on
    /// `model`.
    pub(super) fn of(
        conversation: &'a Conversation,
        root: &'a Path,
        loop_name: String,
        model: &ModelInfo,
    ) -> Self {
        Self {
            events: &conversation.events,
            session_id: &conversation.session_id,
            root,
            loop_name,
            model: model.id.clone(),
            resumed: !conversation.messages.is_empty(),
        }
    }

    pub(super) async fn announce(
        self,
        lineage: Predecessor,
        loop_config: &mut LoopConfig,
        hooks: Option<&SharedHooks>,
        instructions: &ProjectInstructions,
    ) {
        let events = self.events;
        events.emit(EventKind::SessionStarted {
            session_id: self.session_id.to_owned(),
            loop_name: self.loop_name,
            model: self.model.clone(),
            schema_version: wonopcode_protocol::event::EVENT_SCHEMA_VERSION,
        });
        for lineage in lineage.events {
            events.emit(lineage);
        }
        if let Some(hooks) = hooks {
            let site = HookSite::new(events, self.session_id, self.root, loop_config.agent_name());
            let source = if self.resumed { "resume" } else { "startup" };
            let said = hooks
                .turn_event(
                    &site,
                    TurnEvent::SessionStarted {
                        source,
                        model: &self.model,
                    },
                )
                .await;
            if let Some(added) = said.context {
                loop_config.add_instructions(&added);
            }
        }
        if !instructions.files.is_empty() {
            events.emit(EventKind::ProjectInstructionsLoaded {
                files: instructions
                    .files
                    .iter()
                    .map(|f| f.strip_prefix(self.root).unwrap_or(f).display().to_string())
                    .collect(),
                truncated: instructions.truncated,
            });
        }
    }
}

/// The history file at `path` and the conversation it holds (none without a file); a file
/// torn by a crash is repaired, with a notice saying where its tail was kept.
pub(super) fn open_history(
    path: Option<&Path>,
    notices: &mut Vec<String>,
) -> Result<(Option<History>, Vec<Message>), SessionError> {
    let Some(path) = path else {
        return Ok((None, Vec::new()));
    };
    let (history, messages) = History::open(path, &new_session_id())?;
    if let Some(aside) = &history.torn {
        notices.push(format!(
            "the history file {} ended in an incomplete record (a crash or a full disk); it is kept in {} and the history goes on from the last whole record",
            path.display(),
            aside.display()
        ));
    }
    Ok((Some(history), messages))
}
