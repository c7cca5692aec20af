//! A batch's results directory:
//!
//! ```text
//! DIR/results.jsonl              one TaskResult a line (rebuilt from the tasks' result.json
//!                                at each start, appended as tasks finish)
//! DIR/tasks/ID/result.json       the task's result: its presence means the task finished
//! DIR/tasks/ID/answer.md         the final answer
//! DIR/tasks/ID/changes.patch     what it changed (`git apply` takes it), when it changed files
//! DIR/tasks/ID/runs/RUN_ID/      its journal (`--replay .../responses.jsonl` replays it)
//! DIR/tasks/ID/workspace/        its scratch workspace as it left it
//! ```
//!
//! `result.json` is written last, by a rename: a task stopped before that has no result and a
//! re-run does it again from a fresh workspace.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use wonopcode_os::durable;
use wonopcode_protocol::{LoopStatus, Usage};

use crate::BatchError;

/// How a task ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// The model gave its answer.
    Complete,
    /// Waiting on answers nobody could give (a call needing approval under
    /// `--unattended suspend`).
    Suspended,
    /// The run failed.
    Error,
    /// The iteration limit was reached.
    MaxIterations,
    /// A limit of the task's budget was reached.
    BudgetExceeded,
    /// The task ran past `--task-timeout` and was cancelled.
    TimedOut,
    /// The task's workspace or session could not be set up (a clone, a loop, a model).
    SetupFailed,
}

impl TaskStatus {
    /// Whether the task did what it was asked.
    pub fn succeeded(self) -> bool {
        self == Self::Complete
    }

    /// The status of a run that ended with `status`.
    pub fn of_run(status: LoopStatus) -> Self {
        match status {
            LoopStatus::Complete => Self::Complete,
            LoopStatus::Suspended => Self::Suspended,
            LoopStatus::Error | LoopStatus::Cancelled => Self::Error,
            LoopStatus::MaxIterations => Self::MaxIterations,
            LoopStatus::BudgetExceeded => Self::BudgetExceeded,
        }
    }

    /// Its name in results.
    pub fn name(self) -> &'static str {
        match self {
            Self::Complete => "complete",
            Self::Suspended => "suspended",
            Self::Error => "error",
            Self::MaxIterations => "max_iterations",
            Self::BudgetExceeded => "budget_exceeded",
            Self::TimedOut => "timed_out",
            Self::SetupFailed => "setup_failed",
        }
    }
}

/// One task's result: a line of `results.jsonl`, and its `result.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskResult {
    /// The task.
    pub id: String,
    /// How it ended.
    pub status: TaskStatus,
    /// The final answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// One line saying what went wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Tokens, and cost in micro-cents when the prices are known.
    pub usage: Usage,
    /// The cost in US dollars, when the prices are known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Model requests made.
    pub iterations: u32,
    /// Wall time, set-up and patch included.
    pub duration_ms: u64,
    /// Files the task added, changed or removed.
    #[serde(default)]
    pub changed_files: Vec<String>,
    /// The journal's run id (under `tasks/ID/runs/`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// When it finished (RFC 3339, UTC).
    pub finished_at: String,
}

/// The directory of a batch's results.
#[derive(Debug, Clone)]
pub struct ResultsDir {
    root: PathBuf,
}

fn io(what: String) -> impl FnOnce(std::io::Error) -> BatchError {
    move |source| BatchError::Io { what, source }
}

impl ResultsDir {
    /// The results directory at `root`, created when missing.
    pub fn open(root: &Path) -> Result<Self, BatchError> {
        std::fs::create_dir_all(root.join("tasks")).map_err(io(format!(
            "cannot create the results directory {}",
            root.display()
        )))?;
        Ok(Self {
            root: root.to_path_buf(),
        })
    }

    /// The directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory of task `id`.
    pub fn task_dir(&self, id: &str) -> PathBuf {
        self.root.join("tasks").join(id)
    }

    /// `results.jsonl`.
    pub fn results_file(&self) -> PathBuf {
        self.root.join("results.jsonl")
    }

