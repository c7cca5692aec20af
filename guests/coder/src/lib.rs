//! A coder specialist: changes code in the workspace with `read`, `edit`, `write`,
//! `apply_patch` and `bash` (and the search tools), through the SDK's standard loop. Whatever
//! its parent allowed, it uses only these; the files it changes come back to the parent as
//! `modified-files`.
//!
//! As seed 000's coder, it has a tool of its own, `run_tests`: it runs the workspace's test
//! suite through the host's `bash` (sandboxed, and asked about like any command) and says
//! whether it passed, with the end of its output. The command is the config file's
//! `coder.test-command`, else the one the workspace's files show (see [`SUITES`]).
//!
//! A task about tests or debugging switches it to the provider's deepest model
//! ([`Tier::Deep`]), or to the config's `coder.debug-model`; `coder.debug-model: "none"`
//! keeps the model it was given. The switch is said on screen, and the result's data names
//! the model it switched to (`{"model": "anthropic/claude-opus-4-5"}`).

use std::cell::RefCell;

use serde_json::json;
use wonopcode_guest_sdk::{
    Agent, CustomTool, CustomTools, Loop, LoopCapabilities, LoopError, Route, Tier, config,
    export_loop, set_result_data, standard_capabilities, tools, ui,
};

/// The coder's tools.
const TOOLS: &[&str] = &[
    "read",
    "edit",
    "write",
    "apply_patch",
    "bash",
    "glob",
    "grep",
    "list",
    "run_tests",
];

/// Model turns a coding task may take.
const MAX_ROUNDS: usize = 30;

/// A workspace's test command by the file that shows it, first match wins.
const SUITES: &[(&str, &str)] = &[
    ("Cargo.toml", "cargo test"),
    ("package.json", "npm test"),
    ("go.mod", "go test ./..."),
    ("pyproject.toml", "python3 -m pytest -q"),
    ("pytest.ini", "python3 -m pytest -q"),
    ("setup.py", "python3 -m pytest -q"),
    ("Makefile", "make test"),
    ("makefile", "make test"),
];

/// Lines of a test run's output the model gets (its end, where the summary is).
const OUTPUT_LINES: usize = 40;

thread_local! {
    static OWN: RefCell<CustomTools> = RefCell::new(CustomTools::default());
}

/// The command that runs this workspace's tests, or why there is none.
fn test_command() -> Result<String, String> {
    if let Some(command) = config::get_config("coder.test-command").filter(|c| !c.is_empty()) {
        return Ok(command);
    }
    let listing = tools::execute_tool("list", &json!({"path": ".", "depth": 1}).to_string())?;
    if !listing.success {
        return Err(format!("cannot list the workspace: {}", listing.content));
    }
    let files: Vec<&str> = listing.content.lines().map(str::trim).collect();
    SUITES
        .iter()
        .find(|(file, _)| files.contains(file))
        .map(|(_, command)| (*command).to_owned())
        .ok_or_else(|| {
            "no test suite found: the workspace has none of Cargo.toml, package.json, go.mod, \
             pyproject.toml, pytest.ini, setup.py or a Makefile (set `coder.test-command` in \
             the config file's `guest:` section)"
                .to_owned()
        })
}

/// `run_tests`: runs the suite and says how it went.
fn run_tests(_arguments: &str) -> Result<String, String> {
    let command = test_command()?;
    let run = tools::execute_tool("bash", &json!({"command": command}).to_string())?;
    let output = run.content.lines().collect::<Vec<_>>();
    let tail = output[output.len().saturating_sub(OUTPUT_LINES)..].join("\n");
    if run.success {
        Ok(format!("All tests passed (`{command}`).\n{tail}"))
    } else {
        // A failing suite is an answer, not a tool failure: the model reads it and fixes.
        Ok(format!("Tests failed (`{command}`):\n{tail}"))
    }
}

/// Whether a task is about tests or debugging: a word of it starts with `test` or `debug`
/// (tests, testing, debugger), or is `failing`, `fails` or `broken`.
fn is_test_or_debug(task: &str) -> bool {
    task.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .any(|word| {
            word.starts_with("test")
                || word.starts_with("debug")
                || matches!(word, "failing" | "fails" | "broken")
        })
}

/// Switches to the model for test and debug work when the task is such work.
fn choose_model(task: &str) -> Result<(), LoopError> {
    if !is_test_or_debug(task) {
        return Ok(());
    }
    let wanted = match config::get_config("coder.debug-model") {
        Some(chosen) if chosen == "none" => return Ok(()),
        // A model the person named is used or the run fails: never quietly another.
        Some(chosen) => Route::parse(&chosen),
        None => Route::of_tier(Tier::Deep),
    };
    let Some(wanted) = wanted else {
        return Ok(());
    };
    if Route::current().as_ref() == Some(&wanted) {
        return Ok(());
    }
    wanted
        .select()
        .map_err(|e| LoopError::ProviderError(format!("the debug model {wanted}: {e}")))?;
    ui::show_message(
        ui::MessageLevel::Info,
        &format!("coder: switched to {wanted} for test and debug work"),
    );
    // The parent chose the model it started on; the result says which one finished.
    set_result_data(&json!({"model": wanted.to_string()}).to_string());
    Ok(())
}

/// Runs `f` on the coder's agent: its trade's tools, `run_tests` among them.
fn with_agent(
    f: impl FnOnce(&Agent<'_>) -> Result<String, LoopError>,
) -> Result<String, LoopError> {
    OWN.with(|own| {
        let own = own.borrow();
        f(&Agent {
            custom: Some(&own),
            ..Agent::specialist(TOOLS, MAX_ROUNDS)?
        })
    })
}

#[derive(Default)]
struct Coder;

impl Loop for Coder {
    fn name(&self) -> String {
        "coder".to_owned()
    }

    fn capabilities(&self) -> LoopCapabilities {
        LoopCapabilities {
            supports_custom_tools: true,
            ..standard_capabilities()
        }
    }

    fn on_start(&mut self) -> Result<(), LoopError> {
        OWN.with(|own| {
            own.borrow_mut().register(CustomTool {
                name: "run_tests".to_owned(),
                description: "Run the workspace's test suite and get whether it passed, with \
                              the end of its output."
                    .to_owned(),
                parameters_schema: json!({"type": "object", "properties": {}}).to_string(),
                run: Box::new(run_tests),
            })
        })
        .map_err(LoopError::ToolError)
    }

    fn handle_tool_call(&mut self, tool_id: String, arguments: String) -> Result<String, String> {
        OWN.with(|own| own.borrow().dispatch(&tool_id, &arguments))
    }

    fn run_prompt(&mut self, input: String) -> Result<String, LoopError> {
        choose_model(&input)?;
        with_agent(|agent| agent.run(input))
    }

    fn resume(&mut self) -> Result<String, LoopError> {
        with_agent(|agent| agent.resume())
    }
}

export_loop!(Coder);
