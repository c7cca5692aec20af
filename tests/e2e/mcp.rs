//! MCP servers as tools, on the real binary against real servers: the reference servers of
//! the MCP project, installed pinned from `tests/mcp-servers` (`npm ci --prefix
//! tests/mcp-servers` and its `requirements.txt`, which `.ci/run` does), and broken ones
//! made of ordinary commands.
//! Without the servers these tests say how to install them and skip, unless
//! `WONOPCODE_REQUIRE_MCP_SERVERS` is set (as `.ci/run` does).

use std::path::PathBuf;

use serde_json::Value;

use crate::support::{
    Scratch, call, done, events, repo_root, stderr, text, tool_output, tool_results,
};

/// How to install the servers the tests use.
const INSTALL: &str = "npm ci --prefix tests/mcp-servers";

/// The `everything` reference server's program, or `None` (with a message) when missing.
pub(crate) fn everything() -> Option<PathBuf> {
    let path = repo_root().join("tests/mcp-servers/node_modules/.bin/mcp-server-everything");
    if path.exists() {
        return Some(path);
    }
    let how = format!("the MCP test servers are not installed: {INSTALL}");
    if std::env::var_os("WONOPCODE_REQUIRE_MCP_SERVERS").is_some() {
        panic!("{how}");
    }
    wonopcode_sandbox::test_skip::note(&how);
    None
}

/// The filesystem MCP server installed beside `everything`, or `None` (said) when the test
/// servers are not installed.
pub(crate) fn filesystem() -> Option<PathBuf> {
    everything().map(|e| e.with_file_name("mcp-server-filesystem"))
}

/// A run whose model calls `tool` with `args`, then answers "done".
fn one_call(s: &Scratch, tool: &str, args: &str) -> PathBuf {
    let mut turn = call("c1", tool, args);
    turn.push(done("tool_use"));
    s.transcript("t.jsonl", &[turn, vec![text("done"), done("end_turn")]])
}

fn mcp_flag(path: &std::path::Path) -> String {
    format!("everything={}", path.display())
}

