//! A guest's `child` handles (WIT 0.2.8) on the real binary: a child held across three
//! follow-ups keeps its history, a fork copies it and can be cancelled, and a dropped handle
//! frees the child's place in the tree.

use serde_json::{Value, json};
use wonopcode_wasm_host::guest_paths::MISBEHAVE;

use crate::support::{
    Scratch, answer, assert_blocked_write, calling, confining, events, priced_transcript_of,
    stderr, wonopcode,
};

#[test]
fn a_held_child_keeps_its_history_a_fork_copies_it_and_a_dropped_one_frees_its_place() {
    let s = Scratch::new();
    let sleep = calling("b1", "bash", r#"{"command": "sleep 5"}"#);
    let turns = [
        ("0.1", answer("one")),
        ("0.1", answer("two")),
        ("0.1", answer("three")),
        ("0.1", answer("four")),
        ("0.2", answer("five")),
        ("0.2", sleep),
        ("0.3", answer("six")),
        ("0.4", answer("seven")),
    ];
    let t = s.outside("t.jsonl");
    std::fs::write(&t, priced_transcript_of(&turns)).unwrap();
    let record = s.outside("recorded.jsonl");
    // Room for the root and two children: the last two start only if the first two were
    // freed when their handles were dropped.
    let config = s.config("contexts:\n  max_live: 3\n");
    let spec = json!({"module": {"named": "standard"}, "task": "one"});
    let out = wonopcode()
        .args([
            "--config",
            &config,
            "--json",
            "--yes",
            "--agent-loop",
            MISBEHAVE,
        ])
        .arg("--replay")
        .arg(&t)
        .arg("--record")
        .arg(&record)
        .arg("-C")
        .arg(s.ws())
        .arg(format!("handles {spec}"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events = events(&out);
    let said = events
        .iter()
        .find(|e| {
            e["type"] == "item.completed"
                && e["context"] == "0"
                && e["item"]["kind"] == "agent_message"
        })
        .and_then(|e| e["item"]["text"].as_str())
        .unwrap_or_default()
        .to_owned();
    let lines: Vec<&str> = said.lines().collect();
    assert_eq!(
        lines[0], "held: completed one | completed two | completed three | completed four",
        "{said}"
    );
    assert!(
        lines[1].starts_with("fork: completed five, then cancelled"),
        "{said}"
    );
    assert_eq!(lines[2], "ids: 0.1 0.2", "{said}");
    assert_eq!(
        lines[3], "later: 0.3 completed six | 0.4 completed seven",
        "{said}"
    );

    let recorded: Vec<Value> = std::fs::read_to_string(&record)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let messages = |context: &str, turn: u64| {
        recorded
            .iter()
            .find(|r| r["context"] == context && r["turn"] == turn)
            // Those the record lists, after the ones it kept from its context's previous one.
            .map(|r| {
                r["request"]["kept"].as_u64().unwrap_or(0) as usize
                    + r["request"]["messages"].as_array().unwrap().len()
            })
    };
    assert_eq!(
        messages("0.1", 3),
        Some(7),
        "the fourth turn sees the first three"
    );
    assert_eq!(
        messages("0.2", 0),
        Some(9),
        "the fork starts from the held child's history"
    );
    assert_eq!(messages("0.3", 0), Some(1), "a new child starts afresh");
}

#[test]
fn a_fork_keeps_the_grants_of_the_child_it_copies() {
    if !confining() {
        return;
    }
    let s = Scratch::new();
    let write = calling("b1", "bash", r#"{"command": "echo hi > forked.txt"}"#);
    let sleep = calling("b2", "bash", r#"{"command": "sleep 5"}"#);
    let turns = [
        ("0.1", answer("one")),
        ("0.1", answer("two")),
        ("0.1", answer("three")),
        ("0.1", answer("four")),
        ("0.2", write),
        ("0.2", answer("five")),
        ("0.2", sleep),
        ("0.3", answer("six")),
        ("0.4", answer("seven")),
    ];
    let t = s.outside("t.jsonl");
    std::fs::write(&t, priced_transcript_of(&turns)).unwrap();
    // The held child may only read; so may its fork, which asks to write.
    let spec = json!({"module": {"named": "standard"}, "task": "one",
        "grants": {"sandbox": "read-only"}});
    let out = wonopcode()
        .args(["--json", "--yes", "--agent-loop", MISBEHAVE])
        .arg("--replay")
        .arg(&t)
        .arg("-C")
        .arg(s.ws())
        .arg(format!("handles {spec}"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!s.ws().join("forked.txt").exists());
    assert_blocked_write(&out, "b1");
}
