//! The multi-agent example (`examples/agents`): the sample orchestrator guest delegating to the
//! planner, two coders in parallel and the reviewer, each a real guest in its own context,
//! with real tools on a scratch workspace, replayed offline from a recorded transcript.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use crate::events_doc::{documented_child_sequence, documented_schema, documented_sequence};
use crate::support::{
    Scratch, call, copy_dir, done, events, priced_transcript_of, repo_root, run_named_priced,
    stderr, text, usage, wonopcode,
};

pub(crate) fn agents() -> PathBuf {
    repo_root().join("examples/agents")
}

/// Runs example `name` (its prompt and transcript) on a fresh copy of the workspace.
fn run(name: &str, transcript: &Path, extra: &[&str]) -> (Scratch, Output) {
    let s = Scratch::new();
    copy_dir(&agents().join("workspace"), &s.ws());
    let prompt = std::fs::read_to_string(agents().join(format!("prompts/{name}.txt"))).unwrap();
    let out = wonopcode()
        .args(extra)
        .arg("--loops-dir")
        .arg(agents())
        .args(["--agent-loop-name", name, "--yes", "--replay"])
        .arg(transcript)
        .arg("-C")
        .arg(s.ws())
        .arg(prompt.trim_end())
        .output()
        .unwrap();
    (s, out)
}

fn transcript(name: &str) -> PathBuf {
    agents().join(format!("transcripts/{name}.jsonl"))
}

/// Each context's events, with what changes from run to run (times, durations) removed.
fn per_context(events: &[Value]) -> BTreeMap<String, Vec<Value>> {
    let mut contexts: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for e in events {
        let mut e = e.clone();
        let context = e["context"].as_str().unwrap().to_owned();
        let object = e.as_object_mut().unwrap();
        object.remove("ts");
        object.remove("duration_ms");
        object.remove("first_chunk_ms");
        object.remove("session_id");
        if let Some(item) = object.get_mut("item").and_then(Value::as_object_mut) {
            item.remove("duration_ms");
        }
        contexts.entry(context).or_default().push(e);
    }
    contexts
}

