//! A session's run from the command line: where its prompts come from (one-shot, piped,
//! resumed, or the interactive REPL), Ctrl-C and the stop signals, and what each ending
//! prints and exits with.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use anyhow::Context;
use clap::ArgMatches;
use indicatif::{MultiProgress, ProgressDrawTarget};
use wonopcode_agent_loop::LoopResult;
use wonopcode_journal::{Runs, Step};
use wonopcode_protocol::attachment::AttachmentError;
use wonopcode_protocol::{ContextPath, LoopStatus, Part};
use wonopcode_session::stored_conversation::StoredConversation;
use wonopcode_session::{Session, Settings, TurnCanceller};
use wonopcode_tools::permission::Prompter;
use wonopcode_wasm_host::GuestPrompter;

use crate::args::PromptArgs;
use crate::attach;
use crate::exit;
use crate::loops;
use crate::prompter::TerminalPrompter;
use crate::render::typed::TypedLines;
use crate::render::{
    ClaudeStreamRenderer, JsonlRenderer, Renderer, TerminalRenderer, one_line, visible,
};
use crate::restart::Restart;

use crate::session::{
    check_model_args, load_config, reported, session_builder, settings, standard_journal, usage,
};

/// Where prompts come from.
enum Input {
    One(String),
    /// A prompt given at a terminal: its turn, then the REPL (`claude "…"`, `codex "…"`).
    Opening(String),
    /// Continue a suspended run, answering these pending calls (`(call id, text)`).
    Resume(Vec<(String, String)>),
    Repl,
    /// A resumed run's prompts, given again; then the REPL, when the run was interactive
    /// and still is.
    Restart {
        steps: Vec<Step>,
        then_repl: bool,
    },
}

impl Input {
    /// Whether the session ends in the REPL.
    fn has_repl(&self) -> bool {
        matches!(
            self,
            Self::Repl
                | Self::Opening(_)
                | Self::Restart {
                    then_repl: true,
                    ..
                }
        )
    }
}

/// Where the prompts come from: answers to a suspended call (`--resume`), the prompt given
/// (with what is piped after it), the REPL at a terminal, else stdin.
fn input(args: &PromptArgs) -> anyhow::Result<Input> {
    if args.resume.as_deref() == Some("") {
        return Ok(Input::Resume(args.answer.clone()));
    }
    if args.prompt.is_none() && args.images.iter().any(|i| i == "-") {
        return Err(usage(
            "`--image -` reads the image from stdin, so give the prompt as an argument",
        ));
    }
    if let Some(prompt) = args.prompt.as_ref().filter(|p| *p != "-") {
        if prompt.trim().is_empty() {
            return Err(usage("the prompt is empty"));
        }
        // At a terminal, a prompt opens the session, as `claude "…"` and `codex "…"` do;
        // `-p`, `exec`, `--json` and output that is not a terminal keep it one prompt.
        let at_terminal = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
        if at_terminal && !args.print && !args.json && claude_output(args).is_none() {
            return Ok(Input::Opening(prompt.clone()));
        }
        // What is piped goes with the prompt; `--image -` reads stdin itself.
        let piped = if args.images.iter().any(|i| i == "-") {
            None
        } else {
            crate::piped::read_stdin()?
        };
        return Ok(Input::One(crate::piped::with_piped(
            prompt,
            piped.as_deref(),
        )));
    }
    if std::io::stdin().is_terminal()
        && args.prompt.is_none()
        && !args.print
        && claude_output(args).is_none()
    {
        return Ok(Input::Repl);
    }
    let Some(text) = crate::piped::read_stdin()?.filter(|t| !t.trim().is_empty()) else {
        return Err(usage("no prompt: give one as an argument or on stdin"));
    };
    Ok(Input::One(text.trim_end().to_owned()))
}

