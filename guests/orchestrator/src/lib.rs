//! A sample orchestrator. It registers two tools of its own — `delegate` (one specialist) and
//! `delegate_parallel` (several at once) — and offers its model only those and the read-only
//! host tools, so every change is made by a specialist: `planner` for a plan, `coder` to
//! change files, `researcher` to answer questions, `reviewer` for a verdict. Each specialist
//! runs in its own context (its own instance, history and limits) with only the tools of its
//! trade, and its result comes back as the tool's output. The orchestrator reads the results:
//! a reviewer's `request_changes` verdict or a failed specialist is called out to the model.
//!
//! More specialists — Markdown agents, other modules — are named in the config file's
//! `guest: {orchestrator.specialists: "security-auditor, docs-writer"}`: the model may hand
//! them tasks too, and each keeps the tools, model and limits its own file gives it.

use std::cell::RefCell;

use serde_json::Value;
use wonopcode_guest_sdk::{
    Agent, ContextResult, ContextStatus, CustomTool, CustomTools, Loop, LoopCapabilities,
    LoopError, Spawn, config, describe, export_loop, spawn_all, standard_capabilities,
};

/// What the orchestrator's own model may call besides its custom tools.
const OFFERED: &[&str] = &[
    "read",
    "glob",
    "grep",
    "list",
    "todo",
    "delegate",
    "delegate_parallel",
];

/// Limits of every specialist (the config file's `guest:` keys override the first two).
const MAX_ITERATIONS: u32 = 30;
const TIMEOUT_MS: u64 = 600_000;

thread_local! {
    static TOOLS: RefCell<CustomTools> = RefCell::new(CustomTools::default());
}

/// The tools each specialist may have.
fn trade(specialist: &str) -> Option<&'static [&'static str]> {
    match specialist {
        "coder" => Some(&["read", "edit", "write", "bash", "glob", "grep", "list"]),
        "researcher" | "reviewer" | "planner" => Some(&["read", "glob", "grep", "list"]),
        _ => None,
    }
}

