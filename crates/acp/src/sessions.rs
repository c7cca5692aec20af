//! The sessions an editor opened: made (`session/new`), loaded from the journal
//! (`session/load` and `session/resume`), listed, prompted, put in a mode, cancelled and
//! closed. A session's id is its conversation's in the journal: the id of the run that
//! started it, whichever run holds it now.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use agent_client_protocol::Client;
use agent_client_protocol::Error;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, ContentBlock, ContentChunk, Cost, CurrentModeUpdate,
    FileSystemCapabilities, ListSessionsRequest, ListSessionsResponse, McpServer, PromptRequest,
    PromptResponse, SessionConfigOption, SessionId, SessionInfo, SessionNotification,
    SessionUpdate, SetSessionConfigOptionRequest, SetSessionConfigOptionResponse,
    SetSessionModeRequest, SetSessionModeResponse, StopReason, UsageUpdate,
};
use parking_lot::Mutex;
use wonopcode_agent_loop::compaction::estimate_tokens;
use wonopcode_journal::Runs;
use wonopcode_protocol::model::StopReason as ModelStop;
use wonopcode_protocol::{LoopStatus, Usage};
use wonopcode_session::{Renderer, RewindScope, Session, SessionBuilder, TurnCanceller};

use crate::commands::{Command, command_of};
use crate::content::prompt_of;
use crate::files::EditorFs;
use crate::modes::Mode;
use crate::permission::EditorPrompter;
use crate::updates::{Seen, Updates};
use wonopcode_session::stored_conversation::StoredConversation;

/// Makes the builder of a session in the workspace the editor names, with the front-end's
/// settings (model, permissions, limits, loop); `Err`: one line saying why not.
pub type SessionFactory = Arc<dyn Fn(&Path) -> Result<SessionBuilder, String> + Send + Sync>;

/// How often a session being ended cancels a turn that has not let it go yet.
const END_POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// How long a session being ended waits for its turn to stop.
const END_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// How many sessions one `session/list` page holds.
const PAGE: usize = 50;

/// A session the editor opened.
pub(crate) struct Live {
    session: tokio::sync::Mutex<Session>,
    /// Who it asks, which keeps its mode.
    prompter: Arc<EditorPrompter>,
    canceller: TurnCanceller,
    /// What its turns have spent.
    spent: Mutex<Usage>,
    /// Set once it is being ended: no prompt starts after.
    ending: AtomicBool,
    /// What its updates saw (why the root's last response stopped).
    seen: Arc<Seen>,
}

/// The agent's state: how sessions are made, where they are kept, and the open ones by id.
#[derive(Clone)]
pub(crate) struct Sessions {
    factory: SessionFactory,
    runs: Option<Runs>,
    /// The file system the editor offered at `initialize`.
    fs: Arc<Mutex<FileSystemCapabilities>>,
    open: Arc<Mutex<HashMap<String, Arc<Live>>>>,
}

/// A session opened (made or loaded): what the editor is told of it.
pub(crate) struct Opened {
    pub id: SessionId,
    pub options: Vec<SessionConfigOption>,
    /// Its commands (`available_commands_update`), sent once it is answered.
    pub commands: SessionUpdate,
}

/// A session loaded from the journal, and whether the editor sees its past again.
pub(crate) struct Loading {
    pub id: SessionId,
    pub cwd: PathBuf,
    pub mcp_servers: Vec<McpServer>,
    /// `session/load` (true) sends the conversation as updates; `session/resume` does not.
    pub replay: bool,
}

impl Sessions {
    pub(crate) fn new(factory: SessionFactory, runs: Option<Runs>) -> Self {
        Self {
            factory,
            runs,
            fs: Arc::default(),
            open: Arc::default(),
        }
    }

    /// Takes what the editor offers at `initialize`: its file system.
    pub(crate) fn initialized(&self, capabilities: &ClientCapabilities) {
        *self.fs.lock() = capabilities.fs.clone();
    }

