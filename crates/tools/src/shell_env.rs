//! The environment a command runs with: the user's, without wonopcode's secrets. The policy
//! follows Codex's `shell_environment_policy` (same keys, same order of steps) so a Codex
//! user's table carries over:
//!
//! 1. start from `inherit`: `all` of wonopcode's environment (the default), a `core` set
//!    (`HOME`, `PATH`, `USER`, …), or `none`;
//! 2. unless `ignore_default_excludes`, drop every variable whose name contains `KEY`,
//!    `SECRET` or `TOKEN` (any case), and the variables that point at a daemon of the
//!    user's (`TMUX`, `DBUS_SESSION_BUS_ADDRESS`, `SSH_AUTH_SOCK`, `DOCKER_HOST`, an
//!    editor's IPC socket, the display: [`DAEMON_VARIABLES`]) — such a daemon is not
//!    confined, and what a command asks of it would run unconfined;
//! 3. drop the names matching `exclude` (globs such as `AWS_*`, any case);
//! 4. add `set`;
//! 5. if `include_only` is given, keep only the names matching it.
//!
//! The variables the provider catalog reads keys from (`key_env`) are dropped whatever the
//! policy says: a command never sees the key wonopcode talks to its model with. A value a
//! command needs can still be given with `set`.

use std::collections::BTreeMap;

use crate::glob_pattern::{GlobOptions, GlobPattern};
use serde::{Deserialize, Serialize};

/// Where a command's environment starts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Inherit {
    /// wonopcode's whole environment.
    #[default]
    All,
    /// Only the variables a shell needs to work (`CORE`).
    Core,
    /// Nothing.
    None,
}

/// The variables `inherit: core` keeps.
const CORE: &[&str] = &[
    "HOME", "LANG", "LC_ALL", "LOGNAME", "PATH", "SHELL", "TERM", "TMPDIR", "TEMP", "TMP", "USER",
    "USERNAME",
];

/// Variables naming a daemon of the user's (a terminal multiplexer, the session bus, an
/// agent holding keys, a container engine, an editor, the display), dropped unless
/// `ignore_default_excludes` (or given back with `set`).
pub const DAEMON_VARIABLES: &[&str] = &[
    "TMUX",
    "TMUX_PANE",
    "STY",
    "DBUS_SESSION_BUS_ADDRESS",
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "SSH_ASKPASS",
    "GPG_AGENT_INFO",
    "DOCKER_HOST",
    "CONTAINER_HOST",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "XAUTHORITY",
    "KITTY_LISTEN_ON",
    "WEZTERM_UNIX_SOCKET",
    "NVIM",
    "NVIM_LISTEN_ADDRESS",
    "VSCODE_IPC_HOOK_CLI",
    "VSCODE_GIT_IPC_HANDLE",
    "VSCODE_GIT_ASKPASS_MAIN",
    "VSCODE_GIT_ASKPASS_NODE",
    "GIT_ASKPASS",
];

/// Names dropped unless `ignore_default_excludes`.
const DEFAULT_EXCLUDES: &[&str] = &["*KEY*", "*SECRET*", "*TOKEN*"];

/// The `shell_environment_policy` section of the config file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ShellEnvironmentPolicy {
    /// Where the environment starts.
    pub inherit: Inherit,
    /// Keep variables named like keys, secrets and tokens.
    pub ignore_default_excludes: bool,
    /// Globs of names to drop.
    pub exclude: Vec<String>,
    /// Variables to set.
    pub set: BTreeMap<String, String>,
    /// Globs of names to keep (all others dropped), when given.
    pub include_only: Vec<String>,
}

/// A glob in the policy is not one.
#[derive(Debug, thiserror::Error)]
#[error("shell_environment_policy: `{pattern}` is not a valid pattern: {reason}")]
pub struct PatternError {
    pattern: String,
    reason: String,
}

