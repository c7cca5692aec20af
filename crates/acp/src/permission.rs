//! Every question the terminal would ask, asked of the editor: a tool call's approval (and
//! a command the sandbox stopped) is a `session/request_permission` with allow once, allow
//! always, reject once and reject always. "Allow always" is remembered by the session's
//! policy as the REPL's is; "reject always" is remembered here, so the same request is
//! refused without asking again. A guest's own questions (a line, a form) have nobody to
//! answer them over ACP and get no answer, as with no terminal.

use std::collections::HashSet;
use std::sync::{Arc, OnceLock};

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    SessionId, ToolCallUpdate, ToolCallUpdateFields,
};
use async_trait::async_trait;
use parking_lot::Mutex;
use wonopcode_protocol::PermissionRequest;
use wonopcode_tools::permission::{Answer, Prompter};

use crate::modes::Mode;
use crate::updates::Seen;

/// The options offered, in the order the editor shows them.
const OPTIONS: [(&str, &str, PermissionOptionKind); 4] = [
    ("allow_once", "Allow", PermissionOptionKind::AllowOnce),
    (
        "allow_always",
        "Always allow",
        PermissionOptionKind::AllowAlways,
    ),
    ("reject_once", "Reject", PermissionOptionKind::RejectOnce),
    (
        "reject_always",
        "Always reject",
        PermissionOptionKind::RejectAlways,
    ),
];

/// Asks the editor.
pub(crate) struct EditorPrompter {
    /// The session's id, set once it is built.
    session: Arc<OnceLock<SessionId>>,
    client: ConnectionTo<Client>,
    seen: Arc<Seen>,
    /// Requests the person rejected for the rest of the session.
    rejected: Mutex<HashSet<(String, Option<String>)>>,
    /// The session's mode: what runs without asking.
    mode: Mutex<Mode>,
}

impl EditorPrompter {
    pub(crate) fn new(
        session: Arc<OnceLock<SessionId>>,
        client: ConnectionTo<Client>,
        seen: Arc<Seen>,
    ) -> Self {
        Self {
            session,
            client,
            seen,
            rejected: Mutex::new(HashSet::new()),
            mode: Mutex::new(Mode::default()),
        }
    }

    /// Sets the session's mode.
    pub(crate) fn set_mode(&self, mode: Mode) {
        *self.mode.lock() = mode;
    }

    /// Asks about `tool` on `subject`, `title` saying what; the answer, `Deny` when the
    /// editor cancelled or could not be asked.
    async fn ask_editor(&self, tool: &str, subject: Option<&str>, title: String) -> Answer {
        let key = (tool.to_owned(), subject.map(str::to_owned));
        if self.rejected.lock().contains(&key) {
            return Answer::Deny;
        }
        let Some(session) = self.session.get() else {
            return Answer::Deny;
        };
        let call_id = self
            .seen
            .call_of(tool)
            .unwrap_or_else(|| format!("permission-{tool}"));
        let options = OPTIONS
            .iter()
            .map(|(id, name, kind)| PermissionOption::new(*id, *name, *kind))
            .collect();
        let request = RequestPermissionRequest::new(
            session.clone(),
            ToolCallUpdate::new(call_id, ToolCallUpdateFields::new().title(title)),
            options,
        );
        let answer = match self.client.send_request(request).block_task().await {
            Ok(response) => response.outcome,
            Err(e) => {
                tracing::warn!(error = %e, "the editor did not answer a permission request");
                return Answer::Deny;
            }
        };
        let chosen = match answer {
            RequestPermissionOutcome::Selected(selected) => selected.option_id.to_string(),
            _ => return Answer::Deny,
        };
        match chosen.as_str() {
            "allow_once" => Answer::Once,
            "allow_always" => Answer::Always,
            "reject_always" => {
                self.rejected.lock().insert(key);
                Answer::Deny
            }
            _ => Answer::Deny,
        }
    }
}

#[async_trait]
impl Prompter for EditorPrompter {
    async fn ask(&self, request: &PermissionRequest) -> Answer {
        if self.mode.lock().allows(&request.tool) {
            return Answer::Once;
        }
        let title = match &request.subject {
            Some(subject) => format!("{} {subject}", request.tool),
            None => request.tool.clone(),
        };
        self.ask_editor(&request.tool, request.subject.as_deref(), title)
            .await
    }

    async fn confirm_repetition(&self, tool: &str, count: usize) -> bool {
        if *self.mode.lock() == Mode::FullAuto {
            return true;
        }
        let title = format!(
            "{tool} was called {count} times in a row with the same arguments: run it again?"
        );
        matches!(
            self.ask_editor(tool, Some("repetition"), title).await,
            Answer::Once | Answer::Always
        )
    }

    async fn ask_escalation(&self, tool: &str, subject: &str, blocked: &str) -> Answer {
        let title = format!(
            "{tool} {subject}: the sandbox stopped it ({blocked}); run it outside the sandbox?"
        );
        self.ask_editor(tool, Some(&format!("unsandboxed {subject}")), title)
            .await
    }
}

#[async_trait]
impl wonopcode_wasm_host::GuestPrompter for EditorPrompter {
    /// ACP has no free-text question of the agent's: nobody answers it, as with no terminal.
    async fn input(&self, _guest: &str, _prompt: &str) -> Option<String> {
        None
    }

    async fn confirm(&self, guest: &str, message: &str) -> bool {
        matches!(
            self.ask_editor(guest, Some(message), format!("{guest}: {message}"))
                .await,
            Answer::Once | Answer::Always
        )
    }
}