    /// Whether sessions are kept, so they can be listed and loaded.
    pub(crate) fn kept(&self) -> bool {
        self.runs.is_some()
    }

    /// Builds and starts a session in the editor's `cwd`; its id is its run's id.
    pub(crate) async fn open(
        &self,
        cwd: PathBuf,
        mcp_servers: &[McpServer],
        client: ConnectionTo<Client>,
    ) -> Result<Opened, Error> {
        let cwd = workspace(&cwd)?;
        let builder = self.builder(&cwd, mcp_servers)?;
        let (live, opened) = self.start(builder, &cwd, client, None).await?;
        self.open.lock().insert(opened.id.to_string(), live);
        Ok(opened)
    }

    /// Loads the kept session `loading.id`: its conversation (sent to the editor again for
    /// `session/load`) is where its root goes on from, in a new run that resumes the last.
    pub(crate) async fn load(
        &self,
        loading: Loading,
        client: ConnectionTo<Client>,
    ) -> Result<Opened, Error> {
        let runs = self.runs.as_ref().ok_or_else(|| {
            invalid("sessions are not kept (the journal is off): none can be loaded")
        })?;
        let cwd = workspace(&loading.cwd)?;
        let name = loading.id.to_string();
        if self.open.lock().contains_key(&name) {
            return Err(invalid(format!("session `{name}` is open already")));
        }
        let kept = StoredConversation::read(runs, &name, &cwd).map_err(invalid)?;
        if loading.replay {
            let mut past = Updates::new(
                Arc::new(OnceLock::from(loading.id.clone())),
                client.clone(),
                cwd.clone(),
                Arc::default(),
            )
            .replaying();
            for event in &kept.events {
                past.render(event);
            }
        }
        let builder = self
            .builder(&cwd, &loading.mcp_servers)?
            .continuing(kept.latest.clone(), kept.conversation());
        let (live, opened) = self.start(builder, &cwd, client, Some(loading.id)).await?;
        self.open.lock().insert(name, live);
        Ok(opened)
    }

    /// The kept sessions, of `cwd` when the editor names one, the most recent first, a page
    /// at a time (the cursor is where the next page starts).
    pub(crate) fn list(
        &self,
        request: &ListSessionsRequest,
    ) -> Result<ListSessionsResponse, Error> {
        let Some(runs) = &self.runs else {
            return Ok(ListSessionsResponse::new(Vec::new()));
        };
        let cwd = request.cwd.as_deref().map(workspace).transpose()?;
        let from = match &request.cursor {
            Some(cursor) => cursor
                .parse::<usize>()
                .map_err(|_| invalid(format!("cursor `{cursor}` is not one wonopcode gave")))?,
            None => 0,
        };
        let all: Vec<SessionInfo> = runs
            .lineages()
            .into_iter()
            .filter(|l| {
                cwd.as_deref()
                    .is_none_or(|c| Path::new(&l.latest.workspace) == c)
            })
            .map(|l| {
                SessionInfo::new(l.id.clone(), l.latest.workspace.clone())
                    .title(l.title.clone())
                    .updated_at(l.updated().to_owned())
            })
            .collect();
        let page: Vec<SessionInfo> = all.iter().skip(from).take(PAGE).cloned().collect();
        let next = (from + PAGE < all.len()).then(|| (from + PAGE).to_string());
        Ok(ListSessionsResponse::new(page).next_cursor(next))
    }

    /// The builder of a session in `cwd` with the editor's MCP servers.
    fn builder(&self, cwd: &Path, mcp_servers: &[McpServer]) -> Result<SessionBuilder, Error> {
        let servers = crate::servers::entries_of(mcp_servers).map_err(invalid)?;
        Ok((self.factory)(cwd)
            .map_err(invalid)?
            .session_mcp_servers(servers))
    }

