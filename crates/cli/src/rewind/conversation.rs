//! The conversation of a finished run taken back to before one of its prompts: a new run
//! that continues it (`continues` in its `run.json`, as an editor's session loaded again
//! does), whose journal holds only the conversation as it was when that prompt was given
//! (one `context.compacted`, strategy `rewind`). Nothing the run left is rewritten: an editor
//! loading the session, or `wonopcode runs history NEW FILE`, goes on from there; the run
//! itself still holds all of it.

use anyhow::Context as _;
use wonopcode_agent_loop::compaction::estimate_tokens;
use wonopcode_journal::{Read, RunDir, RunMeta, RunStatus, Runs, new_run_id};
use wonopcode_protocol::event::now_rfc3339;
use wonopcode_protocol::{ContextPath, Event, EventKind, Message};
use wonopcode_session::history::conversation_of;

use crate::session::usage;

/// A conversation worked out, to be kept as a new run.
pub struct ConversationBack {
    /// The run it goes on from.
    of: RunMeta,
    /// The conversation as it was.
    messages: Vec<Message>,
    /// The run's conversation at its end.
    whole: Vec<Message>,
}

impl ConversationBack {
    /// The conversation of `meta`'s run (in `runs`) before its prompt `from` (from 0).
    /// `Err`, in a line: another run went on from it (that one holds the conversation now),
    /// or its turns do not line up with its prompts (an answered suspension).
    pub fn plan(runs: &Runs, meta: &RunMeta, from: usize) -> anyhow::Result<Self> {
        let lineage = runs
            .lineages()
            .into_iter()
            .find(|l| l.runs.contains(&meta.id))
            .with_context(|| format!("run {} is in no conversation", meta.id))?;
        if lineage.latest.id != meta.id {
            return Err(usage(format!(
                "run {} was gone on with by run {}, which holds the conversation now: rewind that one",
                meta.id, lineage.latest.id
            )));
        }
        let dirs = runs.dirs_of(&lineage)?;
        let (mut before, mut whole) = (Vec::new(), Vec::new());
        for dir in dirs.iter().skip(lineage.whole_from) {
            let root = root_events(dir)?;
            if dir.path().ends_with(&meta.id) {
                let turns = root
                    .iter()
                    .filter(|k| matches!(k, EventKind::TurnStarted))
                    .count();
                if turns != meta.prompts.len() {
                    return Err(usage(format!(
                        "run {} has {turns} turn(s) for {} prompt(s) (a suspended call was answered), so where each prompt began is not known: take back the files alone with --code",
                        meta.id,
                        meta.prompts.len()
                    )));
                }
                let mut started = 0;
                for kind in &root {
                    if matches!(kind, EventKind::TurnStarted) {
                        started += 1;
                    }
                    if started <= from {
                        before.push(kind.clone());
                    }
                }
                whole.extend(root);
            } else {
                before.extend(root.iter().cloned());
                whole.extend(root);
            }
        }
        Ok(Self {
            of: meta.clone(),
            messages: conversation_of(&before),
            whole: conversation_of(&whole),
        })
    }

    /// How many messages it leaves out.
    pub fn dropped(&self) -> usize {
        self.whole.len().saturating_sub(self.messages.len())
    }

    /// Keeps it as a new run in `runs` that continues the run; the new run's id.
    pub fn keep(self, runs: &Runs) -> anyhow::Result<String> {
        let id = new_run_id();
        let dir = runs.create(&id)?;
        let now = now_rfc3339();
        let meta = RunMeta {
            id: id.clone(),
            workspace: self.of.workspace.clone(),
            started: now.clone(),
            ended: Some(now.clone()),
            loop_name: self.of.loop_name.clone(),
            model: self.of.model.clone(),
            prompt: None,
            status: RunStatus::Finished,
            origin: None,
            pid: None,
            resumes: None,
            continues: Some(self.of.id.clone()),
            invocation: None,
            prompts: Vec::new(),
            modules: self.of.modules.clone(),
            commands: Vec::new(),
        };
        let mut log = dir.begin(&meta)?;
        let tokens = |messages: &[Message]| estimate_tokens(None, messages) as u64;
        log.append(&Event {
            context: ContextPath::root(),
            ts: now,
            kind: EventKind::ContextCompacted {
                strategy: "rewind".to_owned(),
                tokens_before: tokens(&self.whole),
                tokens_after: tokens(&self.messages),
                messages: self.messages,
            },
        })?;
        Ok(id)
    }
}

/// The root's events of the run in `dir`, in order.
fn root_events(dir: &RunDir) -> anyhow::Result<Vec<EventKind>> {
    let read = Read::of(&dir.events_path())?;
    Ok(read
        .records
        .into_iter()
        .filter(|r| r.event.context.depth() == 0)
        .map(|r| r.event.kind)
        .collect())
}
