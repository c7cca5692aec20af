//! wonopcode's side of each MCP connection: what it says of itself at `initialize` (its
//! name, version and protocol version; that it answers forms when someone can), the server's
//! tool list kept current (`notifications/tools/list_changed`), and its answers to a
//! server's `elicitation/create` requests, given by an [`Elicitor`] (the person
//! at the terminal, or a policy). Values a form leaves out that its schema gives a default
//! for are filled in (SEP-1034), so a server always gets the values the user saw.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::Tool as RemoteTool;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, FormElicitationCapability, Implementation, ProtocolVersion,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, ErrorData, RoleClient};
use serde_json::{Map, Value};

/// How long a person has to fill in a form before the answer is "cancel".
const FORM_TIMEOUT: Duration = Duration::from_secs(600);

/// What the user answered to a server's form.
#[derive(Debug, Clone, PartialEq)]
pub enum Elicited {
    /// These values (fields left out get the schema's defaults).
    Accept(Map<String, Value>),
    /// No, but go on.
    Decline,
    /// Stop what asked.
    Cancel,
}

/// A form a server asks the user to fill in.
#[derive(Debug, Clone, PartialEq)]
pub struct Form {
    /// What the server says it is for.
    pub message: String,
    /// Its JSON Schema: an object of primitive properties, maybe with defaults and choices.
    pub schema: Map<String, Value>,
    /// The properties' names in the order the server gave them.
    pub fields: Vec<String>,
}

/// Answers servers' forms: the terminal asks the user field by field; a run nobody watches
/// declines, or accepts the defaults when told to.
#[async_trait]
pub trait Elicitor: Send + Sync {
    /// The answer to `form` from `server`.
    async fn elicit(&self, server: &str, form: &Form) -> Elicited;
}

/// The tools a server lists, kept current: when it says its list changed, it is read again
/// and the generation moves, so runs take the new tools before their next request.
#[derive(Default)]
pub struct ListedTools {
    generation: AtomicU64,
    tools: parking_lot::Mutex<Vec<RemoteTool>>,
    /// The server said its list changed, and it is being read again.
    stale: AtomicBool,
    /// Told when the list was read again.
    fresh: tokio::sync::Notify,
}

impl ListedTools {
    /// Replaces the list.
    pub fn set(&self, tools: Vec<RemoteTool>) {
        self.replace(tools, true);
    }

    /// Replaces the list; `settled` when no newer change is waiting to be read (else the
    /// list stays marked as being read again).
    fn replace(&self, tools: Vec<RemoteTool>, settled: bool) {
        *self.tools.lock() = tools;
        self.generation.fetch_add(1, Ordering::SeqCst);
        if settled {
            self.stale.store(false, Ordering::SeqCst);
            self.fresh.notify_waiters();
        }
    }

    /// Marks the list as being read again.
    fn going_stale(&self) {
        self.stale.store(true, Ordering::SeqCst);
    }

    /// Waits (at most `limit`) until a list the server said changed was read again, so that a
    /// call that added tools is answered with them offered at the next response.
    pub async fn settled(&self, limit: Duration) {
        let wait = async {
            loop {
                let notified = self.fresh.notified();
                if !self.stale.load(Ordering::SeqCst) {
                    return;
                }
                notified.await;
            }
        };
        let _ = tokio::time::timeout(limit, wait).await;
    }

    /// The list now.
    pub fn get(&self) -> Vec<RemoteTool> {
        self.tools.lock().clone()
    }

    /// Moves whenever the list is replaced.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }
}

/// How long re-listing a changed server's tools may take.
const RELIST_TIMEOUT: Duration = Duration::from_secs(30);

/// Re-reading a server's tool list after it said the list changed, one read at a time: a
/// server that says so thousands of times in a row gets a few reads, not one task each
/// (which grew wonopcode without bound under a flood).
#[derive(Default)]
struct Relists {
    /// A read is under way (its task owns the loop).
    running: AtomicBool,
    /// A change was said since the running read began.
    again: AtomicBool,
}

/// The connection handler of one server.
#[derive(Clone)]
pub struct Client {
    server: String,
    elicitor: Option<Arc<dyn Elicitor>>,
    listed: Arc<ListedTools>,
    relists: Arc<Relists>,
}

impl Client {
    /// The handler for `server`, answering forms through `elicitor` (none: declared unable)
    /// and keeping `listed` current.
    pub fn new(
        server: &str,
        elicitor: Option<Arc<dyn Elicitor>>,
        listed: Arc<ListedTools>,
    ) -> Self {
        Self {
            server: server.to_owned(),
            elicitor,
            listed,
            relists: Arc::default(),
        }
    }
}

