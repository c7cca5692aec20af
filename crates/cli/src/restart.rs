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

use std::io::IsTerminal;

use anyhow::Context;
use clap::{ArgMatches, CommandFactory, FromArgMatches};
use wonopcode_journal::{
    EarlierRun, Invocation, ResumeError, RunDir, RunMeta, RunStatus, Runs, SealKey, Step,
};
use wonopcode_protocol::{ContextPath, OnInterrupted};
use wonopcode_providers::Transcript;
use wonopcode_session::{Fork, Settings};
use wonopcode_tools::permission::Action;

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
    let earlier = answered(EarlierRun::read(&dir), &args.answer);
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
    let earlier = answered(earlier, &args.answer);
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

/// The run read back with the person's answers in place of the calls it waits on; an answer
/// naming no waiting call is refused (one line naming those that wait).
fn answered(
    earlier: Result<EarlierRun, ResumeError>,
    answers: &[(String, String)],
) -> Result<EarlierRun, ResumeError> {
    let mut earlier = earlier?;
    for (target, text) in answers {
        let (context, id) = answer_target(target);
        earlier
            .calls
            .answer(context.as_ref(), id, text)
            .map_err(|why| ResumeError::Answer(format!("run {}: {why}", earlier.meta.id)))?;
    }
    Ok(earlier)
}

/// `CONTEXT:CALL_ID` (`0.2:toolu_06`) or a bare `CALL_ID` of `--answer`.
fn answer_target(target: &str) -> (Option<ContextPath>, &str) {
    match target.split_once(':') {
        Some((context, id)) if !id.is_empty() => match ContextPath::parse(context) {
            Some(context) => (Some(context), id),
            None => (None, target),
        },
        _ => (None, target),
    }
}

/// `wonopcode fork RUN --at CONTEXT:RESPONSE [--provider P] [--model M] [--replay FILE]`.
pub async fn fork(args: &ForkArgs) -> anyhow::Result<u8> {
    let (runs, dir) = find_run(&args.id)?;
    let meta = dir.meta()?;
    let (at, response) = fork_point(&args.at)?;
    let responses = dir.responses_path();
    check_fork_point(&meta.id, &responses, &at, response)?;
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
    // The fork's paths are the person's, relative to where they typed them.
    let fork_model = fork.map(ForkModel::of).transpose()?;
    // Relative paths of its settings are relative to where it was started.
    std::env::set_current_dir(&invocation.cwd)
        .map_err(|e| usage(format!("run {id} was started in {}: {e}", invocation.cwd)))?;
    let stored = Stored::read(&id, &invocation)?;
    if let Some(history) = &stored.settings.history {
        return Err(usage(format!(
            "run {id} kept its conversation in --history {}, which starting it again would write twice: continue that conversation with --history {0} instead",
            history.display()
        )));
    }
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
    // A journal can be changed by whoever may write the runs directory: settings not
    // sealed by this user's key run what they would widen only when the person says so,
    // here or by giving the flags again.
    let sealed = SealKey::standard().is_some_and(|key| invocation.is_sealed_by(&key));
    let stored_wide = if sealed {
        Vec::new()
    } else {
        widening(&settings)
    };
    let given_wide = widening(&given);
    let unasked: Vec<String> = stored_wide
        .into_iter()
        .filter(|w| !given_wide.contains(w))
        .collect();
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
        files_before(&runs, &id, &settings.workspace)?;
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

/// Puts the files run `id` changed in `workspace` back to what they were before it (from
/// its checkpoints), so a fork's tool calls, run again, leave them as they were at its
/// point; says what it did on stderr. A file changed since by someone else is left alone.
fn files_before(runs: &Runs, id: &str, workspace: &std::path::Path) -> anyhow::Result<()> {
    let dir = runs.find(id).map_err(|e| usage(e.to_string()))?;
    let rewind = wonopcode_journal::rewind_run(&dir, workspace, 0, &[], false, false)?;
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

/// The live model a fork names, its paths made absolute where the person typed them.
struct ForkModel {
    replay: Option<std::path::PathBuf>,
    provider: Option<String>,
    model: Option<String>,
    workspace: Option<std::path::PathBuf>,
}

impl ForkModel {
    fn of(args: &ForkArgs) -> anyhow::Result<Self> {
        let absolute =
            |p: &std::path::PathBuf| std::path::absolute(p).unwrap_or_else(|_| p.clone());
        let workspace = match &args.cwd {
            Some(dir) => Some(crate::session::workspace_root(Some(&absolute(dir)))?),
            None => None,
        };
        Ok(Self {
            replay: args.replay.as_ref().map(absolute),
            provider: args.provider.clone(),
            model: args.model.clone(),
            workspace,
        })
    }

    /// What the fork names replaces the run's own: a transcript or a provider its whole
    /// model, a model alone its id (keeping the run's provider); the run's recording file is
    /// its own (the fork records in its journal).
    fn lay_over(self, settings: &mut Settings, meta: &RunMeta) {
        let choice = &mut settings.model;
        if self.replay.is_some() || self.provider.is_some() || self.model.is_some() {
            choice.replay = None;
            choice.replay_pace = None;
            choice.replay_mode = Default::default();
            choice.model = None;
        }
        if self.replay.is_some() || self.provider.is_some() {
            choice.provider = None;
            choice.base_url = None;
            choice.wire = None;
        }
        if self.model.is_some() && self.provider.is_none() && choice.provider.is_none() {
            choice.provider = meta.model.split_once('/').map(|(p, _)| p.to_owned());
        }
        choice.replay = self.replay.or(choice.replay.take());
        choice.provider = self.provider.or(choice.provider.take());
        choice.model = self.model.or(choice.model.take());
        choice.record = None;
        if let Some(workspace) = self.workspace {
            settings.workspace = workspace;
        }
    }
}

/// The settings that widen what a run may do beyond the defaults and the user's config
/// file: approvals, sandbox, servers, rules, another config or loops, another provider
/// address, workspace trust. One flag (with its value) each, as it is typed.
fn widening(settings: &Settings) -> Vec<String> {
    let mut wide = Vec::new();
    if settings.yes {
        wide.push("--yes".to_owned());
    }
    wide.extend(
        settings
            .rules
            .iter()
            .filter(|r| r.action == Action::Allow)
            .map(|r| match &r.pattern {
                Some(pattern) => format!("--allow {}:{pattern}", r.tool),
                None => format!("--allow {}", r.tool),
            }),
    );
    if settings.sandbox == Some(wonopcode_sandbox::SandboxMode::FullAccess) {
        wide.push("--sandbox full-access".to_owned());
    }
    wide.extend(settings.mcp.iter().map(|(n, c)| format!("--mcp {n}={c}")));
    if let Some(config) = &settings.config_file {
        wide.push(format!("--config {}", config.display()));
    }
    wide.extend(
        settings
            .loops_dirs
            .iter()
            .map(|d| format!("--loops-dir {}", d.display())),
    );
    if settings.trust_workspace {
        wide.push("--trust-workspace".to_owned());
    }
    if let Some(url) = &settings.model.base_url {
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
