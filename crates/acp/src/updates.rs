//! What the run does, as ACP session updates: the root's answer and reasoning as message and
//! thought chunks; every tool call (a child's labelled with its context) as a `tool_call`
//! and its end as a `tool_call_update` with the output, and a diff for each file it
//! changed; each child context as a tool call of its own (its module and task, then its
//! status and cost); the todo list as the plan; the turn's usage.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Diff, ImageContent, Plan, PlanEntry, PlanEntryPriority,
    PlanEntryStatus, SessionId, SessionNotification, SessionUpdate, ToolCall, ToolCallContent,
    ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use parking_lot::Mutex;
use wonopcode_protocol::event::{
    FileChange, FileChangeKind, ItemDetails, ItemStatus, TodoItem, TodoStatus, ToolCallItem,
};
use wonopcode_protocol::model::StopReason as ModelStop;
use wonopcode_protocol::{ContextPath, ContextStatus, Event, EventKind, Part, Role};
use wonopcode_session::Renderer;

/// What the updates saw that the rest of the session asks about: the tool call a permission
/// question is about (the last one a context started), and why the root's last response
/// stopped (a refusal ends the prompt as one).
#[derive(Default)]
pub(crate) struct Seen {
    /// The ACP id of the last tool call started, with its tool's name.
    last_call: Mutex<Option<(String, String)>>,
    /// Why the root's last response stopped.
    root_stop: Mutex<Option<ModelStop>>,
}

impl Seen {
    /// The ACP id of the last call of `tool` started, when it is the last one.
    pub(crate) fn call_of(&self, tool: &str) -> Option<String> {
        self.last_call
            .lock()
            .as_ref()
            .filter(|(_, name)| name == tool)
            .map(|(id, _)| id.clone())
    }

    /// Why the root's last response stopped, forgotten as it is read (a turn asks once).
    pub(crate) fn take_root_stop(&self) -> Option<ModelStop> {
        self.root_stop.lock().take()
    }
}

/// Sends a session's updates to the editor.
pub(crate) struct Updates {
    /// The session's id, set once it is built (nothing before then is an update).
    session: Arc<OnceLock<SessionId>>,
    client: ConnectionTo<Client>,
    workspace: PathBuf,
    /// Text items started, by context and item id: whether each is reasoning, and whether
    /// any of its text was streamed (a journal keeps no deltas, a guest may send none).
    streaming: HashMap<(ContextPath, String), (bool, bool)>,
    seen: Arc<Seen>,
    /// Each child context's title (its module and task), to name its model in once known.
    children: HashMap<ContextPath, (String, Option<String>)>,
    /// Whether the events are a journal's, replayed: the person's own messages are sent
    /// too (live, the editor shows them as they are typed).
    replaying: bool,
}

impl Updates {
    pub(crate) fn new(
        session: Arc<OnceLock<SessionId>>,
        client: ConnectionTo<Client>,
        workspace: PathBuf,
        seen: Arc<Seen>,
    ) -> Self {
        Self {
            session,
            client,
            workspace,
            streaming: HashMap::new(),
            seen,
            children: HashMap::new(),
            replaying: false,
        }
    }

    /// Updates made from a journal's events: the person's prompts included.
    pub(crate) fn replaying(mut self) -> Self {
        self.replaying = true;
        self
    }

    fn send(&self, update: SessionUpdate) {
        let Some(session) = self.session.get() else {
            return;
        };
        let note = SessionNotification::new(session.clone(), update);
        if let Err(e) = self.client.send_notification(note) {
            // The editor has gone: the session is being ended.
            tracing::debug!(error = %e, "a session update could not be sent");
        }
    }

