//! What can go wrong while setting up or running a session, as values an embedder can match.

use wonopcode_protocol::LoopError;
use wonopcode_wasm_host::WasmError;

/// A session could not be set up, or a file it keeps could not be used.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// How the session was asked for is wrong: an unknown provider or model, a missing key,
    /// a workspace that is not a directory, an answer for a call nobody waits on. The
    /// command line reports these as usage errors.
    #[error("{0}")]
    Choice(String),
    /// The config file cannot be read or is malformed (the line says where).
    #[error("{0}")]
    Config(String),
    /// The history file cannot be read, parsed or written (the line says where).
    #[error("{0}")]
    History(String),
    /// A transcript to replay or record cannot be used.
    #[error("{0}")]
    Transcript(String),
    /// The loop could not be loaded.
    #[error(transparent)]
    Loop(#[from] WasmError),
    /// A file the session writes (a new guest project) could not be written.
    #[error("{0}")]
    Files(String),
    /// The loop's `on_start` failed.
    #[error("the loop failed to start: {0}")]
    Start(LoopError),
}
