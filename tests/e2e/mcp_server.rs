//! `wonopcode mcp-server`: the named loops as MCP tools, on the real binary. Over stdio with
//! wonopcode's own MCP client (`wonopcode mcp call`, rmcp on both ends), and over streamable
//! HTTP against the MCP project's conformance suite, whose TypeScript client (the official
//! SDK) calls the fixture tools of `tests/conformance` (installed pinned with
//! `npm ci --prefix tests/conformance`, as `.ci/run` does; skipped with a message without it,
//! unless `WONOPCODE_REQUIRE_MCP_SERVERS` is set).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Stdio};

use serde_json::Value;

use crate::support::{Scratch, bin, call, command, done, repo_root, stderr, text};

/// `w=wonopcode mcp-server FLAGS...` as an `--mcp` value.
fn served(flags: &str) -> String {
    format!("w={} mcp-server {flags}", bin().display())
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_loop_served_over_stdio_runs_its_tree_and_answers_with_usage() {
    let s = Scratch::new();
    let mut turn = call(
        "c1",
        "bash",
        r#"{"command": "echo served > from-mcp.txt && cat from-mcp.txt"}"#,
    );
    turn.push(done("tool_use"));
    let t = s.transcript(
        "t.jsonl",
        &[turn, vec![text("Wrote it."), done("end_turn")]],
    );
    let server = served(&format!(
        "-C {} --replay {} --allow bash",
        s.ws().display(),
        t.display()
    ));

    // The loops are the tools, each taking a prompt.
    let out = s.mcp(&["--mcp", &server, "tools", "w", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let tools: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let standard = tools.iter().find(|t| t["tool"] == "standard").unwrap();
    assert_eq!(
        standard["input_schema"]["required"][0], "prompt",
        "{standard}"
    );
    assert!(tools.iter().any(|t| t["tool"] == "default"), "{tools:?}");

    // A call runs the whole loop: the model's bash call ran in the server's workspace, under
    // the server's permissions, and the answer comes with the status and usage.
    let out = s.mcp(&[
        "--mcp",
        &server,
        "call",
        "w",
        "standard",
        r#"{"prompt": "write the file"}"#,
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let result: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(result["content"][0]["text"], "Wrote it.", "{result}");
    let structured = &result["structuredContent"];
    assert_eq!(structured["status"], "complete", "{result}");
    assert_eq!(structured["iterations"], 2, "{result}");
    assert!(structured["usage"]["input_tokens"].is_u64(), "{result}");
    assert_eq!(
        std::fs::read_to_string(s.ws().join("from-mcp.txt")).unwrap(),
        "served\n"
    );

    // Without the permission, nobody can approve: the call is refused inside the run, which
    // goes on (the client sees the model's answer).
    std::fs::remove_file(s.ws().join("from-mcp.txt")).unwrap();
    let strict = served(&format!("-C {} --replay {}", s.ws().display(), t.display()));
    let out = s.mcp(&[
        "--mcp",
        &strict,
        "call",
        "w",
        "standard",
        r#"{"prompt": "x"}"#,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!s.ws().join("from-mcp.txt").exists());

    // Arguments that do not fit the tool's schema never leave the client (the server checks
    // them too, for clients that do not).
    let out = s.mcp(&[
        "--mcp",
        &server,
        "call",
        "w",
        "standard",
        r#"{"prompt": "x", "promt": 1}"#,
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("'promt' was unexpected"),
        "{}",
        stderr(&out)
    );
    // A workspace that does not exist: the call fails, saying which.
    let out = s.mcp(&[
        "--mcp",
        &server,
        "call",
        "w",
        "standard",
        r#"{"prompt": "x", "workspace": "no-such-dir"}"#,
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stdout(&out).contains("no-such-dir"), "{}", stdout(&out));
}

#[test]
fn mcp_server_refuses_an_unknown_loop_and_a_bad_address_in_one_line() {
    let out = command()
        .args(["mcp-server", "--loop", "standrad"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("--loop standrad"), "{err}");
    assert!(err.contains("standard"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");

    let out = command()
        .args(["mcp-server", "--http", "not-an-address"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

/// The conformance suite's directory, or `None` (with a message) when it is not installed.
fn conformance() -> Option<PathBuf> {
    let dir = repo_root().join("tests/conformance");
    if dir.join("node_modules/.bin/node").exists() {
        return Some(dir);
    }
    let how = "the MCP conformance suite is not installed: npm ci --prefix tests/conformance";
    if std::env::var_os("WONOPCODE_REQUIRE_MCP_SERVERS").is_some() {
        panic!("{how}");
    }
    eprintln!("skipped: {how}");
    None
}

/// A served `wonopcode mcp-server --http` and its URL; killed on drop.
struct HttpServer {
    child: Child,
    url: String,
}

impl HttpServer {
    fn start(flags: &[&str]) -> Self {
        let mut child = command()
            .args(["mcp-server", "--http", "127.0.0.1:0"])
            .args(flags)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let first = lines.next().unwrap().unwrap();
        let url = first
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("no address in `{first}`"))
            .to_owned();
        // Drained, so the server never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        Self { child, url }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_mcp_conformance_suite_passes_against_mcp_server_over_http() {
    let Some(dir) = conformance() else { return };
    let server = HttpServer::start(&[
        "--loops-dir",
        &dir.to_string_lossy(),
        "--replay",
        &dir.join("no-model.jsonl").to_string_lossy(),
    ]);
    // The suite writes its results in its working directory.
    let results = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(dir.join("node_modules/.bin/node"))
        .current_dir(results.path())
        .arg(dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js"))
        .args(["server", "--url", &server.url, "--suite", "all"])
        .arg("--expected-failures")
        .arg(dir.join("expected-failures.yml"))
        .output()
        .unwrap();
    let report = stdout(&out);
    let summary = report
        .find("=== SUMMARY ===")
        .map_or(report.as_str(), |at| &report[at..]);
    // Exit 0: every scenario passed but the expected failures, and each of those still fails.
    assert_eq!(
        out.status.code(),
        Some(0),
        "{summary}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(summary.contains("✓ tools-call-with-progress"), "{summary}");
}
