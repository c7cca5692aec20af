//! The config file (`wonopcode/config.yaml` in the user's config directory, or `--config`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use wonopcode_contexts::ContextLimits;
use wonopcode_providers::ProviderEntry;
use wonopcode_sandbox::{SandboxMode, SandboxPolicy};
use wonopcode_tools::ShellEnvironmentPolicy;
use wonopcode_tools::permission::PolicyConfig;
use wonopcode_wasm_host::CachePolicy;

use crate::error::SessionError;

/// Everything the config file may set.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Replaces the default system prompt.
    pub system_prompt: Option<String>,
    /// Model requests allowed per prompt.
    pub max_iterations: Option<u32>,
    /// Compact the history when it holds more messages than this (besides the 90%-of-window
    /// rule).
    pub compact_after_messages: Option<usize>,
    /// When old tool outputs are cleared in batches before compaction is due
    /// (`docs/costs.md`): `off`, or `{keep_tokens, keep_outputs, batch_tokens}` (defaults
    /// 8,000, 3 and 24,000).
    pub clear_tool_outputs: Option<ClearSetting>,
    /// Permission rules and defaults.
    pub permissions: PolicyConfig,
    /// What holds in one workspace only, by its path (Codex's `[projects."PATH"]`): rules an
    /// approval answered "always, for this project" (`p`) wrote. Kept in the user's file,
    /// never in the workspace, so a repository cannot choose them.
    pub projects: BTreeMap<PathBuf, ProjectConfig>,
    /// The environment commands run with (Codex's keys; default: wonopcode's, without keys,
    /// secrets, tokens and the providers' key variables).
    pub shell_environment_policy: ShellEnvironmentPolicy,
    /// Keys guest loops read with `config.get-config` (and `get-user-preferences`).
    pub guest: BTreeMap<String, String>,
    /// Limits on the contexts guests spawn.
    pub contexts: ContextsConfig,
    /// Limits of the compiled-component cache.
    pub cache: CacheConfig,
    /// Provider used when `--provider` is not given.
    pub provider: Option<String>,
    /// Model used when `--model` is not given.
    pub model: Option<String>,
    /// How much the model thinks (`off`, `low`, `medium`, `high` or tokens), unless
    /// `--thinking` says.
    pub thinking: Option<crate::generation::Thinking>,
    /// The most tokens one response may have, unless `--max-output-tokens` says.
    pub max_output_tokens: Option<u32>,
    /// Sampling temperature, unless `--temperature` says.
    pub temperature: Option<f32>,
    /// Provider overrides and additions (base URL, key variable or command, timeouts,
    /// models with windows and prices), laid over the built-in presets.
    pub providers: BTreeMap<String, ProviderEntry>,
    /// MCP servers whose tools the run gets (`docs/mcp.md`).
    pub mcp_servers: BTreeMap<String, wonopcode_mcp::ServerEntry>,
    /// The sandbox of the processes started for the model (`docs/grants.md`): a mode, or a
    /// mapping with the mode and grants.
    #[serde(deserialize_with = "SandboxPolicy::mode_or_policy")]
    pub sandbox: SandboxPolicy,
    /// The search engine behind the `websearch` tool (`engine: searxng` with `url`, or
    /// `engine: brave`); without it the run has no `websearch`.
    pub websearch: Option<wonopcode_tools::SearchEngine>,
    /// Hooks, in Claude Code's shape (`PreToolUse: [{matcher, hooks: [{type: command,
    /// command}]}]`); Claude Code's settings files add theirs (`docs/hooks.md`).
    pub hooks: Option<serde_json::Value>,
    /// The file this was read from, for messages about it.
    #[serde(skip)]
    pub file: Option<PathBuf>,
}

/// A workspace's own settings in the config file (`projects.PATH`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProjectConfig {
    /// Its permission rules, before the file's own.
    pub permissions: ProjectPermissions,
}