    /// The updates one event makes.
    fn updates_of(&mut self, event: &Event) -> Vec<SessionUpdate> {
        let context = &event.context;
        let root = context.depth() == 0;
        match &event.kind {
            EventKind::ItemStarted { item } => match &item.details {
                ItemDetails::AgentMessage { .. } | ItemDetails::Reasoning { .. } => {
                    let reasoning = matches!(item.details, ItemDetails::Reasoning { .. });
                    self.streaming
                        .insert((context.clone(), item.id.clone()), (reasoning, false));
                    Vec::new()
                }
                ItemDetails::ToolCall(call) | ItemDetails::McpToolCall(call) => {
                    let id = call_id(context, &call.call_id);
                    *self.seen.last_call.lock() = Some((id.clone(), call.name.clone()));
                    vec![SessionUpdate::ToolCall(started(
                        id,
                        context,
                        call,
                        &self.workspace,
                    ))]
                }
                ItemDetails::TodoList { items } => vec![plan(items)],
                _ => Vec::new(),
            },
            EventKind::ItemDelta { item_id, text } if root => {
                match self.streaming.get_mut(&(context.clone(), item_id.clone())) {
                    Some((reasoning, streamed)) => {
                        *streamed = true;
                        if *reasoning {
                            vec![SessionUpdate::AgentThoughtChunk(chunk(text))]
                        } else {
                            vec![SessionUpdate::AgentMessageChunk(chunk(text))]
                        }
                    }
                    None => Vec::new(),
                }
            }
            EventKind::ItemUpdated { item } => match &item.details {
                ItemDetails::TodoList { items } => vec![plan(items)],
                // A running command's output so far, as the editor's view of the call.
                ItemDetails::ToolCall(call) | ItemDetails::McpToolCall(call) => {
                    vec![SessionUpdate::ToolCallUpdate(finished(
                        call_id(context, &call.call_id),
                        call,
                        &self.workspace,
                    ))]
                }
                _ => Vec::new(),
            },
            EventKind::ItemCompleted { item } => match &item.details {
                ItemDetails::AgentMessage { text } | ItemDetails::Reasoning { text } => {
                    // Text that was not streamed (a guest's `ui.send-text`, a journal's
                    // message) is sent whole.
                    let streamed = self
                        .streaming
                        .remove(&(context.clone(), item.id.clone()))
                        .is_some_and(|(_, streamed)| streamed);
                    let reasoning = matches!(item.details, ItemDetails::Reasoning { .. });
                    match (root, streamed, reasoning) {
                        (true, false, false) => vec![SessionUpdate::AgentMessageChunk(chunk(text))],
                        (true, false, true) => vec![SessionUpdate::AgentThoughtChunk(chunk(text))],
                        _ => Vec::new(),
                    }
                }
                ItemDetails::ToolCall(call) | ItemDetails::McpToolCall(call) => {
                    vec![SessionUpdate::ToolCallUpdate(finished(
                        call_id(context, &call.call_id),
                        call,
                        &self.workspace,
                    ))]
                }
                ItemDetails::TodoList { items } => vec![plan(items)],
                ItemDetails::Diagnostic { message } | ItemDetails::Error { message } if root => {
                    vec![SessionUpdate::AgentMessageChunk(chunk(&format!(
                        "\n\n> {message}\n\n"
                    )))]
                }
                _ => Vec::new(),
            },
            EventKind::MessageCreated { message }
                if root && self.replaying && message.role == Role::User =>
            {
                message.parts.iter().filter_map(user_chunk).collect()
            }
            EventKind::ResponseCompleted {
                stop_reason,
                provider,
                model,
                ..
            } => {
                if root {
                    *self.seen.root_stop.lock() = *stop_reason;
                    return Vec::new();
                }
                // A child's model, once it answers (and again should it switch).
                let name = format!("{provider}/{model}");
                let Some((title, known)) = self.children.get_mut(context) else {
                    return Vec::new();
                };
                if known.as_deref() == Some(name.as_str()) {
                    return Vec::new();
                }
                *known = Some(name.clone());
                vec![SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    context_call_id(context),
                    ToolCallUpdateFields::new().title(format!("{title} · {name}")),
                ))]
            }
            EventKind::ContextStarted { module, task, .. } if !root => {
                let title = format!(
                    "[{context}] {module}: {}",
                    task.lines().next().unwrap_or_default()
                );
                self.children.insert(context.clone(), (title.clone(), None));
                vec![SessionUpdate::ToolCall(
                    ToolCall::new(context_call_id(context), title)
                        .kind(ToolKind::Other)
                        .status(ToolCallStatus::InProgress)
                        .raw_input(serde_json::json!({"module": module, "task": task})),
                )]
            }
            EventKind::ContextCompleted {
                status,
                error,
                usage,
                modified_files,
                ..
            } if !root => {
                let mut summary = format!(
                    "{} · {} tokens",
                    status.as_str().replace('_', " "),
                    usage.total_tokens()
                );
                if let Some(micro_cents) = usage.cost_micro_cents {
                    summary.push_str(&format!(" · ${:.4}", micro_cents as f64 / 1e8));
                }
                if !modified_files.is_empty() {
                    summary.push_str(&format!(" · changed {}", modified_files.join(", ")));
                }
                if let Some(error) = error {
                    summary.push_str(&format!("\n{error}"));
                }
                let status = match status {
                    ContextStatus::Completed => ToolCallStatus::Completed,
                    _ => ToolCallStatus::Failed,
                };
                vec![SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    context_call_id(context),
                    ToolCallUpdateFields::new()
                        .status(status)
                        .content(vec![ToolCallContent::from(summary)]),
                ))]
            }
            _ => Vec::new(),
        }
    }
}

