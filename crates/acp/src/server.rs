//! The ACP agent on stdio: `initialize`, `session/new` (a wonopcode session in the editor's
//! `cwd`, built by the front-end's factory from its settings), `session/prompt` (one turn,
//! its updates sent as it goes, its end as the stop reason) and `session/cancel` (the turn
//! stopped as Ctrl-C stops it, children and commands with it). Requests are served on tasks
//! of their own, so a cancel is read while a prompt runs.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, Cost, CurrentModeUpdate, Implementation,
    InitializeRequest, InitializeResponse, McpCapabilities, NewSessionRequest, NewSessionResponse,
    PromptCapabilities, PromptRequest, PromptResponse, SessionId, SessionNotification,
    SessionUpdate, SetSessionModeRequest, SetSessionModeResponse, StopReason, UsageUpdate,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, Error, Stdio};
use parking_lot::Mutex;
use wonopcode_agent_loop::compaction::estimate_tokens;
use wonopcode_agent_loop::{LoopStatus, Usage};
use wonopcode_session::{Session, SessionBuilder, TurnCanceller};

use crate::commands::{Command, command_of};
use crate::content::prompt_of;
use crate::modes::Mode;
use crate::permission::EditorPrompter;
use crate::updates::{CallsInFlight, Updates};

/// Makes the builder of a session in the workspace the editor names, with the front-end's
/// settings (model, permissions, limits, loop); `Err`: one line saying why not.
pub type SessionFactory = Arc<dyn Fn(&Path) -> Result<SessionBuilder, String> + Send + Sync>;

/// A session the editor opened.
struct Live {
    session: tokio::sync::Mutex<Session>,
    /// Who it asks, which keeps its mode.
    prompter: Arc<EditorPrompter>,
    canceller: TurnCanceller,
    /// What its turns have spent.
    spent: Mutex<Usage>,
}

/// The agent's state: how sessions are made, and the open ones by id.
#[derive(Clone)]
struct Sessions {
    factory: SessionFactory,
    open: Arc<Mutex<HashMap<String, Arc<Live>>>>,
}

