//! A coder specialist: changes code in the workspace with `read`, `edit`, `write` and `bash`
//! (and the search tools), through the SDK's standard loop. Whatever its parent allowed, it
//! uses only these; the files it changes come back to the parent as `modified-files`.

use wonopcode_guest_sdk::{Agent, Loop, LoopError, export_loop};

/// The coder's tools.
const TOOLS: &[&str] = &["read", "edit", "write", "bash", "glob", "grep", "list"];

/// Model turns a coding task may take.
const MAX_ROUNDS: usize = 30;

struct Coder;

impl Loop for Coder {
    fn name() -> String {
        "coder".to_owned()
    }

    fn run_prompt(input: String) -> Result<String, LoopError> {
        Agent::specialist(TOOLS, MAX_ROUNDS)?.run(input)
    }

    fn resume() -> Result<String, LoopError> {
        Agent::specialist(TOOLS, MAX_ROUNDS)?.resume()
    }
}

export_loop!(Coder);
