//! One MCP server: started as a child process speaking MCP on its stdio (through `rmcp`),
//! given `startup_timeout` to answer `initialize` and list its tools, each call bounded by
//! `tool_timeout` and the run's cancellation. A server that died is started again on its
//! next call, once; after that its calls fail with the reason.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject, Tool as RemoteTool};
use rmcp::service::{RoleClient, RunningService, ServiceError as RmcpError, ServiceExt};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use tokio::io::AsyncBufReadExt;
use tokio_util::sync::CancellationToken;
use wonopcode_os::own_processes;
use wonopcode_sandbox::{Confinement, Sandbox};

use crate::challenge::{ChallengeKeeper, LastChallenge};
use crate::client::{Client, Elicitor, ListedTools};
use crate::config::{ServerConfig, Transport};
use crate::oauth;
use crate::stdio::{MAX_MESSAGE_BYTES, Oversize, ServerProcess};
use rmcp::transport::auth::AuthClient;

/// How long a call's answer waits for the server's changed tool list to be re-read.
const RELIST_WAIT: Duration = Duration::from_secs(5);

/// Why a server could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServerError {
    /// Its process could not be started.
    #[error("cannot start `{command}`: {reason}")]
    Spawn {
        /// The command.
        command: String,
        /// The system's reason.
        reason: String,
    },
    /// It did not finish starting in time.
    #[error("did not start within {} s", .0.as_secs_f64())]
    StartupTimeout(Duration),
    /// It broke the protocol or closed while starting or listing tools.
    #[error("{0}")]
    Protocol(String),
    /// The server refused the call for want of scope (OAuth): it names the scopes.
    #[error(
        "it needs more permissions than it was signed in with ({0}): sign in again with `wonopcode mcp login`"
    )]
    NeedsScope(String),
    /// A call took too long.
    #[error("no answer within {} s", .0.as_secs_f64())]
    CallTimeout(Duration),
    /// The run was cancelled during a call.
    #[error("cancelled")]
    Cancelled,
    /// The call made a protected name (`.git`, `.claude`, ...) in a writable place; it
    /// was moved aside.
    #[error("blocked by the sandbox: {0}")]
    MadeProtected(String),
}

/// A running server: the protocol session, and its process marked as wonopcode's own (so a
/// `bash` call's cleanup never takes it for a leftover) until the session is dropped.
struct Connection {
    service: RunningService<RoleClient, Client>,
    _own: Option<own_processes::Own>,
    /// A stdio server's sandbox, kept while it runs (its cgroup, its private temp dir),
    /// which also watches what its calls make.
    confined: Option<Confined>,
    /// Set when the connection ended on a message over the limit.
    oversize: Oversize,
}

/// A sandbox and the confinement of the process started in it.
struct Confined {
    _confinement: Confinement,
    sandbox: Arc<Sandbox>,
}

/// A started server and what is needed to start it again.
pub struct Server {
    config: ServerConfig,
    /// Where it runs when its entry names no `cwd`.
    workspace: PathBuf,
    /// The environment it starts with (before its own `env`).
    base_env: Option<Arc<BTreeMap<String, String>>>,
    /// Who answers its forms (`None`: wonopcode says it cannot).
    elicitor: Option<Arc<dyn Elicitor>>,
    /// Its tools as it lists them now.
    listed: Arc<ListedTools>,
    /// The last `insufficient_scope` challenge it sent (a signed-in HTTP server).
    challenge: LastChallenge,
    connection: tokio::sync::Mutex<Option<Connection>>,
    /// Whether it was started again after dying (that happens once).
    restarted: std::sync::atomic::AtomicBool,
    /// How long its first start took, until its tools were listed.
    startup: Duration,
}

