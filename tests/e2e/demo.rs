//! The README's main job: the demo transcript, replayed through the real loop and tools.

use crate::events_doc::{documented_schema, documented_sequence};
use crate::support::{Scratch, copy_dir, events, repo_root, stderr};

#[test]
fn demo_replays_and_writes_the_report_with_documented_events() {
    let s = Scratch::new();
    let demo = repo_root().join("examples/demo");
    copy_dir(&demo.join("workspace"), &s.ws());
    let prompt = std::fs::read_to_string(demo.join("prompt.txt")).unwrap();
    let out = s.run_json(
        &demo.join("transcript.jsonl"),
        &["--yes"],
        prompt.trim_end(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let report = std::fs::read_to_string(s.ws().join("TODO_REPORT.md")).unwrap();
    assert!(
        report.contains("- line 26: raise a clear error instead of KeyError"),
        "{report}"
    );
    assert!(report.contains("## src/report.py"), "{report}");

    let events = events(&out);
    let schema = jsonschema::validator_for(&documented_schema()).unwrap();
    for e in &events {
        let errors: Vec<String> = schema.iter_errors(e).map(|err| err.to_string()).collect();
        assert!(
            errors.is_empty(),
            "event does not fit docs/events.md: {e}\n{errors:?}"
        );
    }
    let types: String = events
        .iter()
        .map(|e| format!("{} ", e["type"].as_str().unwrap()))
        .collect();
    assert!(
        documented_sequence().is_match(&types),
        "sequence not in docs/events.md grammar: {types}"
    );

    // The real tools ran: grep found all four markers, the todo list was kept.
    let grep = events
        .iter()
        .find(|e| e["type"] == "item.completed" && e["item"]["name"] == "grep")
        .unwrap();
    assert_eq!(
        grep["item"]["output"]
            .as_str()
            .unwrap()
            .matches("TODO")
            .count(),
        4
    );
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "item.completed" && e["item"]["kind"] == "todo_list")
    );
    let last = events.last().unwrap();
    assert_eq!(last["type"], "turn.completed");
    assert_eq!(last["status"], "complete");
    assert_eq!(last["iterations"], 5);
    assert!(last["usage"]["cost_micro_cents"].as_u64().unwrap() > 0);
}
