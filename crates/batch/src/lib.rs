//! Many prompts as one batch: `wonopcode batch TASKS.jsonl --out DIR` runs every task of a
//! tasks file ([`task`]) in its own scratch workspace ([`scratch`]), K at a time, and keeps
//! per task its answer, status, usage, cost, duration, journal and the patch of what it
//! changed, plus `DIR/results.jsonl` ([`results`]). A re-run skips the tasks that finished, so
//! a batch stopped midway goes on where it stopped. `--shard I/N` ([`shard`]) splits the tasks
//! between machines by a stable hash of their ids, and [`merge`] joins their result
//! directories into one.
//!
//! The batch does not know how a task runs: the caller gives a [`TaskRunner`] (the binary
//! builds a session from its flags and the task's choices).

#![deny(missing_docs)]

pub mod merge;
pub mod results;
mod run;
pub mod scratch;
pub mod shard;
pub mod task;

use std::path::PathBuf;

pub use results::{TaskResult, TaskStatus};
pub use run::{BatchOptions, Plan, Progress, RunOutcome, TaskPlace, TaskRunner, plan, run};
pub use shard::Shard;
pub use task::{GitSource, Task, TaskFile};

/// What can go wrong with a batch, each said in one line.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    /// A line of the tasks file is not a task.
    #[error("{}:{line}: {reason}", file.display())]
    Task {
        /// The tasks file.
        file: PathBuf,
        /// The line, from 1.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// The tasks file holds no task.
    #[error("{}: no tasks (one JSON object a line, each with a `prompt`)", .0.display())]
    Empty(PathBuf),
    /// A file or directory could not be read or written.
    #[error("{what}: {source}")]
    Io {
        /// What was being done, with the path.
        what: String,
        /// Why it failed.
        source: std::io::Error,
    },
    /// A task's workspace could not be set up (a clone, a checkout, a copy).
    #[error("{0}")]
    Setup(String),
    /// Result directories that cannot be merged.
    #[error("{0}")]
    Merge(String),
}
