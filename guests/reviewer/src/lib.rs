//! A reviewer specialist: reads the workspace (read-only tools) and returns a verdict as JSON
//! through `__result_data__`: `{"verdict": "approve" | "request_changes", "issues": [..]}`.
//! Its parent reads the verdict as data instead of parsing prose.

use serde_json::Value;
use wonopcode_guest_sdk::{
    Agent, Loop, LoopError, export_loop, resume_for_json, run_for_json, set_result_data,
};

/// Read-only tools.
const TOOLS: &[&str] = &["read", "glob", "grep", "list"];

/// Model turns a review may take.
const MAX_ROUNDS: usize = 20;

/// What the model is asked to answer with.
const FORMAT: &str = "When you are done, answer with a JSON object: \
{\"verdict\": \"approve\" or \"request_changes\", \"issues\": [\"...\"]}.";

/// A verdict is one of the two words, and `issues` a list of strings.
fn check(value: &Value) -> Result<(), String> {
    match value["verdict"].as_str() {
        Some("approve" | "request_changes") => {}
        _ => return Err("`verdict` must be \"approve\" or \"request_changes\"".to_owned()),
    }
    match &value["issues"] {
        Value::Array(items) if items.iter().all(Value::is_string) => Ok(()),
        _ => Err("`issues` must be a list of strings".to_owned()),
    }
}

#[derive(Default)]
struct Reviewer;

impl Loop for Reviewer {
    fn name(&self) -> String {
        "reviewer".to_owned()
    }

    fn run_prompt(&mut self, input: String) -> Result<String, LoopError> {
        review(|agent| run_for_json(agent, format!("{input}\n\n{FORMAT}"), check))
    }

    fn resume(&mut self) -> Result<String, LoopError> {
        review(|agent| resume_for_json(agent, check))
    }
}

/// The answer `answer` gets from the reviewer's agent, with its verdict as the result data.
fn review(
    answer: impl FnOnce(&Agent<'_>) -> Result<(String, Value), LoopError>,
) -> Result<String, LoopError> {
    let (answer, verdict) = answer(&Agent::specialist(TOOLS, MAX_ROUNDS)?)?;
    set_result_data(&verdict.to_string());
    Ok(answer)
}

export_loop!(Reviewer);