impl Server {
    /// Starts the server and lists its tools, within its startup timeout. `base_env`, when
    /// given, replaces wonopcode's environment (so the run's secrets stay out); the entry's
    /// own `env` is added on top.
    pub async fn start(
        config: ServerConfig,
        workspace: &Path,
        base_env: Option<Arc<BTreeMap<String, String>>>,
        elicitor: Option<Arc<dyn Elicitor>>,
    ) -> Result<(Arc<Self>, Vec<RemoteTool>), ServerError> {
        let started = Instant::now();
        let mut server = Self {
            config,
            workspace: workspace.to_path_buf(),
            base_env,
            elicitor,
            listed: Arc::default(),
            challenge: LastChallenge::default(),
            connection: tokio::sync::Mutex::new(None),
            restarted: std::sync::atomic::AtomicBool::new(false),
            startup: Duration::ZERO,
        };
        let (connection, tools) = server.connect().await?;
        server.listed.set(tools.clone());
        server.startup = started.elapsed();
        *server.connection.lock().await = Some(connection);
        Ok((Arc::new(server), tools))
    }

    /// The server's name in the config.
    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// How long the server took to start and list its tools.
    pub fn startup(&self) -> Duration {
        self.startup
    }

    /// Its tools as it lists them now (re-read when it says they changed).
    pub fn listed(&self) -> Vec<RemoteTool> {
        self.listed.get()
    }

    /// Moves whenever its tool list is re-read.
    pub fn tools_generation(&self) -> u64 {
        self.listed.generation()
    }

    /// The `WWW-Authenticate` challenge of its last refusal for want of scope, once: what
    /// signing in again must ask for.
    pub fn take_challenge(&self) -> Option<String> {
        self.challenge.lock().take()
    }

    /// Whether its entry lets a run have the tool `name` (`enabled_tools`, `disabled_tools`).
    pub fn offers(&self, name: &str) -> bool {
        self.config
            .enabled_tools
            .as_ref()
            .is_none_or(|only| only.iter().any(|t| t == name))
            && !self.config.disabled_tools.iter().any(|t| t == name)
    }

    /// The server's entry, checked.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// wonopcode's handler of this server's connection.
    fn client(&self) -> Client {
        Client::new(
            &self.config.name,
            self.elicitor.clone(),
            self.listed.clone(),
        )
    }

