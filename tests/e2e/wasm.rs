//! The WebAssembly loops through the real binary: the embedded default guest and guest files
//! give the same run as the native loop (the differential test), and bad modules or
//! contradictory flags get one clear line.

use std::path::{Path, PathBuf};

use serde_json::Value;
use wonopcode_wasm_host::guest_paths;

use crate::support::{Scratch, copy_dir, events, repo_root, stderr, wonopcode};

/// Every recorded run: the examples and the test fixtures (transcript, prompt, extra flags).
fn recorded_runs() -> Vec<(String, PathBuf, String, Vec<String>)> {
    let mut runs = Vec::new();
    let demo = repo_root().join("examples/demo");
    runs.push((
        "examples/demo".to_owned(),
        demo.join("transcript.jsonl"),
        read(&demo.join("prompt.txt")),
        vec!["--yes".to_owned()],
    ));
    let fixtures = repo_root().join("tests/fixtures/transcripts");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&fixtures)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    for dir in dirs {
        let args = read(&dir.join("args.txt"))
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        runs.push((
            dir.display().to_string(),
            dir.join("transcript.jsonl"),
            read(&dir.join("prompt.txt")),
            args,
        ));
    }
    runs
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap().trim_end().to_owned()
}

/// Runs one recorded run on a fresh copy of the demo workspace; returns the normalized
/// events, the exit code and the workspace's files.
fn run(
    transcript: &Path,
    prompt: &str,
    args: &[String],
    loop_flags: &[&str],
) -> (Vec<Value>, Option<i32>, Vec<(String, String)>) {
    let s = Scratch::new();
    copy_dir(&repo_root().join("examples/demo/workspace"), &s.ws());
    let mut extra: Vec<&str> = args.iter().map(String::as_str).collect();
    extra.extend_from_slice(loop_flags);
    let out = s.run_json(transcript, &extra, prompt);
    let evs = comparable_events(&out);
    let mut files = Vec::new();
    for rel in ["TODO_REPORT.md", "src/inventory.py"] {
        files.push((
            rel.to_owned(),
            std::fs::read_to_string(s.ws().join(rel)).unwrap_or_default(),
        ));
    }
    (evs, out.status.code(), files)
}

/// The events of a run as two loops can be compared: no timestamps, session ids, loop names
/// or durations, and each run of concurrent tool-call items in a fixed order.
pub(crate) fn comparable_events(out: &std::process::Output) -> Vec<Value> {
    let mut evs = events(out);
    for e in &mut evs {
        let obj = e.as_object_mut().unwrap();
        obj.remove("ts");
        obj.remove("session_id");
        obj.remove("loop_name");
        // A response's or a child's time (`response.completed`, `context.completed`).
        obj.remove("duration_ms");
        obj.remove("first_chunk_ms");
        if let Some(item) = obj.get_mut("item").and_then(Value::as_object_mut) {
            item.remove("duration_ms");
        }
    }
    // Read-only tools of one turn run concurrently, so their items may interleave in any
    // order (docs/events.md); compare each such run of tool-call items sorted.
    let is_tool_item = |e: &Value| e["item"]["kind"] == "tool_call";
    let mut i = 0;
    while i < evs.len() {
        let start = i;
        while i < evs.len() && is_tool_item(&evs[i]) {
            i += 1;
        }
        evs[start..i].sort_by_key(|e| {
            (
                e["item"]["id"].as_str().unwrap_or("").to_owned(),
                e["type"].as_str().unwrap_or("").to_owned(),
            )
        });
        i = i.max(start + 1);
    }
    evs
}

#[test]
fn native_and_wasm_loops_produce_the_same_runs() {
    let default_guest = guest_paths::DEFAULT_LOOP.to_owned();
    for (name, transcript, prompt, args) in recorded_runs() {
        let native = run(&transcript, &prompt, &args, &[]);
        let embedded = run(&transcript, &prompt, &args, &["--loop-type=wasm"]);
        let from_file = run(
            &transcript,
            &prompt,
            &args,
            &["--agent-loop", &default_guest],
        );
        for (label, other) in [
            ("--loop-type=wasm", &embedded),
            ("--agent-loop", &from_file),
        ] {
            assert_eq!(native.1, other.1, "{name}: exit codes differ for {label}");
            assert_eq!(
                native.2, other.2,
                "{name}: workspace files differ for {label}"
            );
            assert_eq!(
                native.0.len(),
                other.0.len(),
                "{name}: event counts differ for {label}"
            );
            for (i, (a, b)) in native.0.iter().zip(&other.0).enumerate() {
                assert_eq!(a, b, "{name}: event {i} differs for {label}");
            }
        }
    }
}

