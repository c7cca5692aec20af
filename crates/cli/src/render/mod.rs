//! The consumer of the event stream: persists messages to the history file and renders
//! events, either for a person (terminal) or for machines (JSONL).

mod jsonl;
mod terminal;
mod tree;

use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;
use wonopcode_agent_loop::{Event, EventKind, EventSink};

pub use jsonl::JsonlRenderer;
pub use terminal::TerminalRenderer;

use crate::history::History;
use crate::trace::TraceRecorder;

/// Shows events to someone.
pub trait Renderer: Send {
    /// Renders one event.
    fn render(&mut self, event: &Event);
}

struct State {
    history: Option<History>,
    renderer: Box<dyn Renderer>,
    failure: Option<String>,
    trace: Option<TraceRecorder>,
}

/// The CLI's event sink. Synchronous, so a message is on disk before the loop goes on; a
/// history write failure cancels the session (`abort`) and is reported by `failure`.
pub struct CliSink {
    state: Mutex<State>,
    abort: CancellationToken,
}

impl CliSink {
    /// A sink persisting to `history` (if any) and rendering with `renderer`.
    pub fn new(
        history: Option<History>,
        renderer: Box<dyn Renderer>,
        abort: CancellationToken,
        trace: bool,
    ) -> Self {
        Self {
            state: Mutex::new(State {
                history,
                renderer,
                failure: None,
                trace: trace.then(TraceRecorder::default),
            }),
            abort,
        }
    }

    /// Writes the trace recorded so far (`--trace`) to `path`.
    pub fn write_trace(&self, path: &std::path::Path) -> std::io::Result<()> {
        match &self.state.lock().trace {
            Some(trace) => trace.write(path),
            None => Ok(()),
        }
    }

    /// The history write failure that stopped the session, if any.
    pub fn failure(&self) -> Option<String> {
        self.state.lock().failure.clone()
    }
}

impl EventSink for CliSink {
    fn emit(&self, event: Event) {
        let mut state = self.state.lock();
        // The history file is the root context's; children keep theirs in their own stores.
        if state.failure.is_none()
            && event.context.depth() == 0
            && let Some(history) = &mut state.history
        {
            let written = match &event.kind {
                EventKind::MessageCreated { message } => history.append(message),
                EventKind::ContextCompacted { messages, .. } => history.reset(messages),
                _ => Ok(()),
            };
            if let Err(e) = written {
                state.failure = Some(format!("{e:#}"));
                self.abort.cancel();
            }
        }
        if let Some(trace) = &mut state.trace {
            trace.record(&event);
        }
        state.renderer.render(&event);
    }
}
