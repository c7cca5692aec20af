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

/// `wonopcode mcp --mcp SERVER call w standard ARGUMENTS EXTRA...`: the `standard` loop of a
/// served wonopcode, called by wonopcode's own MCP client.
fn call_standard(
    s: &Scratch,
    server: &str,
    arguments: &str,
    extra: &[&str],
) -> std::process::Output {
    let mut args = vec!["--mcp", server, "call", "w", "standard", arguments];
    args.extend_from_slice(extra);
    s.mcp(&args)
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
    let out = call_standard(&s, &server, r#"{"prompt": "write the file"}"#, &["--json"]);
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
    let out = call_standard(&s, &strict, r#"{"prompt": "x"}"#, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!s.ws().join("from-mcp.txt").exists());

    // Arguments that do not fit the tool's schema never leave the client (the server checks
    // them too, for clients that do not).
    let out = call_standard(&s, &server, r#"{"prompt": "x", "promt": 1}"#, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("'promt' was unexpected"),
        "{}",
        stderr(&out)
    );
    // The client's model, from a client that lends none: the call fails, saying so.
    let borrowing = served(&format!("-C {} --provider mcp-client", s.ws().display()));
    let out = call_standard(&s, &borrowing, r#"{"prompt": "x"}"#, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("the MCP client does not offer its model"),
        "{}",
        stdout(&out)
    );
    // A workspace that does not exist: the call fails, saying which.
    let out = call_standard(
        &s,
        &server,
        r#"{"prompt": "x", "workspace": "no-such-dir"}"#,
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stdout(&out).contains("no-such-dir"), "{}", stdout(&out));
}

#[test]
fn a_calls_workspace_stays_beneath_the_servers() {
    let s = Scratch::new();
    let t = s.transcript("t.jsonl", &[vec![text("Hi."), done("end_turn")]]);
    let outside = s.outside("elsewhere");
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, s.ws().join("link-out")).unwrap();
    std::fs::create_dir_all(s.ws().join("sub")).unwrap();
    let server = served(&format!("-C {} --replay {}", s.ws().display(), t.display()));
    for (workspace, said) in [
        (outside.display().to_string(), "must be a relative path"),
        ("../elsewhere".to_owned(), "must be a relative path"),
        ("sub/../../elsewhere".to_owned(), "must be a relative path"),
        (
            "link-out".to_owned(),
            "leads outside the server's workspace",
        ),
    ] {
        let arguments = serde_json::json!({"prompt": "x", "workspace": workspace}).to_string();
        let out = call_standard(&s, &server, &arguments, &[]);
        assert_eq!(out.status.code(), Some(1), "{workspace}: {}", stderr(&out));
        assert!(stdout(&out).contains(said), "{workspace}: {}", stdout(&out));
    }
    // Beneath it is fine.
    let out = call_standard(&s, &server, r#"{"prompt": "x", "workspace": "sub"}"#, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
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

/// An MCP client (rmcp) that passes on the progress messages it receives.
struct ProgressClient(tokio::sync::mpsc::UnboundedSender<String>);

impl rmcp::ClientHandler for ProgressClient {
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        let _ = self.0.send(params.message.unwrap_or_default());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn cancelling_a_call_cancels_its_run_and_kills_its_commands() {
    use rmcp::ServiceExt;
    use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest};
    use rmcp::service::PeerRequestOptions;
    use std::time::{Duration, Instant};

    let s = Scratch::new();
    let mut turn = call(
        "c1",
        "bash",
        r#"{"command": "echo $$ > pid && exec sleep 60"}"#,
    );
    turn.push(done("tool_use"));
    let t = s.transcript("t.jsonl", &[turn, vec![text("slept"), done("end_turn")]]);
    let mut server = tokio::process::Command::from(command());
    server
        .arg("mcp-server")
        .arg("-C")
        .arg(s.ws())
        .arg("--replay")
        .arg(&t)
        .args(["--allow", "bash"]);
    let (progress, mut steps) = tokio::sync::mpsc::unbounded_channel();
    let transport = rmcp::transport::TokioChildProcess::new(server).unwrap();
    let client = ProgressClient(progress).serve(transport).await.unwrap();
    let mut arguments = serde_json::Map::new();
    arguments.insert("prompt".into(), "sleep".into());
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new("standard").with_arguments(arguments),
    ));
    let handle = client
        .peer()
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .unwrap();

    // Progress tells the client the command runs; its process writes its pid.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let step = tokio::time::timeout_at(deadline.into(), steps.recv())
            .await
            .expect("a progress notification naming bash")
            .unwrap();
        if step.contains("running `bash`") {
            break;
        }
    }
    let pid_file = s.ws().join("pid");
    let pid = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|p| p.trim().parse::<u32>().ok())
        {
            break pid;
        }
        assert!(Instant::now() < deadline, "the command never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let proc_dir = PathBuf::from(format!("/proc/{pid}"));
    assert!(proc_dir.exists());

    // Cancelling the request cancels the run: its command is killed at once.
    let cancelled = Instant::now();
    handle
        .cancel(Some("the user changed their mind".into()))
        .await
        .unwrap();
    while proc_dir.exists() {
        assert!(
            cancelled.elapsed() < Duration::from_secs(10),
            "the command outlived the cancelled call"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The server goes on serving.
    let tools = client.peer().list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "standard"));
    client.cancel().await.unwrap();
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
    wonopcode_sandbox::test_skip::note(how);
    None
}

