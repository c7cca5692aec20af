//! A researcher specialist: answers questions about the workspace and the web with read-only
//! tools (`read`, `glob`, `grep`, `list`; `webfetch` for a page, asked about like any network
//! access; `websearch` when the config file names a search engine). It cannot change a file
//! even when its parent would let it.

use wonopcode_guest_sdk::{Agent, Loop, LoopError, export_loop};

/// Read-only tools (those the host has: `websearch` only with a search engine configured).
const TOOLS: &[&str] = &["read", "glob", "grep", "list", "webfetch", "websearch"];

/// Model turns a question may take.
const MAX_ROUNDS: usize = 20;

#[derive(Default)]
struct Researcher;

impl Loop for Researcher {
    fn name(&self) -> String {
        "researcher".to_owned()
    }

    fn run_prompt(&mut self, input: String) -> Result<String, LoopError> {
        Agent::specialist(TOOLS, MAX_ROUNDS)?.run(input)
    }

    fn resume(&mut self) -> Result<String, LoopError> {
        Agent::specialist(TOOLS, MAX_ROUNDS)?.resume()
    }
}

export_loop!(Researcher);
