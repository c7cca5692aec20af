//! Running a batch: which tasks are left ([`plan`]), then K of them at once ([`run`]), each
//! in a fresh scratch workspace, its result stored as soon as it ends.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use async_trait::async_trait;
use futures::StreamExt;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;
use wonopcode_protocol::{LoopStatus, Usage};

use crate::BatchError;
use crate::results::{ResultsDir, TaskResult, TaskStatus, cost_usd};
use crate::scratch::Origin;
use crate::shard::Shard;
use crate::task::{Task, TaskFile};

/// Where a task runs and keeps its files.
#[derive(Debug, Clone)]
pub struct TaskPlace {
    /// `DIR/tasks/ID`: its journal goes under `runs/`.
    pub dir: PathBuf,
    /// Its scratch workspace, ready.
    pub workspace: PathBuf,
}

/// How a task's run ended, as its runner reports it.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// The run's status (`Err`: the session could not be set up, with why).
    pub status: Result<LoopStatus, String>,
    /// The final answer.
    pub answer: Option<String>,
    /// What went wrong, when it did.
    pub error: Option<String>,
    /// Tokens and cost.
    pub usage: Usage,
    /// Model requests made.
    pub iterations: u32,
    /// The journal's run id.
    pub run_id: Option<String>,
}

impl RunOutcome {
    /// A task whose session could not be set up.
    pub fn setup_failed(reason: impl Into<String>) -> Self {
        Self {
            status: Err(reason.into()),
            answer: None,
            error: None,
            usage: Usage::default(),
            iterations: 0,
            run_id: None,
        }
    }
}

/// Runs one task's prompt in its place. The runner stops the run when `cancel` fires (the
/// batch is stopping, or the task ran out of time).
#[async_trait]
pub trait TaskRunner: Send + Sync {
    /// Runs `task` in `place`.
    async fn run(&self, task: &Task, place: &TaskPlace, cancel: CancellationToken) -> RunOutcome;
}

/// Hears about tasks as they start and end (a progress display, a JSON stream).
pub trait Progress: Send + Sync {
    /// `id` started.
    fn started(&self, id: &str);
    /// A task ended and its result is stored.
    fn finished(&self, result: &TaskResult);
}

/// How a batch runs.
#[derive(Debug, Clone)]
pub struct BatchOptions {
    /// Tasks running at once.
    pub concurrency: usize,
    /// Cancel a task that runs longer than this.
    pub task_timeout: Option<Duration>,
}

/// The tasks a batch has left to run in its results directory.
#[derive(Debug)]
pub struct Plan {
    /// The results directory.
    pub results: ResultsDir,
    /// The shard's tasks that have not finished (or, with `retry_failed`, did not complete).
    pub tasks: Vec<Task>,
    /// The shard's tasks that finished before, with their results.
    pub done: Vec<TaskResult>,
}

/// The tasks of `file` in `shard` that `out` holds no result for (with `retry_failed`, also
/// those whose result is not `complete`). `results.jsonl` is rebuilt from the stored results,
/// so a line lost or torn by a kill is restored.
pub fn plan(
    file: &TaskFile,
    shard: Shard,
    out: &Path,
    retry_failed: bool,
) -> Result<Plan, BatchError> {
    let results = ResultsDir::open(out)?;
    let finished = results.finished()?;
    results.rewrite(&finished)?;
    let mut tasks = Vec::new();
    let mut done = Vec::new();
    for task in file.tasks.iter().filter(|t| shard.contains(&t.id)) {
        match finished.get(&task.id) {
            Some(result) if !retry_failed || result.status.succeeded() => {
                done.push(result.clone());
            }
            _ => tasks.push(task.clone()),
        }
    }
    Ok(Plan {
        results,
        tasks,
        done,
    })
}

