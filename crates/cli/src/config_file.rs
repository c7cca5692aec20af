//! `wonopcode config path|show`: where the config file is, and what it sets once parsed
//! (so a mistake in it is reported here, with its line, before a run trips on it).

use std::path::Path;

use serde_yaml::{Mapping, Value};
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

/// What `wonopcode config show` and the REPL's `/config` print: a comment naming the file
/// read, then, as YAML under the config file's own keys, what a run takes from it with the
/// defaults filled in — the permission rules and `projects:` rules as the file has them,
/// the providers and MCP servers by name (their entries can hold headers and keys). An
/// explicit `file` must exist.
pub fn shown(file: Option<&Path>) -> anyhow::Result<Vec<String>> {
    let config = config::load(file)?;
    let document = match &config.file {
        Some(path) => crate::config_edit::read(path)?,
        None => Value::Mapping(Mapping::new()),
    };
    let mut lines = vec![
        match &config.file {
            Some(p) => format!("# {}, parsed; defaults filled in", p.display()),
            None => "# no config file: the defaults".to_owned(),
        },
        "# null: unset (provider: the first whose key is set; model: the provider's default; system_prompt: the default); providers and mcp_servers by name".to_owned(),
    ];
    let yaml = serde_yaml::to_string(&effective(&config, &document))?;
    lines.extend(yaml.lines().map(str::to_owned));
    Ok(lines)
}

/// The settings a run takes from `config` as a YAML mapping of the config file's own keys;
/// the rules are copied from `document`, the file as written.
fn effective(config: &Config, document: &Value) -> Mapping {
    let text = |v: Option<&String>| v.map_or(Value::Null, |s| Value::String(s.clone()));
    let lower = |v: &dyn std::fmt::Debug| Value::String(format!("{v:?}").to_lowercase());
    let names = |keys: Vec<&String>| {
        Value::Sequence(keys.into_iter().map(|k| Value::String(k.clone())).collect())
    };
    let written = |at: &[&str], empty: Value| {
        at.iter()
            .try_fold(document, |v, key| v.get(key))
            .filter(|v| !v.is_null())
            .cloned()
            .unwrap_or(empty)
    };
    let permissions = &config.permissions;
    let mut shown_permissions = Mapping::new();
    for (key, value) in [
        ("read_only", lower(&permissions.read_only)),
        ("mutating", lower(&permissions.mutating)),
        ("unattended", lower(&permissions.unattended)),
        (
            "rules",
            written(&["permissions", "rules"], Value::Sequence(Vec::new())),
        ),
    ] {
        shown_permissions.insert(key.into(), value);
    }
    let max_iterations = config
        .max_iterations
        .unwrap_or(wonopcode_session::DEFAULT_MAX_ITERATIONS);
    let mut out = Mapping::new();
    for (key, value) in [
        ("provider", text(config.provider.as_ref())),
        ("model", text(config.model.as_ref())),
        ("max_iterations", Value::Number(max_iterations.into())),
        ("sandbox", Value::String(config.sandbox.mode.to_string())),
        ("permissions", Value::Mapping(shown_permissions)),
        (
            "projects",
            written(&["projects"], Value::Mapping(Mapping::new())),
        ),
        ("providers", names(config.providers.keys().collect())),
        ("mcp_servers", names(config.mcp_servers.keys().collect())),
        ("system_prompt", text(config.system_prompt.as_ref())),
    ] {
        out.insert(key.into(), value);
    }
    out
}
