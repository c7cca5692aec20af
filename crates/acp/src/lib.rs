//! The editor front-end: wonopcode driven over the Agent Client Protocol (ACP v1, JSON-RPC on
//! stdio), the protocol Zed, JetBrains IDEs and Neovim plugins speak to coding agents. Each
//! ACP session is a wonopcode session built from the same settings every front-end uses,
//! in the workspace the editor names; what the run does reaches the editor as session
//! updates (message and thought chunks, tool calls with their diffs and output, the plan,
//! each child context as a tool call of its own), and every question the terminal would
//! ask is a `session/request_permission`.

mod commands;
mod content;
mod files;
mod frames;
mod modes;
mod options;
mod permission;
mod server;
mod servers;
mod sessions;
mod updates;

pub use server::{Serving, serve_stdio};
pub use sessions::SessionFactory;
