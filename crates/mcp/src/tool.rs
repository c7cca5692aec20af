//! An MCP server's tool as a wonopcode tool: `mcp__SERVER__TOOL`, category `mcp`, mutating
//! (so `ask` by default: a server's own hints are not trusted), with the server's JSON Schema
//! checked before the call like a built-in's.

use std::sync::Arc;

use async_trait::async_trait;
use rmcp::model::Tool as RemoteTool;
use wonopcode_agent_loop::{Tool, ToolEnv, ToolError, ToolOutput, ToolSource};
use wonopcode_protocol::{ToolCategory, ToolKind, ToolSpec};

use crate::result::to_text;
use crate::server::{Server, ServerError};

/// Longest tool name providers accept (OpenAI: 64).
const MAX_NAME: usize = 64;

/// One tool of one server.
pub struct McpTool {
    spec: ToolSpec,
    server: Arc<Server>,
    /// The name the server knows it by.
    remote: String,
}

impl McpTool {
    /// The tool `remote` of `server`.
    pub fn new(server: Arc<Server>, remote: &RemoteTool) -> Self {
        let description = remote
            .description
            .as_deref()
            .or(remote.title.as_deref())
            .unwrap_or("")
            .to_owned();
        Self {
            spec: ToolSpec {
                name: tool_name(server.name(), &remote.name),
                description,
                parameters: serde_json::Value::Object((*remote.input_schema).clone()),
                kind: ToolKind::Mutating,
                category: ToolCategory::Mcp,
            },
            remote: remote.name.to_string(),
            server,
        }
    }

    /// The server it belongs to.
    pub fn server(&self) -> &str {
        self.server.name()
    }

    /// Its name on the server.
    pub fn remote_name(&self) -> &str {
        &self.remote
    }
}

/// A server's tools as a registry takes them, current: its list is re-read when it says it
/// changed, and its entry's `enabled_tools` and `disabled_tools` apply.
pub struct ServerTools(pub Arc<Server>);

impl ToolSource for ServerTools {
    fn generation(&self) -> u64 {
        self.0.tools_generation()
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.0
            .listed()
            .iter()
            .filter(|remote| self.0.offers(&remote.name))
            .map(|remote| Arc::new(McpTool::new(self.0.clone(), remote)) as Arc<dyn Tool>)
            .collect()
    }
}

/// `mcp__SERVER__TOOL`, with characters providers refuse in tool names made `_` and the
/// whole cut to 64 characters.
pub fn tool_name(server: &str, tool: &str) -> String {
    let name: String = format!("mcp__{server}__{tool}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    name.chars().take(MAX_NAME).collect()
}

#[async_trait]
impl Tool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn mcp_origin(&self) -> Option<(&str, &str)> {
        Some((self.server.name(), &self.remote))
    }

    async fn run(
        &self,
        arguments: serde_json::Value,
        env: &ToolEnv,
    ) -> Result<ToolOutput, ToolError> {
        let serde_json::Value::Object(arguments) = arguments else {
            return Err(ToolError::InvalidArguments(
                "the arguments must be a JSON object".to_owned(),
            ));
        };
        let result = self
            .server
            .call(&self.remote, arguments, &env.cancel)
            .await
            .map_err(|e| match e {
                ServerError::Cancelled => ToolError::Cancelled,
                ServerError::CallTimeout(after) => ToolError::Timeout {
                    after_ms: u64::try_from(after.as_millis()).unwrap_or(u64::MAX),
                },
                other => ToolError::Failed(format!("MCP server `{}`: {other}", self.server.name())),
            })?;
        let (text, is_error) = to_text(&result);
        Ok(if is_error {
            ToolOutput::error(text)
        } else {
            ToolOutput::text(text)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_prefixed_cleaned_and_cut() {
        assert_eq!(tool_name("fs", "read_file"), "mcp__fs__read_file");
        assert_eq!(tool_name("fs", "read.file/v2"), "mcp__fs__read_file_v2");
        assert_eq!(tool_name("s", &"x".repeat(100)).len(), 64);
    }
}