/// A config number, else the default.
fn setting(key: &str, default: u64) -> u64 {
    config::get_config(key)
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The sample specialists, whose tools the orchestrator chooses.
const OWN_SPECIALISTS: &[&str] = &["planner", "coder", "researcher", "reviewer"];

/// The specialists the config file adds (`orchestrator.specialists`, comma-separated).
fn configured_specialists() -> Vec<String> {
    config::get_config("orchestrator.specialists")
        .map(|list| {
            list.split(',')
                .map(str::trim)
                .filter(|name| !name.is_empty() && !OWN_SPECIALISTS.contains(name))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// The child for one `{specialist, task}` object. A sample specialist gets the tools of its
/// trade and the orchestrator's iteration limit; a configured one keeps its own.
fn child(step: &Value) -> Result<Spawn, String> {
    let specialist = step["specialist"]
        .as_str()
        .ok_or("`specialist` (a string) is required")?;
    let task = step["task"]
        .as_str()
        .filter(|t| !t.is_empty())
        .ok_or("`task` (a non-empty string) is required")?;
    let spawn =
        Spawn::named(specialist, task).timeout_ms(setting("orchestrator.timeout-ms", TIMEOUT_MS));
    if let Some(tools) = trade(specialist) {
        let max_iterations = setting("orchestrator.max-iterations", u64::from(MAX_ITERATIONS));
        return Ok(spawn
            .allow(tools)
            .max_iterations(u32::try_from(max_iterations).unwrap_or(MAX_ITERATIONS)));
    }
    if configured_specialists()
        .iter()
        .any(|name| name == specialist)
    {
        return Ok(spawn);
    }
    let mut known: Vec<String> = OWN_SPECIALISTS.iter().map(|s| (*s).to_owned()).collect();
    known.extend(configured_specialists());
    Err(format!(
        "unknown specialist `{specialist}`: use {}",
        known.join(", ")
    ))
}

/// A result as the model reads it, with what the orchestrator noticed about it.
fn review(specialist: &str, result: &ContextResult) -> String {
    let mut text = format!("[{specialist}]\n{}", describe(result));
    if !matches!(result.status, ContextStatus::Completed) {
        text.push_str("note: this specialist did not finish; do not rely on its work.\n");
    }
    let verdict = result
        .data
        .as_deref()
        .and_then(|d| serde_json::from_str::<Value>(d).ok())
        .and_then(|d| d["verdict"].as_str().map(str::to_owned));
    if verdict.as_deref() == Some("request_changes") {
        text.push_str(
            "note: the reviewer requested changes; address its issues before answering.\n",
        );
    }
    text
}

fn delegate(arguments: &str) -> Result<String, String> {
    let step: Value = serde_json::from_str(arguments).map_err(|e| format!("bad arguments: {e}"))?;
    let result = child(&step)?.run()?;
    Ok(review(
        step["specialist"].as_str().unwrap_or_default(),
        &result,
    ))
}

fn delegate_parallel(arguments: &str) -> Result<String, String> {
    let args: Value = serde_json::from_str(arguments).map_err(|e| format!("bad arguments: {e}"))?;
    let steps = args["tasks"]
        .as_array()
        .filter(|t| !t.is_empty())
        .ok_or("`tasks` (a non-empty list) is required")?;
    let children = steps.iter().map(child).collect::<Result<Vec<_>, _>>()?;
    let results = spawn_all(&children, None);
    Ok(steps
        .iter()
        .zip(results)
        .map(|(step, result)| {
            let specialist = step["specialist"].as_str().unwrap_or_default();
            match result {
                Ok(result) => review(specialist, &result),
                Err(e) => format!("[{specialist}]\nnot started: {e}\n"),
            }
        })
        .collect::<Vec<_>>()
        .join("\n"))
}

/// The schema of one `{specialist, task}` step: the specialist is one of `names`.
fn step_schema(names: &[String]) -> String {
    serde_json::json!({
        "type": "object",
        "properties": {
            "specialist": {"type": "string", "enum": names},
            "task": {"type": "string", "minLength": 1}
        },
        "required": ["specialist", "task"]
    })
    .to_string()
}

struct Orchestrator;

impl Loop for Orchestrator {
    fn name() -> String {
        "orchestrator".to_owned()
    }

    fn capabilities() -> LoopCapabilities {
        LoopCapabilities {
            supports_sub_contexts: true,
            supports_custom_tools: true,
            ..standard_capabilities()
        }
    }

    fn on_start() -> Result<(), LoopError> {
        let configured = configured_specialists();
        let mut names: Vec<String> = OWN_SPECIALISTS.iter().map(|s| (*s).to_owned()).collect();
        names.extend(configured.iter().cloned());
        let step = step_schema(&names);
        let mut description = "Hand a task to a specialist and wait for its result: planner \
                               (a JSON plan), coder (changes files), researcher (answers \
                               questions, read-only), reviewer (a verdict, read-only)"
            .to_owned();
        if !configured.is_empty() {
            description.push_str(&format!(", and {}", configured.join(", ")));
        }
        description.push('.');
        TOOLS.with(|t| {
            let mut tools = t.borrow_mut();
            tools.register(CustomTool {
                name: "delegate".to_owned(),
                description,
                parameters_schema: step.clone(),
                run: delegate,
            })?;
            tools.register(CustomTool {
                name: "delegate_parallel".to_owned(),
                description: "Hand independent tasks to specialists that work at the same \
                              time; results come back in the order given."
                    .to_owned(),
                parameters_schema: format!(
                    r#"{{"type":"object","properties":{{"tasks":{{"type":"array","minItems":1,"items":{step}}}}},"required":["tasks"]}}"#
                ),
                run: delegate_parallel,
            })
        })
        .map_err(LoopError::ToolError)
    }

    fn handle_tool_call(tool_id: String, arguments: String) -> Result<String, String> {
        TOOLS.with(|t| t.borrow().dispatch(&tool_id, &arguments))
    }

    fn run_prompt(input: String) -> Result<String, LoopError> {
        with_agent(|agent| agent.run(input))
    }

    fn resume() -> Result<String, LoopError> {
        with_agent(|agent| agent.resume())
    }
}

/// Runs `f` on the orchestrator's agent: its delegation tools, and the host tools it offers.
fn with_agent(
    f: impl FnOnce(&Agent<'_>) -> Result<String, LoopError>,
) -> Result<String, LoopError> {
    TOOLS.with(|t| {
        f(&Agent {
            custom: Some(&t.borrow()),
            offered: Some(OFFERED),
            ..Agent::default()
        })
    })
}

export_loop!(Orchestrator);