impl Renderer for Updates {
    fn render(&mut self, event: &Event) {
        for update in self.updates_of(event) {
            self.send(update);
        }
    }
}

/// A part of the person's message as the chunk the editor shows: its text or image.
fn user_chunk(part: &Part) -> Option<SessionUpdate> {
    let block = match part {
        Part::Text { text } => ContentBlock::from(text.clone()),
        Part::Image { media_type, data } => {
            ContentBlock::Image(ImageContent::new(data.clone(), media_type.clone()))
        }
        _ => return None,
    };
    Some(SessionUpdate::UserMessageChunk(ContentChunk::new(block)))
}

/// A tool call's ACP id: its call id, after its context's path for a child's.
pub(crate) fn call_id(context: &ContextPath, call: &str) -> String {
    if context.depth() == 0 {
        call.to_owned()
    } else {
        format!("{context}/{call}")
    }
}

/// The ACP id of the tool call that stands for a child context.
fn context_call_id(context: &ContextPath) -> String {
    format!("context-{context}")
}

fn chunk(text: &str) -> ContentChunk {
    ContentChunk::new(ContentBlock::from(text.to_owned()))
}

/// The `tool_call` of a call that started (a path it names, made absolute, as its location).
fn started(id: String, context: &ContextPath, call: &ToolCallItem, workspace: &Path) -> ToolCall {
    let arguments: serde_json::Value =
        serde_json::from_str(&call.arguments).unwrap_or(serde_json::Value::Null);
    let subject = ["path", "file_path", "command", "pattern", "url", "query"]
        .iter()
        .find_map(|key| arguments.get(*key).and_then(|v| v.as_str()))
        .map(|s| s.lines().next().unwrap_or_default().to_owned());
    let mut title = match subject {
        Some(subject) => format!("{} {subject}", call.name),
        None => call.name.clone(),
    };
    if context.depth() > 0 {
        title = format!("[{context}] {title}");
    }
    let mut update = ToolCall::new(id, title)
        .kind(kind_of(&call.name, &arguments))
        .status(ToolCallStatus::InProgress)
        .raw_input(arguments.clone());
    if let Some(path) = ["path", "file_path"]
        .iter()
        .find_map(|key| arguments.get(*key).and_then(|v| v.as_str()))
    {
        update = update.locations(vec![ToolCallLocation::new(workspace.join(path))]);
    }
    update
}