#[test]
fn a_real_servers_tool_is_called_through_a_model_turn() {
    let Some(server) = everything() else { return };
    let s = Scratch::new();
    let t = one_call(
        &s,
        "mcp__everything__echo",
        r#"{"message": "hello from mcp"}"#,
    );
    let out = s.run_json(&t, &["--yes", "--mcp", &mcp_flag(&server)], "go");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let results = tool_results(&events(&out));
    assert_eq!(results[0]["status"], "completed", "{}", results[0]);
    assert_eq!(results[0]["output"], "Echo: hello from mcp");
    // An `mcp_tool_call` item, saying which server and tool, and how long it took.
    assert_eq!(results[0]["kind"], "mcp_tool_call", "{}", results[0]);
    assert_eq!(results[0]["server"], "everything");
    assert_eq!(results[0]["tool"], "echo");
    assert!(results[0]["duration_ms"].is_u64(), "{}", results[0]);

    // Arguments that do not fit the server's schema never reach it.
    let t = one_call(&s, "mcp__everything__echo", r#"{"message": 42}"#);
    let out = s.run_json(&t, &["--yes", "--mcp", &mcp_flag(&server)], "go");
    let results = tool_results(&events(&out));
    assert_eq!(results[0]["status"], "failed", "{}", results[0]);
    assert!(
        tool_output(&results[0]).contains("invalid arguments for `mcp__everything__echo`"),
        "{}",
        results[0]
    );

    // MCP tools are asked about by default: with nobody to ask, the call is declined.
    let t = one_call(&s, "mcp__everything__echo", r#"{"message": "x"}"#);
    let out = s.run_json(&t, &["--mcp", &mcp_flag(&server)], "go");
    assert_eq!(tool_results(&events(&out))[0]["status"], "declined");
    // A rule can name the server.
    let out = s.run_json(
        &t,
        &["--allow", "mcp__everything", "--mcp", &mcp_flag(&server)],
        "go",
    );
    assert_eq!(tool_results(&events(&out))[0]["status"], "completed");
}

#[test]
fn a_server_that_fails_is_reported_once_and_the_run_goes_on() {
    let Some(server) = everything() else { return };
    let s = Scratch::new();
    // One that is not there, one that never answers `initialize`, one that prints garbage.
    let config = s.config(
        "mcp_servers:\n\
         \x20 missing:\n    command: /no/such/server\n\
         \x20 silent:\n    command: sleep\n    args: ['30']\n    startup_timeout_sec: 1\n\
         \x20 garbage:\n    command: sh\n    args: ['-c', 'while true; do echo not json; done']\n    startup_timeout_sec: 2\n"
    );
    let t = one_call(&s, "mcp__everything__echo", r#"{"message": "still here"}"#);
    let out = s.run_json(
        &t,
        &["--yes", "--config", &config, "--mcp", &mcp_flag(&server)],
        "go",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let all = events(&out);
    let failed: Vec<&Value> = all
        .iter()
        .filter(|e| e["type"] == "mcp.server_failed")
        .collect();
    let named = |name: &str| {
        failed
            .iter()
            .find(|e| e["server"] == name)
            .unwrap_or_else(|| panic!("no failure for {name}: {failed:?}"))["error"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(failed.len(), 3, "{failed:?}");
    assert!(named("missing").starts_with("cannot start `/no/such/server`"));
    assert_eq!(named("silent"), "did not start within 1 s");
    assert!(!named("garbage").is_empty());
    // The working server's tool still ran.
    assert_eq!(tool_results(&all)[0]["output"], "Echo: still here");
}

#[test]
fn bad_server_entries_get_one_line_naming_them() {
    let s = Scratch::new();
    let t = s.transcript("t.jsonl", &[vec![text("never"), done("end_turn")]]);
    for (entry, said) in [
        (
            "  empty:\n    args: [x]\n",
            "error: mcp_servers.empty: no `command` to start the server (or `url` to reach it)",
        ),
        (
            "  bird:\n    type: pigeon\n    command: x\n",
            "error: mcp_servers.bird: unknown transport `pigeon` (stdio or http; `sse` servers are deprecated by MCP)",
        ),
    ] {
        let config = s.config(&format!("mcp_servers:\n{entry}"));
        let out = s.run_json(&t, &["--config", &config], "go");
        // A configuration error (exit 1); a bad flag is a usage error (exit 2).
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert_eq!(stderr(&out).trim_end(), said);
    }
    let config = s.config("mcp_servers:\n  dup:\n    command: x\n");
    let out = s.run_json(&t, &["--config", &config, "--mcp", "dup=y"], "go");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(
        stderr(&out).trim_end(),
        "error: --mcp dup=…: the MCP server name `dup` is given twice"
    );
}

#[test]
fn servers_never_see_wonopcodes_keys_and_images_are_told() {
    let Some(server) = everything() else { return };
    let s = Scratch::new();
    let t = one_call(&s, "mcp__everything__get-env", "{}");
    let out = s.run_json_with_env(
        &t,
        &[
            ("ANTHROPIC_API_KEY", "sk-ant-secret-for-the-test"),
            ("WONOPCODE_VISIBLE_TO_SERVERS", "yes"),
        ],
        &["--yes", "--mcp", &mcp_flag(&server)],
        "go",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let output = tool_results(&events(&out))[0]["output"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(output.contains("WONOPCODE_VISIBLE_TO_SERVERS"), "{output}");
    assert!(!output.contains("sk-ant-secret-for-the-test"), "{output}");

    let t = one_call(&s, "mcp__everything__get-tiny-image", "{}");
    let out = s.run_json(&t, &["--yes", "--mcp", &mcp_flag(&server)], "go");
    let output = tool_results(&events(&out))[0]["output"].clone();
    assert!(
        output
            .as_str()
            .unwrap_or_default()
            .contains("[image: image/png, "),
        "{output}"
    );
}

#[test]
fn a_server_killed_mid_call_fails_that_call_and_is_started_again_once() {
    let Some(server) = everything() else { return };
    let s = Scratch::new();
    let pid_file = s.outside("server.pid");
    // The server writes its process id, so the test can kill it while it works.
    let config = s.config(&format!(
        "mcp_servers:\n  everything:\n    command: sh\n    args: ['-c', 'echo $$ > {}; exec {}']\n",
        pid_file.display(),
        server.display()
    ));
    let mut slow = call(
        "c1",
        "mcp__everything__trigger-long-running-operation",
        r#"{"duration": 30, "steps": 3}"#,
    );
    slow.push(done("tool_use"));
    let mut echo = call(
        "c2",
        "mcp__everything__echo",
        r#"{"message": "back again"}"#,
    );
    echo.push(done("tool_use"));
    let t = s.transcript(
        "t.jsonl",
        &[slow, echo, vec![text("done"), done("end_turn")]],
    );
    let killer = {
        let pid_file = pid_file.clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(1500));
            let pid = std::fs::read_to_string(&pid_file).unwrap_or_default();
            std::process::Command::new("kill")
                .args(["-9", pid.trim()])
                .status()
                .unwrap();
        })
    };
    let out = s.run_json(&t, &["--yes", "--config", &config], "go");
    killer.join().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let results = tool_results(&events(&out));
    assert_eq!(results[0]["status"], "failed", "{}", results[0]);
    assert!(
        tool_output(&results[0]).contains("MCP server `everything`"),
        "{}",
        results[0]
    );
    assert_eq!(results[1]["output"], "Echo: back again", "{}", results[1]);
}

#[test]
fn a_five_megabyte_result_is_truncated_with_its_real_size() {
    let Some(server) = everything() else { return };
    let s = Scratch::new();
    let big = "x".repeat(5 << 20);
    let args = serde_json::json!({ "message": big }).to_string();
    let t = one_call(&s, "mcp__everything__echo", &args);
    let out = s.run_json(&t, &["--yes", "--mcp", &mcp_flag(&server)], "go");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let output = tool_results(&events(&out))[0]["output"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        output.len() < 100_000,
        "{} bytes reached the model",
        output.len()
    );
    assert!(
        output.contains("bytes"),
        "{}",
        &output[..200.min(output.len())]
    );
}

#[test]
fn a_guest_loop_sees_the_servers_tools() {
    let Some(server) = everything() else { return };
    let s = Scratch::new();
    let t = s.transcript("t.jsonl", &[vec![text("unused"), done("end_turn")]]);
    let out = s.run_json(
        &t,
        &[
            "--mcp",
            &mcp_flag(&server),
            "--agent-loop",
            wonopcode_wasm_host::guest_paths::MISBEHAVE,
        ],
        "tools",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let answer = String::from_utf8_lossy(&out.stdout);
    assert!(answer.contains("mcp__everything__echo"), "{answer}");
}

/// `NAME=python3 tests/mcp-servers/NAME_server.py` for `--mcp`: a test server written with
/// the official Python SDK; `None` (with a message) when the SDK is not installed.
fn python_server(name: &str) -> Option<String> {
    time_server_installed().then(|| {
        let script = repo_root().join(format!("tests/mcp-servers/{name}_server.py"));
        format!("{name}=python3 {}", script.display())
    })
}

/// Whether the Python reference server `mcp-server-time` is installed (with a message when
/// not, or a failure where it must be).
fn time_server_installed() -> bool {
    let found = std::process::Command::new("python3")
        .args(["-c", "import mcp_server_time"])
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        let how = "mcp-server-time is not installed: python3 -m pip install -r tests/mcp-servers/requirements.txt";
        if std::env::var_os("WONOPCODE_REQUIRE_MCP_SERVERS").is_some() {
            panic!("{how}");
        }
        wonopcode_sandbox::test_skip::note(how);
    }
    found
}

#[test]
fn the_python_time_server_and_the_filesystem_server_answer() {
    if !time_server_installed() {
        return;
    }
    let Some(filesystem) = filesystem() else {
        return;
    };
    let s = Scratch::new();
    s.file("notes/plan.md", "step one: write the tests\n");
    let config = s.config(&format!(
            "mcp_servers:\n  time:\n    command: python3\n    args: ['-m', 'mcp_server_time', '--local-timezone', 'UTC']\n  files:\n    command: {}\n    args: ['{}']\n",
            filesystem.display(),
            s.ws().display()
        ));
    let mut turn = call(
        "c1",
        "mcp__time__get_current_time",
        r#"{"timezone": "Asia/Tokyo"}"#,
    );
    let path = s.ws().join("notes/plan.md");
    let read = serde_json::json!({ "path": path.to_str().unwrap() }).to_string();
    turn.extend(call("c2", "mcp__files__read_text_file", &read));
    turn.push(done("tool_use"));
    let t = s.transcript("t.jsonl", &[turn, vec![text("done"), done("end_turn")]]);
    let out = s.run_json(&t, &["--yes", "--config", &config], "go");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let all = events(&out);
    assert!(
        !all.iter().any(|e| e["type"] == "mcp.server_failed"),
        "{all:?}"
    );
    let results = tool_results(&all);
    let by_call = |id: &str| {
        results
            .iter()
            .find(|r| r["call_id"] == id)
            .unwrap_or_else(|| panic!("no result for {id}: {results:?}"))
            .clone()
    };
    let time = by_call("c1");
    assert!(tool_output(&time).contains("Asia/Tokyo"), "{time}");
    let file = by_call("c2");
    assert!(
        tool_output(&file).contains("step one: write the tests"),
        "{file}"
    );
}

/// A free TCP port on the loopback interface.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Kills the HTTP server when the test ends, however it ends.
struct Serving(std::process::Child);

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_streamable_http_server_is_reached_by_url_with_its_headers() {
    let Some(server) = everything() else { return };
    let port = free_port();
    let _serving = Serving(
        std::process::Command::new(&server)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    // Until it listens.
    let mut tries = 0;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        tries += 1;
        assert!(tries < 200, "the HTTP server did not start");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let s = Scratch::new();
    let config = s.config(&format!(
            "mcp_servers:\n  remote:\n    type: http\n    url: http://127.0.0.1:{port}/mcp\n    headers: {{X-Client: wonopcode}}\n    bearer_token_env_var: WONOPCODE_TEST_TOKEN\n"
        ));
    let t = one_call(&s, "mcp__remote__echo", r#"{"message": "over http"}"#);
    let out = s.run_json_with_env(
        &t,
        &[("WONOPCODE_TEST_TOKEN", "not-a-real-token")],
        &["--yes", "--config", &config],
        "go",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let all = events(&out);
    assert!(
        !all.iter().any(|e| e["type"] == "mcp.server_failed"),
        "{all:?}"
    );
    let results = tool_results(&all);
    assert_eq!(results[0]["output"], "Echo: over http", "{}", results[0]);
    assert_eq!(results[0]["server"], "remote");
}

/// `wonopcode mcp --config CONFIG ARGS...` in the scratch workspace.
fn mcp_command(s: &Scratch, config: &str, args: &[&str]) -> std::process::Output {
    let mut all = vec!["--config", config];
    all.extend_from_slice(args);
    s.mcp(&all)
}

#[test]
fn mcp_list_tools_and_call_try_a_server_without_a_model() {
    let Some(server) = everything() else { return };
    let s = Scratch::new();
    let config = s.config(&format!(
        "mcp_servers:\n\
         \x20 everything:\n    command: {}\n    disabled_tools: [get-env]\n\
         \x20 missing:\n    command: /no/such/server\n",
        server.display()
    ));
    let stdout = |out: &std::process::Output| String::from_utf8_lossy(&out.stdout).into_owned();

    // list: every server, started or not; exit 1 because one did not start.
    let out = mcp_command(&s, &config, &["list"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let listed = stdout(&out);
    assert!(listed.contains("everything  started  12 tools"), "{listed}");
    assert!(
        listed.contains("missing  failed  cannot start `/no/such/server`"),
        "{listed}"
    );
    let out = mcp_command(&s, &config, &["list", "--json"]);
    let rows: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    assert_eq!(rows[0]["status"], "started", "{rows:?}");
    assert!(rows[0]["startup_ms"].is_u64(), "{rows:?}");
    assert_eq!(rows[1]["status"], "failed", "{rows:?}");

    // tools: named as a model sees them, without the disabled one.
    let out = mcp_command(&s, &config, &["tools", "everything"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let tools = stdout(&out);
    assert!(
        tools.contains("mcp__everything__echo  Echoes back the input string"),
        "{tools}"
    );
    assert!(!tools.contains("get-env"), "{tools}");
    let out = mcp_command(&s, &config, &["tools", "everything", "--json"]);
    let first: Value = serde_json::from_str(stdout(&out).lines().next().unwrap_or("")).unwrap();
    assert_eq!(first["server"], "everything");
    assert!(first["input_schema"].is_object(), "{first}");

    // call: the tool's answer; images are told by type and size, or given whole with --json.
    let out = mcp_command(
        &s,
        &config,
        &["call", "everything", "get-sum", r#"{"a": 2, "b": 3}"#],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "The sum of 2 and 3 is 5.");
    let out = mcp_command(&s, &config, &["call", "everything", "get-tiny-image"]);
    assert!(
        stdout(&out).contains("[image: image/png, "),
        "{}",
        stdout(&out)
    );
    let out = mcp_command(
        &s,
        &config,
        &["call", "everything", "get-tiny-image", "{}", "--json"],
    );
    let whole: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(whole["content"][1]["type"], "image", "{whole}");

    // Bad input: one line each, exit 2, and nothing reaches the server.
    for (args, expected) in [
        (
            vec!["call", "everything", "get-sum", r#"{"a": "x"}"#],
            "invalid arguments for `mcp__everything__get-sum`",
        ),
        (vec!["call", "everything", "get-sum", "{"], "not valid JSON"),
        (
            vec!["call", "everything", "get-summ"],
            "offers no tool `get-summ`; did you mean `get-sum`?",
        ),
        (
            vec!["tools", "everythin"],
            "no MCP server `everythin`; did you mean `everything`?",
        ),
    ] {
        let out = mcp_command(&s, &config, &args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(expected), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
    // A server that did not start says why.
    let out = mcp_command(&s, &config, &["tools", "missing"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("the MCP server `missing` did not start: cannot start"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_servers_form_is_filled_in_at_the_terminal_or_declined_when_nobody_is_there() {
    use crate::terminal::{answer, finish};
    let Some(server) = python_server("ask") else {
        return;
    };
    let s = Scratch::new();
    // At a terminal: each field is asked, Enter takes the default, a wrong type is asked again.
    let mut cmd = crate::support::command();
    cmd.current_dir(s.ws())
        .args(["mcp", "--mcp", &server, "call", "ask", "book_table"])
        .arg(r#"{"day": "friday"}"#);
    let mut session = rexpect::session::spawn_command(cmd, Some(30_000)).unwrap();
    session
        .exp_string("`ask` asks: Booking for friday")
        .unwrap();
    // A required field left empty is asked again.
    answer(
        &mut session,
        "name (Your name) (required): ",
        "",
        "the name field",
    );
    answer(
        &mut session,
        "`name` is required",
        "Ada",
        "the required check",
    );
    answer(
        &mut session,
        "guests (How many people) [2]: ",
        "many",
        "the guests field",
    );
    answer(
        &mut session,
        "a whole number, please",
        "4",
        "the type check",
    );
    answer(
        &mut session,
        "terrace (Outside?) [false]: ",
        "",
        "the terrace field",
    );
    let (rest, code) = finish(session);
    assert_eq!(code, 0, "{rest}");
    assert!(
        rest.contains("booked friday for Ada, 4 people, terrace=False"),
        "{rest}"
    );

    // Nobody at the terminal: the form is declined, and the tool says so.
    let out = s.mcp(&[
        "--mcp",
        &server,
        "call",
        "ask",
        "book_table",
        r#"{"day": "monday"}"#,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("no booking (decline)"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn a_tool_a_server_adds_during_a_run_is_offered_at_the_next_response() {
    let Some(server) = python_server("grow") else {
        return;
    };
    let s = Scratch::new();
    // The model unlocks, then calls the tool that unlocking added.
    let mut first = call("c1", "mcp__grow__unlock", "{}");
    first.push(done("tool_use"));
    let mut second = call("c2", "mcp__grow__secret", "{}");
    second.push(done("tool_use"));
    let t = s.transcript(
        "t.jsonl",
        &[first, second, vec![text("done"), done("end_turn")]],
    );
    let out = s.run_json(&t, &["--allow", "mcp__grow", "--mcp", &server], "go");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let all = events(&out);
    let results = tool_results(&all);
    assert_eq!(tool_output(&results[0]), "unlocked", "{results:?}");
    assert_eq!(results[1]["status"], "completed", "{results:?}");
    assert_eq!(tool_output(&results[1]), "the secret is 42");
    // Taking the changed list refused no tool (a clash would be an `mcp.server_failed`).
    assert!(
        !all.iter().any(|e| e["type"] == "mcp.server_failed"),
        "{all:?}"
    );
}

#[test]
fn a_flood_of_list_changes_is_coalesced_into_few_re_lists() {
    // Written by hand (no SDK), but run where the Python servers are required to be.
    let Some(_) = python_server("flood") else {
        return;
    };
    let script = repo_root().join("tests/mcp-servers/flood_server.py");
    let server = format!("flood=python3 {}", script.display());
    let s = Scratch::new();
    let mut first = call("c1", "mcp__flood__flood", r#"{"n": 3000}"#);
    first.push(done("tool_use"));
    let mut second = call("c2", "mcp__flood__lists", "{}");
    second.push(done("tool_use"));
    let t = s.transcript(
        "t.jsonl",
        &[first, second, vec![text("done"), done("end_turn")]],
    );
    let out = s.run_json(&t, &["--allow", "mcp__flood", "--mcp", &server], "go");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let results = tool_results(&events(&out));
    assert_eq!(tool_output(&results[0]), "sent 3000", "{results:?}");
    let lists: usize = tool_output(&results[1])
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("{results:?}"));
    // One listing at the start, and re-lists one at a time however many changes were said.
    assert!(lists <= 50, "{lists} re-lists for 3,000 changes");
}

#[test]
fn an_answer_over_the_message_limit_ends_its_call_at_once() {
    let Some(_) = python_server("flood") else {
        return;
    };
    let script = repo_root().join("tests/mcp-servers/flood_server.py");
    let server = format!("flood=python3 {}", script.display());
    let s = Scratch::new();
    let mut huge = call("c1", "mcp__flood__huge", r#"{"mib": 17}"#);
    huge.push(done("tool_use"));
    let mut after = call("c2", "mcp__flood__lists", "{}");
    after.push(done("tool_use"));
    let t = s.transcript(
        "t.jsonl",
        &[huge, after, vec![text("done"), done("end_turn")]],
    );
    // Before, the 17 MiB line was dropped by the transport and the call waited out its
    // timeout with no reason given.
    let out = s.run_json(&t, &["--allow", "mcp__flood", "--mcp", &server], "go");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let results = tool_results(&events(&out));
    let refused = tool_output(&results[0]);
    assert!(
        refused.contains("the server sent a message over 16 MiB"),
        "{results:?}"
    );
    // The server is started again for the next call, which works.
    assert_eq!(tool_output(&results[1]).trim(), "1", "{results:?}");
}

#[test]
fn a_registry_module_gets_its_own_servers_and_keeps_to_its_allowlist() {
    use crate::support::transcript_of;
    let Some(server) = everything() else { return };
    let s = Scratch::new();
    // `helper` is the default guest with an MCP server of its own and an allowlist.
    let loops = s.outside("loops");
    std::fs::create_dir_all(&loops).unwrap();
    std::fs::write(
        loops.join("registry.yaml"),
        format!(
            "modules:\n  helper:\n    path: {}\n    mcp_servers:\n      everything: {{command: {}}}\n    tools: [read, mcp__everything__echo]\n",
            wonopcode_wasm_host::guest_paths::DEFAULT_LOOP,
            server.display()
        ),
    )
    .unwrap();
    // The child (context 0.1) echoes through its server, then tries bash and another tool
    // of the server, which its allowlist leaves out.
    let mut echo = call(
        "c1",
        "mcp__everything__echo",
        r#"{"message": "from the child"}"#,
    );
    echo.push(done("tool_use"));
    let mut bash = call("c2", "bash", r#"{"command": "echo hi"}"#);
    bash.push(done("tool_use"));
    let mut sum = call("c3", "mcp__everything__get-sum", r#"{"a": 1, "b": 2}"#);
    sum.push(done("tool_use"));
    let t = s.outside("t.jsonl");
    std::fs::write(
        &t,
        transcript_of(
            "0.1",
            &[echo, bash, sum, vec![text("child done"), done("end_turn")]],
        ),
    )
    .unwrap();
    let spawn = r#"spawn {"module": {"named": "helper"}, "task": "use your tools"}"#;
    let loops_dir = loops.to_string_lossy();
    let out = s.run_json(
        &t,
        &[
            "--yes",
            "--loops-dir",
            &loops_dir,
            "--agent-loop",
            wonopcode_wasm_host::guest_paths::MISBEHAVE,
        ],
        spawn,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let all = events(&out);
    let results = tool_results(&all);
    let in_child: Vec<&Value> = results.iter().collect();
    assert_eq!(in_child.len(), 3, "{results:?}");
    assert_eq!(in_child[0]["output"], "Echo: from the child", "{results:?}");
    assert_eq!(in_child[0]["server"], "everything");
    for refused in &in_child[1..] {
        assert!(
            tool_output(refused).starts_with("unknown tool"),
            "the allowlist leaves it out: {refused}"
        );
    }
    // The module's server started for the child without a failure.
    let failures = all
        .iter()
        .filter(|e| e["type"] == "mcp.server_failed")
        .count();
    assert_eq!(failures, 0, "{all:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("child done"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    // Run by name as the root loop, the module gets the same.
    let mut echo = call(
        "c1",
        "mcp__everything__echo",
        r#"{"message": "from the root"}"#,
    );
    echo.push(done("tool_use"));
    let mut bash = call("c2", "bash", r#"{"command": "echo hi"}"#);
    bash.push(done("tool_use"));
    let t = s.transcript(
        "root.jsonl",
        &[echo, bash, vec![text("ok"), done("end_turn")]],
    );
    let out = s.run_json(
        &t,
        &[
            "--yes",
            "--loops-dir",
            &loops_dir,
            "--agent-loop-name",
            "helper",
        ],
        "go",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let results = tool_results(&events(&out));
    assert_eq!(results[0]["output"], "Echo: from the root", "{results:?}");
    assert!(
        tool_output(&results[1]).starts_with("unknown tool `bash`"),
        "{results:?}"
    );
}

#[test]
fn login_refuses_servers_that_cannot_be_signed_in_to_in_one_line() {
    let s = Scratch::new();
    let config = s.config(
        "mcp_servers:\n\
         \x20 local:\n    command: some-server\n\
         \x20 keyed:\n    url: https://mcp.example.com/mcp\n    bearer_token_env_var: HOME\n",
    );
    for (server, expected) in [
        ("local", "only HTTP servers are signed in to"),
        ("keyed", "it cannot be signed in to"),
        ("keyd", "no MCP server `keyd`; did you mean `keyed`?"),
    ] {
        let out = mcp_command(&s, &config, &["login", server]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{server}: {err}");
        assert!(err.contains(expected), "{server}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{server}: {err}");
    }
    // Signing out of a server nobody signed in to says so, and succeeds.
    let config = s.config("mcp_servers:\n  remote:\n    url: https://mcp.example.com/mcp\n");
    let out = crate::support::command()
        .current_dir(s.ws())
        .env("XDG_DATA_HOME", s.outside("data"))
        .args(["mcp", "--config", &config, "logout", "remote"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("`remote` was not signed in to"),
        "{}",
        stderr(&out)
    );
}
