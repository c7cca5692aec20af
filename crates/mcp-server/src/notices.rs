//! A run's events as the MCP client sees them while a call runs: each step (a model
//! response, a tool call, a child context, the loop's own progress) is a progress
//! notification when the client asked for progress, and what the loop tells the user (a
//! guest's `show-message`, a retried model request) is a log notification at or above the
//! level the client set. Sent in order by one task, which the call waits for before it
//! answers, so no notification arrives after the result.

use std::sync::Arc;

use parking_lot::Mutex;
#[allow(deprecated)] // MCP logging is deprecated by SEP-2577, still current in 2025-11-25.
use rmcp::model::{
    LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
};
use rmcp::{Peer, RoleServer};
use tokio::sync::mpsc;
use wonopcode_protocol::event::{ItemDetails, ItemStatus};
use wonopcode_protocol::{Event, EventKind};
use wonopcode_session::Renderer;

/// One notification to send.
#[allow(deprecated)]
enum Notice {
    Progress(String),
    Log(LoggingLevel, String),
}

/// The renderer half: turns events into notices, never blocks the run.
pub struct Notices {
    sender: mpsc::UnboundedSender<Notice>,
}

/// The sending half: a task that sends the notices in order; awaited when the run ends.
pub struct Sender {
    task: tokio::task::JoinHandle<()>,
}

impl Sender {
    /// Waits until every notice of the run was sent (the renderer half must be dropped).
    pub async fn finish(self) {
        let _ = self.task.await;
    }
}

/// The client's logging level, per connection (`logging/setLevel`).
#[allow(deprecated)]
pub type SharedLevel = Arc<Mutex<LoggingLevel>>;

/// A renderer for one call, and the task sending what it sees to `peer`: progress only when
/// the request carried a `progress`, logs at or above `level`.
#[allow(deprecated)]
pub fn start(
    peer: Peer<RoleServer>,
    progress: Option<ProgressToken>,
    level: SharedLevel,
) -> (Notices, Sender) {
    let (sender, mut receiver) = mpsc::unbounded_channel::<Notice>();
    let task = tokio::spawn(async move {
        let mut step = 0.0_f64;
        while let Some(notice) = receiver.recv().await {
            let sent = match notice {
                Notice::Progress(message) => match &progress {
                    Some(token) => {
                        step += 1.0;
                        let mut param = ProgressNotificationParam::new(token.clone(), step);
                        param.message = Some(message);
                        peer.notify_progress(param).await
                    }
                    None => Ok(()),
                },
                Notice::Log(at, message) => {
                    if severity(at) < severity(*level.lock()) {
                        continue;
                    }
                    let mut param =
                        LoggingMessageNotificationParam::new(at, serde_json::json!(message));
                    param.logger = Some("wonopcode".to_owned());
                    peer.notify_logging_message(param).await
                }
            };
            if let Err(e) = sent {
                // The client went away; the run is cancelled by the request's token.
                tracing::debug!(error = %e, "an MCP notification could not be sent");
                return;
            }
        }
    });
    (Notices { sender }, Sender { task })
}

/// Orders the levels (`debug` lowest), as `logging/setLevel` filters.
#[allow(deprecated)]
fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// Where an event happened, for a child context: ` (in context 0.1)`.
fn place(event: &Event) -> String {
    if event.context.depth() == 0 {
        String::new()
    } else {
        format!(" (in context {})", event.context)
    }
}

impl Notices {
    #[allow(deprecated)]
    fn notice(&self, event: &Event) -> Option<Notice> {
        let at = place(event);
        Some(match &event.kind {
            EventKind::ItemStarted { item } => match &item.details {
                ItemDetails::ToolCall(call) | ItemDetails::McpToolCall(call) => {
                    Notice::Progress(format!("running `{}`{at}", call.name))
                }
                ItemDetails::AgentMessage { .. } => {
                    Notice::Progress(format!("the model is answering{at}"))
                }
                ItemDetails::Progress { message, fraction } => {
                    Notice::Progress(with_fraction(message, *fraction))
                }
                _ => return None,
            },
            EventKind::ItemUpdated { item } => match &item.details {
                ItemDetails::Progress { message, fraction } => {
                    Notice::Progress(with_fraction(message, *fraction))
                }
                _ => return None,
            },
            EventKind::ItemCompleted { item } => match &item.details {
                ItemDetails::Info { message } => Notice::Log(LoggingLevel::Info, message.clone()),
                ItemDetails::Diagnostic { message } => {
                    Notice::Log(LoggingLevel::Warning, message.clone())
                }
                ItemDetails::Error { message } => {
                    Notice::Log(LoggingLevel::Error, format!("{message}{at}"))
                }
                ItemDetails::ToolCall(call) | ItemDetails::McpToolCall(call)
                    if call.status == ItemStatus::Declined =>
                {
                    Notice::Log(
                        LoggingLevel::Warning,
                        format!("`{}` was not allowed to run{at}", call.name),
                    )
                }
                _ => return None,
            },
            EventKind::ContextStarted { module, .. } => {
                Notice::Progress(format!("context {} started ({module})", event.context))
            }
            EventKind::ContextCompleted { module, status, .. } => Notice::Progress(format!(
                "context {} ended ({module}): {}",
                event.context,
                serde_json::to_value(status)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default()
            )),
            EventKind::ModelRetry {
                attempt, reason, ..
            } => Notice::Log(
                LoggingLevel::Warning,
                format!("model request retried (attempt {attempt}): {reason}{at}"),
            ),
            EventKind::McpServerFailed { server, error } => Notice::Log(
                LoggingLevel::Warning,
                format!("MCP server `{server}` is not available: {error}"),
            ),
            _ => return None,
        })
    }
}

fn with_fraction(message: &str, fraction: Option<f32>) -> String {
    match fraction {
        Some(f) => format!("{message} ({:.0}%)", f * 100.0),
        None => message.to_owned(),
    }
}

impl Renderer for Notices {
    fn render(&mut self, event: &Event) {
        if let Some(notice) = self.notice(event) {
            let _ = self.sender.send(notice);
        }
    }
}
