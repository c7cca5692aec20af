//! The command line's settings of a session: flags into one `wonopcode_session::Settings`
//! (the model, permissions, limits, generation, the loop), a `SessionBuilder` of them with
//! the services of the binary, and the errors that say a flag is wrong. Every front-end of
//! the binary (a prompt's run, a batch task, the MCP server, a resume) builds its sessions
//! through here.

use std::path::PathBuf;

use anyhow::Context;
use clap::ArgMatches;
use wonopcode_agent_loop::budget::BudgetLimits;
use wonopcode_journal::Runs;
use wonopcode_providers::OpenAiWire;
use wonopcode_sandbox::SandboxMode;
use wonopcode_session::generation::Generation;
use wonopcode_session::stand_in::{StandIn, StandInAnswer};
use wonopcode_session::{
    Config, LoopChoice, ModelChoice, ReplayMode, Session, SessionBuilder, SessionError, Settings,
    config,
};
use wonopcode_tools::permission::{Action, Mode, Rule, Unattended};

use crate::args::{ModelArgs, PermissionArgs, ReplayModeArg, RunArgs, UnattendedArg, WireArg};

/// A mistake in how wonopcode was invoked (exit code 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// A usage error (exit code 2) saying `message`.
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    UsageError(message.into()).into()
}

/// Permission rules from flags, in the order they were given (first match wins).
fn flag_rules(args: &PermissionArgs, matches: &ArgMatches) -> anyhow::Result<Vec<Rule>> {
    let mut indexed = Vec::new();
    for (id, values, action) in [
        ("allow", &args.allow, Action::Allow),
        ("ask", &args.ask, Action::Ask),
        ("deny", &args.deny, Action::Deny),
    ] {
        let indices = matches
            .indices_of(id)
            .map(Iterator::collect::<Vec<_>>)
            .unwrap_or_default();
        for (value, index) in values.iter().zip(indices) {
            let rule = Rule::parse(value, action).map_err(|e| usage(format!("--{id}: {e}")))?;
            indexed.push((index, rule));
        }
    }
    // Claude Code's rule lists, in its syntax.
    for (id, values, action) in [
        ("allowed_tools", &args.allowed_tools, Action::Allow),
        ("disallowed_tools", &args.disallowed_tools, Action::Deny),
    ] {
        let indices: Vec<usize> = matches
            .indices_of(id)
            .map(Iterator::collect)
            .unwrap_or_default();
        let flag = if action == Action::Allow {
            "--allowedTools"
        } else {
            "--disallowedTools"
        };
        for (value, index) in values.iter().zip(indices) {
            // As in Claude Code, a disallowed tool stays so whatever allows it.
            let index = if action == Action::Deny { 0 } else { index };
            for written in wonopcode_protocol::claude_code::split_rules(value) {
                let rule = wonopcode_protocol::claude_code::permission_rule(&written)
                    .and_then(|ours| Rule::parse(&ours, action).map_err(|e| e.to_string()))
                    .map_err(|e| usage(format!("{flag}: {e}")))?;
                indexed.push((index, rule));
            }
        }
    }
    indexed.sort_by_key(|(i, _)| *i);
    let mut rules: Vec<Rule> = indexed.into_iter().map(|(_, r)| r).collect();
    let rule = |tool: &str, action| Rule::parse(tool, action).map_err(|e| usage(e.to_string()));
    match Preset::of(args)? {
        // After the flags' own rules: an `--ask bash:git push` given with it still asks.
        Preset::FullAuto | Preset::Never => {
            for tool in FULL_AUTO_TOOLS {
                rules.push(rule(tool, Action::Allow)?);
            }
        }
        // Their modes lie over the rules (`Settings::mode`).
        Preset::Ask | Preset::Bypass | Preset::AcceptEdits | Preset::Plan => {}
    }
    Ok(rules)
}

/// What `--full-auto` lets run without a question: the tools that only reach the
/// workspace (the file tools) or run in the sandbox (`bash`).
const FULL_AUTO_TOOLS: &[&str] = &["bash", "write", "edit", "apply_patch"];

/// The approvals one flag chooses: wonopcode's `--full-auto` and
/// `--dangerously-skip-permissions`, Claude Code's `--permission-mode` and Codex's `-a`,
/// each mapped onto rules, the sandbox and what nobody-to-ask becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Preset {
    /// As the config and the rules say.
    Ask,
    /// File edits without a question (`acceptEdits`).
    AcceptEdits,
    /// The file tools and `bash` without a question, in the sandbox (`--full-auto`, `-a
    /// on-failure`).
    FullAuto,
    /// As `FullAuto`, and what would still ask is refused (`-a never`).
    Never,
    /// Read-only, the model told to plan (`plan`).
    Plan,
    /// No sandbox, no questions (`bypassPermissions`, `--dangerously-skip-permissions`).
    Bypass,
}