/// Whether stdout is Claude Code's output (`--output-format json|stream-json`): `Some(true)`
/// a message per line.
fn claude_output(args: &PromptArgs) -> Option<bool> {
    args.output_format.and_then(|f| f.claude())
}

/// A prompt's run as its flags say, going on with the conversation `continuing` when one
/// is given (`-c`, `-r`).
pub async fn run_session(
    args: PromptArgs,
    matches: &ArgMatches,
    continuing: Option<StoredConversation>,
) -> anyhow::Result<u8> {
    check_model_args(&args.model)?;
    let mut settings = settings(
        &args.model,
        &args.permissions,
        matches,
        &args.run,
        loops::loop_choice(&args)?,
    )?;
    settings.history = args.history.clone();
    let input = input(&args)?;
    // Whichever flags chose it (`--dangerously-skip-permissions`, `--permission-mode
    // bypassPermissions`, `-y --sandbox full-access`).
    if settings.yes && settings.sandbox == Some(wonopcode_sandbox::SandboxMode::FullAccess) {
        eprintln!("no questions and no sandbox: every call runs with your full rights");
    }
    let attachments = attachments(&args, &settings.workspace)?;
    let start = Launch {
        settings,
        json: args.json || claude_output(&args).is_some(),
        claude_output: claude_output(&args),
        last_message: args.output_last_message.clone(),
        trace: args.trace.clone(),
        journal: standard_journal(&args.run),
        attachments,
        continuing,
        markdown: !args.no_markdown,
        verbose: args.verbose,
    };
    run_started(start, input, None).await
}

/// How the command line starts a session: its settings (the flags', or another run's read
/// from its journal), how it is shown, and where its journal goes.
pub struct Launch {
    /// The run's settings.
    pub settings: Settings,
    /// Machine output on stdout (`--json`, `--output-format json|stream-json`).
    pub json: bool,
    /// Claude Code's output instead of the events: `Some(true)` a message per line.
    pub claude_output: Option<bool>,
    /// Where each turn's last answer is written too (`-o`).
    pub last_message: Option<PathBuf>,
    /// Where its trace is written (`--trace`).
    pub trace: Option<PathBuf>,
    /// Where its journal goes.
    pub journal: Option<Runs>,
    /// Images and documents for its first prompt (`--image`, `@path`).
    pub attachments: Vec<Part>,
    /// A kept conversation its root goes on with (`-c`, `-r ID`, `/resume`).
    pub continuing: Option<StoredConversation>,
    /// Whether the answer's Markdown is rendered (when stdout is a terminal).
    pub markdown: bool,
    /// Whether the guests' own lines go to stderr too (`--verbose`).
    pub verbose: bool,
}

/// What the command line attaches to the first prompt: each `--image`, then each `@path`
/// of the prompt given as an argument (not one read from stdin: a piped diff's `@2x.png` is
/// text). Read before anything runs, so a bad file stops the run with one line.
fn attachments(args: &PromptArgs, workspace: &Path) -> anyhow::Result<Vec<Part>> {
    let mut parts = Vec::new();
    for image in &args.images {
        parts.push(attach::from_flag(image).map_err(|e| usage(e.to_string()))?);
    }
    if let Some(prompt) = &args.prompt {
        parts
            .extend(attach::mentioned(prompt, workspace, false).map_err(|e| usage(e.to_string()))?);
    }
    Ok(parts)
}

/// `again`'s run started again: its prompts given again, then the REPL when it had one and
/// there is a terminal.
pub async fn run_again(start: Launch, again: Restart) -> anyhow::Result<u8> {
    let input = Input::Restart {
        steps: again.steps()?,
        then_repl: !again.one_shot() && std::io::stdin().is_terminal(),
    };
    run_started(start, input, Some(again)).await
}

