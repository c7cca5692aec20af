//! Runs started again from another run's journal, the way it was started (its settings,
//! kept in the journal, in its directory) with its root given the same prompts:
//!
//! - `wonopcode resume RUN` (and `--resume` without `--history`): an interrupted run goes
//!   on, its finished responses and tool calls answered from its journal, live from where it
//!   stopped — a prompt's run, a batch task's (`RUN` its directory, `OUT/runs/ID`) or an MCP
//!   call's alike;
//! - `wonopcode fork RUN --at CONTEXT:RESPONSE`: a run's responses before that point
//!   served from its journal (its tool calls run again), and from that response on another
//!   model (or the same), to try a decision again.
//!
//! Either is a new run with a journal of its own beside the other's (`resumes` or `origin`
//! names the other), so nothing the other run left is changed. A journal from before
//! settings were kept has its command line instead, read here into the same settings.
//!
//! What every front-end's restart obeys (the answers, the fork point, the files a fork puts
//! back, what a journal may not widen unasked) is the session's (`wonopcode_session::restart`);
//! this module reads the command line, asks at the terminal and starts the run.

use std::io::IsTerminal;

use anyhow::Context;
use clap::{ArgMatches, CommandFactory, FromArgMatches};
use wonopcode_journal::{
    EarlierRun, Invocation, ResumeError, RunDir, RunMeta, RunStatus, Runs, Step,
};
use wonopcode_protocol::OnInterrupted;
use wonopcode_session::restart::{self, ForkModel, RestartError};
use wonopcode_session::{Fork, Settings};

use crate::args::{Args, Command, ForkArgs, OnInterruptedArg, PromptArgs, ResumeArgs};
use crate::run::{Launch, run_again};
use crate::session::{settings, usage};

/// A run started again from another's journal.
pub enum Restart {
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

impl Restart {
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

    /// Whether the other run was one prompt (else an interactive session).
    pub fn one_shot(&self) -> bool {
        self.invocation().is_some_and(|i| i.one_shot)
    }

