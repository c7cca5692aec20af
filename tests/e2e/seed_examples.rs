//! Seed 000's examples, whole, on the real binary: the sample orchestrator routes each
//! specialist to the model its work needs and reports what each spent; the sample coder runs
//! the workspace's tests with its own `run_tests` tool and switches model for test and debug
//! work. A replayed response is checked against the model that asked for it, so a specialist
//! on the wrong model fails these runs.

use std::process::Output;

use serde_json::{Value, json};
use wonopcode_wasm_host::guest_paths::{CODER, ORCHESTRATOR, PLANNER};

use crate::support::{
    Scratch, answer, calling, copy_dir, events, model_transcript, repo_root, stderr, wonopcode,
};

/// Anthropic's `id`, as a transcript records it.
fn anthropic(id: &str) -> Value {
    json!({"id": id, "provider": "anthropic", "context_window": 200000, "max_output": 64000})
}

/// The finished tool item of call `id` in context `context`.
fn result_of(events: &[Value], context: &str, id: &str) -> Value {
    events
        .iter()
        .find(|e| {
            e["type"] == "item.completed" && e["context"] == context && e["item"]["call_id"] == id
        })
        .unwrap_or_else(|| panic!("no result for call {id} in {context}: {events:?}"))["item"]
        .clone()
}

/// The run's final answer.
fn final_answer(events: &[Value]) -> String {
    events
        .iter()
        .rev()
        .find(|e| e["type"] == "turn.completed")
        .and_then(|_| {
            events.iter().rev().find(|e| {
                e["type"] == "item.completed"
                    && e["context"] == "0"
                    && e["item"]["kind"] == "agent_message"
            })
        })
        .map(|e| e["item"]["text"].as_str().unwrap_or_default().to_owned())
        .unwrap_or_default()
}

/// Runs the sample loop `name` (a registry of the sample guests) on `scratch`, replaying
/// `responses` recorded under Anthropic's Sonnet, with `config` as the config file.
fn run_sample(
    scratch: &Scratch,
    name: &str,
    config: &str,
    responses: &[(&str, Option<Value>, Vec<Value>)],
    prompt: &str,
) -> Output {
    let loops = scratch.outside("loops");
    std::fs::create_dir_all(&loops).unwrap();
    std::fs::write(
        loops.join("registry.yaml"),
        format!(
            "modules:\n  orchestrator:\n    path: {ORCHESTRATOR}\n  coder:\n    path: {CODER}\n  planner:\n    path: {PLANNER}\n"
        ),
    )
    .unwrap();
    let t = scratch.outside("t.jsonl");
    std::fs::write(
        &t,
        model_transcript(anthropic("claude-sonnet-4-5"), responses),
    )
    .unwrap();
    wonopcode()
        .env_remove("WONOPCODE_AGENT_LOOPS_PATH")
        .arg("--config")
        .arg(scratch.config(config))
        .arg("--loops-dir")
        .arg(&loops)
        .args(["--agent-loop-name", name, "--yes", "--json", "--replay"])
        .arg(&t)
        .arg("-C")
        .arg(scratch.ws())
        .arg(prompt)
        .output()
        .unwrap()
}

/// Runs the example `name` of `examples/agents` (its registry, prompt and recorded
/// transcript) on a fresh copy of its workspace, with events as JSON Lines.
fn example(name: &str) -> Output {
    let scratch = Scratch::new();
    let agents = repo_root().join("examples/agents");
    copy_dir(&agents.join("workspace"), &scratch.ws());
    let prompt = std::fs::read_to_string(agents.join(format!("prompts/{name}.txt"))).unwrap();
    wonopcode()
        .env_remove("WONOPCODE_AGENT_LOOPS_PATH")
        .arg("--loops-dir")
        .arg(&agents)
        .args(["--agent-loop-name", name, "--yes", "--json", "--replay"])
        .arg(agents.join(format!("transcripts/{name}.jsonl")))
        .arg("-C")
        .arg(scratch.ws())
        .arg(prompt.trim())
        .output()
        .unwrap()
}