/// A session's run from its start: a fresh one, or one resuming or forking another; then,
/// while `/resume` in its REPL picks another conversation, a session going on with that one
/// (its settings the same).
async fn run_started(
    mut start: Launch,
    mut input: Input,
    mut again: Option<Restart>,
) -> anyhow::Result<u8> {
    loop {
        let next = Launch {
            settings: start.settings.clone(),
            json: start.json,
            claude_output: start.claude_output,
            last_message: start.last_message.clone(),
            trace: start.trace.clone(),
            journal: start.journal.clone(),
            attachments: Vec::new(),
            continuing: None,
            markdown: start.markdown,
            verbose: start.verbose,
        };
        let (code, switch) = run_once(start, input, again).await?;
        let Some(kept) = switch else {
            return Ok(code);
        };
        start = Launch {
            continuing: Some(kept),
            ..next
        };
        input = Input::Repl;
        again = None;
    }
}

/// One session's run; the conversation `/resume` picked to go on with next, if any.
async fn run_once(
    start: Launch,
    input: Input,
    again: Option<Restart>,
) -> anyhow::Result<(u8, Option<StoredConversation>)> {
    let Launch {
        settings,
        json,
        claude_output,
        last_message,
        trace,
        journal,
        attachments,
        continuing,
        markdown,
        verbose,
    } = start;
    // Before anything of the workspace is read for what it would run: asked once, here.
    let trusted = crate::trust::decide(&settings.workspace, settings.trust_workspace).await?;
    let one_shot = matches!(input, Input::One(_));
    let interactive = std::io::stdin().is_terminal();
    let drawn = std::io::stderr().is_terminal();
    let progress = MultiProgress::with_draw_target(if drawn {
        crate::render::draw_target::stderr()
    } else {
        ProgressDrawTarget::hidden()
    });
    let _quiet = drawn.then(crate::render::draw_target::QuietControlKeys::on_stdin);
    let typed = TypedLines::new(progress.clone());
    let renderer = renderer_for(
        claude_output,
        json,
        markdown,
        &settings.workspace,
        &progress,
        &typed,
    );
    let approvals = crate::session::approvals_shown(&settings);
    let config_file = settings.config_file.clone();
    let read_config = config_file.clone();
    // As the session resolves it, so `projects.PATH` matches however `-C` spelled it.
    let workspace =
        std::fs::canonicalize(&settings.workspace).unwrap_or_else(|_| settings.workspace.clone());
    let history = settings.history.clone();
    let config = load_config(&settings)?;
    let mut builder = session_builder(settings, config, journal)
        .trusted_when_asked(trusted)
        .renderer(renderer)
        // A REPL records its trace for `/trace`.
        .trace(trace.is_some() || input.has_repl())
        // A guest being debugged says what it says, and its backtrace, where the person looks.
        .guest_output_on_stderr(verbose || wonopcode_wasm_host::debug::is_on())
        // Only an interactive session has a "next prompt" to reload before.
        .hot_reload(input.has_repl())
        .started_as(
            one_shot || again.as_ref().is_some_and(Restart::one_shot),
            json,
        );
    if let Some(again) = again {
        builder = again_from(builder, again);
    }
    if let Some(kept) = continuing {
        eprintln!(
            "going on with conversation {} ({})",
            kept.id,
            one_line(kept.title.as_deref().unwrap_or("no prompt yet"))
        );
        builder = builder.continuing(kept.latest.clone(), kept.conversation());
    }
    let refusals = Arc::new(crate::prompter::Refusals::default());
    if interactive {
        let terminal = Arc::new(TerminalPrompter {
            progress: progress.clone(),
            config_file,
            workspace,
            refusals: refusals.clone(),
        });
        builder = builder
            .prompters(
                terminal.clone() as Arc<dyn Prompter>,
                terminal.clone() as Arc<dyn GuestPrompter>,
            )
            .elicitor(terminal);
    }
    let mut session = builder.build().await.map_err(reported)?;
    for notice in session.notices() {
        eprintln!("warning: {notice}");
    }
    // Ended with the session: a session `/resume` starts next has its own.
    let ctrl_c = spawn_ctrl_c_handler(session.canceller(), progress.clone());
    let stopped_by = Arc::new(AtomicU8::new(0));
    let stop = spawn_stop_handler(session.canceller(), stopped_by.clone());
    session.start().await.context("the loop failed to start")?;
    let mut cli = Cli {
        session,
        can_resume: history.is_some(),
        in_repl: false,
        stopped_by,
        approvals,
        history,
        attached: attachments,
        progress,
        switch_to: None,
        typed,
        last_message,
        json,
        config_file: read_config,
        trusted,
        refusals,
    };
    if !json {
        attach::announce(&cli.attached);
    }
    let code = cli.run(input).await?;
    // Stopped by SIGTERM or SIGHUP: the turn was cancelled and its history written; the
    // exit code says which signal.
    let code = match cli.stopped_by.load(Ordering::SeqCst) {
        0 => code,
        signal => signal,
    };
    let stopped = cli.stopped_by.load(Ordering::SeqCst) != 0;
    let reason = if cli.in_repl && !stopped {
        "prompt_input_exit"
    } else {
        "other"
    };
    // Stopped by a signal, or the last turn cancelled (Ctrl-C): the run did not end its
    // work, and `wonopcode resume` can go on with it.
    cli.session
        .end(reason, stopped || code == exit::CANCELLED)
        .await;
    if let Some(path) = &trace {
        cli.session
            .write_trace(path)
            .with_context(|| format!("cannot write the trace to {}", path.display()))?;
    }
    ctrl_c.abort();
    stop.abort();
    Ok((code, cli.switch_to.take()))
}

