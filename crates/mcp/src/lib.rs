//! MCP servers as a tool source for wonopcode. The servers a user declares (`mcp_servers`
//! in the config file, `--mcp NAME=COMMAND`) start in parallel, each within its startup
//! timeout; their tools join the run's registry as `mcp__SERVER__TOOL` and go through the
//! same schema check, permission policy, truncation and events as the built-ins. A server
//! that fails is reported once and its tools are absent; it never holds up the others.
//! A session starts them in the background ([`Starting`]): their tools join when ready.
//!
//! The protocol is the official Rust SDK's (`rmcp`); nothing here speaks JSON-RPC itself.

mod challenge;
mod client;
pub mod config;
pub mod oauth;
mod result;
pub mod server;
mod starting;
mod stdio;
pub mod tool;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use wonopcode_agent_loop::ToolSource;

pub use client::{AcceptDefaults, Elicited, Elicitor, Form, with_defaults};
pub use config::{ConfigError, ServerConfig, ServerEntry};
pub use result::to_text;
/// A server's whole answer to a call (the SDK's type), for callers that show it as it is.
pub use rmcp::model::CallToolResult;
pub use server::{Server, ServerError};
pub use starting::{ServerNews, ServerState, Starting};
pub use tool::{McpTool, ServerTools, tool_name};

/// A server that could not be used, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerFailure {
    /// The server's name.
    pub server: String,
    /// One line.
    pub reason: String,
}

/// What starting the servers gave.
#[derive(Default)]
pub struct Started {
    /// The servers that started, in the order given.
    pub servers: Vec<Arc<Server>>,
    /// Their tools.
    pub tools: Vec<Arc<McpTool>>,
    /// The servers that did not start.
    pub failures: Vec<ServerFailure>,
}

impl Started {
    /// Each started server's tools as a source a registry watches: their list is taken
    /// again when the server says it changed.
    pub fn sources(&self) -> impl Iterator<Item = Arc<dyn ToolSource>> + '_ {
        self.servers
            .iter()
            .map(|s| Arc::new(ServerTools(s.clone())) as Arc<dyn ToolSource>)
    }
}

/// Starts every server at once and lists their tools; each has its own startup timeout.
/// Their forms are answered by `elicitor` (none: wonopcode tells them it cannot answer).
pub async fn start_all(
    configs: Vec<ServerConfig>,
    workspace: &Path,
    base_env: Option<Arc<BTreeMap<String, String>>>,
    elicitor: Option<Arc<dyn Elicitor>>,
) -> Started {
    let starts = configs.into_iter().map(|config| {
        let name = config.name.clone();
        let start = start_one(config, workspace, base_env.clone(), elicitor.clone());
        async move { (name, start.await) }
    });
    let mut started = Started::default();
    for (name, outcome) in futures::future::join_all(starts).await {
        match outcome {
            Ok((server, remote_tools)) => {
                for remote in &remote_tools {
                    if server.offers(&remote.name) {
                        started
                            .tools
                            .push(Arc::new(McpTool::new(server.clone(), remote)));
                    }
                }
                started.servers.push(server);
            }
            Err(e) => {
                started.failures.push(ServerFailure {
                    server: name,
                    reason: e.to_string(),
                });
            }
        }
    }
    started
}

/// Starts one server (within its startup timeout), a failure logged: what [`start_all`]
/// and [`Starting`] both do for each server.
pub(crate) async fn start_one(
    config: ServerConfig,
    workspace: &Path,
    base_env: Option<Arc<BTreeMap<String, String>>>,
    elicitor: Option<Arc<dyn Elicitor>>,
) -> Result<(Arc<Server>, Vec<rmcp::model::Tool>), ServerError> {
    let name = config.name.clone();
    let started = Server::start(config, workspace, base_env, elicitor).await;
    if let Err(e) = &started {
        tracing::info!(server = %name, error = %e, "MCP server failed to start");
    }
    started
}