fn matchers(patterns: &[impl AsRef<str>]) -> Result<Vec<GlobPattern>, PatternError> {
    let options = GlobOptions {
        case_insensitive: true,
        ..GlobOptions::default()
    };
    patterns
        .iter()
        .map(|p| {
            GlobPattern::new(p.as_ref(), options).map_err(|reason| PatternError {
                pattern: p.as_ref().to_owned(),
                reason,
            })
        })
        .collect()
}

impl ShellEnvironmentPolicy {
    /// The environment for commands, from `vars` (wonopcode's own), never holding the
    /// variables named in `secrets` unless `set` gives them.
    pub fn environment(
        &self,
        vars: impl IntoIterator<Item = (String, String)>,
        secrets: &[String],
    ) -> Result<BTreeMap<String, String>, PatternError> {
        let exclude = matchers(&self.exclude)?;
        let include_only = matchers(&self.include_only)?;
        let defaults = matchers(DEFAULT_EXCLUDES)?;
        let any = |set: &[GlobPattern], name: &str| set.iter().any(|m| m.is_match(name));
        let mut env: BTreeMap<String, String> = vars
            .into_iter()
            .filter(|(name, _)| match self.inherit {
                Inherit::All => true,
                Inherit::Core => CORE.contains(&name.as_str()),
                Inherit::None => false,
            })
            .filter(|(name, _)| !secrets.iter().any(|s| s == name))
            .filter(|(name, _)| {
                self.ignore_default_excludes
                    || !(any(&defaults, name) || DAEMON_VARIABLES.contains(&name.as_str()))
            })
            .filter(|(name, _)| !any(&exclude, name))
            .collect();
        env.extend(self.set.clone());
        if !include_only.is_empty() {
            env.retain(|name, _| any(&include_only, name));
        }
        Ok(env)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> Vec<(String, String)> {
        [
            ("PATH", "/bin"),
            ("HOME", "/h"),
            ("ANTHROPIC_API_KEY", "sk-1"),
            ("MY_LLM_CREDENTIAL", "c"),
            ("github_token", "t"),
            ("AWS_REGION", "eu"),
            ("EDITOR", "vi"),
            ("TMUX", "/tmp/tmux-0/default,1,0"),
            ("SSH_AUTH_SOCK", "/run/agent.sock"),
            ("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/0/bus"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
    }

    fn names(env: &BTreeMap<String, String>) -> Vec<&str> {
        env.keys().map(String::as_str).collect()
    }

    #[test]
    fn by_default_keys_secrets_tokens_daemons_and_the_providers_variables_are_dropped() {
        let secrets = ["MY_LLM_CREDENTIAL".to_owned()];
        let env = ShellEnvironmentPolicy::default()
            .environment(vars(), &secrets)
            .unwrap();
        assert_eq!(names(&env), ["AWS_REGION", "EDITOR", "HOME", "PATH"]);
    }

    #[test]
    fn the_steps_follow_codex_order() {
        let policy = ShellEnvironmentPolicy {
            inherit: Inherit::Core,
            ignore_default_excludes: true,
            exclude: vec!["home".to_owned()],
            set: BTreeMap::from([("CI".to_owned(), "1".to_owned())]),
            include_only: vec!["P*".to_owned(), "CI".to_owned()],
        };
        let env = policy.environment(vars(), &[]).unwrap();
        assert_eq!(names(&env), ["CI", "PATH"]);
        // A provider's variable stays out even when default excludes are off.
        let policy = ShellEnvironmentPolicy {
            ignore_default_excludes: true,
            ..ShellEnvironmentPolicy::default()
        };
        let env = policy
            .environment(vars(), &["ANTHROPIC_API_KEY".to_owned()])
            .unwrap();
        assert!(!env.contains_key("ANTHROPIC_API_KEY"));
        // The user may give a daemon back.
        assert!(env.contains_key("SSH_AUTH_SOCK"));
        assert!(env.contains_key("github_token"));
        let bad = ShellEnvironmentPolicy {
            exclude: vec!["[".to_owned()],
            ..ShellEnvironmentPolicy::default()
        };
        assert!(bad.environment(vars(), &[]).is_err());
    }
}