#[test]
fn the_orchestrator_delegates_to_specialists_that_change_the_workspace() {
    let (s, out) = run("orchestrator", &transcript("orchestrator"), &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let answer = String::from_utf8_lossy(&out.stdout);
    assert!(
        answer.contains("the reviewer approved both files"),
        "{answer}"
    );
    // The specialists' work is on disk: the script runs with the new option.
    let shout = std::process::Command::new("sh")
        .arg(s.ws().join("greet.sh"))
        .args(["--shout", "ada"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&shout.stdout), "HELLO, ADA!\n");
    let readme = std::fs::read_to_string(s.ws().join("README.md")).unwrap();
    assert!(readme.contains("`--shout`"), "{readme}");
    // Delegation is visible: nested, labelled lines and the summary tree.
    for needle in [
        "▸ [0.1 planner]",
        "[0.2 coder] ✓ edit greet.sh",
        "[0.3 coder] ✓ edit README.md",
        "◂ [0.4 reviewer] completed",
        "changed greet.sh",
        "contexts:",
    ] {
        assert!(err.contains(needle), "stderr lacks {needle:?}:\n{err}");
    }
    let tree: Vec<&str> = err
        .lines()
        .skip_while(|l| *l != "contexts:")
        .skip(1)
        .collect();
    assert_eq!(tree.len(), 5, "{err}");
    assert!(tree[0].trim_start().starts_with("0 ") && tree[0].contains("orchestrator"));
    assert!(
        tree[4].contains("0.4") && tree[4].contains("reviewer") && tree[4].contains("completed")
    );
    // The closing line counts what its tokens count: every context's requests (4 of the
    // orchestrator, 12 of its specialists), and short times read in milliseconds.
    assert!(
        err.contains("· done · 16 model request(s) · 33650 in / 1590 out tokens"),
        "{err}"
    );
    assert!(tree[1].contains(" ms "), "{}", tree[1]);
    // The changed file's diff, folded, under the coder's edit; the command's output under it.
    assert!(err.contains("+  shout=yes"), "{err}");
    assert!(err.contains("│ HELLO, WONOPCODE!"), "{err}");
}

#[test]
fn the_event_log_follows_the_grammar_and_rolls_usage_up() {
    let (_s, out) = run("orchestrator", &transcript("orchestrator"), &["--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events = events(&out);
    let schema = jsonschema::validator_for(&documented_schema()).unwrap();
    for e in &events {
        assert!(schema.is_valid(e), "event does not fit docs/events.md: {e}");
    }
    let contexts = per_context(&events);
    assert_eq!(
        contexts.keys().collect::<Vec<_>>(),
        ["0", "0.1", "0.2", "0.3", "0.4"]
    );
    for (path, events) in &contexts {
        let types: String = events
            .iter()
            .map(|e| format!("{} ", e["type"].as_str().unwrap()))
            .collect();
        let grammar = if path == "0" {
            documented_sequence()
        } else {
            documented_child_sequence()
        };
        assert!(grammar.is_match(&types), "context {path}: {types}");
    }
    // The root's usage is the whole run's: its own requests and every child's.
    let tokens =
        |u: &Value| u["input_tokens"].as_u64().unwrap() + u["output_tokens"].as_u64().unwrap();
    let root = contexts["0"].last().unwrap();
    let children: u64 = ["0.1", "0.2", "0.3", "0.4"]
        .iter()
        .map(|c| tokens(&contexts[*c].last().unwrap()["usage"]))
        .sum();
    assert_eq!(tokens(&root["usage"]), 14_550 + children);
    let done = contexts["0.2"].last().unwrap();
    assert_eq!(done["type"], "context.completed");
    assert_eq!(done["status"], "completed");
    assert_eq!(done["modified_files"], serde_json::json!(["greet.sh"]));
    // The history file holds only the root's conversation.
}

#[test]
fn a_recorded_multi_agent_run_replays_to_the_same_event_log() {
    let scratch = Scratch::new();
    let recorded = scratch.outside("recorded.jsonl");
    let (_a, first) = run(
        "orchestrator",
        &transcript("orchestrator"),
        &["--json", "--record", recorded.to_str().unwrap()],
    );
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let (_b, second) = run("orchestrator", &recorded, &["--json"]);
    assert_eq!(second.status.code(), Some(0), "{}", stderr(&second));
    // Per context, the history, turn and context events come in the same order; items are
    // the same, though concurrent read-only tool calls may finish in another order.
    let (first, second) = (per_context(&events(&first)), per_context(&events(&second)));
    assert_eq!(
        first.keys().collect::<Vec<_>>(),
        second.keys().collect::<Vec<_>>()
    );
    for (context, events) in &first {
        let split = |events: &[Value]| {
            let (mut items, ordered): (Vec<Value>, Vec<Value>) = events
                .iter()
                .cloned()
                .partition(|e| e["type"].as_str().unwrap().starts_with("item."));
            items.sort_by_key(Value::to_string);
            (ordered, items)
        };
        let (a, b) = (split(events), split(&second[context]));
        assert_eq!(a.0, b.0, "context {context}: ordered events differ");
        assert_eq!(a.1, b.1, "context {context}: items differ");
    }
    // Concurrent children were recorded under their own paths.
    let text = std::fs::read_to_string(&recorded).unwrap();
    for key in [r#""context":"0.2","turn":3"#, r#""context":"0.3","turn":2"#] {
        assert!(text.contains(key), "the recording lacks {key}");
    }
}

#[test]
fn the_trace_is_chrome_trace_json_with_a_track_per_context() {
    let scratch = Scratch::new();
    let trace = scratch.outside("trace.json");
    let (_s, out) = run(
        "orchestrator",
        &transcript("orchestrator"),
        &["--trace", trace.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    // Tracks are named by path and module, and sorted by path.
    let name_of = |tid: &Value| {
        events
            .iter()
            .find(|e| e["name"] == "thread_name" && e["tid"] == *tid)
            .map(|e| e["args"]["name"].as_str().unwrap())
            .unwrap()
    };
    let mut sorted: Vec<(u64, &str)> = events
        .iter()
        .filter(|e| e["name"] == "thread_sort_index")
        .map(|e| {
            (
                e["args"]["sort_index"].as_u64().unwrap(),
                name_of(&e["tid"]),
            )
        })
        .collect();
    sorted.sort();
    let tracks: Vec<&str> = sorted.into_iter().map(|(_, name)| name).collect();
    assert_eq!(
        tracks,
        [
            "0 orchestrator",
            "0.1 planner",
            "0.2 coder",
            "0.3 coder",
            "0.4 reviewer"
        ]
    );
    let spans = |cat: &str| {
        events
            .iter()
            .filter(|e| e["ph"] == "X" && e["cat"] == cat)
            .count()
    };
    assert_eq!(spans("context"), 4);
    assert_eq!(spans("turn"), 5);
    let tool_begins = events.iter().filter(|e| e["ph"] == "b").count();
    let tool_ends = events.iter().filter(|e| e["ph"] == "e").count();
    assert_eq!(tool_begins, tool_ends);
    assert!(tool_begins >= 10, "{tool_begins} tool spans");
    let coder = events
        .iter()
        .find(|e| {
            e["ph"] == "X"
                && e["cat"] == "context"
                && e["name"].as_str().unwrap().starts_with("coder")
        })
        .unwrap();
    assert!(coder["args"]["cost_usd"].as_f64().unwrap() > 0.0);
}

#[test]
fn each_specialist_runs_on_its_own() {
    for (name, needle) in [
        ("planner", r#""specialist":"reviewer""#),
        ("coder", "HELLO, WONOPCODE!"),
        ("researcher", "falls back to `world`"),
        ("reviewer", "request_changes"),
    ] {
        let (_s, out) = run(name, &transcript(name), &[]);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
        let answer = String::from_utf8_lossy(&out.stdout);
        assert!(answer.contains(needle), "{name}: {answer}");
    }
}

/// A priced transcript (`priced_transcript_of`): the orchestrator hands eight questions to
/// researchers in one parallel spawn; each researcher answers once for 1,000 tokens in and
/// 1,000 out ($0.011).
pub(crate) fn eight_researchers(s: &Scratch) -> PathBuf {
    use serde_json::json;
    let tasks: Vec<Value> = (1..=8)
        .map(|i| json!({"specialist": "researcher", "task": format!("Question {i}: what does greet.sh print?")}))
        .collect();
    let arguments = json!({ "tasks": tasks }).to_string();
    let mut delegate = call("p1", "delegate_parallel", &arguments);
    delegate.extend([usage(1000, 100), done("tool_use")]);
    let mut turns = vec![("0".to_owned(), delegate)];
    for i in 1..=8 {
        let answer = vec![
            text(&format!("It prints a greeting ({i}).")),
            usage(1000, 1000),
            done("end_turn"),
        ];
        turns.push((format!("0.{i}"), answer));
    }
    turns.push(("0".to_owned(), vec![text("Done."), done("end_turn")]));
    let turns: Vec<(&str, Vec<Value>)> =
        turns.iter().map(|(c, t)| (c.as_str(), t.clone())).collect();
    let path = s.outside("eight.jsonl");
    std::fs::write(&path, priced_transcript_of(&turns)).unwrap();
    path
}

#[test]
fn parallel_children_share_one_budget_and_never_overspend_it() {
    let s = Scratch::new();
    copy_dir(&agents().join("workspace"), &s.ws());
    let t = eight_researchers(&s);
    // The root's request ($0.002) and five researchers ($0.055) fit; a sixth's worst case
    // would not.
    let out = wonopcode()
        .arg("--loops-dir")
        .arg(agents())
        .args([
            "--agent-loop-name",
            "orchestrator",
            "--yes",
            "--json",
            "--max-cost",
            "0.065",
            "--replay",
        ])
        .arg(&t)
        .arg("-C")
        .arg(s.ws())
        .arg("Ask eight researchers about greet.sh.")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let events = events(&out);
    let ended = |status: &str| {
        events
            .iter()
            .filter(|e| {
                e["context"].as_str().is_some_and(|c| c.starts_with("0."))
                    && (e["type"] == "turn.completed" || e["type"] == "turn.failed")
                    && e["status"] == status
            })
            .count()
    };
    assert_eq!(ended("complete"), 5, "{events:?}");
    assert_eq!(ended("budget_exceeded"), 3, "{events:?}");
    // What was spent, over every context, stays under the cap.
    let spent: u64 = events
        .iter()
        .filter(|e| e["type"] == "turn.completed" || e["type"] == "turn.failed")
        .filter(|e| e["context"].as_str().is_some_and(|c| c.starts_with("0.")))
        .filter_map(|e| e["usage"]["cost_micro_cents"].as_u64())
        .sum::<u64>()
        + 200_000;
    assert!(spent <= 6_500_000, "spent {spent} micro-cents");
    let root = events
        .iter()
        .find(|e| e["context"] == "0" && e["type"] == "turn.failed")
        .unwrap_or_else(|| panic!("the root did not stop: {events:?}"));
    assert_eq!(root["status"], "budget_exceeded", "{root}");
}

#[test]
fn a_module_without_bash_cannot_get_it_through_a_child_that_asks_for_it() {
    use serde_json::json;
    use wonopcode_wasm_host::guest_paths::{CODER, ORCHESTRATOR};
    let s = Scratch::new();
    copy_dir(&agents().join("workspace"), &s.ws());
    // The orchestrator may not run commands; its coder asks for bash all the same.
    let loops = s.outside("loops");
    std::fs::create_dir(&loops).unwrap();
    std::fs::write(
        loops.join("registry.yaml"),
        format!(
            "modules:\n  orchestrator:\n    path: {ORCHESTRATOR}\n    tools: [read, list, glob, grep, todo]\n  coder:\n    path: {CODER}\n"
        ),
    )
    .unwrap();
    let step = json!({"specialist": "coder", "task": "Run a command."}).to_string();
    let mut delegate = call("d1", "delegate", &step);
    delegate.push(done("tool_use"));
    let mut command = call("b1", "bash", r#"{"command": "echo pwned > pwned.txt"}"#);
    command.push(done("tool_use"));
    let turns = [
        ("0", delegate),
        ("0.1", command),
        ("0.1", vec![text("I could not."), done("end_turn")]),
        (
            "0",
            vec![text("The coder could not run it."), done("end_turn")],
        ),
    ];
    let out = run_named_priced(
        &s,
        &loops,
        "orchestrator",
        &turns,
        "Have the coder run a command.",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!s.ws().join("pwned.txt").exists());
    let call = events(&out)
        .into_iter()
        .find(|e| e["type"] == "item.completed" && e["item"]["call_id"] == "b1")
        .unwrap_or_else(|| panic!("no result for the child's bash call"));
    assert_eq!(call["context"], "0.1", "{call}");
    assert!(
        call["item"]["output"]
            .as_str()
            .unwrap_or_default()
            .contains("unknown tool `bash`"),
        "{call}"
    );
}
