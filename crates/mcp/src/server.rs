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
use rmcp::transport::TokioChildProcess;
use tokio::io::AsyncBufReadExt;
use tokio_util::sync::CancellationToken;
use wonopcode_agent_loop::own_processes;

use crate::config::ServerConfig;

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
    /// A call took too long.
    #[error("no answer within {} s", .0.as_secs_f64())]
    CallTimeout(Duration),
    /// The run was cancelled during a call.
    #[error("cancelled")]
    Cancelled,
}

/// A running server: the protocol session, and its process marked as wonopcode's own (so a
/// `bash` call's cleanup never takes it for a leftover) until the session is dropped.
struct Connection {
    service: RunningService<RoleClient, ()>,
    _own: Option<OwnProcess>,
}

/// A process id marked in `own_processes`, unmarked when dropped.
struct OwnProcess(u32);

impl Drop for OwnProcess {
    fn drop(&mut self) {
        own_processes::release(self.0);
    }
}

/// A started server and what is needed to start it again.
pub struct Server {
    config: ServerConfig,
    /// Where it runs when its entry names no `cwd`.
    workspace: PathBuf,
    /// The environment it starts with (before its own `env`).
    base_env: Option<Arc<BTreeMap<String, String>>>,
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
    ) -> Result<(Arc<Self>, Vec<RemoteTool>), ServerError> {
        let started = Instant::now();
        let mut server = Self {
            config,
            workspace: workspace.to_path_buf(),
            base_env,
            connection: tokio::sync::Mutex::new(None),
            restarted: std::sync::atomic::AtomicBool::new(false),
            startup: Duration::ZERO,
        };
        let (connection, tools) = server.connect().await?;
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

    /// The server's entry, checked.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    async fn connect(&self) -> Result<(Connection, Vec<RemoteTool>), ServerError> {
        let config = &self.config;
        let started = Instant::now();
        let mut command = tokio::process::Command::new(&config.command);
        command.args(&config.args);
        if let Some(env) = &self.base_env {
            command.env_clear().envs(env.iter());
        }
        command
            .envs(&config.env)
            .current_dir(config.cwd.as_deref().unwrap_or(&self.workspace))
            .kill_on_drop(true);
        let spawn_failed = |e: std::io::Error| ServerError::Spawn {
            command: config.command.clone(),
            reason: e.to_string(),
        };
        let (transport, stderr) = TokioChildProcess::builder(command)
            .stderr(Stdio::piped())
            .spawn()
            .map_err(spawn_failed)?;
        let own = transport.id().map(|pid| {
            own_processes::register(pid);
            OwnProcess(pid)
        });
        if let Some(stderr) = stderr {
            let name = config.name.clone();
            // Drained, so a chatty server never blocks on a full pipe; kept in the log.
            tokio::spawn(async move {
                let mut lines = tokio::io::BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    tracing::debug!(server = %name, "{line}");
                }
            });
        }
        let limit = config.startup_timeout;
        let service = tokio::time::timeout(limit, ().serve(transport))
            .await
            .map_err(|_| ServerError::StartupTimeout(limit))?
            .map_err(|e| ServerError::Protocol(format!("initialize failed: {e}")))?;
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
        Ok((Connection { service, _own: own }, tools))
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
            let (connection, _) = self.connect().await?;
            *slot = Some(connection);
        }
        let Some(connection) = slot.as_ref() else {
            return Err(ServerError::Protocol("no connection".to_owned()));
        };
        let peer = connection.service.peer().clone();
        drop(slot);
        let request = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        let limit = self.config.tool_timeout;
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(ServerError::Cancelled),
            answer = tokio::time::timeout(limit, peer.call_tool(request)) => match answer {
                Err(_) => Err(ServerError::CallTimeout(limit)),
                Ok(Err(e)) => {
                    if matches!(e, RmcpError::TransportClosed | RmcpError::TransportSend(_)) {
                        // The server is gone: the next call starts it again (if it may).
                        *self.connection.lock().await = None;
                        return Err(ServerError::Protocol(format!("the server stopped ({e})")));
                    }
                    Err(ServerError::Protocol(e.to_string()))
                }
                Ok(Ok(result)) => Ok(result),
            },
        }
    }
}
