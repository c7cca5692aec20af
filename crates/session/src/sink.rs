//! A session's event sink: persists the root context's messages to the history file and
//! every context's events to the run journal, records the trace, and hands every event to a
//! renderer. Synchronous, so a message is on disk before
//! the loop goes on; a history write failure cancels the session (`abort`) and is reported by
//! `failure`, so nothing already stored is lost and nothing after it is silently dropped.

use std::sync::Arc;

use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;
use wonopcode_protocol::{Event, EventSink};

use wonopcode_journal::EventLog;

use crate::history::History;
use crate::telemetry::SpanRecorder;
use crate::trace::TraceRecorder;

/// Shows events to someone (a terminal, a JSON Lines stream, an embedder's own view).
pub trait Renderer: Send {
    /// Renders one event.
    fn render(&mut self, event: &Event);
}

/// A renderer that shows nothing (an embedder that reads results, not events).
pub struct NoRenderer;

impl Renderer for NoRenderer {
    fn render(&mut self, _event: &Event) {}
}

struct State {
    history: Option<History>,
    journal: Option<EventLog>,
    renderer: Box<dyn Renderer>,
    failure: Option<String>,
    trace: Option<TraceRecorder>,
    telemetry: Option<Arc<SpanRecorder>>,
}

/// The session's event sink.
pub struct SessionSink {
    state: Mutex<State>,
    abort: CancellationToken,
}

impl SessionSink {
    /// A sink persisting to `history` (if any), recording a trace when `trace`, and rendering
    /// with `renderer`; a failed history write cancels `abort`.
    pub fn new(
        history: Option<History>,
        renderer: Box<dyn Renderer>,
        abort: CancellationToken,
        trace: bool,
    ) -> Self {
        Self {
            state: Mutex::new(State {
                history,
                journal: None,
                renderer,
                failure: None,
                trace: trace.then(TraceRecorder::default),
                telemetry: None,
            }),
            abort,
        }
    }

    /// Writes the trace recorded so far to `path` (nothing when no trace is recorded).
    pub fn write_trace(&self, path: &std::path::Path) -> std::io::Result<()> {
        match &self.state.lock().trace {
            Some(trace) => trace.write(path),
            None => Ok(()),
        }
    }

    /// Keeps every event of the run (every context's) in `log` from now on.
    pub fn journal(&self, log: EventLog) {
        self.state.lock().journal = Some(log);
    }

    /// Turns every event into OpenTelemetry spans from now on.
    pub fn telemetry(&self, recorder: Arc<SpanRecorder>) {
        self.state.lock().telemetry = Some(recorder);
    }

    /// The history write failure that stopped the session, if any.
    pub fn failure(&self) -> Option<String> {
        self.state.lock().failure.clone()
    }
}

impl EventSink for SessionSink {
    fn emit(&self, event: Event) {
        let mut state = self.state.lock();
        // The history file is the root context's; children keep theirs in their own stores.
        if state.failure.is_none()
            && event.context.depth() == 0
            && let Some(history) = &mut state.history
            && let Err(e) = history.keep(&event.kind)
        {
            state.failure = Some(e.to_string());
            self.abort.cancel();
        }
        // The journal keeps every context's events; a run it cannot keep does not go on.
        if state.failure.is_none()
            && let Some(journal) = &mut state.journal
            && let Err(e) = journal.append(&event)
        {
            state.failure = Some(format!("the run journal: {e}"));
            self.abort.cancel();
        }
        if let Some(trace) = &mut state.trace {
            trace.record(&event);
        }
        if let Some(telemetry) = &state.telemetry {
            telemetry.record(&event);
        }
        state.renderer.render(&event);
    }
}