    async fn connect(&self) -> Result<(Connection, Vec<RemoteTool>), ServerError> {
        let config = &self.config;
        let started = Instant::now();
        let limit = config.startup_timeout;
        let (service, own, confined, oversize) = match &config.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let (transport, own, confined, oversize) =
                    self.spawn(command, args, env, cwd.as_deref())?;
                let service = tokio::time::timeout(limit, self.client().serve(transport)).await;
                (service, own, confined, oversize)
            }
            Transport::Http {
                url,
                headers,
                bearer_token,
            } => {
                let http = http_config(url, headers, bearer_token.as_deref())?;
                let credentials = config.sign_in.as_ref().and_then(|s| s.credentials.clone());
                let signed_in = match (credentials, bearer_token) {
                    // Within the startup limit: reading the tokens may ask the authorization
                    // server for its metadata.
                    (Some(file), None) => {
                        tokio::time::timeout(limit, oauth::authorization(url, file))
                            .await
                            .map_err(|_| ServerError::StartupTimeout(limit))?
                            .map_err(|e| {
                                ServerError::Protocol(format!(
                                    "its saved sign-in cannot be used: {e}"
                                ))
                            })?
                    }
                    _ => None,
                };
                let service = match signed_in {
                    Some(manager) => {
                        let client = ChallengeKeeper::new(
                            AuthClient::new(reqwest_mcp::Client::default(), manager),
                            self.challenge.clone(),
                        );
                        let transport = StreamableHttpClientTransport::with_client(client, http);
                        tokio::time::timeout(limit, self.client().serve(transport)).await
                    }
                    None => {
                        let transport = StreamableHttpClientTransport::from_config(http);
                        tokio::time::timeout(limit, self.client().serve(transport)).await
                    }
                };
                (service, None, None, Oversize::default())
            }
        };
        let service = service
            .map_err(|_| ServerError::StartupTimeout(limit))?
            .map_err(|e| ServerError::Protocol(initialize_failed(&config.name, &e.to_string())))?;
        let left = limit.saturating_sub(started.elapsed());
        let tools = tokio::time::timeout(left, service.list_all_tools())
            .await
            .map_err(|_| ServerError::StartupTimeout(limit))?
            .map_err(|e| ServerError::Protocol(format!("listing its tools failed: {e}")))?;
        tracing::info!(
            server = %config.name,
            tools = tools.len(),
            latency_ms = started.elapsed().as_millis() as u64,
            "MCP server started"
        );
        Ok((
            Connection {
                service,
                _own: own,
                confined,
                oversize,
            },
            tools,
        ))
    }

    /// Starts a stdio server's program, its stderr drained into the log.
    fn spawn(
        &self,
        program: &str,
        args: &[String],
        env: &BTreeMap<String, String>,
        cwd: Option<&Path>,
    ) -> Result<
        (
            ServerProcess,
            Option<own_processes::Own>,
            Option<Confined>,
            Oversize,
        ),
        ServerError,
    > {
        let failed = |reason: String| ServerError::Spawn {
            command: program.to_owned(),
            reason,
        };
        let clear_env = self.base_env.is_some();
        let (mut command, confined) = match &self.config.sandbox {
            Some(policy) => {
                let sandbox = Sandbox::new(policy.clone()).map_err(|e| failed(e.to_string()))?;
                let mut confinement = sandbox
                    .confine(&self.workspace)
                    .map_err(|e| failed(e.to_string()))?;
                let command = confinement.command(program, clear_env);
                let confined = Confined {
                    _confinement: confinement,
                    sandbox: Arc::new(sandbox),
                };
                (command, Some(confined))
            }
            None => {
                let mut command = tokio::process::Command::new(program);
                if clear_env {
                    command.env_clear();
                }
                (command, None)
            }
        };
        command.args(args);
        if let Some(base) = &self.base_env {
            command.envs(base.iter());
        }
        command
            .envs(env)
            .current_dir(cwd.unwrap_or(&self.workspace))
            .kill_on_drop(true);
        let starting = own_processes::starting();
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| failed(e.to_string()))?;
        let stderr = child.stderr.take();
        let (transport, oversize) = ServerProcess::new(child).map_err(|e| failed(e.to_string()))?;
        let own = transport.id().map(own_processes::Own::new);
        drop(starting);
        if let Some(stderr) = stderr {
            let name = self.config.name.clone();
            // Drained, so a chatty server never blocks on a full pipe; kept in the log.
            tokio::spawn(async move {
                let mut lines = tokio::io::BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    tracing::debug!(server = %name, "{line}");
                }
            });
        }
        Ok((transport, own, confined, oversize))
    }

    /// Calls `tool` with `arguments`, within the call timeout and until `cancel`. A server
    /// found closed is started again first, once in the server's life.
    pub async fn call(
        &self,
        tool: &str,
        arguments: JsonObject,
        cancel: &CancellationToken,
    ) -> Result<CallToolResult, ServerError> {
        let mut slot = self.connection.lock().await;
        let closed = slot.as_ref().is_none_or(|c| c.service.is_closed());
        if closed {
            if self
                .restarted
                .swap(true, std::sync::atomic::Ordering::AcqRel)
            {
                return Err(ServerError::Protocol(
                    "the server stopped, and was already started again once".to_owned(),
                ));
            }
            tracing::warn!(server = %self.config.name, "MCP server stopped; starting it again");
            let (connection, tools) = self.connect().await?;
            self.listed.set(tools);
            *slot = Some(connection);
        }
        let Some(connection) = slot.as_ref() else {
            return Err(ServerError::Protocol("no connection".to_owned()));
        };
        let peer = connection.service.peer().clone();
        let oversize = connection.oversize.clone();
        let sandbox = connection.confined.as_ref().map(|c| c.sandbox.clone());
        drop(slot);
        // What would run the next time git or an agent starts here, made during the call,
        // is moved aside after it, as for a command. (What the server does between calls
        // is not watched: `docs/security.md`.)
        let watch = match &sandbox {
            Some(sandbox) => Some(
                sandbox
                    .watch_protected(&self.workspace)
                    .map_err(|e| ServerError::Protocol(e.to_string()))?,
            ),
            None => None,
        };
        let request = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        let limit = self.config.tool_timeout;
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(ServerError::Cancelled),
            answer = tokio::time::timeout(limit, peer.call_tool(request)) => match answer {
                Err(_) => Err(ServerError::CallTimeout(limit)),
                Ok(Err(e)) => {
                    let refused = self.challenge.lock().as_deref().map(scopes_of);
                    if let Some(scopes) = refused {
                        *self.connection.lock().await = None;
                        return Err(ServerError::NeedsScope(scopes));
                    }
                    if matches!(e, RmcpError::TransportClosed | RmcpError::TransportSend(_)) {
                        // The server is gone: the next call starts it again (if it may).
                        *self.connection.lock().await = None;
                        if oversize.happened() {
                            return Err(ServerError::Protocol(format!(
                                "the server sent a message over {} MiB, the most one may take; its connection was closed",
                                MAX_MESSAGE_BYTES >> 20
                            )));
                        }
                        return Err(ServerError::Protocol(format!("the server stopped ({e})")));
                    }
                    Err(ServerError::Protocol(e.to_string()))
                }
                Ok(Ok(result)) => {
                    let moved = watch.map(|w| w.move_aside_made()).unwrap_or_default();
                    if !moved.is_empty() {
                        let lines: Vec<String> = moved.iter().map(ToString::to_string).collect();
                        tracing::warn!(server = %self.config.name, tool, "{}", lines.join("; "));
                        return Err(ServerError::MadeProtected(lines.join("; ")));
                    }
                    // A call that changed the server's tools answers once they are re-read.
                    self.listed.settled(RELIST_WAIT).await;
                    Ok(result)
                }
            },
        }
    }
}

