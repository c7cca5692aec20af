//! The default guest loop: the native StandardLoop's algorithm, written against the
//! `wonopcode:agent-loop` world. It is the SDK's [`Agent`] with nothing changed: stream a
//! turn; store it; if the model asked for tools, check for a doom loop, run them in parallel
//! through the host (which applies permissions, validation and truncation, and shows them),
//! store the results, and go again. Tool failures go back to the model (fail-open). The host
//! enforces the iteration limit and counts usage; compaction runs in the host through
//! `storage.compact-if-needed`.

use wonopcode_guest_sdk::{Agent, Loop, LoopError, export_loop};

struct DefaultLoop;

impl Loop for DefaultLoop {
    fn name() -> String {
        "default".to_owned()
    }

    fn run_prompt(input: String) -> Result<String, LoopError> {
        Agent::default().run(input)
    }
}

export_loop!(DefaultLoop);
