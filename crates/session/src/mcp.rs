//! The run's MCP servers: the config file's `mcp_servers` and the `--mcp NAME=COMMAND` ones,
//! checked (one line naming the entry for each mistake), started in parallel in the
//! background, and their tools taken beside the built-ins as each comes up. [`Inspection`]
//! starts them without a run, for `wonopcode mcp list | tools | call`: a server is tried
//! exactly as a run would start it.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use wonopcode_agent_loop::{Tool, ToolRegistry};
use wonopcode_mcp::{
    Elicitor, McpTool, Server, ServerConfig, ServerEntry, ServerFailure, ServerState, Started,
    Starting,
};
use wonopcode_protocol::event::{Item, ItemDetails};
use wonopcode_protocol::{Emitter, EventKind};
use wonopcode_sandbox::SandboxPolicy;
use wonopcode_tools::permission::shell::Script;

use crate::config::Config;
use crate::error::SessionError;
use crate::models;

/// The MCP servers of a config file and of `--mcp`, started without a model or a loop, to
/// see what a run would get from them and to call their tools by hand.
pub struct Inspection {
    started: Started,
    /// Every configured server's name, started or not, in the config's order.
    names: Vec<String>,
}

impl Inspection {
    /// When `server` last refused a call for want of scope, signs in to it again asking for
    /// what it named (`open` shows the sign-in page): `true` when it did, so the call can be
    /// made again.
    pub async fn step_up(
        &self,
        config: &Config,
        extra: &[(String, String)],
        server: &str,
        open: impl FnOnce(&str),
    ) -> Result<bool, SessionError> {
        let Some(running) = self.servers().iter().find(|s| s.name() == server) else {
            return Ok(false);
        };
        let Some(challenge) = running.take_challenge() else {
            return Ok(false);
        };
        sign_in_with(config, extra, server, Some(challenge), open).await?;
        Ok(true)
    }
}

impl Inspection {
    /// Starts the servers of `config` and `extra` (`--mcp`) in `workspace`, as a run would
    /// (same environment, same timeouts); `only`, when given, starts just that one. An
    /// unknown `only` is refused with the names there are. Their forms go to `elicitor`.
    pub async fn start(
        config: &Config,
        extra: &[(String, String)],
        workspace: &Path,
        only: Option<&str>,
        elicitor: Option<Arc<dyn Elicitor>>,
    ) -> Result<Self, SessionError> {
        let mut configs = server_configs(&config.mcp_servers, extra)?;
        confine_servers(
            &mut configs,
            &config.sandbox_policy(None, workspace),
            workspace,
        );
        let names: Vec<String> = configs.iter().map(|c| c.name.clone()).collect();
        if let Some(wanted) = only {
            configs.retain(|c| c.name == wanted);
            if configs.is_empty() {
                return Err(SessionError::Choice(unknown_server(wanted, &names)));
            }
        }
        let env = command_environment(config)?;
        let started = wonopcode_mcp::start_all(configs, workspace, Some(env), elicitor).await;
        Ok(Self { started, names })
    }

    /// Every configured server's name, in the config's order (a disabled one is absent).
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The servers that started.
    pub fn servers(&self) -> &[Arc<Server>] {
        &self.started.servers
    }

    /// The servers that did not start, and why.
    pub fn failures(&self) -> &[ServerFailure] {
        &self.started.failures
    }

    /// The tools of `server` a run would offer (its `enabled_tools`/`disabled_tools` applied).
    pub fn tools(&self, server: &str) -> Vec<Arc<McpTool>> {
        self.started
            .tools
            .iter()
            .filter(|t| t.server() == server)
            .cloned()
            .collect()
    }

