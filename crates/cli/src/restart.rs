//! Runs started again from another run's journal, the way it was started (its command line,
//! in its directory) with its root given the same prompts:
//!
//! - `wonopcode resume RUN_ID` (and `--resume` without `--history`): an interrupted run goes
//!   on, its finished responses and tool calls answered from its journal, live from where it
//!   stopped;
//! - `wonopcode fork RUN_ID --at CONTEXT:RESPONSE`: a run's responses before that point
//!   served from its journal (its tool calls run again), and from that response on another
//!   model (or the same), to try a decision again.
//!
//! Either is a new run with a journal of its own (`resumes` or `origin` names the other),
//! so nothing the other run left is changed.

use anyhow::Context;
use clap::{ArgMatches, CommandFactory, FromArgMatches};
use wonopcode_agent_loop::{ContextPath, OnInterrupted};
use wonopcode_journal::{EarlierRun, Invocation, ResumeError, RunMeta, RunStatus, Runs, SealKey};
use wonopcode_providers::Transcript;
use wonopcode_session::Fork;

use crate::args::{Args, Command, ForkArgs, OnInterruptedArg, PromptArgs};
use crate::run::run_session;
use crate::session::usage;

/// A run started again from another's journal.
pub enum Again {
    /// Going on with an interrupted run.
    Resume {
        /// What it left.
        earlier: EarlierRun,
        /// The policy for a call it cut off that its tool cannot judge (`None`: the run's
        /// own, else `ask`).
        policy: Option<OnInterruptedArg>,
    },
    /// A fork of a run.
    Fork {
        /// The run forked.
        meta: RunMeta,
        /// Where, and its responses.
        fork: Fork,
    },
}

impl Again {
    /// The other run.
    pub fn meta(&self) -> &RunMeta {
        match self {
            Self::Resume { earlier, .. } => &earlier.meta,
            Self::Fork { meta, .. } => meta,
        }
    }

    /// How the other run was started.
    pub fn invocation(&self) -> Option<&Invocation> {
        self.meta().invocation.as_ref()
    }
}

/// `wonopcode resume ID [--on-interrupted P] [-- FLAGS]`.
pub async fn resume_by_id(
    id: &str,
    policy: Option<OnInterruptedArg>,
    flags: &[String],
) -> anyhow::Result<u8> {
    let dir = runs()?.find(id).map_err(|e| usage(e.to_string()))?;
    resume(EarlierRun::read(&dir), policy, flags).await
}

