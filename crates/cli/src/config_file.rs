//! `wonopcode config path|show`: where the config file is, and what it sets once parsed
//! (so a mistake in it is reported here, with its line, before a run trips on it).

use std::path::{Path, PathBuf};

use wonopcode_session::config::{self, Config};

use crate::args::{ConfigAction, ConfigArgs};
use crate::exit;

/// Runs `wonopcode config ...`; returns the exit code.
pub fn run(args: &ConfigArgs) -> anyhow::Result<u8> {
    let path = args.config.clone().or_else(config::default_path);
    match args.action {
        ConfigAction::Path => {
            match &path {
                Some(p) if p.is_file() => println!("{}", p.display()),
                Some(p) => println!("{} (absent: every setting has its default)", p.display()),
                None => {
                    println!("(no config directory on this machine: every setting has its default)")
                }
            }
            Ok(exit::SUCCESS)
        }
        ConfigAction::Show => {
            for line in shown(args.config.as_deref())? {
                println!("{line}");
            }
            Ok(exit::SUCCESS)
        }
    }
}

/// What `wonopcode config show` and the REPL's `/config` print: which file was read, then
/// its settings with the defaults filled in. An explicit `file` must exist.
pub fn shown(file: Option<&Path>) -> anyhow::Result<Vec<String>> {
    let config = config::load(file)?;
    let mut lines = vec![match read_from(file) {
        Some(p) => format!("# {} (parsed; defaults filled in)", p.display()),
        None => "# no config file: the defaults".to_owned(),
    }];
    lines.extend(summary(&config));
    Ok(lines)
}

/// The file a run reads its settings from: `file` when given, else the default one when
/// it is there (`None`: every setting has its default).
pub fn read_from(file: Option<&Path>) -> Option<PathBuf> {
    match file {
        Some(p) => Some(p.to_path_buf()),
        None => config::default_path().filter(|p| p.is_file()),
    }
}

/// The settings a run takes from `config`, one `key: value` line each.
fn summary(config: &Config) -> Vec<String> {
    let or = |value: Option<String>, default: &str| value.unwrap_or_else(|| default.to_owned());
    let names = |keys: Vec<&String>| {
        if keys.is_empty() {
            "(none)".to_owned()
        } else {
            keys.iter()
                .map(|k| k.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    let permissions = &config.permissions;
    vec![
        format!(
            "provider: {}",
            or(
                config.provider.clone(),
                "(the first provider whose key is set)"
            )
        ),
        format!(
            "model: {}",
            or(config.model.clone(), "(the provider's default)")
        ),
        format!(
            "max_iterations: {}",
            config
                .max_iterations
                .unwrap_or(wonopcode_session::DEFAULT_MAX_ITERATIONS)
        ),
        format!("sandbox: {}", config.sandbox.mode),
        format!(
            "permissions: read-only tools {:?}, mutating tools {:?}, {} rule(s), unattended {:?}",
            permissions.read_only,
            permissions.mutating,
            permissions.rules.len(),
            permissions.unattended
        )
        .to_lowercase(),
        format!("providers: {}", names(config.providers.keys().collect())),
        format!(
            "mcp_servers: {}",
            names(config.mcp_servers.keys().collect())
        ),
        format!(
            "system_prompt: {}",
            if config.system_prompt.is_some() {
                "(replaced)"
            } else {
                "(the default)"
            }
        ),
    ]
}