    /// Calls `tool` of `server` with `arguments` (JSON text; empty is `{}`), checked against
    /// the tool's schema first, as a model's call is; no permission is asked (the user typed
    /// the call). The server's whole answer is returned, for showing as it is.
    pub async fn call(
        &self,
        server: &str,
        tool: &str,
        arguments: &str,
        cancel: &CancellationToken,
    ) -> Result<wonopcode_mcp::CallToolResult, SessionError> {
        let Some(found) = self
            .tools(server)
            .into_iter()
            .find(|t| t.remote_name() == tool)
        else {
            let known: Vec<String> = self
                .tools(server)
                .iter()
                .map(|t| t.remote_name().to_owned())
                .collect();
            return Err(SessionError::Choice(format!(
                "the MCP server `{server}` offers no tool `{tool}`{}",
                closest(tool, &known)
            )));
        };
        let mut registry = ToolRegistry::new();
        let name = found.spec().name.clone();
        registry
            .register(found.clone())
            .map_err(|e| SessionError::Choice(format!("`{name}`: {e}")))?;
        let value = registry
            .parse_arguments(&name, arguments)
            .map_err(SessionError::Choice)?;
        let serde_json::Value::Object(arguments) = value else {
            return Err(SessionError::Choice(format!(
                "the arguments of `{tool}` must be a JSON object"
            )));
        };
        let Some(running) = self.servers().iter().find(|s| s.name() == server) else {
            return Err(SessionError::Choice(format!(
                "the MCP server `{server}` did not start"
            )));
        };
        running
            .call(tool, arguments, cancel)
            .await
            .map_err(|e| SessionError::Choice(format!("MCP server `{server}`: {e}")))
    }
}

/// "no MCP server `x`", with the closest configured name or the list of them.
fn unknown_server(name: &str, names: &[String]) -> String {
    if names.is_empty() {
        return format!(
            "no MCP server `{name}`: none is configured (mcp_servers in the config file, or --mcp NAME=COMMAND)"
        );
    }
    format!("no MCP server `{name}`{}", closest(name, names))
}

/// "; did you mean `y`?" for the name nearest `name`, else the names there are.
fn closest(name: &str, names: &[String]) -> String {
    let nearest = names
        .iter()
        .map(|n| (strsim::jaro_winkler(name, n), n))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0));
    match nearest {
        Some((_, n)) => format!("; did you mean `{n}`?"),
        None if names.is_empty() => String::new(),
        None => format!(" (there are: {})", names.join(", ")),
    }
}

/// The environment MCP servers (and commands) start with: the run's keys and secrets are
/// left out, by the config's `shell_environment_policy`.
pub(crate) fn command_environment(
    config: &Config,
) -> Result<Arc<BTreeMap<String, String>>, SessionError> {
    let env = config
        .shell_environment_policy
        .environment(std::env::vars(), &models::key_variables(config)?)
        .map_err(|e| SessionError::Config(e.to_string()))?;
    Ok(Arc::new(env))
}

/// Where the OAuth tokens of signed-in servers are kept: `wonopcode/mcp-oauth` in the
/// user's data directory.
fn sign_in_dir() -> Option<std::path::PathBuf> {
    dirs::data_dir().map(|d| d.join("wonopcode").join("mcp-oauth"))
}

/// Signs in to the HTTP server `name` of the config (or `--mcp`) with OAuth: `open` gets the
/// sign-in page's address. Returns the file the tokens were saved to.
pub async fn sign_in(
    config: &Config,
    extra: &[(String, String)],
    name: &str,
    open: impl FnOnce(&str),
) -> Result<std::path::PathBuf, SessionError> {
    sign_in_with(config, extra, name, None, open).await
}

/// [`sign_in`], answering `challenge` (a refusal for want of scope) when given.
async fn sign_in_with(
    config: &Config,
    extra: &[(String, String)],
    name: &str,
    challenge: Option<String>,
    open: impl FnOnce(&str),
) -> Result<std::path::PathBuf, SessionError> {
    let (url, sign_in) = sign_in_target(config, extra, name)?;
    let path = sign_in
        .credentials
        .as_ref()
        .map(|f| f.path().to_path_buf())
        .unwrap_or_default();
    wonopcode_mcp::oauth::sign_in(
        &url,
        &sign_in,
        challenge,
        open,
        wonopcode_mcp::oauth::SIGN_IN_TIMEOUT,
    )
    .await
    .map_err(|e| SessionError::Choice(format!("signing in to `{name}`: {e}")))?;
    Ok(path)
}

/// Forgets the OAuth tokens of server `name`; `false` when there were none.
pub fn sign_out(
    config: &Config,
    extra: &[(String, String)],
    name: &str,
) -> Result<bool, SessionError> {
    let (_, sign_in) = sign_in_target(config, extra, name)?;
    let Some(file) = sign_in.credentials else {
        return Ok(false);
    };
    file.remove()
        .map_err(|e| SessionError::Files(format!("cannot remove {}: {e}", file.path().display())))
}

