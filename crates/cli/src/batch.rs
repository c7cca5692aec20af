//! `wonopcode batch`: the batch's flags into a session per task (the task's own loop, model
//! and limits over the flags), the progress display, the summary, and `batch merge`.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use clap::ArgMatches;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;
use wonopcode_batch::results::Summary;
use wonopcode_batch::{
    BatchOptions, Progress, RunOutcome, Shard, Task, TaskFile, TaskPlace, TaskResult, TaskRunner,
};
use wonopcode_protocol::{LoopStatus, Usage};
use wonopcode_session::{Config, LoopChoice, NoRenderer, Session, Settings};

use crate::args::{BatchArgs, BatchCommand};
use crate::exit;
use crate::loops;
use crate::session::{
    check_model_args, check_model_choice, load_config, reported, session_builder, settings, usage,
};

/// Runs `wonopcode batch`; returns the exit code (0 when every task of the shard completed).
pub async fn run(args: &BatchArgs, matches: &ArgMatches) -> anyhow::Result<u8> {
    if let Some(BatchCommand::Merge { dirs, out }) = &args.command {
        return merge(dirs, out);
    }
    let Some(path) = &args.tasks else {
        return Err(usage(
            "give the tasks file: wonopcode batch TASKS.jsonl --out DIR",
        ));
    };
    if args.model.record.is_some() {
        return Err(usage(
            "--record: each task's journal keeps its responses (tasks/ID/runs/RUN_ID/responses.jsonl), which --replay reads",
        ));
    }
    let mut file = TaskFile::read_within(path, args.workspace_root.as_deref())
        .map_err(|e| usage(e.to_string()))?;
    // `-C`: the workspace of every task that names none.
    if let Some(dir) = &args.run.cwd {
        let dir = crate::session::workspace_root(Some(dir))?;
        for task in file
            .tasks
            .iter_mut()
            .filter(|t| t.workspace.is_none() && t.git.is_none())
        {
            task.workspace = Some(dir.clone());
        }
    }
    let shard = args.shard.unwrap_or(Shard::ALL);
    // `--list` with a results directory that does not exist yet creates nothing.
    let plan = match &args.out {
        Some(out) if !args.list || out.exists() => {
            Some(wonopcode_batch::plan(&file, shard, out, args.retry_failed)?)
        }
        _ => None,
    };
    if args.list {
        let ids: Vec<&str> = match &plan {
            Some(plan) => plan.tasks.iter().map(|t| t.id.as_str()).collect(),
            None => file
                .tasks
                .iter()
                .filter(|t| shard.contains(&t.id))
                .map(|t| t.id.as_str())
                .collect(),
        };
        for id in ids {
            println!("{id}");
        }
        return Ok(exit::SUCCESS);
    }
    let Some(plan) = plan else {
        return Err(usage("--out DIR is needed to run a batch"));
    };
    check_model_args(&args.model)?;
    let loop_choice = loops::choose_loop(
        args.loop_type,
        args.agent_loop.as_deref(),
        args.agent_loop_name.as_deref(),
    )?;
    let settings = settings(
        &args.model,
        &args.permissions,
        matches,
        &args.run,
        loop_choice,
    )?;
    let runner = Arc::new(FlagRunner {
        config: load_config(&settings)?,
        settings,
        journal: !args.run.no_journal,
    });
    let results_file = plan.results.results_file();
    let mut summary = Summary::of(&plan.done);
    let left = plan.tasks.len();
    let display = Arc::new(Display::new(args.json, left, plan.done.len(), &summary));
    let cancel = CancellationToken::new();
    spawn_ctrl_c_handler(cancel.clone(), display.clone());
    let started = Instant::now();
    let options = BatchOptions {
        concurrency: args.concurrency as usize,
        task_timeout: args.task_timeout,
    };
    let ended = wonopcode_batch::run(plan, &options, runner, display.clone(), cancel.clone()).await;
    display.finish();
    let ended = ended?;
    for result in &ended {
        summary.add(result);
    }
    let interrupted = cancel.is_cancelled();
    let wall = started.elapsed();
    if args.json {
        let line = serde_json::json!({
            "type": "summary",
            "summary": summary,
            "ran": ended.len(),
            "left": left - ended.len(),
            "wall_ms": wall.as_millis() as u64,
            "results": results_file,
        });
        println!("{line}");
    } else {
        print_summary(&summary, ended.len(), left, wall, &results_file);
    }
    Ok(if interrupted {
        exit::CANCELLED
    } else if summary.failed() > 0 {
        exit::ERROR
    } else {
        exit::SUCCESS
    })
}

/// `wonopcode batch merge`.
fn merge(dirs: &[PathBuf], out: &std::path::Path) -> anyhow::Result<u8> {
    let merged = wonopcode_batch::merge::merge(dirs, out)?;
    let summary = Summary::of(merged.results.values());
    println!(
        "merged {} task(s) from {} director{} into {}: {}",
        summary.total(),
        dirs.len(),
        if dirs.len() == 1 { "y" } else { "ies" },
        out.display(),
        statuses(&summary)
    );
    Ok(exit::SUCCESS)
}