/// A workspace's permission rules (`projects.PATH.permissions`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProjectPermissions {
    /// Checked before `permissions.rules`; the first that matches decides.
    pub rules: Vec<wonopcode_tools::permission::Rule>,
}

/// The config file's `clear_tool_outputs`: `off`, or the sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClearSetting {
    /// Old tool outputs are cleared only when compaction is due.
    Off,
    /// Cleared in batches with these sizes.
    On(wonopcode_agent_loop::compaction::ClearToolOutputs),
}

impl<'de> Deserialize<'de> for ClearSetting {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        /// The mapping form; a missing size is the default's.
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Sizes {
            keep_tokens: Option<usize>,
            keep_outputs: Option<usize>,
            batch_tokens: Option<usize>,
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Word(String),
            Sizes(Sizes),
        }
        match Form::deserialize(d)? {
            Form::Word(word) if word == "off" => Ok(Self::Off),
            Form::Word(other) => Err(serde::de::Error::custom(format!(
                "clear_tool_outputs: `{other}` is neither `off` nor {{keep_tokens, keep_outputs, batch_tokens}}"
            ))),
            Form::Sizes(sizes) => {
                let default = wonopcode_agent_loop::compaction::ClearToolOutputs::default();
                Ok(Self::On(
                    wonopcode_agent_loop::compaction::ClearToolOutputs {
                        keep_tokens: sizes.keep_tokens.unwrap_or(default.keep_tokens),
                        keep_outputs: sizes.keep_outputs.unwrap_or(default.keep_outputs),
                        batch_tokens: sizes.batch_tokens.unwrap_or(default.batch_tokens),
                    },
                ))
            }
        }
    }
}

impl Config {
    /// The permission rules and defaults of a run in `workspace`: the file's, with the
    /// rules of its `projects` entry for that workspace first (paths compared as the
    /// filesystem resolves them, so a symlinked or relative spelling matches).
    pub fn permissions_for(&self, workspace: &Path) -> PolicyConfig {
        let resolved = |path: &Path| std::fs::canonicalize(path).unwrap_or_else(|_| path.into());
        let here = resolved(workspace);
        let mut policy = self.permissions.clone();
        let project = self
            .projects
            .iter()
            .filter(|(path, _)| resolved(path) == here)
            .flat_map(|(_, project)| project.permissions.rules.iter().cloned());
        policy.rules = project.chain(policy.rules).collect();
        policy
    }

    /// The generation settings the file states.
    pub fn generation(&self) -> crate::generation::Generation {
        crate::generation::Generation {
            thinking: self.thinking,
            max_output_tokens: self.max_output_tokens,
            temperature: self.temperature,
        }
    }

    /// The run's sandbox policy: the config file's, with `mode` (`--sandbox`) over its mode,
    /// and its paths made absolute (`~/` is the home directory; others are relative to
    /// `workspace`).
    pub fn sandbox_policy(&self, mode: Option<SandboxMode>, workspace: &Path) -> SandboxPolicy {
        let mut policy = absolute_paths(&self.sandbox, workspace);
        if let Some(mode) = mode {
            policy.mode = mode;
        }
        policy
    }
}

/// `policy` with its paths absolute: `~/` is the home directory; others are relative to
/// `workspace`.
pub(crate) fn absolute_paths(policy: &SandboxPolicy, workspace: &Path) -> SandboxPolicy {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let absolute = |path: &PathBuf| match (path.strip_prefix("~"), &home) {
        (Ok(rest), Some(home)) => home.join(rest),
        _ => workspace.join(path),
    };
    SandboxPolicy {
        write: policy.write.iter().map(absolute).collect(),
        read: policy.read.iter().map(absolute).collect(),
        read_only: policy.read_only.iter().map(absolute).collect(),
        ..policy.clone()
    }
}

/// `cache:` in the config file: how big and old the compiled-component cache may grow.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CacheConfig {
    /// Total size of the compiled-component cache after a prune, in MiB (default 1024).
    pub max_size_mb: Option<u64>,
    /// Entries unused for this many days are removed (default 30; 0: no age limit).
    pub max_age_days: Option<u64>,
}