    /// Builds the session, its updates and questions going to `client`, and starts its
    /// loop. Its id is `id`, else its run's (set once the run is made).
    async fn start(
        &self,
        builder: SessionBuilder,
        cwd: &Path,
        client: ConnectionTo<Client>,
        id: Option<SessionId>,
    ) -> Result<(Arc<Live>, Opened), Error> {
        let session_id = Arc::new(OnceLock::new());
        if let Some(id) = id {
            let _ = session_id.set(id);
        }
        let seen = Arc::new(Seen::default());
        let prompter = Arc::new(EditorPrompter::new(
            session_id.clone(),
            client.clone(),
            seen.clone(),
        ));
        let fs = self.fs.lock().clone();
        let builder = match EditorFs::offered(session_id.clone(), client.clone(), &fs) {
            Some(files) => builder.editor_files(Arc::new(files)),
            None => builder,
        };
        let updates = Updates::new(session_id.clone(), client, cwd.to_path_buf(), seen.clone());
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
        let _ = session_id.set(SessionId::new(
            session.run_id().map_or_else(unjournaled_id, str::to_owned),
        ));
        let opened = Opened {
            id: session_id
                .get()
                .cloned()
                .unwrap_or_else(|| SessionId::new(unjournaled_id())),
            options: crate::options::of(&session),
            commands: crate::commands::available(&session.skills()),
        };
        let live = Live {
            prompter,
            spent: Mutex::new(Usage::default()),
            ending: AtomicBool::new(false),
            seen,
            canceller: session.canceller(),
            session: tokio::sync::Mutex::new(session),
        };
        Ok((Arc::new(live), opened))
    }

