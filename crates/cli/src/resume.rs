//! `wonopcode resume RUN_ID` and `--resume` without `--history`: an interrupted run started
//! again as it was (its command line, in its directory), its root given the same prompts,
//! its finished responses and tool calls answered from its journal, and live from where it
//! stopped. The resumed run is a new run with a journal of its own (`resumes` names the
//! interrupted one), so nothing the interrupted run left is changed.

use anyhow::Context;
use clap::{ArgMatches, CommandFactory, FromArgMatches};
use wonopcode_agent_loop::OnInterrupted;
use wonopcode_journal::{EarlierRun, Invocation, ResumeError, RunStatus, Runs};

use crate::args::{Args, Command, OnInterruptedArg, PromptArgs};
use crate::session::{run_session, usage};

/// An interrupted run to go on with, and what to do with its cut-off calls.
pub struct Resuming {
    /// What it left.
    pub earlier: EarlierRun,
    /// The policy for a call it cut off that its tool cannot judge.
    pub policy: OnInterrupted,
}

impl Resuming {
    /// How it was started.
    pub fn invocation(&self) -> Option<&Invocation> {
        self.earlier.meta.invocation.as_ref()
    }
}

/// `wonopcode resume ID [--on-interrupted P] [-- FLAGS]`.
pub async fn by_id(
    id: &str,
    policy: Option<OnInterruptedArg>,
    flags: &[String],
) -> anyhow::Result<u8> {
    let runs = runs()?;
    let dir = runs.find(id).map_err(|e| usage(e.to_string()))?;
    resume(EarlierRun::read(&dir), policy, flags).await
}

/// `--resume` without `--history`: this workspace's latest interrupted run.
pub async fn latest(args: &PromptArgs) -> anyhow::Result<u8> {
    let root = crate::session::workspace_root(args.run.cwd.as_deref())?;
    let workspace = root.display().to_string();
    let runs = runs()?;
    let Some(meta) = runs
        .list()
        .into_iter()
        .find(|m| m.workspace == workspace && m.current_status() == RunStatus::Interrupted)
    else {
        return Err(usage(format!(
            "--resume: no interrupted run of {workspace} in {} (with --history FILE, --resume continues that conversation)",
            runs.dir().display()
        )));
    };
    let dir = runs.find(&meta.id).map_err(|e| usage(e.to_string()))?;
    resume(EarlierRun::read(&dir), args.on_interrupted, &[]).await
}

fn runs() -> anyhow::Result<Runs> {
    Runs::standard().context("there is no data directory for runs (set WONOPCODE_RUNS_DIR)")
}

async fn resume(
    earlier: Result<EarlierRun, ResumeError>,
    policy: Option<OnInterruptedArg>,
    flags: &[String],
) -> anyhow::Result<u8> {
    let earlier = earlier.map_err(|e| match e {
        ResumeError::Journal(e) => anyhow::Error::from(e),
        refused => usage(refused.to_string()),
    })?;
    let id = earlier.meta.id.clone();
    let Some(invocation) = earlier.meta.invocation.clone() else {
        return Err(usage(format!("run {id} does not say how it was started")));
    };
    if earlier.meta.prompts.is_empty() && invocation.one_shot {
        return Err(usage(format!(
            "run {id} stopped before its prompt was given: start it again instead"
        )));
    }
    // Relative paths of its command line are relative to where it was started.
    std::env::set_current_dir(&invocation.cwd)
        .map_err(|e| usage(format!("run {id} was started in {}: {e}", invocation.cwd)))?;
    let argv = std::iter::once("wonopcode".to_owned())
        .chain(invocation.args.iter().cloned())
        .chain(flags.iter().cloned());
    let matches = Args::command().try_get_matches_from(argv).map_err(|e| {
        usage(format!(
            "run {id}'s command line no longer parses: {}",
            first_line(&e.to_string())
        ))
    })?;
    let args = Args::from_arg_matches(&matches).map_err(|e| {
        usage(format!(
            "run {id}'s command line: {}",
            first_line(&e.to_string())
        ))
    })?;
    let (mut prompt_args, matches): (PromptArgs, &ArgMatches) = match args.command {
        None => (args.prompt, &matches),
        Some(Command::Run(prompt)) => (
            *prompt,
            matches.subcommand_matches("run").unwrap_or(&matches),
        ),
        Some(_) => return Err(usage(format!("run {id} was not a prompt's run"))),
    };
    if let Some(history) = &prompt_args.history {
        return Err(usage(format!(
            "run {id} kept its conversation in --history {}, which a resume would write again: continue that conversation with --history {0} instead",
            history.display()
        )));
    }
    // The prompts come from the journal.
    prompt_args.prompt = None;
    prompt_args.resume = false;
    let policy = match policy.or(prompt_args.on_interrupted) {
        Some(OnInterruptedArg::Rerun) => OnInterrupted::Rerun,
        Some(OnInterruptedArg::Skip) => OnInterrupted::Skip,
        Some(OnInterruptedArg::Ask) | None => OnInterrupted::Ask,
    };
    run_session(prompt_args, matches, Some(Resuming { earlier, policy })).await
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}