/// How the run's events are shown: Claude Code's stream format, JSON Lines, or the
/// terminal (with Markdown when asked and stdout is a terminal).
fn renderer_for(
    claude_output: Option<bool>,
    json: bool,
    markdown: bool,
    workspace: &std::path::Path,
    progress: &MultiProgress,
    typed: &TypedLines,
) -> Box<dyn Renderer> {
    if let Some(streaming) = claude_output {
        Box::new(ClaudeStreamRenderer::new(streaming, workspace))
    } else if json {
        Box::new(JsonlRenderer)
    } else {
        let markdown = markdown && std::io::stdout().is_terminal();
        Box::new(TerminalRenderer::new(
            progress.clone(),
            typed.clone(),
            markdown,
        ))
    }
}

/// `builder`, starting again from another run: resuming it, or forking it, its `oci://`
/// tags fetching the digests they named then.
fn again_from(
    builder: wonopcode_session::SessionBuilder,
    again: Restart,
) -> wonopcode_session::SessionBuilder {
    let builder = builder.module_pins(again.meta().modules.clone());
    match again {
        Restart::Resume { earlier, policy } => {
            builder.resuming(earlier, crate::restart::on_interrupted(policy))
        }
        Restart::Fork { fork, .. } => builder.forking(fork),
    }
}

fn spawn_ctrl_c_handler(
    canceller: TurnCanceller,
    progress: MultiProgress,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            if tokio::signal::ctrl_c().await.is_err() {
                return;
            }
            if canceller.cancel() {
                // Above the status lines and spinners, which then end with the turn: a line
                // written past them would leave a copy of them behind.
                progress.suspend(|| eprintln!("cancelling the turn (Ctrl-C again quits)"));
            } else {
                // Every stored message is already synced, so quitting keeps the history valid.
                exit::now(exit::CANCELLED);
            }
        }
    })
}