/// Builds and runs one task's session: the batch's settings with the task's choices over
/// them, its journal in the task's `runs/` (where `wonopcode resume` finds it).
struct FlagRunner {
    settings: Settings,
    /// The config file, read once for every task.
    config: Config,
    journal: bool,
}

impl FlagRunner {
    async fn session(&self, task: &Task, place: &TaskPlace) -> anyhow::Result<Session> {
        let mut settings = self.settings.clone();
        let model = &mut settings.model;
        if let Some(provider) = &task.provider {
            model.provider = Some(provider.clone());
        }
        if let Some(id) = &task.model {
            model.model = Some(id.clone());
        }
        if let Some(replay) = &task.replay {
            model.replay = Some(replay.clone());
        }
        check_model_choice(model)?;
        settings.workspace = place.workspace.clone();
        settings.max_iterations = task.max_iterations.or(settings.max_iterations);
        let budget = &mut settings.budget;
        budget.max_cost_micro_cents = task.cost_limit().or(budget.max_cost_micro_cents);
        budget.max_tokens = task.max_tokens.or(budget.max_tokens);
        budget.max_wall = task.wall().or(budget.max_wall);
        if let Some(chosen) = &task.r#loop {
            // A `.wasm` file or an `oci://` reference, else a name.
            settings.loop_choice = match LoopChoice::component(std::path::Path::new(chosen)) {
                LoopChoice::File(_) if !chosen.ends_with(".wasm") => {
                    LoopChoice::Named(chosen.clone())
                }
                component => component,
            };
        }
        let journal = self
            .journal
            .then(|| wonopcode_journal::Runs::at(&place.dir.join("runs")));
        session_builder(settings, self.config.clone(), journal)
            .renderer(Box::new(NoRenderer))
            .build()
            .await
            .map_err(reported)
    }
}

#[async_trait]
impl TaskRunner for FlagRunner {
    async fn run(&self, task: &Task, place: &TaskPlace, cancel: CancellationToken) -> RunOutcome {
        let mut session = match self.session(task, place).await {
            Ok(session) => session,
            Err(e) => return RunOutcome::setup_failed(format!("{e:#}")),
        };
        if let Err(e) = session.start().await {
            return RunOutcome::setup_failed(format!("the loop failed to start: {e}"));
        }
        let canceller = session.canceller();
        // Cancels the turn once it runs (a cancel before it starts waits for it).
        let watch = tokio::spawn(async move {
            cancel.cancelled().await;
            while !canceller.cancel() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        });
        let result = session.prompt(&task.prompt).await;
        watch.abort();
        let unapproved = session.unapproved();
        let (status, error) = match session.failure() {
            Some(failure) => (LoopStatus::Error, Some(failure)),
            None if result.status == LoopStatus::Complete && unapproved > 0 => (
                LoopStatus::Error,
                Some(format!(
                    "{unapproved} tool call(s) needed approval and nobody could give it: run the batch with --yes or --allow rules"
                )),
            ),
            None => (result.status, result.error),
        };
        session.end("other", status == LoopStatus::Cancelled).await;
        RunOutcome {
            status: Ok(status),
            answer: result.response,
            error,
            usage: result.usage,
            iterations: result.iterations,
            run_id: session.run_id().map(str::to_owned),
        }
    }
}

/// What the batch shows while it runs: bars on a terminal, a line per task otherwise, or
/// JSON Lines with `--json`.
struct Display {
    json: bool,
    bars: Option<(MultiProgress, ProgressBar)>,
    /// Spinners of running tasks, by id (at most [`SHOWN_RUNNING`]).
    running: Mutex<Vec<(String, ProgressBar)>>,
    running_count: AtomicUsize,
    done: AtomicUsize,
    failed: AtomicUsize,
    tokens: AtomicU64,
    micro_cents: AtomicU64,
}

/// Running tasks shown one a line; the others are counted.
const SHOWN_RUNNING: usize = 8;