/// The `tool_call_update` of a call that ended: its status, a diff for each file it changed
/// (its output when it changed none), and the output as `rawOutput`; of a call still
/// running, the output it has printed so far.
fn finished(id: String, call: &ToolCallItem, workspace: &Path) -> ToolCallUpdate {
    let status = match call.status {
        ItemStatus::Completed => ToolCallStatus::Completed,
        ItemStatus::InProgress => ToolCallStatus::InProgress,
        _ => ToolCallStatus::Failed,
    };
    let output = call.output.clone().unwrap_or_default();
    let changes: Vec<&FileChange> = call
        .file_changes
        .iter()
        .chain(call.file_change.iter())
        .collect();
    let mut content: Vec<ToolCallContent> = changes
        .iter()
        .map(|change| diff_of(change, workspace))
        .collect();
    if content.is_empty() && !output.is_empty() {
        content.push(ToolCallContent::from(output.clone()));
    }
    ToolCallUpdate::new(
        id,
        ToolCallUpdateFields::new()
            .status(status)
            .content(content)
            .raw_output(serde_json::json!({"output": output})),
    )
}

/// A file change as an ACP diff: the file as it is now and as it was (the unified diff
/// applied backwards); the unified diff as text when the file cannot be read back.
fn diff_of(change: &FileChange, workspace: &Path) -> ToolCallContent {
    let path = workspace.join(&change.path);
    let now = match change.kind {
        FileChangeKind::Delete => Some(String::new()),
        _ => std::fs::read_to_string(&path).ok(),
    };
    let before = match (&now, &change.diff, change.kind) {
        (_, _, FileChangeKind::Add) => None,
        (Some(now), Some(diff), _) => match unapply(now, diff) {
            Some(before) => Some(before),
            None => return ToolCallContent::from(format!("```diff\n{diff}\n```")),
        },
        _ => None,
    };
    match now {
        Some(now) => ToolCallContent::Diff(Diff::new(path, now).old_text(before)),
        None => ToolCallContent::from(change.diff.clone().unwrap_or_default()),
    }
}

/// The text a unified diff was made from, given the text it made: each hunk's added lines
/// replaced by its removed ones. `None` when the diff does not fit the text.
pub(crate) fn unapply(after: &str, diff: &str) -> Option<String> {
    let lines: Vec<&str> = after.split_inclusive('\n').collect();
    let mut before = String::new();
    let mut next = 0usize;
    let mut hunk = diff.lines().peekable();
    while let Some(line) = hunk.next() {
        let Some(header) = line.strip_prefix("@@ ") else {
            continue;
        };
        // `@@ -a,b +c,d @@`: the hunk starts at line c of the new text (1-based).
        let new_start: usize = header
            .split_whitespace()
            .find_map(|part| part.strip_prefix('+'))
            .and_then(|range| range.split(',').next())
            .and_then(|n| n.parse().ok())?;
        let start = new_start.saturating_sub(1).max(next);
        before.extend(lines.get(next..start)?.iter().copied());
        next = start;
        while let Some(body) = hunk.peek() {
            if body.starts_with("@@ ") {
                break;
            }
            let body = hunk.next()?;
            match body.split_at_checked(1) {
                Some(("+", _)) => next += 1,
                Some(("-", text)) => {
                    before.push_str(text);
                    before.push('\n');
                }
                Some((" ", _)) | Some(("", _)) | None => {
                    before.push_str(lines.get(next)?);
                    next += 1;
                }
                Some(("\\", _)) => {
                    // `\ No newline at end of file`: the line before had none.
                    if before.ends_with('\n') {
                        before.pop();
                    }
                }
                _ => return None,
            }
        }
    }
    before.extend(lines.get(next..)?.iter().copied());
    Some(before)
}

