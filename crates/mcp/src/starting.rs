//! Servers that connect while the session goes on. Each server is a tool source with no
//! tools until it is up; a registry that watches it takes the server's tools at the first
//! model request after that ([`ToolRegistry::refresh`]), so the REPL is ready at once and
//! a slow server (an `npx` that downloads) never holds up the prompt. A run that cannot
//! wait for a person — one prompt, then exit — awaits them all with [`Starting::ready`]
//! before its first request, as it did when servers started in line.
//!
//! [`ToolRegistry::refresh`]: wonopcode_agent_loop::ToolRegistry::refresh

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use tokio::sync::watch;
use wonopcode_agent_loop::{Tool, ToolSource};

use crate::client::Elicitor;
use crate::config::ServerConfig;
use crate::server::Server;
use crate::tool::ServerTools;

/// Where one server is: still connecting, up, or failed with a one-line reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
    /// Its process or connection has not answered `initialize` and listed its tools yet.
    Starting,
    /// Up; its tools are offered.
    Ready,
    /// It will not be used this session.
    Failed(String),
}

/// What the person has not been told about a server yet ([`Starting::news`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerNews {
    /// The server's name.
    pub server: String,
    /// [`ServerState::Starting`] (said once) or [`ServerState::Failed`] (said once).
    pub state: ServerState,
}

/// One server's slot: empty while it connects, then its outcome.
struct Pending {
    name: String,
    outcome: OnceLock<Result<Arc<Server>, String>>,
}

impl ToolSource for Pending {
    fn generation(&self) -> u64 {
        match self.outcome.get() {
            // Never 0 once up, so a registry that took the empty list takes the tools.
            Some(Ok(server)) => 1 + server.tools_generation(),
            _ => 0,
        }
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        match self.outcome.get() {
            Some(Ok(server)) => ServerTools(server.clone()).tools(),
            _ => Vec::new(),
        }
    }
}

/// What was said of a server: nothing, that it was starting, or its end (failure).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Said {
    Nothing,
    Starting,
    Final,
}

/// The servers of a session, connecting on a task of their own. Dropping it stops the
/// servers still connecting (their processes are killed); the ones up live on in the
/// registries that watch them.
pub struct Starting {
    servers: Vec<Arc<Pending>>,
    said: Mutex<Vec<Said>>,
    finished: watch::Receiver<usize>,
    task: tokio::task::JoinHandle<()>,
}

impl Starting {
    /// Starts every server at once on a task (each within its own startup timeout) and
    /// returns at once. Forms a server shows are answered by `elicitor`.
    pub fn spawn(
        configs: Vec<ServerConfig>,
        workspace: PathBuf,
        base_env: Option<Arc<BTreeMap<String, String>>>,
        elicitor: Option<Arc<dyn Elicitor>>,
    ) -> Self {
        let servers: Vec<Arc<Pending>> = configs
            .iter()
            .map(|config| {
                Arc::new(Pending {
                    name: config.name.clone(),
                    outcome: OnceLock::new(),
                })
            })
            .collect();
        let (count, finished) = watch::channel(0usize);
        let slots = servers.clone();
        let task = tokio::spawn(async move {
            let starts = configs.into_iter().zip(slots).map(|(config, slot)| {
                let (base_env, elicitor, count) = (base_env.clone(), elicitor.clone(), &count);
                let workspace = &workspace;
                async move {
                    let outcome = crate::start_one(config, workspace, base_env, elicitor)
                        .await
                        .map(|(server, _)| server)
                        .map_err(|e| e.to_string());
                    let _ = slot.outcome.set(outcome);
                    count.send_modify(|n| *n += 1);
                }
            });
            futures::future::join_all(starts).await;
        });
        let said = Mutex::new(vec![Said::Nothing; servers.len()]);
        Self {
            servers,
            said,
            finished,
            task,
        }
    }

    /// Each server as a tool source for a registry to watch: empty until it is up.
    pub fn sources(&self) -> impl Iterator<Item = Arc<dyn ToolSource>> + '_ {
        self.servers
            .iter()
            .map(|s| s.clone() as Arc<dyn ToolSource>)
    }

    /// Waits until every server is up or has failed (each has its startup timeout, so
    /// this ends).
    pub async fn ready(&self) {
        let total = self.servers.len();
        let mut finished = self.finished.clone();
        // An error means the task is gone (a panic in it): nothing more will finish.
        let _ = finished.wait_for(|n| *n >= total).await;
    }

    /// Each server's name and state, in the order configured.
    pub fn states(&self) -> Vec<(String, ServerState)> {
        self.servers
            .iter()
            .map(|s| (s.name.clone(), state_of(s)))
            .collect()
    }

    /// What has not been said yet: a server that failed (once), and a server still
    /// starting (once; its tools join when it is up). Called before each turn.
    pub fn news(&self) -> Vec<ServerNews> {
        let mut said = self.said.lock();
        let mut news = Vec::new();
        for (server, said) in self.servers.iter().zip(said.iter_mut()) {
            let state = state_of(server);
            let next = match &state {
                ServerState::Failed(_) if *said != Said::Final => Said::Final,
                ServerState::Starting if *said == Said::Nothing => Said::Starting,
                _ => continue,
            };
            *said = next;
            news.push(ServerNews {
                server: server.name.clone(),
                state,
            });
        }
        news
    }
}

impl Drop for Starting {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn state_of(server: &Pending) -> ServerState {
    match server.outcome.get() {
        None => ServerState::Starting,
        Some(Ok(_)) => ServerState::Ready,
        Some(Err(reason)) => ServerState::Failed(reason.clone()),
    }
}
