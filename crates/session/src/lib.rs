//! What an embedder of wonopcode needs between its own program and the libraries, and what
//! the `wonopcode` binary is built on: the config file, the choice of model with record and
//! replay, the history file, the trace, loading the loop (and reloading a guest file), and a
//! [`Session`] that runs prompts through it all.
//!
//! ```no_run
//! # async fn run() -> Result<(), wonopcode_session::SessionError> {
//! use wonopcode_session::{LoopSource, ModelChoice, Session};
//!
//! let mut session = Session::builder("path/to/workspace")
//!     .with_settings(|settings| {
//!         settings.model = ModelChoice {
//!             replay: Some("transcript.jsonl".into()),
//!             ..ModelChoice::default()
//!         };
//!     })
//!     .loop_source(LoopSource::Embedded)
//!     .build()
//!     .await?;
//! let result = session.prompt("Summarize the README.").await;
//! println!("{:?}: {}", result.status, result.response.unwrap_or_default());
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]

pub mod componentize;
pub mod config;
mod environment;
mod error;
/// Generation settings (thinking, output cap, temperature), which agent files set too.
pub use wonopcode_protocol::generation;
pub mod guest_project;
pub mod history;
mod hook_loader;
pub mod instructions;
pub mod loops;
pub mod mcp;
pub mod models;
mod module_tools;
mod oci_pins;
pub mod restart;
mod run_journal;
mod session;
pub mod settings;
mod sink;
pub mod skill_tool;
pub mod stand_in;
pub mod stored_conversation;
pub mod telemetry;
pub mod trace;
pub mod trust;

pub use config::Config;
pub use error::SessionError;
pub use models::{ModelChoice, ReplayMode};
pub use session::{
    DEFAULT_MAX_ITERATIONS, DEFAULT_SYSTEM_PROMPT, Fork, RewindScope, Rewound, Session,
    SessionBuilder, TurnCanceller, workspace_root,
};
pub use settings::{LoopChoice, Settings};
pub use sink::{NoRenderer, Renderer, SessionSink};
pub use wonopcode_contexts::LoopSource;