impl Preset {
    /// The one preset the flags choose; two that differ are refused in one line.
    fn of(args: &PermissionArgs) -> anyhow::Result<Self> {
        use crate::args::{AskForApprovalArg as A, PermissionModeArg as M};
        let chosen = [
            args.full_auto.then_some(("--full-auto", Self::FullAuto)),
            args.dangerously_skip_permissions
                .then_some(("--dangerously-skip-permissions", Self::Bypass)),
            args.permission_mode.and_then(|mode| match mode {
                M::Default => None,
                M::AcceptEdits => Some(("--permission-mode acceptEdits", Self::AcceptEdits)),
                M::Plan => Some(("--permission-mode plan", Self::Plan)),
                M::BypassPermissions => Some(("--permission-mode bypassPermissions", Self::Bypass)),
            }),
            args.ask_for_approval.and_then(|policy| match policy {
                A::Untrusted | A::OnRequest => None,
                A::OnFailure => Some(("-a on-failure", Self::FullAuto)),
                A::Never => Some(("-a never", Self::Never)),
            }),
        ];
        let mut chosen = chosen.into_iter().flatten();
        let Some((first, preset)) = chosen.next() else {
            return Ok(Self::Ask);
        };
        match chosen.find(|(_, other)| *other != preset) {
            Some((second, _)) => Err(usage(format!(
                "{first} and {second} choose different approvals: give one of them"
            ))),
            None => Ok(preset),
        }
    }
}

/// How tool calls are approved, in the REPL's banner's words.
pub fn approvals_shown(settings: &wonopcode_session::Settings) -> &'static str {
    let allowed = |tool: &str| {
        settings
            .rules
            .iter()
            .any(|r| r.tool == tool && r.pattern.is_none() && r.action == Action::Allow)
    };
    // The mode, which Shift-Tab changes, is said beside this (`Session::mode`).
    if settings.yes {
        "all approved (--yes)"
    } else if settings.never_ask {
        "never asked: what would ask is refused (-a never)"
    } else if FULL_AUTO_TOOLS.iter().all(|t| allowed(t)) {
        "none asked for work in the workspace (--full-auto)"
    } else {
        "ask"
    }
}

/// The sandbox the flags choose: `--sandbox`, or the one `--full-auto` or
/// `--dangerously-skip-permissions` stands for.
fn sandbox_mode(preset: Preset, run: &RunArgs) -> Option<SandboxMode> {
    match preset {
        Preset::Bypass => Some(SandboxMode::FullAccess),
        Preset::Plan => Some(SandboxMode::ReadOnly),
        Preset::FullAuto | Preset::Never => run.sandbox.or(Some(SandboxMode::WorkspaceWrite)),
        Preset::Ask | Preset::AcceptEdits => run.sandbox,
    }
}

/// `--add-dir`'s directories, canonical; one that is not a directory is refused.
fn add_dirs(run: &RunArgs) -> anyhow::Result<Vec<PathBuf>> {
    run.add_dir
        .iter()
        .map(|dir| match dir.canonicalize() {
            Ok(real) if real.is_dir() => Ok(real),
            Ok(_) => Err(usage(format!(
                "--add-dir {}: not a directory",
                dir.display()
            ))),
            Err(e) => Err(usage(format!("--add-dir {}: {e}", dir.display()))),
        })
        .collect()
}

/// The workspace `-C/--cwd` names (default: the current directory), canonical.
pub fn workspace_root(cwd: Option<&std::path::Path>) -> anyhow::Result<PathBuf> {
    let dir = match cwd {
        Some(d) => d.to_path_buf(),
        None => std::env::current_dir().context("cannot determine the current directory")?,
    };
    wonopcode_session::workspace_root(&dir).map_err(|e| usage(format!("-C/--cwd: {e}")))
}

/// A session error as the command line reports it: a wrong choice is a usage error.
pub fn reported(error: SessionError) -> anyhow::Error {
    match error {
        SessionError::Choice(message) => usage(message),
        other => other.into(),
    }
}

/// Refuses a live model's flags beside a strict `--replay`, which would not use them, and
/// a `MAX_THINKING_TOKENS` that is not a number.
pub fn check_model_args(model: &ModelArgs) -> anyhow::Result<()> {
    ambient_generation()?;
    check_model_choice(&model_choice(model))
}

/// The model the flags choose.
fn model_choice(model: &ModelArgs) -> ModelChoice {
    ModelChoice {
        replay: model.replay.clone(),
        replay_pace: model.replay_pace.map(std::time::Duration::from_millis),
        replay_mode: match model.replay_mode {
            ReplayModeArg::Strict => ReplayMode::Strict,
            ReplayModeArg::Prefix => ReplayMode::Prefix,
        },
        provider: model.provider.clone(),
        model: model.model.clone(),
        base_url: model.base_url.clone(),
        wire: model.wire.map(|w| match w {
            WireArg::Responses => OpenAiWire::Responses,
            WireArg::Chat => OpenAiWire::Chat,
        }),
        record: model.record.clone(),
    }
}

