//! The config file (`wonopcode/config.yaml` in the user's config directory, or `--config`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde::Deserialize;
use wonopcode_providers::ProviderEntry;
use wonopcode_tools::permission::PolicyConfig;
use wonopcode_wasm_host::ContextLimits;

/// Everything the config file may set.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Replaces the default system prompt.
    pub system_prompt: Option<String>,
    /// Model requests allowed per prompt.
    pub max_iterations: Option<u32>,
    /// Compact the history when it holds more messages than this (besides the 90%-of-window
    /// rule).
    pub compact_after_messages: Option<usize>,
    /// Permission rules and defaults.
    pub permissions: PolicyConfig,
    /// Keys guest loops read with `config.get-config` (and `get-user-preferences`).
    pub guest: BTreeMap<String, String>,
    /// Limits on the contexts guests spawn.
    pub contexts: ContextsConfig,
    /// Provider used when `--provider` is not given.
    pub provider: Option<String>,
    /// Model used when `--model` is not given.
    pub model: Option<String>,
    /// Provider overrides and additions (base URL, key variable or command, timeouts,
    /// models with windows and prices), laid over the built-in presets.
    pub providers: BTreeMap<String, ProviderEntry>,
}

/// `contexts:` in the config file; each key defaults to the host's limit.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ContextsConfig {
    /// Deepest context (the root is 0; default 100).
    pub max_depth: Option<usize>,
    /// Contexts alive at once in a run's tree (default 1,000).
    pub max_live: Option<usize>,
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
pub fn load(explicit: Option<&Path>) -> anyhow::Result<Config> {
    let path = match explicit {
        Some(p) => p.to_path_buf(),
        None => match default_path() {
            Some(p) if p.is_file() => p,
            _ => return Ok(Config::default()),
        },
    };
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read config file {}", path.display()))?;
    if text.trim().is_empty() {
        return Ok(Config::default());
    }
    match serde_yaml::from_str(&text) {
        Ok(config) => Ok(config),
        Err(e) => match e.location() {
            Some(loc) => bail!("{}:{}:{}: {}", path.display(), loc.line(), loc.column(), e),
            None => bail!("{}: {}", path.display(), e),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
