//! The run journal: what a run did, kept on disk as it happens, so a run that dies (a crash,
//! an OOM kill, a closed laptop) leaves a record of every context it had, every tool call
//! it started and finished, and every model response.
//!
//! A run's directory is `runs/RUN_ID/` under the data dir (`WONOPCODE_RUNS_DIR` overrides
//! where `runs/` is):
//!
//! - `run.json`: what the run is (`RunMeta`): its id, workspace, loop, model, first prompt,
//!   status, and the run it was forked from;
//! - `events.jsonl`: every context's events, one log keyed by context path, appended in the
//!   order they happen and fsync'd after each one that has an effect or ends a step (a
//!   finished tool call, a finished turn, a context's end);
//! - `responses.jsonl`: the model responses, in the transcript format `--replay` reads
//!   (written by the session's recording model), so the journal of a run is also its
//!   recording.
//!
//! `docs/durability.md` says why one log and not a file per context.

mod checkpoints;
mod earlier_run;
mod events;
mod lineage;
mod meta;
mod private;
mod runs;
mod seal;
mod steps;

pub use checkpoints::{Change, CheckpointStore, Restore, Rewind, changes, rewind_run};
pub use earlier_run::{EarlierRun, ResumeError};
pub use events::{EventLog, JournalRecord, Read, Torn};
pub use lineage::Lineage;
pub use meta::{Invocation, KeptCommand, RunMeta, RunStatus, SessionCommand};
pub use runs::{RunDir, Runs, attachments_path, new_run_id, prompt_attachments};
pub use seal::SealKey;
pub use steps::Step;

/// Why the journal could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// A file or directory of the journal could not be created, written or read.
    #[error("{path}: {why}")]
    Io {
        /// The file or directory.
        path: String,
        /// What the system said.
        why: String,
    },
    /// A record that is not the last one does not parse (the file was changed by hand, or is
    /// not a journal).
    #[error("{path}:{line}: not a journal record: {why}")]
    Corrupt {
        /// The file.
        path: String,
        /// The line, from 1.
        line: usize,
        /// What the parser said.
        why: String,
    },
    /// No run has this id.
    #[error("no run `{0}` (`wonopcode runs list` shows the runs)")]
    NoRun(String),
    /// More than one run's id starts with this.
    #[error("`{0}` is the start of {1} runs' ids: give more of it")]
    Ambiguous(String, usize),
}

impl JournalError {
    pub(crate) fn io(path: &std::path::Path, error: &std::io::Error) -> Self {
        Self::Io {
            path: path.display().to_string(),
            why: error.to_string(),
        }
    }
}
