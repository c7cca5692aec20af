//! `wonopcode mcp add | remove | get`: the config file's `mcp_servers` changed from the
//! command line, with `claude mcp add`'s arguments (`NAME -- COMMAND ARGS…` or `NAME URL`,
//! `-t`, `-e KEY=VALUE`, `-H "Name: value"`), so a line copied from a server's README works.
//!
//! Only the user's config (`--scope user`, the default, or `--config FILE`) is written: a
//! workspace's own MCP servers (Claude Code's `.mcp.json`, `--scope project`) are never
//! started by wonopcode, as a repository you did not write would choose the programs that
//! run on your machine (`docs/mcp.md`). The file is rewritten whole — the YAML parser keeps
//! no comments — so a file that had comments is copied beside it first (`config.yaml.bak`);
//! the new file is checked as a config before it replaces the old one, and replaces it in
//! one rename (`config_edit.rs`).

use std::path::Path;

use serde_yaml::{Mapping, Value};

use crate::args::{McpAddArgs, McpScope, McpTransport};
use crate::config_edit::{mapping_at, path, read, top, write};
use crate::exit;
use crate::session::usage;

/// The config file's key of the servers.
const SERVERS: &str = "mcp_servers";

/// `wonopcode mcp add`: the server added to the config file; refused when the name is
/// taken.
pub fn add(args: &McpAddArgs, file: Option<&Path>) -> anyhow::Result<u8> {
    if args.scope != McpScope::User {
        return Err(usage(
            "--scope: wonopcode starts no workspace's own MCP servers (a repository would choose what runs on your machine); add it for yourself (--scope user), or give a run --mcp NAME=COMMAND",
        ));
    }
    check_name(&args.name)?;
    let entry = entry(args)?;
    let path = path(file)?;
    let mut document = read(&path)?;
    let servers = mapping_at(top(&mut document, &path)?, SERVERS, &path)?;
    if servers.contains_key(args.name.as_str()) {
        return Err(usage(format!(
            "{}: `{}` is in {SERVERS} already; `wonopcode mcp remove {}` first to replace it",
            path.display(),
            args.name,
            args.name
        )));
    }
    servers.insert(Value::from(args.name.as_str()), entry);
    write(&path, &document)?;
    eprintln!("added `{}` to {}", args.name, path.display());
    Ok(exit::SUCCESS)
}

/// `wonopcode mcp remove`: the server taken out of the config file.
pub fn remove(name: &str, file: Option<&Path>) -> anyhow::Result<u8> {
    let path = path(file)?;
    let mut document = read(&path)?;
    let servers = mapping_at(top(&mut document, &path)?, SERVERS, &path)?;
    if servers.remove(name).is_none() {
        eprintln!("{}", missing(name, servers, &path));
        return Ok(exit::ERROR);
    }
    write(&path, &document)?;
    eprintln!("removed `{name}` from {}", path.display());
    Ok(exit::SUCCESS)
}

/// `wonopcode mcp get`: the server's entry as the config file has it (YAML, or one JSON
/// object with `--json`).
pub fn get(name: &str, file: Option<&Path>, json: bool) -> anyhow::Result<u8> {
    let path = path(file)?;
    let mut document = read(&path)?;
    let servers = mapping_at(top(&mut document, &path)?, SERVERS, &path)?;
    let Some(entry) = servers.get(name) else {
        eprintln!("{}", missing(name, servers, &path));
        return Ok(exit::ERROR);
    };
    let shown = if json {
        format!("{}\n", serde_json::to_string(entry)?)
    } else {
        let mut one = Mapping::new();
        one.insert(Value::from(name), entry.clone());
        serde_yaml::to_string(&one)?
    };
    print!("{shown}");
    eprintln!("(in {})", path.display());
    Ok(exit::SUCCESS)
}

/// One line for a server the file lacks, naming those it has.
fn missing(name: &str, servers: &Mapping, path: &Path) -> String {
    let names: Vec<&str> = servers.keys().filter_map(Value::as_str).collect();
    if names.is_empty() {
        format!("no server `{name}`: {} has none", path.display())
    } else {
        format!(
            "no server `{name}` in {} (it has {})",
            path.display(),
            names.join(", ")
        )
    }
}

/// A name a tool of the server can be called by (`mcp__NAME__TOOL`).
fn check_name(name: &str) -> anyhow::Result<()> {
    let fine = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if fine {
        Ok(())
    } else {
        Err(usage(format!(
            "`{name}`: a server's name is letters, digits, `-` and `_` (its tools are called mcp__NAME__TOOL)"
        )))
    }
}

/// The entry `args` describe: a command with its arguments and variables, or an address
/// with its headers.
fn entry(args: &McpAddArgs) -> anyhow::Result<Value> {
    let is_url =
        args.command_or_url.starts_with("http://") || args.command_or_url.starts_with("https://");
    let transport = args.transport.unwrap_or(if is_url {
        McpTransport::Http
    } else {
        McpTransport::Stdio
    });
    let mut entry = Mapping::new();
    match transport {
        McpTransport::Http => {
            if !is_url {
                return Err(usage(format!(
                    "--transport http needs the server's http(s) address, not `{}`",
                    args.command_or_url
                )));
            }
            if !args.args.is_empty() || !args.env.is_empty() {
                return Err(usage(
                    "an HTTP server takes no command arguments or --env; give it --header",
                ));
            }
            entry.insert("type".into(), "http".into());
            entry.insert("url".into(), args.command_or_url.as_str().into());
            let mut headers = Mapping::new();
            for header in &args.headers {
                let Some((name, value)) = header.split_once(':') else {
                    return Err(usage(format!(
                        "--header `{header}`: write it as `Name: value`"
                    )));
                };
                headers.insert(name.trim().into(), value.trim().into());
            }
            if !headers.is_empty() {
                entry.insert("headers".into(), Value::Mapping(headers));
            }
        }
        McpTransport::Stdio => {
            if !args.headers.is_empty() {
                return Err(usage(
                    "--header is for an HTTP server; a command's server takes --env",
                ));
            }
            entry.insert("command".into(), args.command_or_url.as_str().into());
            if !args.args.is_empty() {
                let list = args.args.iter().map(|a| Value::from(a.as_str())).collect();
                entry.insert("args".into(), Value::Sequence(list));
            }
            let mut env = Mapping::new();
            for pair in &args.env {
                match pair.split_once('=') {
                    Some((key, value)) if !key.is_empty() => {
                        env.insert(key.into(), value.into());
                    }
                    _ => {
                        return Err(usage(format!("--env `{pair}`: write it as KEY=VALUE")));
                    }
                }
            }
            if !env.is_empty() {
                entry.insert("env".into(), Value::Mapping(env));
            }
        }
        McpTransport::Sse => {
            return Err(usage(
                "wonopcode speaks streamable HTTP to remote servers (--transport http), not the older SSE transport",
            ));
        }
    }
    Ok(Value::Mapping(entry))
}