    /// What the other run's root was given — its prompts, each with the images and
    /// documents it carried, and the commands between them — to give again. `Err`: a
    /// prompt's attachments cannot be read back (one line).
    pub fn steps(&self) -> anyhow::Result<Vec<Step>> {
        let responses = match self {
            Self::Resume { earlier, .. } => &earlier.responses,
            Self::Fork { fork, .. } => &fork.responses,
        };
        let dir = responses.parent().unwrap_or(std::path::Path::new("."));
        self.meta()
            .steps(dir)
            .map_err(|e| usage(format!("the run's prompts: {e}")))
    }
}

/// `wonopcode resume RUN [--on-interrupted P] [--answer [CONTEXT:]CALL_ID=TEXT] [-- FLAGS]`.
pub async fn resume_by_id(args: &ResumeArgs) -> anyhow::Result<u8> {
    let (runs, dir) = find_run(&args.id)?;
    let earlier = restart::answered(EarlierRun::read(&dir), &args.answer);
    resume(earlier, runs, args.on_interrupted, &args.flags).await
}

/// `--resume` without an ID or `--history`: this workspace's latest interrupted or
/// suspended run, its waiting calls answered by `--answer` and approved by `--yes` and
/// `--allow`; without one, at a terminal, a conversation picked from a list.
pub async fn resume_latest(mut args: PromptArgs, matches: &ArgMatches) -> anyhow::Result<u8> {
    let root = crate::session::workspace_root(args.run.cwd.as_deref())?;
    let workspace = root.display().to_string();
    let runs = runs()?;
    // A run stopped between turns (its terminal closed at the prompt) is a conversation to
    // go on with, not one to resume: it is left to the list below.
    let Some((meta, earlier)) = runs
        .list()
        .into_iter()
        .filter(|m| {
            m.workspace == workspace
                && matches!(
                    m.current_status(),
                    RunStatus::Interrupted | RunStatus::Suspended
                )
        })
        .find_map(|m| {
            let earlier = EarlierRun::read(&runs.find(&m.id).ok()?);
            (!matches!(earlier, Err(ResumeError::AtRest(_)))).then_some((m, earlier))
        })
    else {
        if std::io::stdin().is_terminal() && args.answer.is_empty() {
            let progress = indicatif::MultiProgress::new();
            return match crate::conversations::pick(&runs, &root, progress).await? {
                Some(kept) => {
                    // Picked: a conversation goes on, not a suspended run.
                    args.resume = None;
                    crate::run::run_session(args, matches, Some(kept)).await
                }
                None => Ok(crate::exit::SUCCESS),
            };
        }
        return Err(usage(format!(
            "--resume: no interrupted or suspended run of {workspace} in {} (-r ID goes on with a finished conversation, -c with the latest; with --history FILE, --resume continues that conversation)",
            runs.dir().display()
        )));
    };
    tracing::debug!(run = %meta.id, "resuming this workspace's latest interrupted run");
    let earlier = restart::answered(earlier, &args.answer);
    // The approvals given with --resume are the person's, for the calls that wait.
    let mut flags = Vec::new();
    if args.permissions.yes {
        flags.push("--yes".to_owned());
    }
    for rule in &args.permissions.allow {
        flags.extend(["--allow".to_owned(), rule.clone()]);
    }
    resume(earlier, runs, args.on_interrupted, &flags).await
}

/// `wonopcode fork RUN --at CONTEXT:RESPONSE [--provider P] [--model M] [--replay FILE]`.
pub async fn fork(args: &ForkArgs) -> anyhow::Result<u8> {
    let (runs, dir) = find_run(&args.id)?;
    let meta = dir.meta()?;
    let (at, response) = restart::fork_point(&args.at).map_err(refused)?;
    let responses = dir.responses_path();
    restart::check_fork_point(&meta.id, &responses, &at, response).map_err(refused)?;
    let again = Restart::Fork {
        fork: Fork {
            origin: meta.id.clone(),
            responses,
            at,
            response,
        },
        meta,
    };
    start_again(again, runs, Some(args), &args.flags).await
}

/// The run `id` names — an id (or its start) in the user's runs directory, or the path of
/// a run's directory (a batch's `OUT/runs/ID`) — and the runs beside it.
/// The run `id` names (an id, its start, or the path of its directory), with the runs beside
/// it.
pub fn find_run(id: &str) -> anyhow::Result<(Runs, RunDir)> {
    if id.contains('/') {
        return Runs::holding(std::path::Path::new(id))
            .ok_or_else(|| usage(format!("{id}: no run's journal (run.json) there")));
    }
    let runs = runs()?;
    let dir = runs.find(id).map_err(|e| usage(e.to_string()))?;
    Ok((runs, dir))
}

/// The user's runs directory.
pub fn runs() -> anyhow::Result<Runs> {
    Runs::standard().context("there is no data directory for runs (set WONOPCODE_RUNS_DIR)")
}

async fn resume(
    earlier: Result<EarlierRun, ResumeError>,
    runs: Runs,
    policy: Option<OnInterruptedArg>,
    flags: &[String],
) -> anyhow::Result<u8> {
    let earlier = earlier.map_err(|e| match e {
        ResumeError::Journal(e) => anyhow::Error::from(e),
        refused => usage(refused.to_string()),
    })?;
    start_again(Restart::Resume { earlier, policy }, runs, None, flags).await
}

/// How the other run was started, read back: its settings, whether it showed JSON Lines,
/// and (from an old journal's command line) its trace file and `--on-interrupted`.
struct Stored {
    settings: Settings,
    json: bool,
    trace: Option<std::path::PathBuf>,
    on_interrupted: Option<OnInterruptedArg>,
}

impl Stored {
    fn read(id: &str, invocation: &Invocation) -> anyhow::Result<Self> {
        if let Some(value) = &invocation.settings {
            let settings =
                Settings::from_journal(value).map_err(|e| usage(format!("run {id}: {e}")))?;
            return Ok(Self {
                settings,
                json: invocation.json,
                trace: None,
                on_interrupted: None,
            });
        }
        let (args, matches) = parse_prompt(&invocation.args).map_err(|e| {
            usage(format!(
                "run {id}'s command line does not parse now: {}",
                first_line(&e)
            ))
        })?;
        let mut settings = flag_settings(&args, &matches)?;
        settings.history = args.history.clone();
        Ok(Self {
            settings,
            json: args.json,
            trace: args.trace,
            on_interrupted: args.on_interrupted,
        })
    }
}

/// Starts `again`'s run the way the other was started — its settings, the fork's model
/// (`fork`) and the flags given after `--` laid over them — in its directory, its journal
/// beside the other's in `runs`.
async fn start_again(
    mut again: Restart,
    runs: Runs,
    fork: Option<&ForkArgs>,
    flags: &[String],
) -> anyhow::Result<u8> {
    let meta = again.meta().clone();
    let id = meta.id.clone();
    let invocation = restart::invocation_of(&meta).map_err(refused)?.clone();
    // The fork's paths are the person's, relative to where they typed them.
    let fork_model = fork.map(fork_model).transpose()?;
    // Relative paths of its settings are relative to where it was started.
    std::env::set_current_dir(&invocation.cwd)
        .map_err(|e| usage(format!("run {id} was started in {}: {e}", invocation.cwd)))?;
    let stored = Stored::read(&id, &invocation)?;
    restart::refuse_history(&id, &stored.settings).map_err(refused)?;
    let mut settings = stored.settings;
    if let Some(model) = fork_model {
        model.lay_over(&mut settings, &meta);
    }
    let (extra, matches) = parse_prompt(flags)
        .map_err(|e| usage(format!("the flags after `--`: {}", first_line(&e))))?;
    let (none, none_matches) = parse_prompt(&[]).map_err(usage)?;
    let (given, base) = (
        flag_settings(&extra, &matches)?,
        flag_settings(&none, &none_matches)?,
    );
    let unasked = restart::unasked_widening(&invocation, &settings, &given);
    if !unasked.is_empty() && !confirm_wider(&id, &unasked).await {
        // A planted setting is hostile text: shown with its control characters escaped.
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
    let settings = settings
        .overlaid(&given, &base)
        .map_err(|e| usage(e.to_string()))?;
    if fork.is_some_and(|f| !f.keep_files) {
        said_files_before(&runs, &id, &settings.workspace)?;
    }
    if let Restart::Resume { policy, .. } = &mut again {
        *policy = policy.or(extra.on_interrupted).or(stored.on_interrupted);
    }
    let start = Launch {
        attachments: Vec::new(),
        settings,
        json: stored.json || extra.json || extra.output_format.and_then(|f| f.claude()).is_some(),
        claude_output: extra.output_format.and_then(|f| f.claude()),
        last_message: extra.output_last_message.clone(),
        trace: extra.trace.or(stored.trace),
        journal: Some(runs),
        continuing: None,
        markdown: !extra.no_markdown,
        verbose: extra.verbose,
    };
    run_again(start, again).await
}

/// Puts back the files run `id` changed before a fork runs its calls again
/// (`restart::files_before`), saying what it did on stderr.
fn said_files_before(runs: &Runs, id: &str, workspace: &std::path::Path) -> anyhow::Result<()> {
    let rewind = restart::files_before(runs, id, workspace).map_err(refused)?;
    let shown = crate::render::one_line;
    for path in &rewind.refused {
        eprintln!(
            "fork: refused {}: not a path inside the workspace",
            shown(path)
        );
    }
    for line in rewind.done_lines() {
        eprintln!("fork: {}", shown(&line));
    }
    Ok(())
}

/// The model `wonopcode fork` names, its paths made absolute where the person typed them.
fn fork_model(args: &ForkArgs) -> anyhow::Result<ForkModel> {
    let absolute = |p: &std::path::PathBuf| std::path::absolute(p).unwrap_or_else(|_| p.clone());
    let workspace = match &args.cwd {
        Some(dir) => Some(crate::session::workspace_root(Some(&absolute(dir)))?),
        None => None,
    };
    Ok(ForkModel {
        replay: args.replay.as_ref().map(absolute),
        provider: args.provider.clone(),
        model: args.model.clone(),
        workspace,
    })
}

/// A refused restart as a usage error; a journal or responses that cannot be read as
/// themselves.
fn refused(e: RestartError) -> anyhow::Error {
    match e {
        RestartError::Journal(e) => anyhow::Error::from(e),
        unreadable @ RestartError::Responses { .. } => anyhow::Error::from(unreadable),
        refused => usage(refused.to_string()),
    }
}

/// A prompt's flags as clap reads them, with their matches (for the order of permission
/// rules), or clap's error.
fn parse_prompt(args: &[String]) -> Result<(PromptArgs, ArgMatches), String> {
    let argv = std::iter::once("wonopcode".to_owned()).chain(args.iter().cloned());
    let matches = Args::command()
        .try_get_matches_from(argv)
        .map_err(|e| e.to_string())?;
    let args = Args::from_arg_matches(&matches).map_err(|e| e.to_string())?;
    match args.command {
        None => Ok((args.prompt, matches)),
        Some(Command::Run(prompt)) => {
            let matches = matches
                .subcommand_matches("run")
                .cloned()
                .unwrap_or(matches);
            Ok((*prompt, matches))
        }
        Some(_) => Err("it was not a prompt's run".to_owned()),
    }
}

/// The settings a prompt's flags choose.
fn flag_settings(args: &PromptArgs, matches: &ArgMatches) -> anyhow::Result<Settings> {
    settings(
        &args.model,
        &args.permissions,
        matches,
        &args.run,
        crate::loops::loop_choice(args)?,
    )
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