/// SIGTERM and SIGHUP stop wonopcode as Ctrl-C does, at once: the turn is cancelled (its
/// commands' process groups killed, its history written), then wonopcode exits with 143 or
/// 129. Between turns, it exits at once (every stored message is already synced).
fn spawn_stop_handler(
    canceller: TurnCanceller,
    stopped_by: Arc<AtomicU8>,
) -> tokio::task::JoinHandle<()> {
    use tokio::signal::unix::{SignalKind, signal};
    tokio::spawn(async move {
        let (Ok(mut term), Ok(mut hup)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) else {
            tracing::warn!("cannot handle SIGTERM and SIGHUP; they end wonopcode unhandled");
            return;
        };
        loop {
            let code = tokio::select! {
                _ = term.recv() => exit::TERMINATED,
                _ = hup.recv() => exit::HUNG_UP,
            };
            stopped_by.store(code, Ordering::SeqCst);
            if !canceller.cancel() {
                exit::now(code);
            }
        }
    })
}

/// The session as the terminal drives it.
pub(crate) struct Cli {
    pub(crate) session: Session,
    can_resume: bool,
    /// A suspended run is answered at the REPL's next line, not with `--resume`.
    pub(crate) in_repl: bool,
    /// The exit code of the signal that stopped wonopcode (0: none yet).
    pub(crate) stopped_by: Arc<AtomicU8>,
    /// How tool calls are approved, for the REPL's banner.
    pub(crate) approvals: &'static str,
    /// Where the conversation is stored (`--history`).
    pub(crate) history: Option<PathBuf>,
    /// Images and documents the next prompt carries (`--image` and the first prompt's
    /// `@path`s).
    attached: Vec<Part>,
    /// Spinners to hide while asking on the terminal.
    pub(crate) progress: MultiProgress,
    /// Where each turn's last answer is written too (`-o`).
    last_message: Option<PathBuf>,
    /// Whether stdout is machine output (no renderer's footer says how a turn ended).
    json: bool,
    /// The conversation `/resume` picked: the REPL ends, and a session going on with it
    /// starts.
    pub(crate) switch_to: Option<StoredConversation>,
    /// What the person types while a REPL turn runs, drawn under the status lines.
    pub(crate) typed: TypedLines,
    /// The config file named with `--config` (`None`: the default one, if it is there),
    /// for `/config` and `/doctor`.
    pub(crate) config_file: Option<PathBuf>,
    /// Whether the person trusts the workspace for this run (its hooks, commands and
    /// servers run), for `/doctor`.
    pub(crate) trusted: bool,
    /// Whether a "no" at an approval stopped the turn (the REPL's turns stop on one).
    pub(crate) refusals: Arc<crate::prompter::Refusals>,
}

impl Cli {
    /// What a REPL line attaches, with what `--image` left for the first prompt: its
    /// `@path`s and the paths dropped into it.
    pub(crate) fn attach_from(&mut self, line: &str) -> Result<Vec<Part>, AttachmentError> {
        let found = attach::mentioned(line, self.session.workspace(), true)?;
        attach::announce(&found);
        let mut parts = std::mem::take(&mut self.attached);
        parts.extend(found);
        Ok(parts)
    }

    /// Runs what the session was started with: one prompt, answers to a suspended call,
    /// the REPL, or another run's prompts again (then the REPL, when it had one). The exit
    /// code.
    async fn run(&mut self, input: Input) -> anyhow::Result<u8> {
        Ok(match input {
            Input::One(prompt) => {
                let attached = std::mem::take(&mut self.attached);
                let result = self.session.prompt_with(&prompt, attached).await;
                self.finish(&result)
            }
            Input::Resume(answers) => {
                let result = self.session.resume(answers).await.map_err(reported)?;
                self.finish(&result)
            }
            Input::Repl => self.repl(None).await?,
            Input::Opening(prompt) => self.repl(Some(prompt)).await?,
            Input::Restart { steps, then_repl } => {
                let mut code = exit::SUCCESS;
                for step in steps {
                    let (text, attachments) = match step {
                        Step::Prompt { text, attachments } => (text, attachments),
                        Step::Command(command) => {
                            self.session
                                .command(&command)
                                .await
                                .map_err(|e| usage(format!("the run's {command}: {e}")))?;
                            continue;
                        }
                    };
                    let result = self.session.prompt_with(&text, attachments).await;
                    code = self.finish(&result);
                    if code != exit::SUCCESS {
                        break;
                    }
                }
                if then_repl && code == exit::SUCCESS {
                    self.repl(None).await?
                } else {
                    code
                }
            }
        })
    }