/// Refuses a live model beside a strict replay (a batch task's choices over the flags').
pub fn check_model_choice(model: &ModelChoice) -> anyhow::Result<()> {
    let live = model.provider.is_some() || model.model.is_some() || model.base_url.is_some();
    if model.replay.is_some() && live && model.replay_mode == ReplayMode::Strict {
        return Err(usage(
            "--provider, --model and --base-url choose a live model: with --replay they need --replay-mode prefix",
        ));
    }
    Ok(())
}

/// Claude Code's `MAX_THINKING_TOKENS`, read as Claude Code reads it: a number of tokens,
/// or a usage error naming the variable.
fn ambient_generation() -> anyhow::Result<Generation> {
    let env = std::env::var("MAX_THINKING_TOKENS").ok();
    Generation::from_env(env.as_deref()).map_err(usage)
}

/// The settings the flags choose: the model, the permissions, the limits, the sandbox,
/// the servers and `loop_choice` — mapped here once for every front-end (a prompt's run,
/// a batch task, the MCP server), which lays its own choices over them.
pub fn settings(
    model: &ModelArgs,
    permissions: &PermissionArgs,
    matches: &ArgMatches,
    run: &RunArgs,
    loop_choice: LoopChoice,
) -> anyhow::Result<Settings> {
    if model.oss {
        return Err(usage(
            "--oss (Codex's local model through Ollama) is not built in: give its server as --base-url http://localhost:11434/v1 with -m MODEL",
        ));
    }
    let preset = Preset::of(permissions)?;
    Ok(Settings {
        workspace: workspace_root(run.cwd.as_deref())?,
        model: model_choice(model),
        generation: Generation {
            thinking: model.thinking,
            max_output_tokens: model.max_output_tokens,
            temperature: model.temperature,
        },
        rules: flag_rules(permissions, matches)?,
        unattended: permissions
            .unattended
            .map(|mode| match mode {
                UnattendedArg::Deny => Unattended::Deny,
                UnattendedArg::Suspend => Unattended::Suspend,
            })
            .or((preset == Preset::Never).then_some(Unattended::Deny)),
        mode: match preset {
            Preset::AcceptEdits => Mode::AcceptEdits,
            Preset::Plan => Mode::Plan,
            _ => Mode::Ask,
        },
        yes: permissions.yes || preset == Preset::Bypass,
        never_ask: preset == Preset::Never,
        sandbox: sandbox_mode(preset, run),
        bash_timeout: run.bash_timeout_ms.map(std::time::Duration::from_millis),
        tool_stand_ins: match &run.tool_stand_ins {
            Some(file) => stand_ins(file)?,
            None => Vec::new(),
        },
        budget: BudgetLimits {
            max_cost_micro_cents: run.max_cost,
            max_tokens: run.max_tokens,
            max_wall: run.max_wall,
        },
        max_iterations: run.max_iterations,
        max_parallel: run.max_parallel,
        loop_choice,
        loops_dirs: run.loops_dir.clone(),
        agents: run.agents.clone(),
        mcp: run.mcp.clone(),
        config_file: run.config.clone(),
        compile_cache: !run.no_cache,
        system_prompt: run.system_prompt.clone(),
        append_system_prompt: run.append_system_prompt.clone(),
        add_dirs: add_dirs(run)?,
        project_instructions: !run.no_project_instructions,
        trust_workspace: run.trust_workspace,
        history: None,
    })
}

/// The config file `settings` name (else the user's), read once per front-end: a batch or
/// an MCP server builds every session of its tasks or calls from the same reading.
pub fn load_config(settings: &Settings) -> anyhow::Result<Config> {
    Ok(config::load(settings.config_file.as_deref())?)
}

/// A session of `settings` with the services every front-end of the binary gives it: the
/// config file's settings, `MAX_THINKING_TOKENS`, telemetry, and the journal under
/// `journal` (`None`: no journal); the caller adds its loop, renderer and prompters.
pub fn session_builder(
    settings: Settings,
    config: Config,
    journal: Option<Runs>,
) -> SessionBuilder {
    Session::builder(&settings.workspace)
        .settings(settings)
        // Checked by `check_model_args` before any session is built.
        .ambient_generation(ambient_generation().unwrap_or_default())
        .telemetry(crate::telemetry::recorder())
        .journal(journal)
        .config(config)
}

/// Where a run's journal goes unless `--no-journal`: the user's runs directory.
pub fn standard_journal(run: &RunArgs) -> Option<Runs> {
    (!run.no_journal).then(Runs::standard).flatten()
}

/// The stand-ins of `--tool-stand-ins FILE`.
fn stand_ins(file: &std::path::Path) -> anyhow::Result<Vec<StandIn>> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| anyhow::anyhow!("--tool-stand-ins {}: {e}", file.display()))?;
    let answers: std::collections::BTreeMap<String, StandInAnswer> = serde_json::from_str(&text)
        .map_err(|e| {
            anyhow::anyhow!(
                "--tool-stand-ins {}: {e} (expected {{\"TOOL\": {{\"text\": ...}} or {{\"error\": ...}}}})",
                file.display()
            )
        })?;
    Ok(answers
        .into_iter()
        .map(|(tool, answer)| StandIn { tool, answer })
        .collect())
}