    /// Every finished task's result, by id (a `result.json` that does not parse is an error:
    /// it is never written half).
    pub fn finished(&self) -> Result<BTreeMap<String, TaskResult>, BatchError> {
        let mut found = BTreeMap::new();
        let tasks = self.root.join("tasks");
        let entries =
            std::fs::read_dir(&tasks).map_err(io(format!("cannot read {}", tasks.display())))?;
        for entry in entries {
            let entry = entry.map_err(io(format!("cannot read {}", tasks.display())))?;
            let path = entry.path().join("result.json");
            let text = match std::fs::read_to_string(&path) {
                Ok(text) => text,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(io(format!("cannot read {}", path.display()))(e)),
            };
            let result: TaskResult = serde_json::from_str(&text).map_err(|e| {
                BatchError::Setup(format!("{} is not a task result: {e}", path.display()))
            })?;
            found.insert(result.id.clone(), result);
        }
        Ok(found)
    }

    /// Writes `results.jsonl` afresh from `results` (a rename: a reader never sees half).
    pub fn rewrite(&self, results: &BTreeMap<String, TaskResult>) -> Result<(), BatchError> {
        let mut text = String::new();
        for result in results.values() {
            text.push_str(&line(result));
        }
        write_atomically(&self.results_file(), text.as_bytes())
    }

    /// Stores a finished task: its answer and patch, then its `result.json` (the mark that it
    /// finished), then its line in `results.jsonl`.
    pub fn store(&self, result: &TaskResult, patch: &str) -> Result<(), BatchError> {
        let dir = self.task_dir(&result.id);
        std::fs::create_dir_all(&dir).map_err(io(format!("cannot create {}", dir.display())))?;
        write_atomically(
            &dir.join("answer.md"),
            result.answer.as_deref().unwrap_or("").as_bytes(),
        )?;
        let patch_path = dir.join("changes.patch");
        if patch.is_empty() {
            let _ = std::fs::remove_file(&patch_path);
        } else {
            write_atomically(&patch_path, patch.as_bytes())?;
        }
        let json = serde_json::to_vec_pretty(result).map_err(|e| {
            BatchError::Setup(format!("cannot write the result of {}: {e}", result.id))
        })?;
        write_atomically(&dir.join("result.json"), &json)?;
        let path = self.results_file();
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io(format!("cannot open {}", path.display())))?;
        file.write_all(line(result).as_bytes())
            .and_then(|()| durable::sync_data(&file))
            .map_err(io(format!("cannot append to {}", path.display())))
    }
}

/// A result as a line of `results.jsonl`.
fn line(result: &TaskResult) -> String {
    let mut text = serde_json::to_string(result).unwrap_or_default();
    text.push('\n');
    text
}

/// Writes `path` through a temporary file and a rename, synced.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), BatchError> {
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".tmp");
    let temporary = PathBuf::from(temporary);
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::File::create(&temporary)?;
        file.write_all(bytes)?;
        durable::sync_all(&file)?;
        std::fs::rename(&temporary, path)
    };
    write().map_err(io(format!("cannot write {}", path.display())))
}

/// A summary of results: counts by status, tokens, cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Summary {
    /// Tasks by status name.
    pub by_status: BTreeMap<&'static str, usize>,
    /// All tokens (prompt, cached and output).
    pub tokens: u64,
    /// Cost in US dollars of the tasks whose prices are known.
    pub cost_usd: f64,
    /// Tasks whose cost is unknown.
    pub unpriced: usize,
}

impl Summary {
    /// The summary of `results`.
    pub fn of<'a>(results: impl IntoIterator<Item = &'a TaskResult>) -> Self {
        let mut summary = Self::default();
        for result in results {
            summary.add(result);
        }
        summary
    }

    /// Counts one more result.
    pub fn add(&mut self, result: &TaskResult) {
        *self.by_status.entry(result.status.name()).or_default() += 1;
        let u = &result.usage;
        self.tokens +=
            u.input_tokens + u.output_tokens + u.cache_read_tokens + u.cache_write_tokens;
        match result.cost_usd {
            Some(cost) => self.cost_usd += cost,
            None if result.iterations > 0 => self.unpriced += 1,
            None => {}
        }
    }

    /// Tasks counted.
    pub fn total(&self) -> usize {
        self.by_status.values().sum()
    }

    /// Tasks that did not complete.
    pub fn failed(&self) -> usize {
        self.total() - self.by_status.get("complete").copied().unwrap_or(0)
    }
}

/// The cost in dollars of `usage`, when known.
pub fn cost_usd(usage: &Usage) -> Option<f64> {
    usage.cost_micro_cents.map(|c| c as f64 / 1e8)
}