#[test]
fn the_demo_report_is_written_by_the_wasm_loop() {
    let demo = repo_root().join("examples/demo");
    let (_, code, files) = run(
        &demo.join("transcript.jsonl"),
        &read(&demo.join("prompt.txt")),
        &["--yes".to_owned()],
        &["--loop-type=wasm"],
    );
    assert_eq!(code, Some(0));
    assert!(
        files[0].1.contains("- line 8: sort by author, then title"),
        "{}",
        files[0].1
    );
}

#[test]
fn bad_guest_files_get_one_clear_line() {
    let s = Scratch::new();
    let t = s.transcript(
        "t.jsonl",
        &[vec![
            crate::support::text("hi"),
            crate::support::done("end_turn"),
        ]],
    );
    let notes = s.outside("notes.wasm");
    std::fs::write(&notes, "not a module").unwrap();
    for (path, needle) in [
        (notes.display().to_string(), "is not a WebAssembly file"),
        (
            guest_paths::OTHER_WORLD.to_owned(),
            "is a component of another world",
        ),
        (
            guest_paths::VERSION_1_0.to_owned(),
            "wonopcode:agent-loop@1.0.0, which is not compatible",
        ),
    ] {
        let out = s.run_json(&t, &["--agent-loop", &path], "hi");
        assert_eq!(out.status.code(), Some(1), "{path}");
        let err = stderr(&out);
        assert!(err.contains(needle), "{err}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn contradictory_loop_flags_are_usage_errors() {
    let out = wonopcode()
        .args(["--loop-type=standard", "--agent-loop", "x.wasm", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(
            "--agent-loop runs a custom guest and cannot be combined with --loop-type=standard"
        ),
        "{}",
        stderr(&out)
    );
    let out = wonopcode()
        .args(["--loop-type=custom", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--loop-type=custom needs --agent-loop PATH"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn guests_read_the_guest_section_of_the_config_file() {
    let s = Scratch::new();
    let t = s.transcript("t.jsonl", &[]);
    let config = s.outside("config.yaml");
    std::fs::write(&config, "guest:\n  greeting: hello there\n").unwrap();
    let out = s.run_json(
        &t,
        &[
            "--agent-loop",
            guest_paths::MISBEHAVE,
            "--config",
            config.to_str().unwrap(),
        ],
        "config",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The guest answers without a model; its answer is shown all the same.
    let answers: Vec<String> = events(&out)
        .into_iter()
        .filter(|e| e["type"] == "item.completed" && e["item"]["kind"] == "agent_message")
        .map(|e| e["item"]["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert!(
        answers[0].starts_with(r#"Some("hello there") [("greeting", "hello there")"#),
        "{}",
        answers[0]
    );
}

#[test]
fn a_trapping_guest_fails_the_turn_and_the_session_goes_on() {
    let s = Scratch::new();
    let t = s.transcript("t.jsonl", &[]);
    let out = s.run_json(&t, &["--agent-loop", guest_paths::MISBEHAVE], "trap");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("trapped: the guest panicked at misbehave/src/lib.rs:")
            && err.contains(": deliberate failure in run-prompt"),
        "{err}"
    );
    // The guest's fault, said as such: not wonopcode's "internal error".
    assert!(err.contains("error: guest `misbehave` ("), "{err}");
    assert!(!err.contains("internal error"), "{err}");
    let last = events(&out).pop().unwrap();
    assert_eq!(
        (last["type"].as_str(), last["status"].as_str()),
        (Some("turn.failed"), Some("error"))
    );
}

#[test]
fn a_guests_progress_and_notes_reach_the_terminal_and_the_event_stream() {
    let s = Scratch::new();
    let t = s.transcript("t.jsonl", &[]);
    let out = s.run_json(&t, &["--agent-loop", guest_paths::MISBEHAVE], "progress");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let seen: Vec<(String, String, String)> = events(&out)
        .iter()
        .filter(|e| matches!(e["item"]["kind"].as_str(), Some("progress" | "info")))
        .map(|e| {
            (
                e["type"].as_str().unwrap().to_owned(),
                e["item"]["kind"].as_str().unwrap().to_owned(),
                format!(
                    "{} {}",
                    e["item"]["message"].as_str().unwrap(),
                    e["item"]["fraction"]
                ),
            )
        })
        .collect();
    let expected = [
        ("item.started", "progress", "reading the notes 0.25"),
        ("item.updated", "progress", "reading the notes 0.75"),
        ("item.completed", "info", "found 3 notes null"),
        ("item.completed", "progress", "reading the notes 0.75"),
        ("item.started", "progress", "left open null"),
        // A progress left open ends with the run.
        ("item.completed", "progress", "left open null"),
    ];
    let expected: Vec<(String, String, String)> = expected
        .iter()
        .map(|(a, b, c)| ((*a).to_owned(), (*b).to_owned(), (*c).to_owned()))
        .collect();
    assert_eq!(seen, expected);

    let out = wonopcode()
        .args(["--replay"])
        .arg(&t)
        .arg("-C")
        .arg(s.ws())
        .args(["--agent-loop", guest_paths::MISBEHAVE, "progress"])
        .output()
        .unwrap();
    assert!(stderr(&out).contains("· found 3 notes"), "{}", stderr(&out));
}

#[test]
fn the_example_guest_runs_its_own_tool_and_the_hosts() {
    let s = Scratch::new();
    s.file("notes.txt", "alpha beta\n");
    let mut turn0 = crate::support::call("w1", "word_count", r#"{"text": "one two three"}"#);
    turn0.extend(crate::support::call(
        "r1",
        "read",
        r#"{"path": "notes.txt"}"#,
    ));
    turn0.push(crate::support::done("tool_use"));
    let t = s.transcript(
        "t.jsonl",
        &[
            turn0,
            vec![
                crate::support::text("Three words; notes say alpha beta."),
                crate::support::done("end_turn"),
            ],
        ],
    );
    let history = s.outside("h.jsonl");
    let out = s.run_json(
        &t,
        &[
            "--agent-loop",
            guest_paths::GUEST_HELLO,
            "--history",
            history.to_str().unwrap(),
        ],
        "count and read",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let evs = events(&out);
    let completed: Vec<&Value> = evs
        .iter()
        .filter(|e| e["type"] == "item.completed" && e["item"]["kind"] == "tool_call")
        .collect();
    assert_eq!(completed.len(), 2);
    assert!(
        completed
            .iter()
            .any(|e| e["item"]["call_id"] == "w1" && e["item"]["output"] == "3"),
        "{completed:?}"
    );
    assert!(completed.iter().any(|e| e["item"]["call_id"] == "r1"
        && e["item"]["output"].as_str().unwrap().contains("alpha beta")));
    let stored = std::fs::read_to_string(&history).unwrap();
    assert!(
        stored.contains(r#""call_id":"w1","content":"3""#),
        "{stored}"
    );
}

/// The `.cwasm` entries of a compile cache, by name.
fn cache_entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".cwasm"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn validation_fills_the_compile_cache_and_a_store_prunes_what_is_old() {
    let s = Scratch::new();
    let home = s.outside("cache-home");
    let cache = home.join("wonopcode/components");
    let config = s.outside("config.yaml");
    std::fs::write(&config, "cache:\n  max_age_days: 7\n").unwrap();
    let validate = |guest: &str| {
        let out = wonopcode()
            .env("XDG_CACHE_HOME", &home)
            .arg("--config")
            .arg(&config)
            .args(["--validate-module", "--agent-loop", guest])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    };
    validate(guest_paths::MISBEHAVE);
    let first = cache_entries(&cache);
    assert_eq!(first.len(), 1, "{first:?}");
    // The same guest again loads the entry: nothing new is written.
    validate(guest_paths::MISBEHAVE);
    assert_eq!(cache_entries(&cache), first);

    // An entry unused for 60 days, and a file the cache did not write.
    let old = cache.join("0000.cwasm");
    std::fs::write(&old, b"stale").unwrap();
    let sixty_days = std::time::Duration::from_secs(60 * 24 * 3600);
    std::fs::File::options()
        .write(true)
        .open(&old)
        .unwrap()
        .set_modified(std::time::SystemTime::now() - sixty_days)
        .unwrap();
    let foreign = cache.join("README.txt");
    std::fs::write(&foreign, b"mine").unwrap();
    // Storing another guest prunes: the old entry goes, the rest stays.
    validate(guest_paths::GUEST_HELLO);
    let now = cache_entries(&cache);
    assert_eq!(now.len(), 2, "{now:?}");
    assert!(
        now.contains(&first[0]) && !old.exists() && foreign.exists(),
        "{now:?}"
    );

    // `--no-cache` neither reads nor writes it.
    let out = wonopcode()
        .env("XDG_CACHE_HOME", s.outside("other-home"))
        .args([
            "--no-cache",
            "--validate-module",
            "--agent-loop",
            guest_paths::MISBEHAVE,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(!s.outside("other-home/wonopcode/components").exists());
}
