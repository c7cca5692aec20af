//! The editor's MCP servers (`mcpServers` of `session/new`) as the session's own: a stdio
//! server with its command, arguments and variables, an HTTP server with its address and
//! headers. They start, and are sandboxed, as the config file's servers are, and live as long
//! as the session; they are not written to the journal (their variables may be secrets).

use std::collections::BTreeMap;

use agent_client_protocol::v1::schema::McpServer;
use wonopcode_mcp::ServerEntry;

/// The servers as entries by name; `Err`: one line naming a server wonopcode cannot use.
pub(crate) fn entries_of(servers: &[McpServer]) -> Result<BTreeMap<String, ServerEntry>, String> {
    let mut entries = BTreeMap::new();
    for server in servers {
        let (name, entry) = match server {
            McpServer::Stdio(stdio) => (
                stdio.name.clone(),
                ServerEntry {
                    command: Some(stdio.command.display().to_string()),
                    args: stdio.args.clone(),
                    env: stdio
                        .env
                        .iter()
                        .map(|v| (v.name.clone(), v.value.clone()))
                        .collect(),
                    ..ServerEntry::default()
                },
            ),
            McpServer::Http(http) => (
                http.name.clone(),
                ServerEntry {
                    url: Some(http.url.clone()),
                    headers: http
                        .headers
                        .iter()
                        .map(|h| (h.name.clone(), h.value.clone()))
                        .collect(),
                    ..ServerEntry::default()
                },
            ),
            McpServer::Sse(sse) => {
                return Err(format!(
                    "MCP server `{}`: SSE servers are not taken (the agent offers stdio and HTTP)",
                    sse.name
                ));
            }
            _ => return Err("an MCP server of a kind the agent does not take".to_owned()),
        };
        if entries.insert(name.clone(), entry).is_some() {
            return Err(format!("MCP server `{name}` is given twice"));
        }
    }
    Ok(entries)
}