#[test]
fn the_orchestrator_example_routes_each_specialist_by_its_work_and_reports_what_it_spent() {
    let out = example("orchestrator");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events = events(&out);
    // Each specialist's result says which model ran it and what it spent.
    let planned = result_of(&events, "0", "toolu_01");
    let planned = planned["output"].as_str().unwrap();
    assert!(
        planned.starts_with("[planner on anthropic/claude-haiku-4-5]"),
        "{planned}"
    );
    assert!(
        planned.contains("spent: 3,300 input + 350 output tokens, $0.0050"),
        "{planned}"
    );
    // The coder whose task is to test switched itself to the deepest model and said so; its
    // run_tests ran the workspace's Makefile.
    let switched = events.iter().any(|e| {
        e["context"] == "0.2"
            && e["item"]["kind"] == "info"
            && e["item"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("switched to anthropic/claude-opus-4-5"))
    });
    assert!(switched, "{events:?}");
    let tests = result_of(&events, "0.2", "toolu_07b");
    assert!(
        tests["output"]
            .as_str()
            .is_some_and(|o| o.starts_with("All tests passed (`make test`).")),
        "{tests}"
    );
    let ledger = final_answer(&events);
    for line in [
        "- planner on anthropic/claude-haiku-4-5: 3,300 input + 350 output tokens, $0.0050",
        "- coder on anthropic/claude-opus-4-5: 8,550 input + 350 output tokens, $0.0515",
        "- coder on anthropic/claude-sonnet-4-5: 4,200 input + 150 output tokens, $0.0149",
        "- reviewer on anthropic/claude-opus-4-5: 3,600 input + 190 output tokens, $0.0227",
    ] {
        assert!(ledger.contains(line), "{line} in: {ledger}");
    }
}

