//! The ACP agent on stdio: `initialize`; `session/new`, `session/load`, `session/resume`,
//! `session/list` and `session/close` (sessions kept in the journal); `session/prompt` (one
//! turn, its updates sent as it goes, its end as the stop reason), `session/set_mode`,
//! `session/set_config_option` (the model, the thinking level) and `session/cancel` (the turn stopped as Ctrl-C stops it, children and commands with it).
//! Requests that take time are served on tasks of their own, so a cancel is read while a
//! prompt runs; when the editor goes, every open session is ended in its journal.

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, CloseSessionRequest, CloseSessionResponse,
    Implementation, InitializeRequest, InitializeResponse, ListSessionsRequest,
    ListSessionsResponse, LoadSessionRequest, LoadSessionResponse, McpCapabilities,
    NewSessionRequest, NewSessionResponse, PromptCapabilities, PromptRequest, PromptResponse,
    ResumeSessionRequest, ResumeSessionResponse, SessionCapabilities, SessionCloseCapabilities,
    SessionListCapabilities, SessionNotification, SessionResumeCapabilities,
    SetSessionConfigOptionRequest, SetSessionConfigOptionResponse, SetSessionModeRequest,
    SetSessionModeResponse,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, Error};
use wonopcode_journal::Runs;

use crate::modes::Mode;
use crate::sessions::{Loading, Opened, SessionFactory, Sessions};

/// What `wonopcode acp` serves with.
pub struct Serving {
    /// Makes each session's builder.
    pub sessions: SessionFactory,
    /// Where sessions are kept (`None`: they cannot be listed or loaded).
    pub runs: Option<Runs>,
    /// Whether the model sessions start with takes images (prompts are offered them).
    pub takes_images: bool,
}