impl CacheConfig {
    /// The policy, defaults filled in.
    pub fn policy(&self) -> CachePolicy {
        let base = CachePolicy::default();
        CachePolicy {
            max_bytes: self
                .max_size_mb
                .map_or(base.max_bytes, |mb| mb.saturating_mul(1 << 20)),
            max_age: match self.max_age_days {
                Some(0) => None,
                Some(days) => Some(Duration::from_secs(days.saturating_mul(24 * 3600))),
                None => base.max_age,
            },
        }
    }
}

/// `contexts:` in the config file; each key defaults to the host's limit.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ContextsConfig {
    /// Deepest context (the root is 0; default 100).
    pub max_depth: Option<usize>,
    /// Contexts alive at once in a run's tree (default 1,000).
    pub max_live: Option<usize>,
    /// Contexts started in one turn, ended ones included (default 10,000).
    pub max_total: Option<usize>,
    /// MiB of memory all guests of a run may hold together (default a quarter of the
    /// machine's memory).
    pub max_memory_mb: Option<usize>,
    /// Children of one parallel spawn running at once (default 4).
    pub max_parallel: Option<usize>,
}

impl ContextsConfig {
    /// The limits, with `max_parallel` from the command line taking precedence.
    pub fn limits(&self, max_parallel: Option<u32>) -> ContextLimits {
        let base = ContextLimits::default();
        ContextLimits {
            max_depth: self.max_depth.unwrap_or(base.max_depth),
            max_live: self.max_live.unwrap_or(base.max_live).max(1),
            max_total: self.max_total.unwrap_or(base.max_total).max(1),
            max_memory_bytes: self
                .max_memory_mb
                .map_or(base.max_memory_bytes, |mb| mb.saturating_mul(1 << 20)),
            max_parallel: max_parallel
                .map(|n| n as usize)
                .or(self.max_parallel)
                .unwrap_or(base.max_parallel)
                .max(1),
        }
    }
}

/// The default config path, when the user has a config directory.
pub fn default_path() -> Option<PathBuf> {
    dirs::config_dir().map(|d| d.join("wonopcode").join("config.yaml"))
}

