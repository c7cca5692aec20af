//! wonopcode as an MCP server: every named loop (the built-ins, `registry.yaml` entries,
//! directory modules) is a tool another agent (Codex, Claude Code, any MCP client) can call
//! with a prompt. A call runs a whole context tree under the server's permissions and
//! returns the final answer, the loop's structured data and the run's usage; while it runs,
//! the client gets progress notifications and the loop's messages as log notifications, and
//! approvals and a guest's questions become elicitation requests when the client supports
//! them. Cancelling the request cancels the tree. With `--provider mcp-client`, a run's model
//! is the calling agent's own, through MCP sampling.
//!
//! Served over stdio ([`serve_stdio`]) or streamable HTTP ([`serve_http`]) through the
//! official SDK (`rmcp`); nothing here speaks JSON-RPC itself.

mod arguments;
mod auth;
mod elicit;
mod handler;
mod http;
mod notices;
mod sampling;

pub use auth::BearerToken;
pub use handler::{LoopCall, LoopServer, RESULT_CONTENT_KEY, SessionFactory};
pub use http::{HttpOptions, serve_http};
pub use sampling::CLIENT_PROVIDER;

/// Why serving stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The client never completed the MCP handshake, or broke the protocol.
    #[error("the MCP client did not complete the handshake: {0}")]
    Handshake(String),
    /// The connection ended with an error.
    #[error("the MCP connection failed: {0}")]
    Connection(String),
    /// The HTTP listener failed.
    #[error("the HTTP listener failed: {0}")]
    Listen(#[from] std::io::Error),
}

/// Serves `server` on this process's stdin and stdout until the client closes them.
pub async fn serve_stdio(server: LoopServer) -> Result<(), ServeError> {
    use rmcp::ServiceExt;
    let running = server
        .connection()
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| ServeError::Handshake(e.to_string()))?;
    running
        .waiting()
        .await
        .map(|_| ())
        .map_err(|e| ServeError::Connection(e.to_string()))
}
