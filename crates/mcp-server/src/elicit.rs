//! The person behind the MCP client answers what a run asks: a tool call that needs
//! approval, a repeated call, a guest's `request-input` and `request-confirmation` become
//! `elicitation/create` requests, and so do the forms the run's own MCP servers ask for. Used
//! only when the client said it supports elicitation;
//! otherwise the server's unattended policy decides, as for any run nobody watches. A
//! declined, cancelled, unanswered or malformed answer is "no".

use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
use rmcp::{Peer, RoleServer};
use serde_json::{Value, json};
use wonopcode_protocol::PermissionRequest;
use wonopcode_tools::permission::{Answer, Prompter};
use wonopcode_wasm_host::GuestPrompter;

/// How long a person has to answer before the answer is "no".
const ANSWER_TIMEOUT: Duration = Duration::from_secs(600);

/// Asks the client's user.
pub struct Elicitor {
    peer: Peer<RoleServer>,
}

impl Elicitor {
    /// Asks through `peer`.
    pub fn new(peer: Peer<RoleServer>) -> Self {
        Self { peer }
    }

    /// Sends `message` with a form of `schema`; the accepted content, or `None`.
    async fn ask(&self, message: String, schema: Value) -> Option<serde_json::Map<String, Value>> {
        let Value::Object(schema) = schema else {
            return None;
        };
        let requested_schema = ElicitationSchema::from_json_schema(schema).ok()?;
        let request = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message,
            requested_schema,
        };
        let answer = tokio::time::timeout(ANSWER_TIMEOUT, self.peer.create_elicitation(request))
            .await
            .ok()?
            .inspect_err(|e| tracing::debug!(error = %e, "an elicitation failed"))
            .ok()?;
        match (answer.action, answer.content) {
            (ElicitationAction::Accept, Some(Value::Object(content))) => Some(content),
            _ => None,
        }
    }

    /// Asks a yes/no question under `field`.
    async fn yes_no(&self, message: String, field: &str, title: &str) -> bool {
        let schema = json!({
            "type": "object",
            "properties": { field: { "type": "boolean", "title": title } },
            "required": [field]
        });
        self.ask(message, schema)
            .await
            .and_then(|content| content.get(field).and_then(Value::as_bool))
            .unwrap_or(false)
    }
}

#[async_trait]
impl Prompter for Elicitor {
    async fn ask(&self, request: &PermissionRequest) -> Answer {
        let tool = &request.tool;
        let mut message = match &request.subject {
            Some(subject) => format!("wonopcode: allow `{tool}` on `{subject}`?"),
            None => format!("wonopcode: allow `{tool}`?"),
        };
        if let Some(diff) = &request.preview {
            message.push_str("\n\n");
            message.push_str(diff);
        }
        let schema = json!({
            "type": "object",
            "properties": {
                "decision": {
                    "type": "string",
                    "title": "Decision",
                    "oneOf": [
                        { "const": "once", "title": "Allow this call" },
                        { "const": "always", "title": "Allow it for the rest of this call's run" },
                        { "const": "deny", "title": "Refuse" }
                    ]
                }
            },
            "required": ["decision"]
        });
        let content = Elicitor::ask(self, message, schema).await;
        match content
            .as_ref()
            .and_then(|c| c.get("decision"))
            .and_then(Value::as_str)
        {
            Some("once") => Answer::Once,
            Some("always") => Answer::Always,
            _ => Answer::Deny,
        }
    }

    async fn confirm_repetition(&self, tool: &str, count: usize) -> bool {
        self.yes_no(
            format!("wonopcode: the model called `{tool}` {count} times in a row with the same arguments; let it run again?"),
            "allow",
            "Run it again",
        )
        .await
    }
}

/// A form an MCP server of the served run asks for goes to the calling client's user.
#[async_trait]
impl wonopcode_mcp::Elicitor for Elicitor {
    async fn elicit(&self, server: &str, form: &wonopcode_mcp::Form) -> wonopcode_mcp::Elicited {
        match self
            .ask(
                format!("{server}: {}", form.message),
                Value::Object(form.schema.clone()),
            )
            .await
        {
            Some(content) => wonopcode_mcp::Elicited::Accept(content),
            None => wonopcode_mcp::Elicited::Decline,
        }
    }
}

#[async_trait]
impl GuestPrompter for Elicitor {
    async fn input(&self, guest: &str, prompt: &str) -> Option<String> {
        let schema = json!({
            "type": "object",
            "properties": { "answer": { "type": "string", "title": "Answer" } },
            "required": ["answer"]
        });
        let content = self.ask(format!("{guest}: {prompt}"), schema).await?;
        content
            .get("answer")
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    async fn confirm(&self, guest: &str, message: &str) -> bool {
        self.yes_no(format!("{guest}: {message}"), "confirm", "Yes")
            .await
    }

    async fn form(
        &self,
        guest: &str,
        message: &str,
        schema: &serde_json::Map<String, Value>,
        _fields: &[String],
    ) -> Option<serde_json::Map<String, Value>> {
        self.ask(format!("{guest}: {message}"), Value::Object(schema.clone()))
            .await
    }
}