    /// Reports how a turn ended and returns its exit code.
    pub(crate) fn finish(&self, result: &LoopResult) -> u8 {
        if let Some(failure) = self.session.failure() {
            eprintln!("error: {failure}");
            return exit::ERROR;
        }
        self.report(result);
        if let (Some(path), Some(answer)) = (&self.last_message, &result.response)
            && let Err(e) = std::fs::write(path, format!("{answer}\n"))
        {
            eprintln!(
                "warning: -o {}: {e}; the answer is not written there",
                path.display()
            );
        }
        let code = exit::for_status(result.status);
        let unapproved = self.session.unapproved();
        if code == exit::SUCCESS && unapproved > 0 && !self.in_repl {
            eprintln!(
                "error: {unapproved} tool call(s) needed approval and nobody could give it, so they did not run: run at a terminal, with --yes, or with the --allow rules shown above"
            );
            return exit::NOT_APPROVED;
        }
        code
    }

    fn report(&self, result: &LoopResult) {
        let error = visible(result.error.as_deref().unwrap_or(""));
        match result.status {
            LoopStatus::Complete => {}
            LoopStatus::Error => eprintln!("error: {error}"),
            LoopStatus::MaxIterations => {
                eprintln!("error: {error} (raise it with --max-iterations)")
            }
            // The footer of a person's renderer says it already.
            LoopStatus::Cancelled if !self.json => {}
            LoopStatus::Cancelled => eprintln!("cancelled"),
            LoopStatus::BudgetExceeded => eprintln!("error: {error}"),
            LoopStatus::Suspended => {
                let root = ContextPath::root();
                let waiting: Vec<String> = result
                    .pending
                    .iter()
                    .map(|p| {
                        let id = one_line(&p.id);
                        let name = one_line(&p.name);
                        if p.context == root {
                            format!("{id} ({name})")
                        } else {
                            format!("{}:{id} ({name})", p.context)
                        }
                    })
                    .collect();
                let in_child = waits_in_child(result);
                let run = self.session.run_id().unwrap_or("RUN");
                let how = if self.in_repl && in_child {
                    // A child's state lives in the tree of the turn that ended; the journal
                    // starts the tree again and answers the call where it was made.
                    format!(
                        "the calls wait in child contexts: quit and continue with `wonopcode resume {run} --answer CONTEXT:CALL_ID=TEXT` (or `-- --yes` to approve them; waiting: {}); a new prompt here goes on without them",
                        waiting.join(", ")
                    )
                } else if self.in_repl {
                    "answer below".to_owned()
                } else if self.can_resume && in_child {
                    // The conversation file keeps the root's messages, not its children's.
                    format!(
                        "the calls wait in child contexts, which --history does not keep: run without --history to resume them from the run's journal (waiting: {})",
                        waiting.join(", ")
                    )
                } else if self.can_resume || self.session.run_id().is_some() {
                    format!(
                        "continue with --resume (with --yes or an --allow rule to approve it, or --answer {}=TEXT; waiting: {})",
                        if in_child {
                            "CONTEXT:CALL_ID"
                        } else {
                            "CALL_ID"
                        },
                        waiting.join(", ")
                    )
                } else {
                    "run with --history FILE to be able to resume".to_owned()
                };
                eprintln!("suspended: {error}; {how}");
            }
        }
    }
}

/// Whether a suspended run waits on calls of its child contexts (not only its root's).
pub(crate) fn waits_in_child(result: &LoopResult) -> bool {
    let root = ContextPath::root();
    result.pending.iter().any(|p| p.context != root)
}