/// Runs the plan's tasks, `options.concurrency` at once; returns the results of the tasks
/// that ended. A task the batch's `cancel` stops has no result (a re-run does it again).
pub async fn run(
    plan: Plan,
    options: &BatchOptions,
    runner: Arc<dyn TaskRunner>,
    progress: Arc<dyn Progress>,
    cancel: CancellationToken,
) -> Result<Vec<TaskResult>, BatchError> {
    let results = Arc::new(plan.results);
    let jobs = plan.tasks.into_iter().map(|task| {
        let (runner, progress, results, cancel) = (
            runner.clone(),
            progress.clone(),
            results.clone(),
            cancel.clone(),
        );
        let timeout = options.task_timeout;
        let span = tracing::info_span!("batch_task", task = %task.id);
        let job = async move {
            if cancel.is_cancelled() {
                return Ok(None);
            }
            progress.started(&task.id);
            let ended = one(&task, &results, runner.as_ref(), timeout, &cancel).await?;
            if let Some(result) = &ended {
                progress.finished(result);
            }
            Ok(ended)
        };
        // Each task on its own task: guests and tools of different tasks use both cores.
        tokio::spawn(job.instrument(span))
    });
    let mut ended = Vec::new();
    let mut stream = futures::stream::iter(jobs).buffer_unordered(options.concurrency.max(1));
    let mut first_error = None;
    while let Some(joined) = stream.next().await {
        match joined {
            Ok(Ok(Some(result))) => ended.push(result),
            Ok(Ok(None)) => {}
            Ok(Err(error)) => {
                // Storing results failed (a full disk): stop starting tasks.
                cancel.cancel();
                first_error.get_or_insert(error);
            }
            Err(panicked) => {
                first_error.get_or_insert(BatchError::Setup(format!("a task stopped: {panicked}")));
            }
        }
    }
    match first_error {
        Some(error) => Err(error),
        None => Ok(ended),
    }
}

/// One task, from a fresh workspace to its stored result; `None` when the batch was
/// cancelled before it ended.
async fn one(
    task: &Task,
    results: &ResultsDir,
    runner: &dyn TaskRunner,
    timeout: Option<Duration>,
    cancel: &CancellationToken,
) -> Result<Option<TaskResult>, BatchError> {
    let started = Instant::now();
    let dir = results.task_dir(&task.id);
    let place = TaskPlace {
        workspace: dir.join("workspace"),
        dir,
    };
    let origin = Origin::of(task);
    let (outcome, timed_out) = match origin.prepare(&place.workspace).await {
        Err(error) => (RunOutcome::setup_failed(error.to_string()), false),
        Ok(()) => {
            let task_cancel = cancel.child_token();
            let timer = timeout.map(|limit| {
                let token = task_cancel.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(limit).await;
                    token.cancel();
                })
            });
            let outcome = runner.run(task, &place, task_cancel.clone()).await;
            if let Some(timer) = timer {
                timer.abort();
            }
            if cancel.is_cancelled() {
                return Ok(None);
            }
            let timed_out =
                task_cancel.is_cancelled() && outcome.status == Ok(LoopStatus::Cancelled);
            (outcome, timed_out)
        }
    };
    let (status, error) = match outcome.status {
        Err(reason) => (TaskStatus::SetupFailed, Some(reason)),
        Ok(_) if timed_out => (
            TaskStatus::TimedOut,
            Some(format!(
                "ran longer than --task-timeout {}",
                humantime::format_duration(timeout.unwrap_or_default())
            )),
        ),
        Ok(status) => (TaskStatus::of_run(status), outcome.error),
    };
    let changes = match status {
        TaskStatus::SetupFailed => Default::default(),
        _ => match origin.changes(&place.workspace).await {
            Ok(changes) => changes,
            Err(e) => {
                tracing::warn!(task = %task.id, error = %e, "cannot compute the task's changes");
                Default::default()
            }
        },
    };
    let result = TaskResult {
        id: task.id.clone(),
        status,
        answer: outcome.answer,
        error,
        cost_usd: cost_usd(&outcome.usage),
        usage: outcome.usage,
        iterations: outcome.iterations,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        changed_files: changes.files,
        run_id: outcome.run_id,
        finished_at: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
    };
    results.store(&result, &changes.patch)?;
    Ok(Some(result))
}
