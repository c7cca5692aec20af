//! The default guest loop: the native StandardLoop's algorithm, written against the
//! `wonopcode:agent-loop` world. It is the SDK's [`Agent`] with nothing changed: run a turn
//! (the host compacts if needed, streams and stores it, and checks it for a doom loop); if
//! the model asked for tools, run its tool round on the host (permissions, validation,
//! truncation, suspension; the results stored), and go again. Tool failures go back to the
//! model (fail-open). The rules of the run are the host's, the same as for StandardLoop.

use wonopcode_guest_sdk::{Agent, Loop, LoopError, export_loop};

#[derive(Default)]
struct DefaultLoop;

impl Loop for DefaultLoop {
    fn name(&self) -> String {
        "default".to_owned()
    }

    fn run_prompt(&mut self, input: String) -> Result<String, LoopError> {
        Agent::default().run(input)
    }

    fn resume(&mut self) -> Result<String, LoopError> {
        Agent::default().resume()
    }
}

export_loop!(DefaultLoop);