#[test]
fn a_model_the_config_names_for_a_specialist_is_used_or_its_spawn_fails() {
    let step = json!({"specialist": "planner", "task": "Plan it."}).to_string();
    // Named and recorded: the planner runs on it (the replay checks the model).
    let scratch = Scratch::new();
    let out = run_sample(
        &scratch,
        "orchestrator",
        "guest:\n  orchestrator.planner.model: \"anthropic/claude-opus-4-5\"\n  orchestrator.planner.max-tokens: \"5000\"\n",
        &[
            ("0", None, calling("d1", "delegate", &step)),
            (
                "0.1",
                Some(anthropic("claude-opus-4-5")),
                answer("{\"steps\": []}"),
            ),
            ("0", None, answer("Planned.")),
        ],
        "Plan something.",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let planned = result_of(&events(&out), "0", "d1");
    assert!(
        planned["output"]
            .as_str()
            .is_some_and(|o| o.starts_with("[planner on anthropic/claude-opus-4-5]")),
        "{planned}"
    );

    // Named and not to be had: the spawn fails and says why; no other model stands in.
    let scratch = Scratch::new();
    let out = run_sample(
        &scratch,
        "orchestrator",
        "guest:\n  orchestrator.planner.model: \"claude-3-5-haiku-latest\"\n",
        &[
            ("0", None, calling("d1", "delegate", &step)),
            ("0", None, answer("The planner could not start.")),
        ],
        "Plan something.",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events = events(&out);
    let refused = result_of(&events, "0", "d1");
    assert_eq!(refused["status"], "failed", "{refused}");
    let why = refused["output"].as_str().unwrap();
    assert!(
        why.contains("preferred model") && why.contains("claude-3-5-haiku-latest"),
        "{why}"
    );
    assert!(!events.iter().any(|e| e["context"] == "0.1"
        && e["type"] == "item.completed"
        && e["item"]["kind"] == "agent_message"));
}

#[test]
fn the_coder_runs_the_workspace_tests_with_its_own_tool() {
    let run_tests = || {
        vec![
            ("0", None, calling("t1", "run_tests", "{}")),
            ("0", None, answer("Read the results.")),
        ]
    };
    let no_switch = "guest:\n  coder.debug-model: none\n";

    // A Makefile whose test fails: the model reads the failure; the tool itself worked.
    let scratch = Scratch::new();
    scratch.file(
        "Makefile",
        "test:\n\t@echo \"check_add: expected 3, got -1\"\n\t@exit 1\n",
    );
    let out = run_sample(&scratch, "coder", no_switch, &run_tests(), "Fix add.");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let result = result_of(&events(&out), "0", "t1");
    assert_eq!(result["status"], "completed", "{result}");
    let output = result["output"].as_str().unwrap();
    assert!(
        output.starts_with("Tests failed (`make test`):"),
        "{output}"
    );
    assert!(output.contains("check_add: expected 3, got -1"), "{output}");

    // The config's command comes first.
    let scratch = Scratch::new();
    scratch.file("check.sh", "echo '2 passed'\n");
    let out = run_sample(
        &scratch,
        "coder",
        "guest:\n  coder.debug-model: none\n  coder.test-command: \"sh check.sh\"\n",
        &run_tests(),
        "Fix add.",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let result = result_of(&events(&out), "0", "t1");
    let output = result["output"].as_str().unwrap();
    assert!(
        output.starts_with("All tests passed (`sh check.sh`)."),
        "{output}"
    );
    assert!(output.ends_with("2 passed"), "{output}");

    // Nothing to run: the call fails and says what was looked for.
    let scratch = Scratch::new();
    scratch.file("notes.txt", "no tests here\n");
    let out = run_sample(&scratch, "coder", no_switch, &run_tests(), "Fix add.");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let result = result_of(&events(&out), "0", "t1");
    assert_eq!(result["status"], "failed", "{result}");
    assert!(
        result["output"]
            .as_str()
            .is_some_and(|o| o.starts_with("no test suite found")),
        "{result}"
    );
}

#[test]
fn a_test_or_debug_task_switches_the_coder_to_the_deep_model() {
    let debugged = |config: &str, model: Option<Value>, prompt: &str| {
        let scratch = Scratch::new();
        let out = run_sample(
            &scratch,
            "coder",
            config,
            &[("0", model, answer("Found it."))],
            prompt,
        );
        (out.status.code(), stderr(&out), events(&out))
    };
    // The replay refuses a response asked of a model it was not recorded from.
    let (code, err, events) = debugged(
        "guest: {}\n",
        Some(anthropic("claude-opus-4-5")),
        "Debug the failing test in src/lib.rs.",
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(
        events
            .iter()
            .any(|e| e["item"]["message"].as_str().is_some_and(
                |m| m == "coder: switched to anthropic/claude-opus-4-5 for test and debug work"
            )),
        "{events:?}"
    );
    // Other work stays on the model it was given; so does test work when the config says so.
    for (config, prompt) in [
        ("guest: {}\n", "Rename add to sum."),
        (
            "guest:\n  coder.debug-model: none\n",
            "Debug the failing test in src/lib.rs.",
        ),
        // "latest" holds "test" but is not about tests.
        ("guest: {}\n", "Use the latest API."),
    ] {
        let (code, err, _) = debugged(config, None, prompt);
        assert_eq!(code, Some(0), "{prompt}: {err}");
    }
}

/// Seed 000's custom-tool example (`guests/architect`): `analyze_architecture` lists the
/// workspace with the host's `glob` and hands the files to the `analyzer` specialist, whose
/// answer is the tool's output; `delegate_to_specialist` hands a question to the researcher.
#[test]
fn the_seeds_custom_tool_example_analyzes_through_the_analyzer_and_delegates() {
    let out = example("architect");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events = events(&out);
    let started: Vec<(String, String)> = events
        .iter()
        .filter(|e| e["type"] == "context.started")
        .map(|e| {
            (
                e["module"].as_str().unwrap_or_default().to_owned(),
                e["task"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(started.len(), 2, "{started:?}");
    assert_eq!(started[0].0, "analyzer");
    assert!(
        started[0].1.contains("greet.sh") && started[0].1.contains("Makefile"),
        "the analyzer is given the files glob found: {}",
        started[0].1
    );
    assert_eq!(started[1].0, "researcher");
    let analysis = result_of(&events, "0", "toolu_a1");
    assert!(
        analysis["output"]
            .as_str()
            .is_some_and(|o| o.starts_with("A one-script project")),
        "the analyzer's answer is the tool's output: {analysis}"
    );
    let delegated = result_of(&events, "0", "toolu_a2");
    assert_eq!(
        delegated["output"],
        "Yes: the README says to run `make test`."
    );
    assert!(final_answer(&events).starts_with("The project is one shell script"));
}