/// Loads the config: the explicit file (which must exist), else the default one if present,
/// else defaults.
pub fn load(explicit: Option<&Path>) -> Result<Config, SessionError> {
    let path = match explicit {
        Some(p) => p.to_path_buf(),
        None => match default_path() {
            Some(p) if p.is_file() => p,
            _ => return Ok(Config::default()),
        },
    };
    let text = std::fs::read_to_string(&path).map_err(|e| {
        SessionError::Config(format!("cannot read config file {}: {e}", path.display()))
    })?;
    if text.trim().is_empty() {
        return Ok(Config {
            file: Some(path),
            ..Config::default()
        });
    }
    let mut config: Config = serde_yaml::from_str(&text).map_err(|e| {
        SessionError::Config(match e.location() {
            Some(loc) => format!("{}:{}:{}: {}", path.display(), loc.line(), loc.column(), e),
            None => format!("{}: {}", path.display(), e),
        })
    })?;
    config.file = Some(path);
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_projects_rules_come_first_in_that_workspace_only() {
        let dir = tempfile::tempdir().unwrap();
        let here = dir.path().join("here");
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir_all(&here).unwrap();
        std::fs::create_dir_all(&elsewhere).unwrap();
        let yaml = format!(
            "permissions:\n  rules: [{{tool: bash, action: ask}}]\nprojects:\n  {}:\n    permissions:\n      rules: [{{tool: bash, pattern: cargo test, action: allow}}]\n",
            here.join(".").display()
        );
        let config: Config = serde_yaml::from_str(&yaml).unwrap();
        let tools = |workspace: &Path| -> Vec<Option<String>> {
            config
                .permissions_for(workspace)
                .rules
                .into_iter()
                .map(|r| r.pattern)
                .collect()
        };
        assert_eq!(tools(&here), [Some("cargo test".to_owned()), None]);
        assert_eq!(tools(&elsewhere), [None]);
    }

    #[test]
    fn cache_limits_default_to_a_gibibyte_and_thirty_days_and_zero_days_means_none() {
        let default = CacheConfig::default().policy();
        assert_eq!(default, CachePolicy::default());
        assert_eq!(default.max_bytes, 1 << 30);
        let set: Config =
            serde_yaml::from_str("cache:\n  max_size_mb: 10\n  max_age_days: 0\n").unwrap();
        let policy = set.cache.policy();
        assert_eq!(policy.max_bytes, 10 << 20);
        assert_eq!(policy.max_age, None);
    }

    #[test]
    fn clearing_tool_outputs_is_off_or_sizes_and_a_bad_word_is_named() {
        use wonopcode_agent_loop::compaction::ClearToolOutputs;
        let off: Config = serde_yaml::from_str("clear_tool_outputs: off\n").unwrap();
        assert_eq!(off.clear_tool_outputs, Some(ClearSetting::Off));
        let sizes: Config =
            serde_yaml::from_str("clear_tool_outputs: {keep_tokens: 20000}\n").unwrap();
        assert_eq!(
            sizes.clear_tool_outputs,
            Some(ClearSetting::On(ClearToolOutputs {
                keep_tokens: 20_000,
                keep_outputs: 3,
                batch_tokens: 24_000
            }))
        );
        let outputs: Config =
            serde_yaml::from_str("clear_tool_outputs: {keep_outputs: 5}\n").unwrap();
        assert!(matches!(
            outputs.clear_tool_outputs,
            Some(ClearSetting::On(ClearToolOutputs {
                keep_outputs: 5,
                keep_tokens: 8_000,
                ..
            }))
        ));
        let bad = serde_yaml::from_str::<Config>("clear_tool_outputs: sometimes\n")
            .unwrap_err()
            .to_string();
        assert!(bad.contains("`sometimes` is neither `off`"), "{bad}");
    }

    #[test]
    fn the_sandbox_is_a_mode_or_a_policy_and_servers_get_the_network() {
        let short: Config = serde_yaml::from_str("sandbox: read-only\n").unwrap();
        assert_eq!(short.sandbox.mode, SandboxMode::ReadOnly);
        let whole: Config = serde_yaml::from_str(
            "sandbox:\n  write: [out, \"~/cache\"]\n  network: [\"127.0.0.1:80\"]\n",
        )
        .unwrap();
        assert_eq!(whole.sandbox.mode, SandboxMode::WorkspaceWrite);
        let policy = whole.sandbox_policy(Some(SandboxMode::ReadOnly), Path::new("/ws"));
        assert_eq!(policy.mode, SandboxMode::ReadOnly);
        assert_eq!(policy.write[0], Path::new("/ws/out"));
        assert!(policy.write[1].ends_with("cache") && policy.write[1].is_absolute());
        let servers = policy.for_servers(Some(Path::new("/home/u")));
        assert_eq!(servers.network, vec![wonopcode_sandbox::NetworkGrant::Any]);
        assert!(servers.write.contains(&PathBuf::from("/home/u/.npm")));
        assert!(serde_yaml::from_str::<Config>("sandbox: open\n").is_err());
    }

    #[test]
    fn context_limits_default_and_the_flag_wins_over_the_file() {
        let config: Config =
            serde_yaml::from_str("contexts:\n  max_depth: 5\n  max_parallel: 2\n").unwrap();
        let limits = config.contexts.limits(None);
        assert_eq!(
            (limits.max_depth, limits.max_live, limits.max_parallel),
            (5, 1000, 2)
        );
        assert_eq!(config.contexts.limits(Some(8)).max_parallel, 8);
        let bad = serde_yaml::from_str::<Config>("contexts:\n  max_width: 5\n");
        assert!(bad.is_err());
    }
}