impl Display {
    fn new(json: bool, left: usize, finished_before: usize, before: &Summary) -> Self {
        let bars = (!json && std::io::stderr().is_terminal()).then(|| {
            let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
            let bar = multi.add(ProgressBar::new(left as u64));
            bar.set_style(
                ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            (multi, bar)
        });
        if finished_before > 0 && !json {
            eprintln!(
                "{finished_before} task(s) finished in an earlier run are kept ({}); {left} to run",
                statuses(before)
            );
        }
        let display = Self {
            json,
            bars,
            running: Mutex::new(Vec::new()),
            running_count: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            failed: AtomicUsize::new(0),
            tokens: AtomicU64::new(0),
            micro_cents: AtomicU64::new(0),
        };
        display.refresh();
        display
    }

    fn refresh(&self) {
        if let Some((_, bar)) = &self.bars {
            bar.set_message(format!(
                "done {} · failed {} · running {} · {} tokens · ${:.4}",
                self.done.load(Ordering::Relaxed),
                self.failed.load(Ordering::Relaxed),
                self.running_count.load(Ordering::Relaxed),
                self.tokens.load(Ordering::Relaxed),
                self.micro_cents.load(Ordering::Relaxed) as f64 / 1e8,
            ));
        }
    }

    /// Prints a line above the bars.
    fn say(&self, line: &str) {
        match &self.bars {
            Some((multi, _)) => multi.suspend(|| eprintln!("{line}")),
            None => eprintln!("{line}"),
        }
    }

    fn finish(&self) {
        if let Some((multi, bar)) = &self.bars {
            for (_, spinner) in self.running.lock().drain(..) {
                spinner.finish_and_clear();
            }
            bar.finish_and_clear();
            let _ = multi.clear();
        }
    }
}

impl Progress for Display {
    fn started(&self, id: &str) {
        self.running_count.fetch_add(1, Ordering::Relaxed);
        if let Some((multi, _)) = &self.bars {
            let mut running = self.running.lock();
            if running.len() < SHOWN_RUNNING {
                let spinner = multi.add(ProgressBar::new_spinner());
                spinner.set_style(
                    ProgressStyle::with_template("  {spinner} {msg} {elapsed}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                spinner.set_message(id.to_owned());
                spinner.enable_steady_tick(Duration::from_millis(120));
                running.push((id.to_owned(), spinner));
            }
        }
        self.refresh();
    }

    fn finished(&self, result: &TaskResult) {
        self.running_count.fetch_sub(1, Ordering::Relaxed);
        self.done.fetch_add(1, Ordering::Relaxed);
        if !result.status.succeeded() {
            self.failed.fetch_add(1, Ordering::Relaxed);
        }
        self.tokens
            .fetch_add(tokens(&result.usage), Ordering::Relaxed);
        self.micro_cents.fetch_add(
            result.usage.cost_micro_cents.unwrap_or(0),
            Ordering::Relaxed,
        );
        if self.json {
            let line = serde_json::json!({ "type": "task", "result": result });
            println!("{line}");
            return;
        }
        let mark = if result.status.succeeded() {
            "✓"
        } else {
            "✗"
        };
        let error = result
            .error
            .as_deref()
            .map(|e| format!(": {}", crate::render::one_line(e)))
            .unwrap_or_default();
        self.say(&format!(
            "{mark} {} {} in {}{error}",
            result.id,
            result.status.name(),
            seconds(result.duration_ms)
        ));
        if let Some((_, bar)) = &self.bars {
            let mut running = self.running.lock();
            if let Some(at) = running.iter().position(|(id, _)| *id == result.id) {
                let (_, spinner) = running.remove(at);
                spinner.finish_and_clear();
            }
            bar.inc(1);
        }
        self.refresh();
    }
}

/// `0.4 s`, `12.0 s`.
fn seconds(ms: u64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

fn tokens(usage: &Usage) -> u64 {
    usage.input_tokens + usage.output_tokens + usage.cache_read_tokens + usage.cache_write_tokens
}

/// `complete 48, error 2`.
fn statuses(summary: &Summary) -> String {
    let parts: Vec<String> = summary
        .by_status
        .iter()
        .map(|(status, n)| format!("{status} {n}"))
        .collect();
    if parts.is_empty() {
        "no tasks".to_owned()
    } else {
        parts.join(", ")
    }
}

/// The table printed at the end of a batch.
fn print_summary(
    summary: &Summary,
    ran: usize,
    left: usize,
    wall: Duration,
    results: &std::path::Path,
) {
    println!("{:<16} {:>7}", "status", "tasks");
    for (status, n) in &summary.by_status {
        println!("{status:<16} {n:>7}");
    }
    println!("{:<16} {:>7}", "total", summary.total());
    let cost = if summary.unpriced > 0 {
        format!(
            "${:.4} (+{} task(s) of unknown cost)",
            summary.cost_usd, summary.unpriced
        )
    } else {
        format!("${:.4}", summary.cost_usd)
    };
    println!(
        "ran {ran} of {left} in {:.1} s · {} tokens · {cost}",
        wall.as_secs_f64(),
        summary.tokens
    );
    if ran < left {
        println!(
            "{} task(s) did not run: run the same command again to go on",
            left - ran
        );
    }
    println!("results: {}", results.display());
}

/// Ctrl-C stops the batch: running tasks are cancelled (they have no result, so a re-run
/// does them again) and no task starts; a second Ctrl-C quits at once.
fn spawn_ctrl_c_handler(cancel: CancellationToken, display: Arc<Display>) {
    tokio::spawn(async move {
        loop {
            if tokio::signal::ctrl_c().await.is_err() {
                return;
            }
            if cancel.is_cancelled() {
                exit::now(exit::CANCELLED);
            }
            display.say("stopping the batch: the running tasks are cancelled and will run again next time (Ctrl-C again quits)");
            cancel.cancel();
        }
    });
}
