//! End-to-end tests: the real `wonopcode` binary, real tools on real files, replayed
//! transcripts. One test binary (as Codex does) so it links once.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod acp;
mod agent_files;
mod agents;
mod architecture;
mod attachments;
mod authoring;
mod batch;
mod child_handles;
mod cli_errors;
mod clouds;
mod commands;
mod costs;
mod demo;
mod events_doc;
mod first_use;
mod grants;
mod hidden;
mod hooks;
mod hostile;
mod journal;
mod mcp;
mod mcp_server;
mod oci;
mod parity;
mod polyglot;
mod providers;
mod registry;
mod repl;
mod resume;
mod rewind;
mod runs;
mod sandbox;
mod seed_examples;
mod snapshots;
mod support;
mod suspended_tree;
mod telemetry;
mod templates;
mod terminal;
mod tool_errors;
mod trust;
mod wasm;
mod webfetch;