/// The URL of the HTTP server `name` and the file of its tokens; a server that cannot be
/// signed in to is refused, saying why.
fn sign_in_target(
    config: &Config,
    extra: &[(String, String)],
    name: &str,
) -> Result<(String, wonopcode_mcp::config::SignIn), SessionError> {
    let configs = server_configs(&config.mcp_servers, extra)?;
    let names: Vec<String> = configs.iter().map(|c| c.name.clone()).collect();
    let Some(server) = configs.into_iter().find(|c| c.name == name) else {
        return Err(SessionError::Choice(unknown_server(name, &names)));
    };
    let wonopcode_mcp::config::Transport::Http { url, .. } = &server.transport else {
        return Err(SessionError::Choice(format!(
            "`{name}` is started as a program (stdio): only HTTP servers are signed in to"
        )));
    };
    let Some(sign_in) = server.sign_in.filter(|s| s.credentials.is_some()) else {
        return Err(SessionError::Choice(format!(
            "`{name}` sends a bearer token from its bearer_token_env_var, or wonopcode has no data directory to keep tokens in: it cannot be signed in to"
        )));
    };
    Ok((url.clone(), sign_in))
}

/// Gives each stdio server of `configs` its sandbox: its entry's own (paths made absolute),
/// else the run's `run` policy as servers get it (`SandboxPolicy::for_servers`).
pub(crate) fn confine_servers(configs: &mut [ServerConfig], run: &SandboxPolicy, workspace: &Path) {
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    for config in configs {
        if !matches!(
            config.transport,
            wonopcode_mcp::config::Transport::Stdio { .. }
        ) {
            continue;
        }
        config.sandbox = Some(match &config.sandbox {
            Some(own) => crate::config::absolute_paths(own, workspace),
            None => run.for_servers(home.as_deref()),
        });
    }
}

/// The servers to start: the config file's, then the command line's; a name given twice is
/// refused. HTTP servers without a bearer token can be signed in to (`sign_in`).
pub(crate) fn server_configs(
    entries: &BTreeMap<String, ServerEntry>,
    extra: &[(String, String)],
) -> Result<Vec<ServerConfig>, SessionError> {
    let mut configs = entry_configs(entries, extra)?;
    let dir = sign_in_dir();
    for config in &mut configs {
        if let (Some(sign_in), Some(dir), wonopcode_mcp::config::Transport::Http { url, .. }) =
            (&mut config.sign_in, &dir, &config.transport)
        {
            sign_in.credentials = Some(wonopcode_mcp::oauth::CredentialFile::new(
                dir,
                &config.name,
                url,
            ));
        }
    }
    Ok(configs)
}

