//! A Rust orchestrator over specialists written in other languages. It hands the user's task
//! to `js-researcher` (JavaScript: what the code does, and the files it read) and
//! `python-reviewer` (Python: a verdict as data) at the same time, through the registry and
//! the parallel spawn call, then has its own model write the answer from both results.
//! Neither specialist can write: each keeps to its read-only trade.

use wonopcode_guest_sdk::{
    Agent, Loop, LoopCapabilities, LoopError, Spawn, describe, export_loop, spawn_all,
    standard_capabilities,
};

/// The specialists, by registry name, and what each is asked.
const SPECIALISTS: [(&str, &str); 2] = [
    (
        "js-researcher",
        "Find out what the code involved does, file by file.",
    ),
    (
        "python-reviewer",
        "Review the code involved for bugs and risks.",
    ),
];

/// Read-only tools each specialist may have.
const READ_ONLY: &[&str] = &["read", "glob", "grep", "list"];

/// Model turns of each specialist.
const MAX_ITERATIONS: u32 = 20;

#[derive(Default)]
struct PolyglotOrchestrator;

impl Loop for PolyglotOrchestrator {
    fn name(&self) -> String {
        "polyglot-orchestrator".to_owned()
    }

    fn capabilities(&self) -> LoopCapabilities {
        LoopCapabilities {
            supports_sub_contexts: true,
            ..standard_capabilities()
        }
    }

    fn run_prompt(&mut self, input: String) -> Result<String, LoopError> {
        let children: Vec<Spawn> = SPECIALISTS
            .iter()
            .map(|(name, ask)| {
                Spawn::named(name, format!("{ask}\n\nTask: {input}"))
                    .allow(READ_ONLY)
                    .max_iterations(MAX_ITERATIONS)
            })
            .collect();
        let reports: Vec<String> = SPECIALISTS
            .iter()
            .zip(spawn_all(&children, None))
            .map(|((name, _), result)| match result {
                Ok(result) => format!("[{name}]\n{}", describe(&result)),
                Err(e) => format!("[{name}]\nnot started: {e}\n"),
            })
            .collect();
        // The model answers from the reports alone: it is offered no tools.
        Agent {
            offered: Some(&[]),
            ..Agent::default()
        }
        .run(format!(
            "{input}\n\nYour specialists reported:\n\n{}\nAnswer the task from their reports.",
            reports.join("\n")
        ))
    }
}

export_loop!(PolyglotOrchestrator);
