//! The run's MCP servers: the config file's `mcp_servers` and the `--mcp NAME=COMMAND` ones,
//! checked (one line naming the entry for each mistake), started in parallel, and their tools
//! registered beside the built-ins.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use wonopcode_agent_loop::ToolRegistry;
use wonopcode_mcp::{ServerConfig, ServerEntry, ServerFailure};
use wonopcode_tools::permission::shell::Script;

use crate::error::SessionError;

/// The servers to start: the config file's, then the command line's; a name given twice is
/// refused.
pub(crate) fn server_configs(
    entries: &BTreeMap<String, ServerEntry>,
    extra: &[(String, String)],
) -> Result<Vec<ServerConfig>, SessionError> {
    let lookup = |name: &str| std::env::var(name).ok();
    let mut configs = Vec::new();
    for (name, entry) in entries {
        if let Some(config) = entry
            .resolve(name, &lookup)
            .map_err(|e| SessionError::Config(e.to_string()))?
        {
            configs.push(config);
        }
    }
    for (name, command_line) in extra {
        if entries.contains_key(name) || configs.iter().any(|c| &c.name == name) {
            return Err(SessionError::Choice(format!(
                "--mcp {name}=…: the MCP server name `{name}` is given twice"
            )));
        }
        let entry = command_entry(name, command_line)?;
        if let Some(config) = entry
            .resolve(name, &lookup)
            .map_err(|e| SessionError::Choice(format!("--mcp {name}=…: {}", e.reason)))?
        {
            configs.push(config);
        }
    }
    Ok(configs)
}

/// `--mcp NAME=COMMAND`'s command line as an entry: its words as the shell would split them
/// (quotes honoured); anything but one plain command is refused.
fn command_entry(name: &str, command_line: &str) -> Result<ServerEntry, SessionError> {
    let script = Script::parse(command_line);
    match script.commands() {
        [words] if script.is_plain() && !words.is_empty() => Ok(ServerEntry {
            command: Some(words[0].clone()),
            args: words[1..].to_vec(),
            ..ServerEntry::default()
        }),
        _ => Err(SessionError::Choice(format!(
            "--mcp {name}={command_line}: give one command with its arguments (no pipes, substitutions or redirections)"
        ))),
    }
}

/// Starts the servers and registers their tools; the servers (and tools) that could not be
/// used are returned, to be reported.
pub(crate) async fn start(
    configs: Vec<ServerConfig>,
    workspace: &Path,
    env: Arc<BTreeMap<String, String>>,
    tools: &mut ToolRegistry,
) -> Vec<ServerFailure> {
    if configs.is_empty() {
        return Vec::new();
    }
    let started = wonopcode_mcp::start_all(configs, workspace, Some(env)).await;
    let mut failures = started.failures.clone();
    for tool in &started.tools {
        if let Err(e) = tools.register(tool.clone()) {
            failures.push(ServerFailure {
                server: tool.server().to_owned(),
                reason: format!("its tool `{}` cannot be offered: {e}", tool.remote_name()),
            });
        }
    }
    failures
}

/// Whether a permission rule's tool names one of these servers (`mcp__NAME`) or one of their
/// tools (`mcp__NAME__TOOL`): such a rule stands even when the server did not start.
pub(crate) fn names_a_server(rule_tool: &str, configs: &[ServerConfig]) -> bool {
    let Some(rest) = rule_tool.strip_prefix("mcp__") else {
        return false;
    };
    let server = rest.split("__").next().unwrap_or(rest);
    configs.iter().any(|c| c.name == server)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_split_like_the_shell_and_names_are_unique() {
        let extra = vec![(
            "fs".to_owned(),
            "npx -y '@modelcontextprotocol/server-filesystem' \"my dir\"".to_owned(),
        )];
        let configs = server_configs(&BTreeMap::new(), &extra).unwrap();
        let wonopcode_mcp::config::Transport::Stdio { command, args, .. } = &configs[0].transport
        else {
            panic!("{configs:?}");
        };
        assert_eq!(command, "npx");
        assert_eq!(
            args,
            &["-y", "@modelcontextprotocol/server-filesystem", "my dir"]
        );
        let refused = server_configs(&BTreeMap::new(), &[("x".into(), "a | b".into())])
            .unwrap_err()
            .to_string();
        assert!(refused.contains("give one command"), "{refused}");
        let twice = vec![
            ("a".to_owned(), "x".to_owned()),
            ("a".to_owned(), "y".to_owned()),
        ];
        assert!(
            server_configs(&BTreeMap::new(), &twice)
                .unwrap_err()
                .to_string()
                .contains("given twice")
        );
    }
}
