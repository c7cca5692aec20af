//! The process's OpenTelemetry exporter (`--otlp-endpoint`): started before the async
//! runtime, shut down after it (so the last spans go out), and a span recorder for each
//! session the command builds.

use std::sync::{Arc, OnceLock};

use wonopcode_session::telemetry::{SpanRecorder, Telemetry};

use crate::args::{Args, Command};

static TELEMETRY: OnceLock<Telemetry> = OnceLock::new();

/// Starts the exporter when the command's flags or the environment ask for one.
pub fn start(args: &Args) -> Result<(), String> {
    let endpoint = match &args.command {
        None => args.prompt.run.otlp_endpoint.as_deref(),
        Some(Command::Run(prompt)) => prompt.run.otlp_endpoint.as_deref(),
        Some(Command::Batch(batch)) => batch.run.otlp_endpoint.as_deref(),
        // A resumed or forked run: the environment's endpoint (its flags are its own).
        Some(Command::Resume(_) | Command::Fork(_)) => None,
        // Other commands run no session of their own.
        Some(_) => return Ok(()),
    };
    if let Some(telemetry) = Telemetry::start(endpoint).map_err(|e| e.to_string())? {
        let _ = TELEMETRY.set(telemetry);
    }
    Ok(())
}

/// A recorder for a new session's events, when spans are exported.
pub fn recorder() -> Option<Arc<SpanRecorder>> {
    TELEMETRY.get().map(|t| Arc::new(t.recorder()))
}

/// Sends the spans still buffered; a failure is a warning (the run itself is done).
pub fn shutdown() {
    if let Some(telemetry) = TELEMETRY.get()
        && let Err(e) = telemetry.shutdown()
    {
        eprintln!("warning: the last OpenTelemetry spans were not sent: {e}");
    }
}