/// The entries of the config file and of `--mcp`, checked and expanded.
fn entry_configs(
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
/// (quotes honoured); anything but one plain command is refused. An `http://` or `https://`
/// address instead is a streamable HTTP server.
fn command_entry(name: &str, command_line: &str) -> Result<ServerEntry, SessionError> {
    let trimmed = command_line.trim();
    if trimmed.starts_with("http://") || trimmed.starts_with("https://") {
        return Ok(ServerEntry {
            url: Some(trimmed.to_owned()),
            ..ServerEntry::default()
        });
    }
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

/// Starts the servers in the background and has `tools` watch them: each server's tools
/// join at the first model request after it is up. `None` when there are none.
pub(crate) fn spawn(
    configs: Vec<ServerConfig>,
    workspace: &Path,
    env: Arc<BTreeMap<String, String>>,
    tools: &mut ToolRegistry,
    elicitor: Option<Arc<dyn Elicitor>>,
) -> Option<Arc<Starting>> {
    if configs.is_empty() {
        return None;
    }
    let starting = Starting::spawn(configs, workspace.to_path_buf(), Some(env), elicitor);
    for source in starting.sources() {
        // Nothing is listed yet, so nothing can clash now; a later clash is said when the
        // turn that takes the server's tools begins (`take_tools`).
        tools.watch(source);
    }
    Some(Arc::new(starting))
}

/// Says what the person has not heard about the servers: one that failed, and one still
/// starting when a turn begins (once each; its tools join when it is up).
pub(crate) fn report(events: &Emitter, servers: &Starting) {
    for news in servers.news() {
        match news.state {
            ServerState::Failed(error) => events.emit(EventKind::McpServerFailed {
                server: news.server,
                error,
            }),
            ServerState::Starting => events.emit(EventKind::ItemCompleted {
                item: Item {
                    id: events.next_item_id(),
                    details: ItemDetails::Info {
                        message: format!(
                            "MCP server `{}` is still starting; its tools join when it is ready",
                            news.server
                        ),
                    },
                },
            }),
            ServerState::Ready => {}
        }
    }
}

/// Has `tools` take the tools of the servers that came up since it last looked — at a
/// turn's start, so `/tools` and the children the turn starts see them — and reports a
/// tool that cannot be offered (a clashing name, a schema that does not compile) as its
/// server's failure.
pub(crate) fn take_tools(events: &Emitter, tools: &mut ToolRegistry, servers: &Starting) {
    let names: Vec<String> = servers.states().into_iter().map(|(name, _)| name).collect();
    for error in tools.refresh() {
        let server = server_of(error.tool(), &names).map_or(error.tool(), |(i, _)| &names[i]);
        events.emit(EventKind::McpServerFailed {
            server: server.to_owned(),
            error: format!("one of its tools cannot be offered: {error}"),
        });
    }
}

/// A configured MCP server as the session has it, for `/mcp` and `/doctor`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerStatus {
    /// Its name in the config.
    pub name: String,
    /// Starting, ready or failed.
    pub state: ServerState,
    /// Its tools the root context has, by the server's own names (sorted; none until it
    /// is up).
    pub tools: Vec<String>,
}

/// Each of `servers` with the tools of it among `root_tools` (the root context's names).
pub(crate) fn statuses(servers: &Starting, root_tools: &[String]) -> Vec<ServerStatus> {
    let mut statuses: Vec<ServerStatus> = servers
        .states()
        .into_iter()
        .map(|(name, state)| ServerStatus {
            name,
            state,
            tools: Vec::new(),
        })
        .collect();
    let names: Vec<String> = statuses.iter().map(|s| s.name.clone()).collect();
    for tool in root_tools {
        if let Some((i, own)) = server_of(tool, &names) {
            statuses[i].tools.push(own.to_owned());
        }
    }
    statuses
}

/// Which of `servers` offered the tool named `tool`, and the tool's own name: the longest
/// server whose `mcp__SERVER__` the name starts with (`a`'s tool `b__x` and `a__b`'s tool
/// `x` are both `mcp__a__b__x`).
fn server_of<'t>(tool: &'t str, servers: &[String]) -> Option<(usize, &'t str)> {
    servers
        .iter()
        .enumerate()
        .filter_map(|(i, server)| {
            let prefix = wonopcode_mcp::tool_name(server, "");
            tool.strip_prefix(prefix.as_str())
                .map(|own| (i, server.len(), own))
        })
        .max_by_key(|&(_, len, _)| len)
        .map(|(i, _, own)| (i, own))
}

/// Whether a permission rule's tool names an MCP server (`mcp__NAME`) or one of its tools
/// (`mcp__NAME__TOOL`): such a rule stands even when no server of that name is running now,
/// since servers also come with registry modules and tools with a server's changed list.
pub(crate) fn names_a_server(rule_tool: &str) -> bool {
    rule_tool.starts_with("mcp__")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_is_the_longest_matching_servers() {
        let servers = ["a".to_owned(), "a__b".to_owned(), "docs".to_owned()];
        assert_eq!(server_of("mcp__a__b__x", &servers), Some((1, "x")));
        assert_eq!(server_of("mcp__a__y", &servers), Some((0, "y")));
        assert_eq!(
            server_of("mcp__docs__search", &servers),
            Some((2, "search"))
        );
        assert_eq!(server_of("bash", &servers), None);
    }

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
        let url = vec![("r".to_owned(), "https://mcp.example.com/mcp".to_owned())];
        let configs = server_configs(&BTreeMap::new(), &url).unwrap();
        assert!(
            matches!(&configs[0].transport, wonopcode_mcp::config::Transport::Http { url, .. } if url == "https://mcp.example.com/mcp"),
            "{configs:?}"
        );
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
