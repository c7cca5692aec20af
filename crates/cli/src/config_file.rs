//! `wonopcode config path|show`: where the config file is, and what it sets once parsed
//! (so a mistake in it is reported here, with its line, before a run trips on it).

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
            let config = config::load(args.config.as_deref())?;
            match &path {
                Some(p) if p.is_file() => {
                    println!("# {} (parsed; defaults filled in)", p.display())
                }
                _ => println!("# no config file: the defaults"),
            }
            for line in summary(&config) {
                println!("{line}");
            }
            Ok(exit::SUCCESS)
        }
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