impl ClientHandler for Client {
    /// wonopcode's name and version, and protocol version 2025-11-25, the newest the pinned
    /// MCP conformance suite verifies (a server that knows a newer one answers with this one;
    /// rmcp would otherwise offer 2026-07-28, which that suite does not know).
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.elicitor.is_some() {
            let mut elicitation = ElicitationCapability::new();
            elicitation.form = Some(FormElicitationCapability::new());
            capabilities.elicitation = Some(elicitation);
        }
        ClientConfig::new(
            capabilities,
            Implementation::new("wonopcode", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        self.listed.going_stale();
        let relists = self.relists.clone();
        relists.again.store(true, Ordering::SeqCst);
        if relists.running.swap(true, Ordering::SeqCst) {
            // The running read takes this change on when it ends.
            return;
        }
        // Read in a task of its own: a request from inside a notification's handler would
        // wait on the connection that is delivering the notification.
        let (peer, listed, server) = (context.peer, self.listed.clone(), self.server.clone());
        tokio::spawn(async move {
            loop {
                relists.again.store(false, Ordering::SeqCst);
                let read = tokio::time::timeout(RELIST_TIMEOUT, peer.list_all_tools()).await;
                let pending = relists.again.load(Ordering::SeqCst);
                match read {
                    Ok(Ok(tools)) => {
                        tracing::info!(server = %server, tools = tools.len(), "MCP server's tools changed");
                        listed.replace(tools, !pending);
                    }
                    // The connection was closed meanwhile (wonopcode is stopping it, or the
                    // server went away, which its next call reports): nothing to warn about.
                    Ok(Err(rmcp::service::ServiceError::TransportClosed)) => {
                        tracing::debug!(server = %server, "the connection closed before the changed tools were listed");
                        relists.running.store(false, Ordering::SeqCst);
                        return;
                    }
                    Ok(Err(e)) => {
                        tracing::warn!(server = %server, error = %e, "cannot list an MCP server's changed tools")
                    }
                    Err(_) => {
                        tracing::warn!(server = %server, "listing an MCP server's changed tools timed out")
                    }
                }
                if pending {
                    continue;
                }
                relists.running.store(false, Ordering::SeqCst);
                // A change said between the check and the store: take it on, unless a new
                // task already did.
                if relists.again.load(Ordering::SeqCst)
                    && !relists.running.swap(true, Ordering::SeqCst)
                {
                    continue;
                }
                return;
            }
        });
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let (
            Some(elicitor),
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            },
        ) = (&self.elicitor, request)
        else {
            // No one to ask, or a URL elicitation (wonopcode opens no pages for servers).
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        let fields = requested_schema
            .property_order
            .clone()
            .unwrap_or_else(|| requested_schema.properties.keys().cloned().collect());
        let schema = match serde_json::to_value(&requested_schema) {
            Ok(Value::Object(schema)) => schema,
            _ => return Ok(ElicitResult::new(ElicitationAction::Decline)),
        };
        let form = Form {
            message,
            schema,
            fields,
        };
        let answer = tokio::time::timeout(FORM_TIMEOUT, elicitor.elicit(&self.server, &form))
            .await
            .unwrap_or(Elicited::Cancel);
        let schema = form.schema;
        Ok(match answer {
            Elicited::Accept(values) => ElicitResult::new(ElicitationAction::Accept)
                .with_content(Value::Object(with_defaults(values, &schema))),
            Elicited::Decline => ElicitResult::new(ElicitationAction::Decline),
            Elicited::Cancel => ElicitResult::new(ElicitationAction::Cancel),
        })
    }
}

/// `values`, with each property of `schema` they leave out that has a default set to it.
pub fn with_defaults(
    mut values: Map<String, Value>,
    schema: &Map<String, Value>,
) -> Map<String, Value> {
    if let Some(Value::Object(properties)) = schema.get("properties") {
        for (name, property) in properties {
            if let Some(default) = property.get("default")
                && !values.contains_key(name)
            {
                values.insert(name.clone(), default.clone());
            }
        }
    }
    values
}

/// Accepts every form with its defaults, when each required field has one; else declines.
/// For runs told to say yes to everything (`--yes`).
pub struct AcceptDefaults;

#[async_trait]
impl Elicitor for AcceptDefaults {
    async fn elicit(&self, _server: &str, form: &Form) -> Elicited {
        let values = with_defaults(Map::new(), &form.schema);
        let required = form
            .schema
            .get("required")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let complete = required
            .iter()
            .filter_map(Value::as_str)
            .all(|field| values.contains_key(field));
        if complete {
            Elicited::Accept(values)
        } else {
            Elicited::Decline
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn omitted_fields_get_their_defaults_and_given_ones_stay() {
        let Value::Object(schema) = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "email": {"type": "string"}
            },
            "required": ["email"]
        }) else {
            unreachable!()
        };
        let Value::Object(given) = json!({"name": "Jane"}) else {
            unreachable!()
        };
        let filled = with_defaults(given, &schema);
        assert_eq!(filled["name"], "Jane");
        assert_eq!(filled["age"], 30);
        assert!(!filled.contains_key("email"));
        // A required field without a default cannot be accepted by default.
        let form = Form {
            message: "m".into(),
            fields: vec!["name".into(), "age".into(), "email".into()],
            schema,
        };
        let answer = futures::executor::block_on(AcceptDefaults.elicit("s", &form));
        assert_eq!(answer, Elicited::Decline);
    }
}