/// Runs the conformance suite's `conformance ARGS... --expected-failures FILE` in a scratch
/// directory (it writes its results there); its summary, asserting it exited 0: every
/// scenario passed but the expected failures, and each of those still fails.
fn run_suite(dir: &std::path::Path, args: &[&str]) -> String {
    let results = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(dir.join("node_modules/.bin/node"))
        .current_dir(results.path())
        .env("WONOPCODE_BIN", bin())
        .arg(dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js"))
        .args(args)
        .arg("--expected-failures")
        .arg(dir.join("expected-failures.yml"))
        .output()
        .unwrap();
    let report = stdout(&out);
    let summary = report
        .find("SUMMARY ===")
        .map_or(report.as_str(), |at| &report[at..])
        .to_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{summary}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    summary
}

/// A served `wonopcode mcp-server --http` and its URL; killed on drop.
struct HttpServer {
    child: Child,
    url: String,
}

/// What a served wonopcode prints on stderr after its address.
type StderrLines = std::io::Lines<BufReader<std::process::ChildStderr>>;

impl HttpServer {
    fn start(flags: &[&str]) -> Self {
        let (server, lines) = Self::serve(
            command()
                .args(["mcp-server", "--http", "127.0.0.1:0"])
                .args(flags),
        );
        // Drained, so the server never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        server
    }

    /// Starts `cmd` (an `mcp-server --http`), reads its address; the lines after it are
    /// the caller's to read (and drain).
    fn serve(cmd: &mut std::process::Command) -> (Self, StderrLines) {
        let mut child = cmd.stderr(Stdio::piped()).spawn().unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let first = lines.next().unwrap().unwrap();
        let url = first
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("no address in `{first}`"))
            .to_owned();
        (Self { child, url }, lines)
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
    // The fixtures' model is the client's own (MCP sampling).
    // The suite's client sends no token: a loopback server without one.
    let server = HttpServer::start(&[
        "--no-auth",
        "--loops-dir",
        &dir.to_string_lossy(),
        "--provider",
        "mcp-client",
    ]);
    let summary = run_suite(&dir, &["server", "--url", &server.url, "--suite", "all"]);
    assert!(summary.contains("✓ tools-call-with-progress"), "{summary}");
    assert!(summary.contains("✓ tools-call-sampling"), "{summary}");
}

#[test]
fn wonopcodes_mcp_client_passes_the_conformance_suites_client_scenarios() {
    let Some(dir) = conformance() else { return };
    // tests/conformance/client.sh drives `wonopcode mcp` for each scenario.
    let client = dir.join("client.sh");
    let summary = run_suite(
        &dir,
        &[
            "client",
            "--command",
            &client.to_string_lossy(),
            "--suite",
            "all",
        ],
    );
    for scenario in [
        "initialize",
        "tools_call",
        "sse-retry",
        "auth/metadata-default",
        "auth/scope-from-www-authenticate",
        "auth/pre-registration",
        "auth/scope-step-up",
        "auth/basic-cimd",
        "auth/2025-03-26-oauth-metadata-backcompat",
    ] {
        assert!(summary.contains(&format!("✓ {scenario}:")), "{summary}");
    }
}

/// Sends one MCP `initialize` request over HTTP to `url` (with `authorization` when given);
/// the response's status code.
fn initialize(url: &str, authorization: Option<&str>) -> u16 {
    use std::io::{Read, Write};
    let address = url.trim_start_matches("http://").split('/').next().unwrap();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let auth = authorization.map_or(String::new(), |a| format!("authorization: {a}\r\n"));
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\n{auth}content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).unwrap();
    String::from_utf8_lossy(&head[9..12]).parse().unwrap()
}

#[test]
fn the_http_server_wants_its_bearer_token() {
    let s = Scratch::new();
    let data = s.outside("data");
    let (server, mut lines) = HttpServer::serve(
        command()
            .env("XDG_DATA_HOME", &data)
            .args(["mcp-server", "--http", "127.0.0.1:0", "-C"])
            .arg(s.ws()),
    );
    let url = server.url.clone();
    let second = lines.next().unwrap().unwrap();
    let token = second
        .strip_prefix("bearer token: ")
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no token in `{second}`"))
        .to_owned();
    std::thread::spawn(move || lines.for_each(drop));
    let kept = data.join("wonopcode/mcp-server.token");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&kept).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(std::fs::read_to_string(&kept).unwrap().trim(), token);

    assert_eq!(initialize(&url, None), 401, "no token");
    assert_eq!(
        initialize(&url, Some("Bearer not-the-token")),
        401,
        "a wrong token"
    );
    assert_eq!(
        initialize(&url, Some(&format!("Bearer {token}"))),
        200,
        "the token"
    );
    drop(server);

    // No token only on a loopback address.
    let out = command()
        .args(["mcp-server", "--http", "0.0.0.0:0", "--no-auth", "-C"])
        .arg(s.ws())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("is not a loopback address"),
        "{}",
        stderr(&out)
    );
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
}
