//! What keeps a run's bill down, on the real binary: a result the model already has is
//! pointed at, not sent again.

use serde_json::Value;

use crate::support::{Scratch, call, done, events, stderr, text};

/// The tool results stored in the history, in order (`message.created` of role `tool`).
fn stored_results(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "message.created" && e["message"]["role"] == "tool")
        .flat_map(|e| {
            e["message"]["parts"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .map(|p| p["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn a_file_read_again_unchanged_is_pointed_at_and_a_changed_one_sent_whole() {
    let s = Scratch::new();
    s.file("big.rs", &"fn main() {}\n".repeat(200));
    let read = |id: &str| {
        let mut turn = call(id, "read", r#"{"path": "big.rs"}"#);
        turn.push(done("tool_use"));
        turn
    };
    let mut change = call(
        "c3",
        "write",
        &serde_json::json!({"path": "big.rs", "content": "fn main() { changed() }\n".repeat(100)})
            .to_string(),
    );
    change.push(done("tool_use"));
    let t = s.transcript(
        "t.jsonl",
        &[
            read("c1"),
            read("c2"),
            change,
            read("c4"),
            vec![text("done"), done("end_turn")],
        ],
    );
    let out = s.run_json(&t, &["--yes"], "read it twice");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events = events(&out);
    let results = stored_results(&events);
    assert!(results[0].contains("fn main() {}"), "{results:?}");
    assert!(
        results[1].contains("as the result of call `c1` above") && results[1].len() < 200,
        "{}",
        results[1]
    );
    assert!(
        results[3].contains("changed()"),
        "a changed file is sent whole"
    );
    // The person still sees what the second read returned.
    let shown: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "item.completed" && e["item"]["call_id"] == "c2")
        .collect();
    assert!(
        shown[0]["item"]["output"]
            .as_str()
            .unwrap_or_default()
            .contains("fn main() {}"),
        "{shown:?}"
    );
}

#[test]
fn old_tool_outputs_are_cleared_in_one_batch_and_say_how_to_get_them_back() {
    let s = Scratch::new();
    let mut responses = Vec::new();
    for i in 0..16 {
        s.file(
            &format!("f{i}.rs"),
            &format!("let value_{i} = {i};\n").repeat(500),
        );
        let mut turn = call(
            &format!("c{i}"),
            "read",
            &serde_json::json!({ "path": format!("f{i}.rs") }).to_string(),
        );
        turn.push(done("tool_use"));
        responses.push(turn);
    }
    responses.push(vec![text("done"), done("end_turn")]);
    let t = s.transcript("t.jsonl", &responses);
    let out = s.run_json(&t, &["--yes"], "read them all");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events = events(&out);
    let cleared: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "context.compacted")
        .collect();
    assert_eq!(cleared.len(), 1, "one batch: {cleared:?}");
    assert_eq!(cleared[0]["strategy"], "clear_tool_outputs");
    let history: Vec<String> = cleared[0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            m["parts"][0]["content"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    let marked = history
        .iter()
        .filter(|c| c.contains("cleared to save context: make the same call again"))
        .count();
    assert!(marked >= 9, "{marked} of {}", history.len());
    assert!(
        history.last().unwrap().contains("let value_"),
        "the newest output is kept whole"
    );
    assert!(!history[0].contains("let value_0"), "the oldest is cleared");
    // Clearing only `off`: nothing cleared before compaction is due.
    let config = s.config("clear_tool_outputs: off\n");
    let out = s.run_json(&t, &["--yes", "--config", &config], "read them all");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        !crate::support::events(&out)
            .iter()
            .any(|e| e["type"] == "context.compacted"),
        "off"
    );
}
