//! The run journal (`docs/durability.md`) on the real binary: the multi-agent example leaves
//! a journal of every context, `wonopcode runs` lists and shows it, its responses replay
//! the run to the same answer, a torn last record is reported, and `runs gc` removes it.

use serde_json::Value;

use crate::support::{Scratch, copy_dir, repo_root, stderr, wonopcode};

#[test]
fn the_example_leaves_a_journal_of_every_context_that_replays_and_is_collected() {
    let s = Scratch::new();
    let runs = s.outside("runs");
    let agents = repo_root().join("examples/agents");
    copy_dir(&agents.join("workspace"), &s.ws());
    let prompt = std::fs::read_to_string(agents.join("prompts/orchestrator.txt")).unwrap();
    let example = |transcript: &std::path::Path| {
        wonopcode()
            .env("WONOPCODE_RUNS_DIR", &runs)
            .arg("--loops-dir")
            .arg(&agents)
            .args(["--agent-loop-name", "orchestrator", "--yes", "--replay"])
            .arg(transcript)
            .arg("-C")
            .arg(s.ws())
            .arg(prompt.trim_end())
            .output()
            .unwrap()
    };
    let out = example(&agents.join("transcripts/orchestrator.jsonl"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let runs_cmd = |args: &[&str]| {
        wonopcode()
            .env("WONOPCODE_RUNS_DIR", &runs)
            .arg("runs")
            .args(args)
            .output()
            .unwrap()
    };

    let listed = runs_cmd(&["list", "--json"]);
    let metas: Vec<Value> = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(metas.len(), 1, "{metas:?}");
    let meta = &metas[0];
    assert_eq!(meta["status"], "finished");
    assert_eq!(meta["loop_name"], "orchestrator");
    assert_eq!(meta["prompt"], prompt.lines().next().unwrap_or_default());
    let id = meta["id"].as_str().unwrap().to_owned();

    // Every context is in the journal, with its module and what it did.
    let shown = String::from_utf8_lossy(&runs_cmd(&["show", &id]).stdout).into_owned();
    assert!(shown.contains(&format!("run {id}  finished")), "{shown}");
    for child in ["0.1 ", "0.2 "] {
        assert!(
            shown.lines().any(|l| l.trim_start().starts_with(child)
                && l.contains("response(s)")
                && !l.contains(" 0 response(s)")),
            "{child}: {shown}"
        );
    }

    // The journal's responses are a transcript of the run: a fresh copy of the workspace
    // replays to the same answer.
    let run_dir = runs.join(&id);
    std::fs::remove_dir_all(s.ws()).unwrap();
    std::fs::create_dir(s.ws()).unwrap();
    copy_dir(&agents.join("workspace"), &s.ws());
    let again = example(&run_dir.join("responses.jsonl"));
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert_eq!(again.stdout, out.stdout);

    // A power cut in the middle of the last record: reported, the rest still read.
    let events = run_dir.join("events.jsonl");
    let whole = std::fs::read(&events).unwrap();
    std::fs::write(&events, &whole[..whole.len() - 10]).unwrap();
    let shown = String::from_utf8_lossy(&runs_cmd(&["show", &id]).stdout).into_owned();
    assert!(shown.contains("torn last record: line "), "{shown}");

    // Collected: both runs (the example and its replay) are removed.
    let gc = runs_cmd(&["gc", "--keep", "0"]);
    assert_eq!(gc.status.code(), Some(0), "{}", stderr(&gc));
    assert!(String::from_utf8_lossy(&gc.stdout).starts_with("removed 2 run(s)"));
    assert!(!run_dir.exists());
    let missing = runs_cmd(&["show", &id]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        stderr(&missing).contains(&format!("no run `{id}`")),
        "{}",
        stderr(&missing)
    );
}

#[test]
fn the_journal_gives_the_conversation_a_history_file_would_have_kept() {
    let s = Scratch::new();
    let runs = s.outside("runs");
    s.file("notes.txt", "remember the milk\n");
    let mut first = crate::support::calling("r", "read", r#"{"path": "notes.txt"}"#);
    first.insert(0, crate::support::text("Reading."));
    let t = s.transcript(
        "t.jsonl",
        &[first, crate::support::answer("The notes say: milk.")],
    );
    let kept = s.outside("kept.jsonl");
    let out = wonopcode()
        .env("WONOPCODE_RUNS_DIR", &runs)
        .arg("--history")
        .arg(&kept)
        .arg("--replay")
        .arg(&t)
        .arg("-C")
        .arg(s.ws())
        .arg("What do my notes say?")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let id = std::fs::read_dir(&runs)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .file_name()
        .to_string_lossy()
        .into_owned();
    let made = s.outside("made.jsonl");
    let runs_history = |file: &std::path::Path| {
        wonopcode()
            .env("WONOPCODE_RUNS_DIR", &runs)
            .args(["runs", "history", &id])
            .arg(file)
            .output()
            .unwrap()
    };
    let out = runs_history(&made);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let messages = crate::parity::history_messages;
    assert_eq!(messages(&made), messages(&kept));
    assert_eq!(messages(&made).len(), 4);
    // An existing file is never overwritten.
    let out = runs_history(&made);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("exists: give a new file"),
        "{}",
        stderr(&out)
    );

    // The conversation goes on from the file the journal made.
    let next = s.transcript_after(
        "next.jsonl",
        2,
        &[crate::support::answer("You asked about your notes.")],
    );
    let out = s.run_json(
        &next,
        &["--history", made.to_str().unwrap()],
        "What did I ask?",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(messages(&made).len(), 6);
}

#[test]
fn a_warning_of_the_host_is_a_diagnostic_item_of_the_event_stream_too() {
    use crate::support::{answer, events};
    let s = Scratch::new();
    // The runs directory is a file: the run goes on without a journal, and says so.
    let runs = s.outside("runs");
    std::fs::write(&runs, "not a directory").unwrap();
    let t = s.transcript("t.jsonl", &[answer("Done.")]);
    let out = wonopcode()
        .env("WONOPCODE_RUNS_DIR", &runs)
        .arg("--json")
        .arg("--replay")
        .arg(&t)
        .arg("-C")
        .arg(s.ws())
        .arg("go")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("warning: the run is not journaled"),
        "{}",
        stderr(&out)
    );
    let events = events(&out);
    let started = events
        .iter()
        .position(|e| e["type"] == "session.started")
        .unwrap();
    let diagnostic = events
        .iter()
        .position(|e| e["type"] == "item.completed" && e["item"]["kind"] == "diagnostic")
        .expect("a diagnostic item");
    assert!(diagnostic > started, "after session.started");
    let message = events[diagnostic]["item"]["message"].as_str().unwrap();
    assert!(message.starts_with("the run is not journaled"), "{message}");
}

#[test]
fn runs_show_says_why_a_context_failed_and_the_guests_own_lines_are_kept() {
    let s = Scratch::new();
    let runs = s.outside("runs");
    let t = s.transcript("t.jsonl", &[]);
    // The misbehave guest panics on `trap`, with `flags`, its journal under `runs`.
    let trapping = |runs: &std::path::Path, flags: &[&str]| {
        wonopcode()
            .env("WONOPCODE_RUNS_DIR", runs)
            .args(flags)
            .args(["--agent-loop", wonopcode_wasm_host::guest_paths::MISBEHAVE])
            .arg("--replay")
            .arg(&t)
            .arg("-C")
            .arg(s.ws())
            .arg("trap")
            .output()
            .unwrap()
    };
    let out = trapping(&runs, &[]);
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    let (id, _) = crate::resume::only_run(&runs);
    let shown = wonopcode()
        .env("WONOPCODE_RUNS_DIR", &runs)
        .args(["runs", "show", &id])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout).into_owned();
    let root = shown
        .lines()
        .position(|l| l.trim_start().starts_with("0 ") && l.contains("error"))
        .unwrap_or_else(|| panic!("no failed root context: {shown}"));
    let why = shown.lines().nth(root + 1).unwrap_or_default();
    assert!(
        why.contains("deliberate failure in run-prompt"),
        "the line under the context says why: {shown}"
    );
    // What the guest printed is kept plain in its context's file in the run's directory.
    let (_, dir) = crate::resume::only_run(&runs);
    let log = std::fs::read_to_string(dir.join("guest-logs/0.log")).unwrap();
    assert!(
        log.lines().any(|l| l.starts_with("stderr: thread '")
            && l.contains(" panicked at misbehave/src/lib.rs:"))
            && log.contains("stderr: deliberate failure in run-prompt"),
        "{log}"
    );
    assert!(!log.contains('\u{1b}'), "no colour codes: {log}");
    assert!(
        !stderr(&out).contains("] deliberate failure"),
        "stderr only with --verbose"
    );
    // With --verbose, on stderr too, after the context and the guest's name.
    let out = trapping(&s.outside("more-runs"), &["--verbose"]);
    assert!(
        stderr(&out)
            .lines()
            .any(|l| l.starts_with("[0 ") && l.ends_with("] deliberate failure in run-prompt")),
        "{}",
        stderr(&out)
    );
}
