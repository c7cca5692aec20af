//! An interrupted (or suspended) run read back for its resume: how it was started, the prompts its root was
//! given, what each context's tool calls did (finished, or started and cut off), which
//! contexts never ended, and where its model responses are. The resume starts the run again
//! the same way; the responses and the finished calls are answered from here, not repeated.

use std::path::PathBuf;

use wonopcode_protocol::{ContextPath, EarlierCalls, EventKind, LoopStatus};

use crate::JournalError;
use crate::events::{Read, Torn};
use crate::meta::{RunMeta, RunStatus};
use crate::runs::RunDir;

/// What an interrupted run left.
#[derive(Debug)]
pub struct EarlierRun {
    /// Its `run.json`.
    pub meta: RunMeta,
    /// Its tool calls, per context, and the contexts that started and never ended (the
    /// root included, unless its last turn ended).
    pub calls: EarlierCalls,
    /// The transcript of its responses.
    pub responses: PathBuf,
    /// Its event log's torn last record, if the run stopped while writing it.
    pub torn: Option<Torn>,
}

/// Why a run cannot be resumed.
#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    /// The journal could not be read.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// Its process still runs.
    #[error("run {id} is still running (process {pid}); stop it first")]
    Running {
        /// The run.
        id: String,
        /// Its process.
        pid: u32,
    },
    /// It ended: nothing is left to do.
    #[error("run {0} finished: there is nothing to resume")]
    Finished(String),
    /// Its process stopped between turns (a terminal closed at the prompt): nothing was cut
    /// off, so there is nothing to run again; its conversation goes on instead.
    #[error(
        "run {0} stopped between turns, with nothing cut off: go on with its conversation with `wonopcode -r {0}`"
    )]
    AtRest(String),
    /// An answer names no call the run waits on (one line naming those that wait).
    #[error("{0}")]
    Answer(String),
    /// It went on with another run's conversation (an editor's session loaded again).
    #[error(
        "run {id} goes on with the conversation of run {from} (an editor's session): load that session in the editor to go on with it"
    )]
    Continues {
        /// The run.
        id: String,
        /// The run whose conversation it continues.
        from: String,
    },
    /// It was made by a wonopcode that did not record how it was started.
    #[error("run {0} does not say how it was started (it predates resumable journals)")]
    NoInvocation(String),
}

impl EarlierRun {
    /// Reads the run in `dir`, refusing one that still runs or finished, and one that
    /// continues another's conversation (its prompts alone do not make it again).
    pub fn read(dir: &RunDir) -> Result<Self, ResumeError> {
        let meta = dir.meta()?;
        match meta.current_status() {
            RunStatus::Running => {
                return Err(ResumeError::Running {
                    id: meta.id,
                    pid: meta.pid.unwrap_or_default(),
                });
            }
            RunStatus::Finished | RunStatus::Failed => {
                return Err(ResumeError::Finished(meta.id));
            }
            RunStatus::Interrupted | RunStatus::Suspended => {}
        }
        if let Some(from) = meta.continues {
            return Err(ResumeError::Continues { id: meta.id, from });
        }
        if meta.invocation.is_none() {
            return Err(ResumeError::NoInvocation(meta.id));
        }
        let log = Read::of(&dir.events_path())?;
        let mut calls = EarlierCalls::default();
        // Whether the root's last turn was cancelled (Ctrl-C): a resume goes on with it.
        let mut cancelled_last = false;
        for record in log.records {
            let context = record.event.context;
            match record.event.kind {
                EventKind::SessionStarted { .. }
                | EventKind::TurnStarted
                | EventKind::ContextStarted { .. } => {
                    if context == ContextPath::root() {
                        cancelled_last = false;
                    }
                    calls.unfinished.insert(context);
                }
                EventKind::TurnCompleted { pending, .. } => {
                    // What the root's last turn waits on is what an answer may name.
                    if context == ContextPath::root() {
                        calls.waiting = pending;
                    }
                    calls.unfinished.remove(&context);
                }
                EventKind::TurnFailed { status, .. } => {
                    if context == ContextPath::root() {
                        calls.waiting.clear();
                        cancelled_last = status == LoopStatus::Cancelled;
                    }
                    calls.unfinished.remove(&context);
                }
                EventKind::ContextCompleted { .. } => {
                    calls.unfinished.remove(&context);
                }
                EventKind::ItemStarted { item } => {
                    if let Some(call) = item.details.tool_call() {
                        calls.started(&context, call);
                    }
                }
                EventKind::ItemCompleted { item } => {
                    if let Some(call) = item.details.tool_call() {
                        calls.finished(&context, call.clone());
                    }
                }
                _ => {}
            }
        }
        // A session that stopped with every context's turn ended (its terminal closed at the
        // prompt) left nothing cut off: running its prompts again would only repeat what is
        // done, and a turn cancelled on the way would not end where it did. A one-shot run
        // is given its prompt again, every call answered from here.
        let interactive = meta.invocation.as_ref().is_some_and(|i| !i.one_shot);
        if interactive
            && calls.unfinished.is_empty()
            && !cancelled_last
            && meta.current_status() == RunStatus::Interrupted
        {
            return Err(ResumeError::AtRest(meta.id));
        }
        Ok(Self {
            meta,
            calls,
            responses: dir.responses_path(),
            torn: log.torn,
        })
    }
}
