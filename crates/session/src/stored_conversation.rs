//! A conversation kept in the journal, read back to go on with it: the conversation its
//! runs leave (each run after the first continues the one before, or resumed it whole),
//! which a new run's root starts from (nothing is run or asked again), and every event of
//! those runs — for an editor's `session/load` to show again, for `--continue` and
//! `/resume` on the terminal.

use std::path::Path;

use crate::history::conversation_of;
use wonopcode_journal::{Lineage, Read, RunStatus, Runs};
use wonopcode_protocol::{Event, Message};

/// A kept conversation, read back.
pub struct StoredConversation {
    /// Its name: its first run's id.
    pub id: String,
    /// Its first prompt, cut to a line.
    pub title: Option<String>,
    /// The run that holds it now, which the new run goes on from.
    pub latest: String,
    /// Every event of its runs, in order.
    pub events: Vec<Event>,
}

impl StoredConversation {
    /// Reads the session `id` of `runs`, which ran in `workspace`; `Err`: one line saying
    /// why it cannot be loaded (unknown, another workspace's, open elsewhere, unreadable).
    pub fn read(runs: &Runs, id: &str, workspace: &Path) -> Result<Self, String> {
        let lineage = runs
            .lineage(id)
            .map_err(|_| format!("no session `{id}` in {}", runs.dir().display()))?;
        check(&lineage, id, workspace)?;
        let dirs = runs.dirs_of(&lineage).map_err(|e| e.to_string())?;
        // The runs before its last resume are not read: the resume holds them.
        let mut events = Vec::new();
        for dir in dirs.iter().skip(lineage.whole_from) {
            let read = Read::of(&dir.events_path()).map_err(|e| e.to_string())?;
            if let Some(torn) = read.torn {
                tracing::warn!(run = %dir.path().display(), line = torn.line, "the run's journal ends in a record cut short: the session goes on from the record before it");
            }
            events.extend(read.records.into_iter().map(|r| r.event));
        }
        Ok(Self {
            id: lineage.id,
            title: lineage.title,
            latest: lineage.latest.id,
            events,
        })
    }

    /// The conversation the root goes on with.
    pub fn conversation(&self) -> Vec<Message> {
        conversation_of(
            self.events
                .iter()
                .filter(|e| e.context.depth() == 0)
                .map(|e| &e.kind),
        )
    }
}

/// Refuses a session of another workspace, or one a live wonopcode holds.
fn check(lineage: &Lineage, id: &str, workspace: &Path) -> Result<(), String> {
    let latest = &lineage.latest;
    if Path::new(&latest.workspace) != workspace {
        return Err(format!(
            "session `{id}` ran in {}, not in {}",
            latest.workspace,
            workspace.display()
        ));
    }
    if latest.current_status() == RunStatus::Running {
        return Err(format!(
            "session `{id}` is open in another wonopcode (process {}): close it there first",
            latest.pid.unwrap_or_default()
        ));
    }
    Ok(())
}