/// `--resume` without `--history`: this workspace's latest interrupted run.
pub async fn resume_latest(args: &PromptArgs) -> anyhow::Result<u8> {
    if !args.answer.is_empty() {
        return Err(usage(
            "--answer answers a suspended call of the conversation in --history FILE: give --history",
        ));
    }
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

/// `wonopcode fork ID --at CONTEXT:RESPONSE [--provider P] [--model M] [--replay FILE]`.
pub async fn fork(args: &ForkArgs) -> anyhow::Result<u8> {
    let dir = runs()?.find(&args.id).map_err(|e| usage(e.to_string()))?;
    let meta = dir.meta()?;
    let (at, response) = fork_point(&args.at)?;
    let responses = dir.responses_path();
    check_fork_point(&meta.id, &responses, &at, response)?;
    // The live part's model: what the fork names replaces the run's own; a model alone
    // keeps the run's provider.
    let mut strip: Vec<&str> = Vec::new();
    let mut add: Vec<String> = Vec::new();
    if args.replay.is_some() || args.provider.is_some() || args.model.is_some() {
        strip.extend(["--replay", "--replay-mode", "--replay-pace", "--model"]);
    }
    if args.replay.is_some() || args.provider.is_some() {
        strip.extend(["--provider", "--base-url", "--wire"]);
    }
    if let Some(replay) = &args.replay {
        let path = std::path::absolute(replay).unwrap_or_else(|_| replay.clone());
        add.extend(["--replay".to_owned(), path.display().to_string()]);
    }
    if let Some(provider) = &args.provider {
        add.extend(["--provider".to_owned(), provider.clone()]);
    }
    if let Some(model) = &args.model {
        add.extend(["--model".to_owned(), model.clone()]);
        let provider_given = args.provider.is_some()
            || meta
                .invocation
                .as_ref()
                .is_some_and(|i| i.args.iter().any(|a| is_flag(a, "--provider")));
        if !provider_given && let Some((provider, _)) = meta.model.split_once('/') {
            add.extend(["--provider".to_owned(), provider.to_owned()]);
        }
    }
    // The fork keeps its recording in its own journal: the run's `--record` file is its.
    strip.push("--record");
    if let Some(workspace) = &args.cwd {
        strip.extend(["-C", "--cwd"]);
        let path = std::path::absolute(workspace).unwrap_or_else(|_| workspace.clone());
        add.extend(["-C".to_owned(), path.display().to_string()]);
    }
    add.extend(args.flags.iter().cloned());
    let id = meta.id.clone();
    let again = Again::Fork {
        fork: Fork {
            origin: id,
            responses,
            at,
            response,
        },
        meta,
    };
    start_again(again, &strip, &add).await
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
    start_again(Again::Resume { earlier, policy }, &[], flags).await
}

/// Starts `again`'s run the way the other was started: its arguments without the flags in
/// `strip` (and their values), with `add` after them, in its directory.
async fn start_again(mut again: Again, strip: &[&str], add: &[String]) -> anyhow::Result<u8> {
    let meta = again.meta().clone();
    let id = meta.id.clone();
    let Some(invocation) = meta.invocation.clone() else {
        return Err(usage(format!(
            "run {id} does not say how it was started (it predates resumable journals)"
        )));
    };
    if meta.prompts.is_empty() && invocation.one_shot {
        return Err(usage(format!(
            "run {id} stopped before its prompt was given: start it again instead"
        )));
    }
    // Relative paths of its command line are relative to where it was started.
    std::env::set_current_dir(&invocation.cwd)
        .map_err(|e| usage(format!("run {id} was started in {}: {e}", invocation.cwd)))?;
    let argv = std::iter::once("wonopcode".to_owned())
        .chain(without_flags(&invocation.args, strip))
        .chain(add.iter().cloned());
    let matches = Args::command().try_get_matches_from(argv).map_err(|e| {
        usage(format!(
            "run {id}'s command line does not parse now: {}",
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
            "run {id} kept its conversation in --history {}, which starting it again would write twice: continue that conversation with --history {0} instead",
            history.display()
        )));
    }
    // A journal can be changed by whoever may write the runs directory: a command line not
    // sealed by this user's key runs what it would widen only when the person says so, here
    // or by giving the flags again.
    let sealed = SealKey::standard().is_some_and(|key| invocation.is_sealed_by(&key));
    let stored = match sealed {
        true => Vec::new(),
        false => parse_prompt(&invocation.args, strip)
            .map(|a| widening(&a))
            .unwrap_or_default(),
    };
    let given = parse_prompt(add, &[])
        .map(|a| widening(&a))
        .unwrap_or_default();
    let unasked: Vec<String> = stored.into_iter().filter(|w| !given.contains(w)).collect();
    if !unasked.is_empty() && !confirm_wider(&id, &unasked).await {
        // A planted line is hostile text: shown with its control characters escaped.
        let shown: Vec<String> = unasked
            .iter()
            .map(|w| crate::render::one_line(w).into_owned())
            .collect();
        return Err(usage(format!(
            "run {id}'s journal starts it with wider settings than you gave: {}; give them again after `--` to run with them (wonopcode resume {id} -- {})",
            shown.join(" "),
            shown.join(" ")
        )));
    }
    if let Again::Resume { policy, .. } = &mut again {
        *policy = policy.or(prompt_args.on_interrupted);
    }
    // The prompts come from the journal.
    prompt_args.prompt = None;
    prompt_args.resume = false;
    run_session(prompt_args, matches, Some(again)).await
}

/// A prompt's flags as clap reads them (`args` without `strip`), or `None` when they do
/// not parse.
fn parse_prompt(args: &[String], strip: &[&str]) -> Option<PromptArgs> {
    let argv = std::iter::once("wonopcode".to_owned()).chain(without_flags(args, strip));
    let matches = Args::command().try_get_matches_from(argv).ok()?;
    let args = Args::from_arg_matches(&matches).ok()?;
    match args.command {
        None => Some(args.prompt),
        Some(Command::Run(prompt)) => Some(*prompt),
        Some(_) => None,
    }
}

/// The settings of `args` that widen what a run may do beyond the defaults and the user's
/// config file: approvals, sandbox, servers, rules, another config or loops, another
/// provider address, workspace trust. One flag (with its value) each, as typed.
fn widening(args: &PromptArgs) -> Vec<String> {
    let mut wide = Vec::new();
    if args.permissions.yes {
        wide.push("--yes".to_owned());
    }
    wide.extend(
        args.permissions
            .allow
            .iter()
            .map(|r| format!("--allow {r}")),
    );
    if args.run.sandbox == Some(wonopcode_sandbox::SandboxMode::FullAccess) {
        wide.push("--sandbox full-access".to_owned());
    }
    wide.extend(args.run.mcp.iter().map(|(n, c)| format!("--mcp {n}={c}")));
    if let Some(config) = &args.run.config {
        wide.push(format!("--config {}", config.display()));
    }
    wide.extend(
        args.run
            .loops_dir
            .iter()
            .map(|d| format!("--loops-dir {}", d.display())),
    );
    if args.run.trust_workspace {
        wide.push("--trust-workspace".to_owned());
    }
    if let Some(url) = &args.model.base_url {
        wide.push(format!("--base-url {url}"));
    }
    wide
}

/// At a terminal, shows `wider` and asks whether run `id` may start with them; `false`
/// without a terminal.
async fn confirm_wider(id: &str, wider: &[String]) -> bool {
    use std::io::IsTerminal;
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return false;
    }
    eprintln!("run {id}'s journal starts it with settings wider than the defaults:");
    for flag in wider {
        eprintln!("  {}", crate::render::one_line(flag));
    }
    crate::prompter::confirm(
        "Start it with them? [y/N] ".to_owned(),
        indicatif::MultiProgress::new(),
    )
    .await
}

