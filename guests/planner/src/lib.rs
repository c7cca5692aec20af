//! A planner specialist: looks around the workspace (read-only) and returns a plan as JSON,
//! both as its answer and through `__result_data__`:
//! `{"steps": [{"specialist": "coder" | "researcher" | "reviewer", "task": "..."}]}`.

use serde_json::Value;
use wonopcode_guest_sdk::{
    Agent, Loop, LoopError, export_loop, resume_for_json, run_for_json, set_result_data,
};

/// Read-only tools.
const TOOLS: &[&str] = &["read", "glob", "grep", "list"];

/// Model turns planning may take.
const MAX_ROUNDS: usize = 10;

/// Specialists a step may name.
const SPECIALISTS: &[&str] = &["coder", "researcher", "reviewer"];

/// What the model is asked to answer with.
const FORMAT: &str = "Answer with a JSON object: {\"steps\": [{\"specialist\": \
\"coder\" | \"researcher\" | \"reviewer\", \"task\": \"...\"}]}, the steps in order.";

/// At least one step, each naming a known specialist and a task.
fn check(value: &Value) -> Result<(), String> {
    let Some(steps) = value["steps"].as_array().filter(|s| !s.is_empty()) else {
        return Err("`steps` must be a non-empty list".to_owned());
    };
    for (i, step) in steps.iter().enumerate() {
        let known = step["specialist"]
            .as_str()
            .is_some_and(|s| SPECIALISTS.contains(&s));
        if !known {
            return Err(format!(
                "step {i}: `specialist` must be one of {}",
                SPECIALISTS.join(", ")
            ));
        }
        if step["task"].as_str().is_none_or(str::is_empty) {
            return Err(format!("step {i}: `task` must be a non-empty string"));
        }
    }
    Ok(())
}

#[derive(Default)]
struct Planner;

impl Loop for Planner {
    fn name(&self) -> String {
        "planner".to_owned()
    }

    fn run_prompt(&mut self, input: String) -> Result<String, LoopError> {
        plan(|agent| run_for_json(agent, format!("{input}\n\n{FORMAT}"), check))
    }

    fn resume(&mut self) -> Result<String, LoopError> {
        plan(|agent| resume_for_json(agent, check))
    }
}

/// The plan `answer` gets from the planner's agent, as its answer and its result data.
fn plan(
    answer: impl FnOnce(&Agent<'_>) -> Result<(String, Value), LoopError>,
) -> Result<String, LoopError> {
    let (_, plan) = answer(&Agent::specialist(TOOLS, MAX_ROUNDS)?)?;
    let plan = plan.to_string();
    set_result_data(&plan);
    Ok(plan)
}

export_loop!(Planner);
