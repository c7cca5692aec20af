//! A sample orchestrator. It registers two tools of its own — `delegate` (one specialist) and
//! `delegate_parallel` (several at once) — and offers its model only those and the read-only
//! host tools, so every change is made by a specialist: `planner` for a plan, `coder` to
//! change files, `researcher` to answer questions, `reviewer` for a verdict. Each specialist
//! runs in its own context (its own instance, history and limits) with only the tools of its
//! trade, and its result comes back as the tool's output. The orchestrator reads the results:
//! a reviewer's `request_changes` verdict or a failed specialist is called out to the model.
//!
//! Each specialist runs on the model its work needs (seed 000's hierarchy): the planner and
//! the researcher on the provider's fast, cheap model, the coder on its strong one, the
//! reviewer on its deepest (`Tier`), each within a token budget of its own. The config file
//! chooses otherwise per specialist (`guest: {orchestrator.coder.model: "openai/gpt-5",
//! orchestrator.coder.max-tokens: "2000000"}`); a provider without tiers keeps the run's
//! model. What each specialist ran on and spent goes back to the model with its result and
//! ends the answer, as a ledger.
//!
//! More specialists — Markdown agents, other modules — are named in the config file's
//! `guest: {orchestrator.specialists: "security-auditor, docs-writer"}`: the model may hand
//! them tasks too, and each keeps the tools, model and limits its own file gives it.

use std::cell::RefCell;

