//! Seed 000's analyzer specialist, which its `analyze_architecture` tool spawns: it reads the
//! files its task lists and describes the codebase's architecture — its parts, how they
//! depend on each other, the patterns it follows and the problems it sees — with read-only
//! tools (`read`, `grep`, `glob`, `list`), so it cannot change a file even when its parent
//! would let it.

use wonopcode_guest_sdk::{Agent, Loop, LoopError, export_loop};

/// Read-only tools.
const TOOLS: &[&str] = &["read", "grep", "glob", "list"];

/// Model turns an analysis may take.
const MAX_ROUNDS: usize = 20;

#[derive(Default)]
struct Analyzer;

impl Loop for Analyzer {
    fn name(&self) -> String {
        "analyzer".to_owned()
    }

    fn run_prompt(&mut self, input: String) -> Result<String, LoopError> {
        Agent::specialist(TOOLS, MAX_ROUNDS)?.run(input)
    }

    fn resume(&mut self) -> Result<String, LoopError> {
        Agent::specialist(TOOLS, MAX_ROUNDS)?.resume()
    }
}

export_loop!(Analyzer);