/// `args` without the flags `strip` names, each with its value (`--flag value` or
/// `--flag=value`). Every flag stripped takes a value.
fn without_flags(args: &[String], strip: &[&str]) -> Vec<String> {
    let mut kept = Vec::new();
    let mut skip_value = false;
    for arg in args {
        if std::mem::take(&mut skip_value) {
            continue;
        }
        if let Some(flag) = strip.iter().find(|f| is_flag(arg, f)) {
            skip_value = arg.len() == flag.len();
            continue;
        }
        kept.push(arg.clone());
    }
    kept
}

/// Whether `arg` is `flag`, alone or with its value (`--flag=value`, `-Fvalue`).
fn is_flag(arg: &str, flag: &str) -> bool {
    let short = flag.len() == 2 && !flag.starts_with("--");
    arg == flag
        || arg
            .strip_prefix(flag)
            .is_some_and(|rest| short || rest.starts_with('='))
}

/// `CONTEXT:RESPONSE` (`0.2:1`).
fn fork_point(text: &str) -> anyhow::Result<(ContextPath, u32)> {
    let bad = || {
        usage(format!(
            "--at {text}: give CONTEXT:RESPONSE, a context path and a response number (`0.2:1`; `wonopcode runs show` lists them)"
        ))
    };
    let (context, response) = text.rsplit_once(':').ok_or_else(bad)?;
    let context = ContextPath::parse(context).ok_or_else(bad)?;
    let response = response.parse().map_err(|_| bad())?;
    Ok((context, response))
}

/// Refuses a fork point past what the run's journal holds for that context.
fn check_fork_point(
    id: &str,
    responses: &std::path::Path,
    context: &ContextPath,
    response: u32,
) -> anyhow::Result<()> {
    let (transcript, _) = Transcript::load_unfinished(responses)
        .with_context(|| format!("cannot read run {id}'s responses"))?;
    let held = transcript
        .turns
        .iter()
        .filter(|t| t.context == *context)
        .count();
    if response as usize > held || held == 0 {
        return Err(usage(format!(
            "--at {context}:{response}: run {id}'s journal has {held} response(s) of context {context}, numbered from 0"
        )));
    }
    Ok(())
}

/// What `--on-interrupted` says (`ask` when it says nothing).
pub fn on_interrupted(arg: Option<OnInterruptedArg>) -> OnInterrupted {
    match arg {
        Some(OnInterruptedArg::Rerun) => OnInterrupted::Rerun,
        Some(OnInterruptedArg::Skip) => OnInterrupted::Skip,
        Some(OnInterruptedArg::Ask) | None => OnInterrupted::Ask,
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stripped_flags_go_with_their_values() {
        let args: Vec<String> = [
            "--replay",
            "t.jsonl",
            "--model=m",
            "--yes",
            "--replay-mode",
            "prefix",
            "-Cws",
            "-C",
            "ws",
            "--cwd=ws",
            "go",
        ]
        .map(str::to_owned)
        .into();
        assert_eq!(
            without_flags(
                &args,
                &["--replay", "--replay-mode", "--model", "-C", "--cwd"]
            ),
            ["--yes", "go"]
        );
    }

    #[test]
    fn a_fork_point_is_a_context_and_a_response() {
        assert_eq!(
            fork_point("0.2:1").unwrap(),
            (ContextPath::parse("0.2").unwrap(), 1)
        );
        for bad in ["0.2", "x:1", "0.2:-1", ":1"] {
            let e = fork_point(bad).unwrap_err().to_string();
            assert!(e.contains("give CONTEXT:RESPONSE"), "{bad}: {e}");
        }
    }
}
