//! Seed 000's custom-tool example, whole: a loop that registers two tools of its own and
//! handles their calls inside the guest.
//!
//! - `analyze_architecture {path, depth?}` lists the source files under `path` with the
//!   host's `glob` and hands them to the `analyzer` specialist (read-only tools), whose
//!   answer comes back as the tool's output.
//! - `delegate_to_specialist {specialist, task}` hands a task to `coder`, `researcher` or
//!   `reviewer` and returns its answer.
//!
//! Its own model is offered these two and the read-only host tools. The seed named the
//! modules `analyzer.wasm`, `coder.wasm`...; here they are the registry's names
//! (`examples/agents/registry.yaml`).

use std::cell::RefCell;

use serde_json::{Value, json};
use wonopcode_guest_sdk::{
    Agent, ContextResult, ContextStatus, CustomTool, CustomTools, Loop, LoopCapabilities,
    LoopError, Spawn, describe, export_loop, standard_capabilities, tools,
};

/// What its own model may call besides its custom tools.
const OFFERED: &[&str] = &[
    "read",
    "glob",
    "grep",
    "list",
    "analyze_architecture",
    "delegate_to_specialist",
];

/// The specialists `delegate_to_specialist` names.
const SPECIALISTS: &[&str] = &["coder", "researcher", "reviewer"];

/// How long a specialist may take: the seed's five minutes.
const TIMEOUT_MS: u64 = 300_000;

/// Files listed to the analyzer at most: a big tree is named by its first files, and the
/// analyzer globs and greps the rest itself.
const MAX_FILES: usize = 200;

thread_local! {
    static TOOLS: RefCell<CustomTools> = RefCell::new(CustomTools::default());
}

/// A specialist's result as its tool's output: its answer, or why it did not finish.
fn outcome(who: &str, result: &ContextResult) -> Result<String, String> {
    match &result.status {
        ContextStatus::Completed => Ok(result.response.clone()),
        _ => Err(format!("the {who} did not finish:\n{}", describe(result))),
    }
}

fn analyze_architecture(arguments: &str) -> Result<String, String> {
    let args: Value = serde_json::from_str(arguments).map_err(|e| format!("bad arguments: {e}"))?;
    let path = args["path"]
        .as_str()
        .filter(|p| !p.is_empty())
        .ok_or("`path` (a non-empty string) is required")?
        .trim_end_matches('/');
    let deep = args["depth"].as_str() == Some("deep");
    let pattern = if path == "." {
        "**/*".to_owned()
    } else {
        format!("{path}/**/*")
    };
    let listed = tools::execute_tool("glob", &json!({ "pattern": pattern }).to_string())?;
    if !listed.success {
        return Err(format!(
            "cannot list {path}: {}",
            listed.error.unwrap_or(listed.content)
        ));
    }
    let files: Vec<&str> = listed.content.lines().take(MAX_FILES).collect();
    let task = format!(
        "Analyze the architecture of the code under `{path}`{}: its parts, how they depend on \
         each other, the patterns it follows and the problems you see. Its files:\n{}",
        if deep { ", in depth" } else { ", briefly" },
        files.join("\n")
    );
    let result = Spawn::named("analyzer", task)
        .allow(&["read", "grep", "glob", "list"])
        .timeout_ms(TIMEOUT_MS)
        .run()?;
    outcome("analyzer", &result)
}

fn delegate_to_specialist(arguments: &str) -> Result<String, String> {
    let args: Value = serde_json::from_str(arguments).map_err(|e| format!("bad arguments: {e}"))?;
    let specialist = args["specialist"]
        .as_str()
        .ok_or("`specialist` (a string) is required")?;
    if !SPECIALISTS.contains(&specialist) {
        return Err(format!(
            "unknown specialist `{specialist}`: use {}",
            SPECIALISTS.join(", ")
        ));
    }
    let task = args["task"]
        .as_str()
        .filter(|t| !t.is_empty())
        .ok_or("`task` (a non-empty string) is required")?;
    let result = Spawn::named(specialist, task)
        .timeout_ms(TIMEOUT_MS)
        .run()?;
    outcome(specialist, &result)
}

#[derive(Default)]
struct Architect;

impl Loop for Architect {
    fn name(&self) -> String {
        "architect".to_owned()
    }

    fn capabilities(&self) -> LoopCapabilities {
        LoopCapabilities {
            supports_sub_contexts: true,
            supports_custom_tools: true,
            ..standard_capabilities()
        }
    }

    fn on_start(&mut self) -> Result<(), LoopError> {
        TOOLS.with(|t| {
            let mut tools = t.borrow_mut();
            tools.register(CustomTool {
                name: "analyze_architecture".to_owned(),
                description: "Deeply analyze the architecture of a codebase, identifying \
                              patterns, dependencies, and potential issues"
                    .to_owned(),
                parameters_schema: json!({
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "description": "Root path to analyze"},
                        "depth": {"type": "string", "enum": ["shallow", "deep"], "default": "shallow"}
                    },
                    "required": ["path"]
                })
                .to_string(),
                run: Box::new(analyze_architecture),
            })?;
            tools.register(CustomTool {
                name: "delegate_to_specialist".to_owned(),
                description: "Delegate a subtask to a specialist agent".to_owned(),
                parameters_schema: json!({
                    "type": "object",
                    "properties": {
                        "specialist": {"type": "string", "enum": SPECIALISTS},
                        "task": {"type": "string", "description": "The task to delegate"}
                    },
                    "required": ["specialist", "task"]
                })
                .to_string(),
                run: Box::new(delegate_to_specialist),
            })
        })
        .map_err(LoopError::ToolError)
    }

    fn handle_tool_call(&mut self, tool_id: String, arguments: String) -> Result<String, String> {
        TOOLS.with(|t| t.borrow().dispatch(&tool_id, &arguments))
    }

    fn run_prompt(&mut self, input: String) -> Result<String, LoopError> {
        with_agent(|agent| agent.run(input))
    }

    fn resume(&mut self) -> Result<String, LoopError> {
        with_agent(|agent| agent.resume())
    }
}

/// Runs `f` on its agent: its two tools and the read-only host tools.
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

export_loop!(Architect);