/// The scopes a `WWW-Authenticate` challenge asks for (`scope="a b"`), else the challenge.
fn scopes_of(challenge: &str) -> String {
    challenge
        .split("scope=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or(challenge)
        .to_owned()
}

/// Why `initialize` failed; a server that wants a sign-in says how to sign in.
fn initialize_failed(name: &str, error: &str) -> String {
    let lower = error.to_lowercase();
    if lower.contains("auth") && (lower.contains("required") || lower.contains("401")) {
        format!("it needs a sign-in: run `wonopcode mcp login {name}`")
    } else {
        format!("initialize failed: {error}")
    }
}

/// The settings of a streamable HTTP connection to `url`, sending `headers` and the bearer
/// token.
fn http_config(
    url: &str,
    headers: &BTreeMap<String, String>,
    bearer_token: Option<&str>,
) -> Result<StreamableHttpClientTransportConfig, ServerError> {
    // reqwest 0.13 is built without a TLS provider of its own: ring, as for the providers.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut custom = std::collections::HashMap::new();
    for (name, value) in headers {
        let bad =
            |what: &str| ServerError::Protocol(format!("header `{name}` is not a valid {what}"));
        custom.insert(
            http::HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad("name"))?,
            http::HeaderValue::from_str(value).map_err(|_| bad("value"))?,
        );
    }
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    config.auth_header = bearer_token.map(str::to_owned);
    config.custom_headers = custom;
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_for_want_of_scope_names_the_scopes() {
        assert_eq!(
            scopes_of(r#"Bearer scope="mcp:basic mcp:write", error="insufficient_scope""#),
            "mcp:basic mcp:write"
        );
        assert_eq!(scopes_of("Bearer"), "Bearer");
    }

    #[test]
    fn a_server_that_wants_a_sign_in_says_how() {
        assert_eq!(
            initialize_failed(
                "tracker",
                "Transport error: Auth required, when send initialize request"
            ),
            "it needs a sign-in: run `wonopcode mcp login tracker`"
        );
        assert_eq!(
            initialize_failed("fs", "connection closed"),
            "initialize failed: connection closed"
        );
    }
}
