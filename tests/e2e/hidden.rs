//! The credentials the sandbox hides from commands are hidden from every file tool too, with
//! one list resolved through `HOME` and the XDG variables (`docs/security.md`), and a
//! repository's `AGENTS.md` cannot smuggle one into the system prompt.

use serde_json::Value;

use crate::support::{Scratch, call, confining, done, events, stderr, text, tool_results};

/// Secrets a workspace that holds the home directory may contain, by where they live.
const SECRETS: &[&str] = &[
    ".ssh/id_ed25519",
    ".aws/credentials",
    ".xdg-config/gh/hosts.yml",
    ".codex/auth.json",
    ".claude/.credentials.json",
    ".bash_history",
];

#[test]
fn no_file_tool_or_command_reads_a_hidden_credential_when_the_workspace_holds_home() {
    if !confining() {
        return;
    }
    let s = Scratch::new();
    for (i, secret) in SECRETS.iter().enumerate() {
        s.file(secret, &format!("SECRET-{i}\n"));
    }
    s.file("notes.txt", "nothing to hide\n");
    std::os::unix::fs::symlink(s.ws().join(".ssh/id_ed25519"), s.ws().join("innocent.txt"))
        .unwrap();
    let mut turn = Vec::new();
    let mut calls: Vec<(String, &str, String)> = SECRETS
        .iter()
        .map(|secret| ("read", serde_json::json!({ "path": secret }).to_string()))
        .chain([
            ("read", r#"{"path": "innocent.txt"}"#.to_owned()),
            ("grep", r#"{"pattern": "SECRET"}"#.to_owned()),
            ("glob", r#"{"pattern": "**/*"}"#.to_owned()),
            ("list", r#"{"path": ".ssh"}"#.to_owned()),
            (
                "edit",
                r#"{"path": ".bash_history", "old_string": "SECRET", "new_string": "x"}"#
                    .to_owned(),
            ),
            (
                "bash",
                r#"{"command": "cat .xdg-config/gh/hosts.yml .codex/auth.json"}"#.to_owned(),
            ),
        ])
        .enumerate()
        .map(|(i, (tool, args))| (format!("c{i}"), tool, args))
        .collect();
    calls.push((
        "last".to_owned(),
        "read",
        r#"{"path": "notes.txt"}"#.to_owned(),
    ));
    for (id, tool, args) in &calls {
        turn.extend(call(id, tool, args));
    }
    turn.push(done("tool_use"));
    let t = s.transcript("t.jsonl", &[turn, vec![text("ok"), done("end_turn")]]);
    let home = s.ws();
    let out = crate::support::command()
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".xdg-config"))
        .args(["--json", "--yes", "--replay"])
        .arg(&t)
        .arg("-C")
        .arg(s.ws())
        .arg("look around")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let items = tool_results(&events(&out));
    assert_eq!(items.len(), calls.len(), "{items:?}");
    for item in &items {
        let said = item.to_string();
        assert!(
            !said.contains("SECRET-"),
            "a hidden credential was read: {said}"
        );
    }
    for item in &items[..SECRETS.len() + 1] {
        assert_eq!(item["status"], "failed", "{item}");
        assert!(
            item["output"]
                .as_str()
                .unwrap_or_default()
                .contains("is hidden"),
            "{item}"
        );
    }
    let last: &Value = items.last().unwrap();
    assert!(
        last["output"]
            .as_str()
            .unwrap_or_default()
            .contains("nothing to hide"),
        "{last}"
    );
    assert_eq!(
        std::fs::read_to_string(s.ws().join(".bash_history")).unwrap(),
        "SECRET-5\n"
    );
}

#[test]
fn agents_md_linked_to_a_key_is_not_told_to_the_model() {
    let s = Scratch::new();
    let key = s.outside("id_ed25519");
    std::fs::write(&key, "PRIVATE KEY").unwrap();
    std::os::unix::fs::symlink(&key, s.ws().join("AGENTS.md")).unwrap();
    let t = s.transcript("t.jsonl", &[vec![text("Hi."), done("end_turn")]]);
    let out = s.run_json(&t, &[], "hello");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said = events(&out);
    assert!(
        !said
            .iter()
            .any(|e| e["type"] == "project_instructions.loaded"),
        "a link out of the workspace was read as instructions: {said:?}"
    );
    // A real AGENTS.md is still told.
    std::fs::remove_file(s.ws().join("AGENTS.md")).unwrap();
    s.file("AGENTS.md", "Use tabs.");
    let out = s.run_json(&t, &[], "hello");
    assert!(
        events(&out)
            .iter()
            .any(|e| e["type"] == "project_instructions.loaded"),
        "{}",
        stderr(&out)
    );
}