use serde_json::Value;
use wonopcode_guest_sdk::{
    Agent, ContextResult, ContextStatus, CustomTool, CustomTools, Loop, LoopCapabilities,
    LoopError, Route, Spawn, Tier, config, describe, export_loop, spawn_all, spent,
    standard_capabilities,
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

/// Limits of every specialist (the config file's `guest:` keys override them).
const MAX_ITERATIONS: u32 = 30;
const TIMEOUT_MS: u64 = 600_000;

thread_local! {
    static TOOLS: RefCell<CustomTools> = RefCell::new(CustomTools::default());
    /// What each specialist of the current prompt ran on and spent, a line each.
    static LEDGER: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// What a sample specialist works with: the tools of its trade, the tier of model its work
/// needs, and the tokens it may use in all (input and output of every request).
struct Trade {
    tools: &'static [&'static str],
    tier: Tier,
    max_tokens: u64,
}

/// The trade of each sample specialist: research and planning read and sum up (a fast
/// model does), code needs a strong one, a review the deepest.
fn trade(specialist: &str) -> Option<Trade> {
    const READ_ONLY: &[&str] = &["read", "glob", "grep", "list"];
    Some(match specialist {
        "planner" => Trade {
            tools: READ_ONLY,
            tier: Tier::Fast,
            max_tokens: 200_000,
        },
        "researcher" => Trade {
            tools: &["read", "glob", "grep", "list", "webfetch", "websearch"],
            tier: Tier::Fast,
            max_tokens: 300_000,
        },
        "coder" => Trade {
            tools: &[
                "read",
                "edit",
                "write",
                "apply_patch",
                "bash",
                "glob",
                "grep",
                "list",
            ],
            tier: Tier::Strong,
            max_tokens: 1_000_000,
        },
        "reviewer" => Trade {
            tools: READ_ONLY,
            tier: Tier::Deep,
            max_tokens: 400_000,
        },
        _ => return None,
    })
}

/// A config number, else the default.
fn setting(key: &str, default: u64) -> u64 {
    config::get_config(key)
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The sample specialists, whose tools and models the orchestrator chooses.
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

/// The model a sample specialist runs on: `orchestrator.NAME.model` of the config file
/// (used as given: opened, or the spawn fails), else its tier's model of the run's provider
/// when the host can open it, else (`None`) the orchestrator's own.
fn route(specialist: &str, tier: Tier) -> Option<Route> {
    match config::get_config(&format!("orchestrator.{specialist}.model")) {
        Some(chosen) => Route::parse(&chosen),
        None => Route::of_tier(tier),
    }
}

/// The child for one `{specialist, task}` object, and the model it runs on as the ledger
/// names it. A sample specialist gets the tools of its trade, its tier's model, its token
/// budget and the orchestrator's iteration limit; a configured one keeps its own (its model
/// is its file's business: `None`).
fn child(step: &Value) -> Result<(Spawn, Option<String>), String> {
    let specialist = step["specialist"]
        .as_str()
        .ok_or("`specialist` (a string) is required")?;
    let task = step["task"]
        .as_str()
        .filter(|t| !t.is_empty())
        .ok_or("`task` (a non-empty string) is required")?;
    let spawn =
        Spawn::named(specialist, task).timeout_ms(setting("orchestrator.timeout-ms", TIMEOUT_MS));
    if let Some(trade) = trade(specialist) {
        let max_iterations = setting("orchestrator.max-iterations", u64::from(MAX_ITERATIONS));
        let max_tokens = setting(
            &format!("orchestrator.{specialist}.max-tokens"),
            trade.max_tokens,
        );
        let spawn = spawn
            .allow(trade.tools)
            .max_iterations(u32::try_from(max_iterations).unwrap_or(MAX_ITERATIONS))
            .max_tokens(max_tokens);
        return Ok(match route(specialist, trade.tier) {
            Some(route) => (
                spawn.prefer(Some(&route.provider), Some(&route.model)),
                Some(route.to_string()),
            ),
            None => (spawn, Route::current().map(|r| r.to_string())),
        });
    }
    if configured_specialists()
        .iter()
        .any(|name| name == specialist)
    {
        return Ok((spawn, None));
    }
    let mut known: Vec<String> = OWN_SPECIALISTS.iter().map(|s| (*s).to_owned()).collect();
    known.extend(configured_specialists());
    Err(format!(
        "unknown specialist `{specialist}`: use {}",
        known.join(", ")
    ))
}

/// A result as the model reads it — which model ran, what it spent, what the orchestrator
/// noticed — noted in the ledger of this prompt.
fn review(specialist: &str, model: Option<&str>, result: &ContextResult) -> String {
    let data = result
        .data
        .as_deref()
        .and_then(|d| serde_json::from_str::<Value>(d).ok())
        .unwrap_or_default();
    // A specialist that changed its model (the coder, for test work) names the one it ended on.
    let on = data["model"]
        .as_str()
        .or(model)
        .map(|m| format!(" on {m}"))
        .unwrap_or_default();
    let spent = spent(result);
    LEDGER.with(|l| l.borrow_mut().push(format!("- {specialist}{on}: {spent}")));
    let mut text = format!("[{specialist}{on}]\n{}spent: {spent}\n", describe(result));
    if !matches!(result.status, ContextStatus::Completed) {
        text.push_str("note: this specialist did not finish; do not rely on its work.\n");
    }
    if data["verdict"].as_str() == Some("request_changes") {
        text.push_str(
            "note: the reviewer requested changes; address its issues before answering.\n",
        );
    }
    text
}

fn delegate(arguments: &str) -> Result<String, String> {
    let step: Value = serde_json::from_str(arguments).map_err(|e| format!("bad arguments: {e}"))?;
    let (spawn, model) = child(&step)?;
    let result = spawn.run()?;
    Ok(review(
        step["specialist"].as_str().unwrap_or_default(),
        model.as_deref(),
        &result,
    ))
}

fn delegate_parallel(arguments: &str) -> Result<String, String> {
    let args: Value = serde_json::from_str(arguments).map_err(|e| format!("bad arguments: {e}"))?;
    let steps = args["tasks"]
        .as_array()
        .filter(|t| !t.is_empty())
        .ok_or("`tasks` (a non-empty list) is required")?;
    let (children, models): (Vec<Spawn>, Vec<Option<String>>) = steps
        .iter()
        .map(child)
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .unzip();
    let results = spawn_all(&children, None);
    Ok(steps
        .iter()
        .zip(models)
        .zip(results)
        .map(|((step, model), result)| {
            let specialist = step["specialist"].as_str().unwrap_or_default();
            match result {
                Ok(result) => review(specialist, model.as_deref(), &result),
                Err(e) => format!("[{specialist}]\nnot started: {e}\n"),
            }
        })
        .collect::<Vec<_>>()
        .join("\n"))
}

/// The answer with the ledger of the specialists it took, if it took any: each one's model
/// and what it spent, so the person reading the answer sees where the tokens went.
fn with_ledger(answer: String) -> String {
    let lines = LEDGER.with(|l| std::mem::take(&mut *l.borrow_mut()));
    if lines.is_empty() {
        return answer;
    }
    format!("{answer}\n\nSpecialists:\n{}", lines.join("\n"))
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

#[derive(Default)]
struct Orchestrator;

impl Loop for Orchestrator {
    fn name(&self) -> String {
        "orchestrator".to_owned()
    }

    fn capabilities(&self) -> LoopCapabilities {
        LoopCapabilities {
            supports_sub_contexts: true,
            supports_custom_tools: true,
            ..standard_capabilities()
        }
    }

    fn on_start(&mut self) -> Result<(), LoopError> {
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
                run: Box::new(delegate),
            })?;
            tools.register(CustomTool {
                name: "delegate_parallel".to_owned(),
                description: "Hand independent tasks to specialists that work at the same \
                              time; results come back in the order given."
                    .to_owned(),
                parameters_schema: format!(
                    r#"{{"type":"object","properties":{{"tasks":{{"type":"array","minItems":1,"items":{step}}}}},"required":["tasks"]}}"#
                ),
                run: Box::new(delegate_parallel),
            })
        })
        .map_err(LoopError::ToolError)
    }

    fn handle_tool_call(&mut self, tool_id: String, arguments: String) -> Result<String, String> {
        TOOLS.with(|t| t.borrow().dispatch(&tool_id, &arguments))
    }

    fn run_prompt(&mut self, input: String) -> Result<String, LoopError> {
        LEDGER.with(|l| l.borrow_mut().clear());
        with_agent(|agent| agent.run(input)).map(with_ledger)
    }

    fn resume(&mut self) -> Result<String, LoopError> {
        with_agent(|agent| agent.resume()).map(with_ledger)
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
