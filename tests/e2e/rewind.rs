//! `wonopcode rewind` and `wonopcode undo` (README "Rewind"): the changes a run's file tools
//! made, taken back from the checkpoints kept beside its journal — a file added, edited and
//! deleted put back; a file someone else changed since left alone unless `--force`; one
//! specialist's changes of the multi-agent example taken back while its sibling's stay.

use std::path::Path;

use serde_json::Value;

use crate::support::{Scratch, answer, calling, command, repo_root, stderr};

/// Runs `wonopcode ARGS` with the runs of `s`; its exit code, stdout and stderr.
pub(crate) fn wonopcode_in(s: &Scratch, args: &[&str]) -> (Option<i32>, String, String) {
    let out = command()
        .env("WONOPCODE_RUNS_DIR", s.outside("runs"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr(&out),
    )
}

/// Runs `prompt` with `--yes` against the recording `t` in `s`'s workspace, keeping its
/// run in `s`'s runs; it must succeed.
fn replayed(s: &Scratch, t: &Path, prompt: &str) {
    let out = command()
        .env("WONOPCODE_RUNS_DIR", s.outside("runs"))
        .args(["--yes", "--replay"])
        .arg(t)
        .arg("-C")
        .arg(s.ws())
        .arg(prompt)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// The id of the only run in `runs`.
fn only_run(runs: &Path) -> String {
    let ids: Vec<String> = std::fs::read_dir(runs)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(ids.len(), 1, "{ids:?}");
    ids[0].clone()
}

#[test]
fn a_runs_writes_edits_and_deletions_are_taken_back_and_a_conflict_is_left_alone() {
    let s = Scratch::new();
    s.file("b.txt", "b before\n");
    s.file("c.txt", "c before\n");
    s.file("new/kept.txt", "the person's\n");
    let t = s.transcript(
        "t.jsonl",
        &[
            calling(
                "w1",
                "write",
                r#"{"path": "new/deep/er/a.txt", "content": "a\n"}"#,
            ),
            calling(
                "e1",
                "edit",
                r#"{"path": "b.txt", "old_string": "before", "new_string": "after"}"#,
            ),
            calling(
                "p1",
                "apply_patch",
                r#"{"input": "*** Begin Patch\n*** Delete File: c.txt\n*** End Patch"}"#,
            ),
            answer("Done."),
        ],
    );
    replayed(&s, &t, "Change things.");
    let ws = s.ws();
    assert!(!ws.join("c.txt").exists());
    let id = only_run(&s.outside("runs"));
    // Someone changes b.txt after the run.
    std::fs::write(ws.join("b.txt"), "b by hand\n").unwrap();

    // `undo` is the last prompt of this workspace's latest run: this one's only prompt.
    let (code, undone, err) = wonopcode_in(&s, &["undo", "--dry-run", "-C", ws.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    let (code, shown, err) = wonopcode_in(&s, &["rewind", &id, "--to", "1", "--dry-run"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(undone, shown);
    assert!(shown.contains("would remove new/deep/er/a.txt"), "{shown}");
    assert!(shown.contains("would restore c.txt"), "{shown}");
    assert!(
        shown.contains("would restore b.txt (changed since by someone else"),
        "{shown}"
    );
    assert!(
        ws.join("new/deep/er/a.txt").exists(),
        "a dry run changed a file"
    );

    let (code, _, err) = wonopcode_in(&s, &["rewind", &id, "--to", "1"]);
    assert_eq!(code, Some(1), "the conflict is reported: {err}");
    // The directories the run made for it go with it; the one that holds a file stays.
    assert!(!ws.join("new/deep").exists());
    assert!(ws.join("new/kept.txt").exists());
    assert_eq!(
        std::fs::read_to_string(ws.join("c.txt")).unwrap(),
        "c before\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("b.txt")).unwrap(),
        "b by hand\n"
    );

    let (code, _, err) = wonopcode_in(&s, &["rewind", &id, "--to", "1", "--force"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        std::fs::read_to_string(ws.join("b.txt")).unwrap(),
        "b before\n"
    );

    // No such prompt: one line, exit 2.
    let (code, _, err) = wonopcode_in(&s, &["rewind", &id, "--to", "3"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("has 1 prompt(s): there is no prompt 3"),
        "{err}"
    );
    // Rewound again, every file is as the run found it: each is left alone, said so.
    let (code, shown, _) = wonopcode_in(&s, &["rewind", &id, "--to", "1", "--dry-run"]);
    assert_eq!(code, Some(0));
    assert!(
        shown.contains("would remove new/deep/er/a.txt (changed since"),
        "{shown}"
    );
}

#[test]
fn one_specialists_changes_are_taken_back_and_its_siblings_kept() {
    let transcript = repo_root().join("examples/agents/transcripts/orchestrator.jsonl");
    let server = crate::resume::example_server(&transcript);
    let s = crate::resume::example_workspace();
    let runs = s.outside("runs");
    let ws = s.ws();
    let greet_before = std::fs::read_to_string(ws.join("greet.sh")).unwrap();
    let readme_before = std::fs::read_to_string(ws.join("README.md")).unwrap();
    let (events, code, err) = crate::resume::run(&mut crate::resume::example_with(
        &server,
        &ws,
        &runs,
        &["--yes"],
    ));
    assert_eq!(code, Some(0), "{err}");
    assert!(events.iter().any(|e: &Value| e["type"] == "turn.completed"));
    let readme_after = std::fs::read_to_string(ws.join("README.md")).unwrap();
    assert_ne!(readme_after, readme_before);
    let id = only_run(&runs);
    // Both coders (0.2 and 0.3) at once, the planner's and the reviewer's work kept.
    let (code, shown, err) = wonopcode_in(
        &s,
        &[
            "rewind",
            &id,
            "--to",
            "1",
            "--context",
            "0.2",
            "--context",
            "0.3",
            "--dry-run",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(shown.contains("would restore greet.sh"), "{shown}");
    assert!(shown.contains("would restore README.md"), "{shown}");
    assert_eq!(shown.lines().count(), 2, "{shown}");
    // The coder of greet.sh was context 0.2; the README's, 0.3.
    let (code, shown, err) = wonopcode_in(&s, &["rewind", &id, "--to", "1", "--context", "0.2"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(shown.contains("restore greet.sh"), "{shown}");
    assert_eq!(
        std::fs::read_to_string(ws.join("greet.sh")).unwrap(),
        greet_before
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("README.md")).unwrap(),
        readme_after
    );
    let (code, _, err) = wonopcode_in(&s, &["rewind", &id, "--to", "1", "--context", "0.3"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        std::fs::read_to_string(ws.join("README.md")).unwrap(),
        readme_before
    );
}

/// The mode bits of `path`.
fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn what_a_command_created_deleted_renamed_and_made_executable_is_taken_back() {
    let s = Scratch::new();
    s.file("keep.txt", "kept\n");
    s.file("gone.txt", "to delete\n");
    s.file("old.txt", "to rename\n");
    s.file("tool.sh", "echo hi\n");
    s.file(".gitignore", "build/\n");
    let outside = s.outside("secret.txt");
    std::fs::write(&outside, "outside\n").unwrap();
    let script = format!(
        "mkdir -p out/deep && echo made > out/deep/new.txt && rm gone.txt && mv old.txt renamed.txt \
         && chmod +x tool.sh && echo more >> keep.txt && mkdir -p build && echo built > build/a.o \
         && ln -s {} link && mkfifo pipe",
        outside.display()
    );
    let t = s.transcript(
        "t.jsonl",
        &[
            calling(
                "b1",
                "bash",
                &serde_json::json!({ "command": script }).to_string(),
            ),
            answer("Done."),
        ],
    );
    replayed(&s, &t, "Rearrange things.");
    let ws = s.ws();
    assert!(ws.join("renamed.txt").exists() && !ws.join("gone.txt").exists());
    assert_eq!(mode_of(&ws.join("tool.sh")) & 0o111, 0o111);
    let id = only_run(&s.outside("runs"));

    let (code, shown, err) = wonopcode_in(&s, &["rewind", &id, "--to", "1", "--dry-run"]);
    assert_eq!(code, Some(0), "{err}");
    for line in [
        "would remove out/deep/new.txt",
        "would restore gone.txt",
        "would restore old.txt",
        "would remove renamed.txt",
        "would restore tool.sh",
        "would restore keep.txt",
    ] {
        assert!(shown.contains(line), "{line} missing from:\n{shown}");
    }
    // Build output the ignore files leave out, and links, are not the run's to take back.
    assert!(
        !shown.contains("build/a.o") && !shown.contains("link"),
        "{shown}"
    );

    let (code, _, err) = wonopcode_in(&s, &["rewind", &id, "--to", "1"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!ws.join("out/deep/new.txt").exists());
    assert!(!ws.join("renamed.txt").exists());
    assert_eq!(
        std::fs::read_to_string(ws.join("gone.txt")).unwrap(),
        "to delete\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("old.txt")).unwrap(),
        "to rename\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("keep.txt")).unwrap(),
        "kept\n"
    );
    assert_eq!(mode_of(&ws.join("tool.sh")) & 0o111, 0);
    assert!(ws.join("build/a.o").exists());
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "outside\n");
}