    /// Runs one turn (or the command the prompt is); its end as the stop reason, then what
    /// the session holds and has cost as a usage update.
    pub(crate) async fn prompt(
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
        if live.ending.load(Ordering::SeqCst) {
            return Err(invalid(format!(
                "session {} is closing",
                request.session_id
            )));
        }
        let (mut text, attachments) = prompt_of(&request.prompt).map_err(invalid)?;
        // The session's own commands end the prompt; a skill's makes it.
        let done = match command_of(&text, &session.skills()) {
            Some(Command::Compact) => {
                let (_, spent) = session.compact().await;
                live.spent.lock().add(&spent);
                true
            }
            Some(Command::Clear) => {
                session.clear();
                true
            }
            Some(Command::Rewind(which)) => {
                let said = rewound(&mut session, &which)?;
                let chunk = ContentChunk::new(ContentBlock::from(said));
                let note = SessionNotification::new(
                    request.session_id.clone(),
                    SessionUpdate::AgentMessageChunk(chunk),
                );
                client.send_notification(note)?;
                true
            }
            Some(Command::Skill { name, request }) => {
                text = session
                    .skill_prompt(&name, &request)
                    .map_err(|e| invalid(e.to_string()))?;
                false
            }
            None => false,
        };
        if done {
            send_usage(client, &request.session_id, &session, &live);
            return Ok(PromptResponse::new(StopReason::EndTurn));
        }
        live.seen.take_root_stop();
        // The editor sent its servers for this session's prompts: their tools are in them.
        session.servers_ready().await;
        let result = session.prompt_with(&text, attachments).await;
        let refused = live.seen.take_root_stop() == Some(ModelStop::Refusal);
        live.spent.lock().add(&result.usage);
        send_usage(client, &request.session_id, &session, &live);
        if let Some(failure) = session.failure() {
            return Err(failed(failure));
        }
        let stop = match result.status {
            LoopStatus::Complete if refused => StopReason::Refusal,
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
    pub(crate) fn set_mode(
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

    /// Sets one of a session's options (between prompts); the options as they are now.
    pub(crate) async fn set_option(
        &self,
        request: &SetSessionConfigOptionRequest,
    ) -> Result<SetSessionConfigOptionResponse, Error> {
        let live = self.find(&request.session_id)?;
        let Ok(mut session) = live.session.try_lock() else {
            return Err(Error::invalid_request().data(format!(
                "session {} is running a prompt: set its options between prompts",
                request.session_id
            )));
        };
        crate::options::set(&mut session, &request.config_id.to_string(), &request.value)
            .await
            .map_err(invalid)?;
        Ok(SetSessionConfigOptionResponse::new(crate::options::of(
            &session,
        )))
    }

    /// Stops the turn running in `id`, if any.
    pub(crate) fn cancel(&self, id: &SessionId) {
        if let Ok(live) = self.find(id) {
            live.canceller.cancel();
        }
    }

    /// Closes the session `id`: its turn stopped, its journal ended (it can be loaded again).
    pub(crate) async fn close(&self, id: &SessionId) -> Result<(), Error> {
        let live = self
            .open
            .lock()
            .remove(&id.to_string())
            .ok_or_else(|| invalid(format!("no session `{id}`")))?;
        end(&live, "the editor closed the session").await;
        Ok(())
    }

    /// Ends every open session once the editor has gone: a running turn stopped as a
    /// cancel stops it, and each journal ended (interrupted when a turn was cut short), so
    /// each can be loaded again.
    pub(crate) async fn end_all(&self) {
        let open: Vec<Arc<Live>> = self.open.lock().drain().map(|(_, live)| live).collect();
        for live in open {
            end(&live, "the editor closed the connection").await;
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

/// Takes back the file changes of prompt `which` (a number from 1; empty: the last) and
/// every later one in `session`'s run; what was done, in a line or a few.
fn rewound(session: &mut Session, which: &str) -> Result<String, Error> {
    let number = match which.trim() {
        "" => session.prompts().len(),
        n => n.parse::<usize>().unwrap_or(0),
    };
    // The editor keeps its own view of the conversation: only the files are taken back.
    let rewind = session
        .rewind(number, RewindScope::Code)
        .map_err(|e| invalid(format!("/rewind {which}: {e}")))?
        .files
        .unwrap_or_default();
    if !rewind.overlaps.is_empty() {
        return Err(invalid(format!(
            "/rewind: another context changed these files after, so both cannot hold: {}",
            rewind.overlaps.join(", ")
        )));
    }
    let lines = rewind.done_lines();
    if lines.is_empty() {
        return Ok(format!("no file changes from prompt {number} on"));
    }
    Ok(lines.join("\n"))
}

/// Stops `live`'s turn if one runs, waits for it to wind down, and ends the session
/// (interrupted when a turn was cut short).
async fn end(live: &Live, reason: &str) {
    live.ending.store(true, Ordering::SeqCst);
    let mut cut = false;
    // A prompt that took the session just before it was marked may not have begun its
    // turn at the first cancel: cancelled again until the session is free.
    let started = std::time::Instant::now();
    let mut session = loop {
        cut |= live.canceller.cancel();
        if let Ok(session) = tokio::time::timeout(END_POLL, live.session.lock()).await {
            break session;
        }
        if started.elapsed() > END_WAIT {
            // Its journal, left `running` by a process that is gone, reads as interrupted.
            tracing::warn!(
                "a turn did not stop within {END_WAIT:?} of its cancel; its session is left as it is"
            );
            return;
        }
    };
    session.end(reason, cut).await;
}

/// The editor's folder as the session's workspace: absolute, a directory, canonical.
fn workspace(cwd: &Path) -> Result<PathBuf, Error> {
    if !cwd.is_absolute() {
        return Err(invalid(format!(
            "cwd `{}` is not an absolute path",
            cwd.display()
        )));
    }
    wonopcode_session::workspace_root(cwd).map_err(|e| invalid(e.to_string()))
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
        tracing::debug!(error = %e, "the usage update could not be sent");
    }
}

/// The id of a session without a journal.
fn unjournaled_id() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("session-{}-{n}", std::process::id())
}

/// `invalid params`, with `why`.
pub(crate) fn invalid(why: impl Into<String>) -> Error {
    Error::invalid_params().data(why.into())
}

/// An internal error, with `why`.
pub(crate) fn failed(why: impl Into<String>) -> Error {
    Error::internal_error().data(why.into())
}
