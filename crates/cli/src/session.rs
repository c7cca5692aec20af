//! The command line's settings of a session: flags and the config file into a
//! `wonopcode_session::SessionBuilder` (the model, permissions, limits, generation), and the
//! errors that say a flag is wrong. Every front-end of the binary (a prompt's run, a batch
//! task, the MCP server) builds its sessions through here.

use std::path::PathBuf;

use anyhow::Context;
use clap::ArgMatches;
use wonopcode_agent_loop::budget::BudgetLimits;
use wonopcode_providers::Wire;
use wonopcode_session::generation::Generation;
use wonopcode_session::{Config, ModelChoice, ReplayMode, Session, SessionBuilder, SessionError};
use wonopcode_tools::permission::{Action, PolicyConfig, Rule, Unattended};

use crate::args::{ModelArgs, PermissionArgs, ReplayModeArg, RunArgs, UnattendedArg, WireArg};
use crate::loops;

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
    indexed.sort_by_key(|(i, _)| *i);
    Ok(indexed.into_iter().map(|(_, r)| r).collect())
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

/// The permission policy: flag rules first (in the order given), then the config file's.
pub fn permissions(
    args: &PermissionArgs,
    matches: &ArgMatches,
    config: &Config,
) -> anyhow::Result<PolicyConfig> {
    let mut policy = config.permissions.clone();
    let mut rules = flag_rules(args, matches)?;
    rules.append(&mut policy.rules);
    policy.rules = rules;
    if let Some(mode) = args.unattended {
        policy.unattended = match mode {
            UnattendedArg::Deny => Unattended::Deny,
            UnattendedArg::Suspend => Unattended::Suspend,
        };
    }
    Ok(policy)
}

/// Refuses a live model's flags beside a strict `--replay`, which would not use them, and
/// a `MAX_THINKING_TOKENS` that is not a number.
pub fn check_model_args(model: &ModelArgs) -> anyhow::Result<()> {
    ambient_generation()?;
    let live = model.provider.is_some() || model.model.is_some() || model.base_url.is_some();
    if model.replay.is_some() && live && model.replay_mode == ReplayModeArg::Strict {
        return Err(usage(
            "--provider, --model and --base-url choose a live model: with --replay they need --replay-mode prefix",
        ));
    }
    Ok(())
}

/// The generation settings of the flags.
fn chosen_generation(model: &ModelArgs) -> Generation {
    Generation {
        thinking: model.thinking,
        max_output_tokens: model.max_output_tokens,
        temperature: model.temperature,
    }
}

/// Claude Code's `MAX_THINKING_TOKENS`, read as Claude Code reads it: a number of tokens,
/// or a usage error naming the variable.
fn ambient_generation() -> anyhow::Result<Generation> {
    let env = std::env::var("MAX_THINKING_TOKENS").ok();
    Generation::from_env(env.as_deref()).map_err(usage)
}

/// A session as the flags describe it: the model, the permission policy and the session's
/// settings, in `root`; the caller adds the loop, renderer, prompters and history.
pub fn session_builder(
    root: PathBuf,
    model: &ModelArgs,
    policy: PolicyConfig,
    yes: bool,
    run: &RunArgs,
    config: Config,
) -> SessionBuilder {
    Session::builder(root)
        .model_choice(ModelChoice {
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
                WireArg::Responses => Wire::Responses,
                WireArg::Chat => Wire::Chat,
            }),
            record: model.record.clone(),
        })
        .permissions(policy)
        .yes(yes)
        .max_iterations(run.max_iterations)
        // Checked by `check_model_args` before any session is built.
        .generation(
            chosen_generation(model),
            ambient_generation().unwrap_or_default(),
        )
        .max_parallel(run.max_parallel)
        .loops_dirs(run.loops_dir.clone())
        .cache(loops::cache_policy(run, &config))
        .bash_timeout(run.bash_timeout_ms.map(std::time::Duration::from_millis))
        .sandbox_mode(run.sandbox)
        .budget(BudgetLimits {
            max_cost_micro_cents: run.max_cost,
            max_tokens: run.max_tokens,
            max_wall: run.max_wall,
        })
        .mcp_servers(run.mcp.clone())
        .telemetry(crate::telemetry::recorder())
        .project_instructions(!run.no_project_instructions)
        .trust_workspace(run.trust_workspace)
        .agents(run.agents.clone())
        .journal(
            (!run.no_journal)
                .then(wonopcode_journal::Runs::standard)
                .flatten(),
        )
        .config(config)
}