/// The ACP kind of a call, by its tool (a patch that only deletes files is a delete, one
/// that only moves them a move).
fn kind_of(tool: &str, arguments: &serde_json::Value) -> ToolKind {
    match tool {
        "read" => ToolKind::Read,
        "apply_patch" => patch_kind(arguments["input"].as_str().unwrap_or_default()),
        "write" | "edit" => ToolKind::Edit,
        "grep" | "glob" | "list" => ToolKind::Search,
        "bash" => ToolKind::Execute,
        "webfetch" | "web_search" => ToolKind::Fetch,
        "todo" => ToolKind::Think,
        _ => ToolKind::Other,
    }
}

/// A patch's kind, by its file operations (Codex's patch format: `*** Delete File:`,
/// `*** Update File:` with `*** Move to:`, `*** Add File:`).
fn patch_kind(patch: &str) -> ToolKind {
    let mut files = 0;
    let (mut deletes, mut moves, mut changed) = (0, 0, false);
    for line in patch.lines() {
        if line.starts_with("*** Delete File:") {
            files += 1;
            deletes += 1;
        } else if line.starts_with("*** Add File:") || line.starts_with("*** Update File:") {
            files += 1;
        } else if line.starts_with("*** Move to:") {
            moves += 1;
        } else if line.starts_with(['+', '-']) || line.starts_with("@@") {
            changed = true;
        }
    }
    match (files, deletes, moves, changed) {
        (1.., d, 0, _) if d == files => ToolKind::Delete,
        (1.., 0, m, false) if m == files => ToolKind::Move,
        _ => ToolKind::Edit,
    }
}

/// The todo list as the plan.
fn plan(items: &[TodoItem]) -> SessionUpdate {
    let entries = items
        .iter()
        .map(|item| {
            let status = match item.status {
                TodoStatus::Pending => PlanEntryStatus::Pending,
                TodoStatus::InProgress => PlanEntryStatus::InProgress,
                TodoStatus::Completed => PlanEntryStatus::Completed,
            };
            PlanEntry::new(item.content.clone(), PlanEntryPriority::Medium, status)
        })
        .collect();
    SessionUpdate::Plan(Plan::new(entries))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unified_diff_applied_backwards_gives_the_text_before() {
        let before = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n";
        let after = "one\nTWO\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\neleven\n";
        let diff = "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n@@ -8,3 +8,4 @@\n eight\n nine\n ten\n+eleven\n";
        assert_eq!(unapply(after, diff).as_deref(), Some(before));
        // A diff that does not fit the text is not applied.
        assert_eq!(unapply("x\n", "@@ -1,3 +5,3 @@\n a\n b\n c\n"), None);
    }

    #[test]
    fn a_patch_that_only_deletes_or_only_moves_says_so() {
        let kind = |patch: &str| kind_of("apply_patch", &serde_json::json!({"input": patch}));
        let delete =
            "*** Begin Patch\n*** Delete File: a.txt\n*** Delete File: b.txt\n*** End Patch";
        assert_eq!(kind(delete), ToolKind::Delete);
        let moved = "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n*** End Patch";
        assert_eq!(kind(moved), ToolKind::Move);
        let moved_and_changed = "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n@@\n-x\n+y\n*** End Patch";
        assert_eq!(kind(moved_and_changed), ToolKind::Edit);
        let mixed =
            "*** Begin Patch\n*** Delete File: a.txt\n*** Add File: c.txt\n+c\n*** End Patch";
        assert_eq!(kind(mixed), ToolKind::Edit);
        assert_eq!(kind(""), ToolKind::Edit);
    }

    #[test]
    fn a_running_calls_output_so_far_is_an_in_progress_update_with_it() {
        let call = ToolCallItem {
            output: Some("line1\nline2\n".into()),
            ..ToolCallItem::in_progress("c1".into(), "bash".into(), "{}".into())
        };
        let update = finished("c1".into(), &call, Path::new("/ws"));
        assert_eq!(update.fields.status, Some(ToolCallStatus::InProgress));
        let content = update.fields.content.unwrap_or_default();
        assert_eq!(
            content,
            vec![ToolCallContent::from("line1\nline2\n".to_owned())]
        );
    }
}