/// Serves ACP on stdin and stdout until the editor closes the connection. Logs go to
/// stderr: stdout is the protocol's.
pub async fn serve_stdio(factory: SessionFactory) -> Result<(), String> {
    let sessions = Sessions {
        factory,
        open: Arc::default(),
    };
    let (opening, prompting, moding) = (sessions.clone(), sessions.clone(), sessions.clone());
    let cancelling = sessions;
    Agent
        .v1()
        .name("wonopcode")
        .on_receive_request(
            async |request: InitializeRequest,
                   responder: Responder<InitializeResponse>,
                   _client: ConnectionTo<Client>| {
                responder.respond(initialized(&request))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest,
                        responder: Responder<NewSessionResponse>,
                        client: ConnectionTo<Client>| {
                let sessions = opening.clone();
                let connection = client.clone();
                client.spawn(async move {
                    match sessions.open(request, connection.clone()).await {
                        Ok(response) => {
                            let id = response.session_id.clone();
                            responder.respond(response)?;
                            connection.send_notification(SessionNotification::new(
                                id,
                                crate::commands::available(),
                            ))
                        }
                        Err(e) => responder.respond_with_error(e),
                    }
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest,
                        responder: Responder<PromptResponse>,
                        client: ConnectionTo<Client>| {
                let sessions = prompting.clone();
                let connection = client.clone();
                client.spawn(async move {
                    answer(responder, sessions.prompt(request, &connection).await)
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest,
                        responder: Responder<SetSessionModeResponse>,
                        client: ConnectionTo<Client>| {
                answer(responder, moding.set_mode(&request, &client))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: CancelNotification, _client: ConnectionTo<Client>| {
                cancelling.cancel(&notification.session_id);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(Stdio::new())
        .await
        .map_err(|e| e.to_string())
}

/// Sends a request's outcome: its response, or its error.
fn answer<T: agent_client_protocol::JsonRpcResponse>(
    responder: Responder<T>,
    outcome: Result<T, Error>,
) -> Result<(), Error> {
    match outcome {
        Ok(response) => responder.respond(response),
        Err(e) => responder.respond_with_error(e),
    }
}

/// What wonopcode speaks: ACP v1, whatever the editor asked for (the protocol's
/// negotiation: the agent answers the version it supports, and an editor that cannot speak
/// it closes the connection), prompts with images and embedded files.
fn initialized(request: &InitializeRequest) -> InitializeResponse {
    if request.protocol_version != ProtocolVersion::V1 {
        tracing::info!(asked = ?request.protocol_version, "the editor asked for another ACP version; answering 1");
    }
    InitializeResponse::new(ProtocolVersion::V1)
        .agent_capabilities(
            AgentCapabilities::new()
                .prompt_capabilities(PromptCapabilities::new().image(true).embedded_context(true))
                .mcp_capabilities(McpCapabilities::new().http(true)),
        )
        .agent_info(Implementation::new("wonopcode", env!("CARGO_PKG_VERSION")))
}

impl Sessions {
    /// Builds and starts a session in the editor's `cwd`; its id is its run's id.
    async fn open(
        &self,
        request: NewSessionRequest,
        client: ConnectionTo<Client>,
    ) -> Result<NewSessionResponse, Error> {
        let cwd = request.cwd;
        if !cwd.is_absolute() || !cwd.is_dir() {
            return Err(invalid(format!(
                "cwd `{}` is not an absolute path of a directory",
                cwd.display()
            )));
        }
        let servers = crate::servers::entries_of(&request.mcp_servers).map_err(invalid)?;
        let builder = (self.factory)(&cwd)
            .map_err(invalid)?
            .session_mcp_servers(servers);
        let id = Arc::new(OnceLock::new());
        let calls = Arc::new(CallsInFlight::default());
        let prompter = Arc::new(EditorPrompter::new(
            id.clone(),
            client.clone(),
            calls.clone(),
        ));
        let updates = Updates::new(id.clone(), client, cwd.clone(), calls);
        let mut session = builder
            .renderer(Box::new(updates))
            .prompters(prompter.clone(), prompter.clone())
            .build()
            .await
            .map_err(|e| invalid(e.to_string()))?;
        session
            .start()
            .await
            .map_err(|e| failed(format!("the loop failed to start: {e}")))?;
        let name = session.run_id().map_or_else(unjournaled_id, str::to_owned);
        let session_id = SessionId::new(name.clone());
        let _ = id.set(session_id.clone());
        let live = Live {
            prompter,
            spent: Mutex::new(Usage::default()),
            canceller: session.canceller(),
            session: tokio::sync::Mutex::new(session),
        };
        self.open.lock().insert(name, Arc::new(live));
        Ok(NewSessionResponse::new(session_id).modes(Mode::default().state()))
    }

    /// Runs one turn (or the command the prompt is); its end as the stop reason, then what
    /// the session holds and has cost as a usage update.
    async fn prompt(
        &self,
        request: PromptRequest,
        client: &ConnectionTo<Client>,
    ) -> Result<PromptResponse, Error> {
        let live = self.find(&request.session_id)?;
        let Ok(mut session) = live.session.try_lock() else {
            return Err(Error::invalid_request().data(format!(
                "session {} is running a prompt: wait for it, or cancel it",
                request.session_id
            )));
        };
        let (text, attachments) = prompt_of(&request.prompt).map_err(invalid)?;
        if let Some(command) = command_of(&text) {
            match command {
                Command::Compact => {
                    let (_, spent) = session.compact().await;
                    live.spent.lock().add(&spent);
                }
                Command::Clear => session.clear(),
            }
            send_usage(client, &request.session_id, &session, &live);
            return Ok(PromptResponse::new(StopReason::EndTurn));
        }
        let result = session.prompt_with(&text, attachments).await;
        live.spent.lock().add(&result.usage);
        send_usage(client, &request.session_id, &session, &live);
        if let Some(failure) = session.failure() {
            return Err(failed(failure));
        }
        let stop = match result.status {
            LoopStatus::Complete | LoopStatus::Suspended => StopReason::EndTurn,
            LoopStatus::MaxIterations => StopReason::MaxTurnRequests,
            LoopStatus::BudgetExceeded => StopReason::MaxTokens,
            LoopStatus::Cancelled => StopReason::Cancelled,
            LoopStatus::Error => {
                return Err(failed(
                    result.error.unwrap_or_else(|| "the turn failed".into()),
                ));
            }
        };
        Ok(PromptResponse::new(stop))
    }

    /// Sets a session's mode; the editor is told it changed.
    fn set_mode(
        &self,
        request: &SetSessionModeRequest,
        client: &ConnectionTo<Client>,
    ) -> Result<SetSessionModeResponse, Error> {
        let live = self.find(&request.session_id)?;
        let mode = Mode::of(&request.mode_id.to_string())
            .ok_or_else(|| invalid(format!("no mode `{}`", request.mode_id)))?;
        live.prompter.set_mode(mode);
        let update =
            SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(request.mode_id.clone()));
        client.send_notification(SessionNotification::new(request.session_id.clone(), update))?;
        Ok(SetSessionModeResponse::new())
    }

    /// Stops the turn running in `id`, if any.
    fn cancel(&self, id: &SessionId) {
        if let Ok(live) = self.find(id) {
            live.canceller.cancel();
        }
    }

    fn find(&self, id: &SessionId) -> Result<Arc<Live>, Error> {
        self.open
            .lock()
            .get(&id.to_string())
            .cloned()
            .ok_or_else(|| invalid(format!("no session `{id}`")))
    }
}

/// How full the session's conversation is (estimated, against its model's window) and what
/// its turns have cost so far.
fn send_usage(client: &ConnectionTo<Client>, id: &SessionId, session: &Session, live: &Live) {
    let used = estimate_tokens(None, session.messages()) as u64;
    let mut update = UsageUpdate::new(used, session.model().context_window);
    if let Some(micro_cents) = live.spent.lock().cost_micro_cents {
        update = update.cost(Cost::new(micro_cents as f64 / 1e8, "USD"));
    }
    let note = SessionNotification::new(id.clone(), SessionUpdate::UsageUpdate(update));
    if let Err(e) = client.send_notification(note) {
        tracing::warn!(error = %e, "the usage update could not be sent");
    }
}

/// The id of a session without a journal.
fn unjournaled_id() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("session-{}-{n}", std::process::id())
}

/// `invalid params`, with `why`.
fn invalid(why: impl Into<String>) -> Error {
    Error::invalid_params().data(why.into())
}

/// An internal error, with `why`.
fn failed(why: impl Into<String>) -> Error {
    Error::internal_error().data(why.into())
}