/// Serves ACP on stdin and stdout until the editor closes the connection. Logs go to
/// stderr: stdout is the protocol's.
pub async fn serve_stdio(serving: Serving) -> Result<(), String> {
    let takes_images = serving.takes_images;
    let sessions = Sessions::new(serving.sessions, serving.runs);
    let kept = sessions.kept();
    let greeting = sessions.clone();
    let (opening, loader, resumer, listing) = (
        sessions.clone(),
        sessions.clone(),
        sessions.clone(),
        sessions.clone(),
    );
    let (prompting, moding, cancelling, closing, setting) = (
        sessions.clone(),
        sessions.clone(),
        sessions.clone(),
        sessions.clone(),
        sessions.clone(),
    );
    let served = Agent
        .v1()
        .name("wonopcode")
        .on_receive_request(
            async move |request: InitializeRequest,
                        responder: Responder<InitializeResponse>,
                        _client: ConnectionTo<Client>| {
                greeting.initialized(&request.client_capabilities);
                responder.respond(initialized(&request, kept, takes_images))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest,
                        responder: Responder<NewSessionResponse>,
                        client: ConnectionTo<Client>| {
                let sessions = opening.clone();
                tokio::spawn(async move {
                    let opened = sessions
                        .open(request.cwd, &request.mcp_servers, client.clone())
                        .await;
                    respond_then_commands(responder, opened, &client, |opened| {
                        NewSessionResponse::new(opened.id.clone())
                            .modes(Mode::default().state())
                            .config_options(opened.options.clone())
                    });
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest,
                        responder: Responder<LoadSessionResponse>,
                        client: ConnectionTo<Client>| {
                let loading = Loading {
                    id: request.session_id,
                    cwd: request.cwd,
                    mcp_servers: request.mcp_servers,
                    replay: true,
                };
                spawn_load(loader.clone(), loading, responder, client, |opened| {
                    LoadSessionResponse::new()
                        .modes(Mode::default().state())
                        .config_options(opened.options.clone())
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ResumeSessionRequest,
                        responder: Responder<ResumeSessionResponse>,
                        client: ConnectionTo<Client>| {
                let loading = Loading {
                    id: request.session_id,
                    cwd: request.cwd,
                    mcp_servers: request.mcp_servers,
                    replay: false,
                };
                spawn_load(resumer.clone(), loading, responder, client, |opened| {
                    ResumeSessionResponse::new()
                        .modes(Mode::default().state())
                        .config_options(opened.options.clone())
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ListSessionsRequest,
                        responder: Responder<ListSessionsResponse>,
                        _client: ConnectionTo<Client>| {
                answer(responder, listing.list(&request))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest,
                        responder: Responder<PromptResponse>,
                        client: ConnectionTo<Client>| {
                let sessions = prompting.clone();
                // Not the connection's task: a turn the editor leaves is cancelled and
                // wound down (its commands killed, its journal ended), not dropped.
                tokio::spawn(async move {
                    let outcome = sessions.prompt(request, &client).await;
                    if let Err(e) = answer(responder, outcome) {
                        tracing::debug!(error = %e, "the prompt's answer could not be sent");
                    }
                });
                Ok(())
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
        .on_receive_request(
            async move |request: SetSessionConfigOptionRequest,
                        responder: Responder<SetSessionConfigOptionResponse>,
                        _client: ConnectionTo<Client>| {
                let sessions = setting.clone();
                tokio::spawn(async move {
                    let _ = answer(responder, sessions.set_option(&request).await);
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: CloseSessionRequest,
                        responder: Responder<CloseSessionResponse>,
                        _client: ConnectionTo<Client>| {
                let sessions = closing.clone();
                tokio::spawn(async move {
                    let closed = sessions.close(&request.session_id).await;
                    let _ = answer(responder, closed.map(|()| CloseSessionResponse::new()));
                });
                Ok(())
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
        .connect_to(agent_client_protocol::Lines::new(
            Box::pin(crate::frames::outgoing(tokio::io::stdout())),
            Box::pin(crate::frames::incoming(tokio::io::stdin())),
        ))
        .await
        .map_err(|e| e.to_string());
    sessions.end_all().await;
    served
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

/// Loads a kept session on a task of its own (a load may take a while: its journal is read
/// and sent again), then answers with `response` and the session's commands.
fn spawn_load<T: agent_client_protocol::JsonRpcResponse + Send + 'static>(
    sessions: Sessions,
    loading: Loading,
    responder: Responder<T>,
    client: ConnectionTo<Client>,
    response: fn(&Opened) -> T,
) {
    tokio::spawn(async move {
        let loaded = sessions.load(loading, client.clone()).await;
        respond_then_commands(responder, loaded, &client, response);
    });
}

/// Answers a request that opened a session (its response made by `response`), then tells
/// the editor the commands the session has.
fn respond_then_commands<T: agent_client_protocol::JsonRpcResponse>(
    responder: Responder<T>,
    outcome: Result<Opened, Error>,
    client: &ConnectionTo<Client>,
    response: impl FnOnce(&Opened) -> T,
) {
    let opened = match outcome {
        Ok(opened) => opened,
        Err(e) => {
            let _ = responder.respond_with_error(e);
            return;
        }
    };
    if let Err(e) = responder.respond(response(&opened)) {
        tracing::debug!(error = %e, "the session's answer could not be sent");
        return;
    }
    let note = SessionNotification::new(opened.id, opened.commands);
    if let Err(e) = client.send_notification(note) {
        tracing::debug!(error = %e, "the commands could not be sent");
    }
}

/// What wonopcode speaks: ACP v1, whatever the editor asked for (the protocol's
/// negotiation: the agent answers the version it supports, and an editor that cannot speak
/// it closes the connection), prompts with embedded files and (when the model takes them)
/// images, sessions loaded, resumed, listed and closed when they are `kept`.
fn initialized(request: &InitializeRequest, kept: bool, images: bool) -> InitializeResponse {
    if request.protocol_version != ProtocolVersion::V1 {
        tracing::info!(asked = ?request.protocol_version, "the editor asked for another ACP version; answering 1");
    }
    let mut sessions = SessionCapabilities::new().close(SessionCloseCapabilities::new());
    if kept {
        sessions = sessions
            .list(SessionListCapabilities::new())
            .resume(SessionResumeCapabilities::new());
    }
    InitializeResponse::new(ProtocolVersion::V1)
        .agent_capabilities(
            AgentCapabilities::new()
                .load_session(kept)
                .session_capabilities(sessions)
                .prompt_capabilities(
                    PromptCapabilities::new()
                        .image(images)
                        .embedded_context(true),
                )
                .mcp_capabilities(McpCapabilities::new().http(true)),
        )
        .agent_info(Implementation::new("wonopcode", env!("CARGO_PKG_VERSION")))
}
