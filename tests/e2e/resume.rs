//! Resuming an interrupted run from its journal (`wonopcode resume`, `docs/durability.md`)
//! on the real binary, against a loopback model server that answers by what each request
//! says: the multi-agent example killed (SIGKILL) at seeded points and resumed to the same
//! files and answer without a recorded response asked again; a command cut off by the kill
//! handled by `--on-interrupted`; a journal torn at every byte of its last record; a
//! conversation continued from `--history` whose recording and replay go on from the
//! response where it stopped; and forks (`wonopcode fork`) that serve the run up to their
//! point from its journal and ask the rest of another model.

use std::collections::{BTreeSet, HashMap};
use std::io::{BufRead, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{Scratch, command, copy_dir, repo_root};

/// What the server answers a request with: a label to log it by, and the SSE body.
type Answerer = dyn Fn(&Value) -> Option<(String, String)> + Send + Sync;

/// A loopback model server: each connection one request, answered as `answer` says, the
/// body streamed in pieces a little apart (so a kill can land mid-response); a request it
/// cannot answer gets a 500. It logs every label it was asked for.
pub(crate) struct ModelServer {
    pub(crate) base_url: String,
    /// Every label answered, with the model it was asked of.
    asked: Arc<Mutex<Vec<(String, String)>>>,
}

impl ModelServer {
    fn start(answer: Box<Answerer>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let asked = Arc::new(Mutex::new(Vec::new()));
        let answer: Arc<Answerer> = Arc::from(answer);
        let log = asked.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (answer, log) = (answer.clone(), log.clone());
                std::thread::spawn(move || serve_one(stream, &*answer, &log));
            }
        });
        Self { base_url, asked }
    }

    pub(crate) fn asked(&self) -> Vec<String> {
        self.asked
            .lock()
            .unwrap()
            .iter()
            .map(|a| a.0.clone())
            .collect()
    }

    /// Every label answered, with the model it was asked of.
    fn asked_of(&self) -> Vec<(String, String)> {
        self.asked.lock().unwrap().clone()
    }
}

fn serve_one(
    mut stream: std::net::TcpStream,
    answer: &Answerer,
    log: &Mutex<Vec<(String, String)>>,
) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16384];
    let body_start = loop {
        let Ok(n) = stream.read(&mut chunk) else {
            return;
        };
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..body_start]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while buf.len() < body_start + length {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let request: Value = serde_json::from_slice(&buf[body_start..]).unwrap_or(Value::Null);
    let Some((label, body)) = answer(&request) else {
        let error = r#"{"type":"error","error":{"type":"api_error","message":"the test server has no answer for this request"}}"#;
        let _ = write!(
            stream,
            "HTTP/1.1 500 X\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{error}",
            error.len()
        );
        return;
    };
    let model = request["model"].as_str().unwrap_or_default().to_owned();
    log.lock().unwrap().push((label, model));
    let _ = stream.write_all(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n",
    );
    for piece in body.split_inclusive("\n\n") {
        if stream.write_all(piece.as_bytes()).is_err() {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A recorded response's chunks as Anthropic Messages SSE.
fn anthropic_sse(chunks: &[Value]) -> String {
    let event = |data: Value| {
        format!(
            "event: {}\ndata: {data}\n\n",
            data["type"].as_str().unwrap()
        )
    };
    let usage = chunks
        .iter()
        .find(|c| c["type"] == "usage")
        .map_or(json!({}), |c| c["usage"].clone());
    let mut out = event(json!({"type": "message_start", "message": {
        "id": "msg", "type": "message", "role": "assistant", "content": [],
        "usage": {"input_tokens": usage["input_tokens"], "output_tokens": 0}}}));
    let mut index = -1i64;
    let mut open = None::<&str>;
    let close = |out: &mut String, open: &mut Option<&str>, index: i64| {
        if open.take().is_some() {
            out.push_str(&event(
                json!({"type": "content_block_stop", "index": index}),
            ));
        }
    };
    for c in chunks {
        match c["type"].as_str().unwrap_or_default() {
            "text_delta" => {
                if open != Some("text") {
                    close(&mut out, &mut open, index);
                    index += 1;
                    open = Some("text");
                    out.push_str(&event(
                        json!({"type": "content_block_start", "index": index,
                        "content_block": {"type": "text", "text": ""}}),
                    ));
                }
                out.push_str(&event(
                    json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "text_delta", "text": c["text"]}}),
                ));
            }
            "tool_call_start" => {
                close(&mut out, &mut open, index);
                index += 1;
                open = Some("tool");
                out.push_str(&event(json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "tool_use", "id": c["id"], "name": c["name"], "input": {}}})));
            }
            "tool_call_delta" => {
                out.push_str(&event(
                    json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": c["arguments_delta"]}}),
                ));
            }
            "tool_call_end" => close(&mut out, &mut open, index),
            "done" => {
                close(&mut out, &mut open, index);
                out.push_str(&event(json!({"type": "message_delta",
                    "delta": {"stop_reason": c["stop_reason"]},
                    "usage": {"output_tokens": usage["output_tokens"]}})));
                out.push_str(&event(json!({"type": "message_stop"})));
            }
            _ => {}
        }
    }
    out
}

/// The text of a request message's content (a string, or its text blocks).
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// A server answering Anthropic requests from a transcript of the multi-agent example:
/// the context by its first message (its task, whose start the record keeps), the response by how many answers the
/// request already holds. Labels are `CONTEXT:RESPONSE`.
pub(crate) fn example_server(transcript: &Path) -> ModelServer {
    let mut by_task: HashMap<String, String> = HashMap::new();
    let mut records: HashMap<(String, u64), Vec<Value>> = HashMap::new();
    for line in std::fs::read_to_string(transcript).unwrap().lines() {
        let record: Value = serde_json::from_str(line).unwrap();
        if record["type"] != "turn" {
            continue;
        }
        let context = record["context"].as_str().unwrap().to_owned();
        if let Some(prompt) = record["request"]["prompt"].as_str() {
            by_task.insert(prompt.to_owned(), context.clone());
        }
        let turn = record["turn"].as_u64().unwrap();
        records.insert(
            (context, turn),
            record["chunks"].as_array().unwrap().clone(),
        );
    }
    ModelServer::start(Box::new(move |request| {
        let messages = request["messages"].as_array()?;
        // A record keeps the start of its context's task.
        let task = text_of(&messages.first()?["content"]);
        let context = by_task
            .iter()
            .filter(|(start, _)| task.starts_with(start.as_str()))
            .max_by_key(|(start, _)| start.len())?
            .1;
        let turn = messages.iter().filter(|m| m["role"] == "assistant").count() as u64;
        let chunks = records.get(&(context.clone(), turn))?;
        Some((format!("{context}:{turn}"), anthropic_sse(chunks)))
    }))
}

/// The multi-agent example, live against `server`, in `ws`, journaled under `runs`, every
/// call approved.
fn example(server: &ModelServer, ws: &Path, runs: &Path) -> std::process::Command {
    example_with(server, ws, runs, &["--yes"])
}

/// The multi-agent example with `approvals` (`--yes`, or `--unattended suspend`).
pub(crate) fn example_with(
    server: &ModelServer,
    ws: &Path,
    runs: &Path,
    approvals: &[&str],
) -> std::process::Command {
    let agents = repo_root().join("examples/agents");
    let prompt = std::fs::read_to_string(agents.join("prompts/orchestrator.txt")).unwrap();
    let mut cmd = command();
    cmd.env("WONOPCODE_RUNS_DIR", runs)
        .env("ANTHROPIC_API_KEY", "k")
        .env("ANTHROPIC_BASE_URL", &server.base_url)
        .arg("--loops-dir")
        .arg(&agents)
        .args(["--agent-loop-name", "orchestrator", "--json"])
        .args(approvals)
        .args(["--provider", "anthropic", "--model", "claude-sonnet-4-5"])
        .arg("-C")
        .arg(ws)
        .arg(prompt.trim_end());
    cmd
}

/// A fresh copy of the example's workspace in a new scratch directory.
pub(crate) fn example_workspace() -> Scratch {
    let s = Scratch::new();
    copy_dir(&repo_root().join("examples/agents/workspace"), &s.ws());
    s
}

/// Runs `cmd`; its stdout's JSON lines and exit code.
pub(crate) fn run(cmd: &mut std::process::Command) -> (Vec<Value>, Option<i32>, String) {
    let out = cmd.stdin(std::process::Stdio::null()).output().unwrap();
    let events = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    (
        events,
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Starts `cmd` and kills it (SIGKILL) once it has printed `lines` lines; whether it was
/// still running then.
fn kill_after(cmd: &mut std::process::Command, lines: usize) -> bool {
    let mut child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = 0;
    while seen < lines {
        match out.next() {
            Some(Ok(_)) => seen += 1,
            _ => break,
        }
    }
    let running = seen == lines;
    let _ = child.kill();
    let _ = child.wait();
    running
}

/// The only run under `runs`: its id and directory.
pub(crate) fn only_run(runs: &Path) -> (String, PathBuf) {
    let dirs: Vec<PathBuf> = std::fs::read_dir(runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let id = dirs[0].file_name().unwrap().to_string_lossy().into_owned();
    (id, dirs[0].clone())
}

/// `CONTEXT:RESPONSE` of every whole record of a run's `responses.jsonl`.
pub(crate) fn recorded(run: &Path) -> BTreeSet<String> {
    std::fs::read_to_string(run.join("responses.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["type"] == "turn")
        .map(|r| format!("{}:{}", r["context"].as_str().unwrap(), r["turn"]))
        .collect()
}

/// The root's last answer.
pub(crate) fn answer(events: &[Value]) -> String {
    events
        .iter()
        .filter(|e| {
            e["context"] == "0"
                && e["type"] == "item.completed"
                && e["item"]["kind"] == "agent_message"
        })
        .filter_map(|e| e["item"]["text"].as_str())
        .next_back()
        .unwrap_or_default()
        .to_owned()
}

/// The files the example changes.
pub(crate) fn changed_files(ws: &Path) -> (String, String) {
    (
        std::fs::read_to_string(ws.join("greet.sh")).unwrap(),
        std::fs::read_to_string(ws.join("README.md")).unwrap(),
    )
}

/// `wonopcode resume ID` with `runs` as the runs' directory, against `server`.
pub(crate) fn resume(
    server: &ModelServer,
    runs: &Path,
    id: &str,
    extra: &[&str],
) -> std::process::Command {
    let mut cmd = command();
    cmd.env("WONOPCODE_RUNS_DIR", runs)
        .env("ANTHROPIC_API_KEY", "k")
        .env("ANTHROPIC_BASE_URL", &server.base_url)
        .args(["resume", id])
        .args(extra);
    cmd
}

/// 30 kill points from a seeded generator, so a failure reproduces.
fn kill_points(lines: usize) -> Vec<usize> {
    let mut state: u64 = 0x5eed_2026_1126;
    let mut points: Vec<usize> = (0..30)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            1 + (state % (lines as u64 - 1)) as usize
        })
        .collect();
    points.sort_unstable();
    points
}

/// The example's server, and the example run uninterrupted against it (its workspace, with
/// the journal under `runs`, and its events).
pub(crate) fn uninterrupted() -> (ModelServer, Scratch, Vec<Value>) {
    let transcript = repo_root().join("examples/agents/transcripts/orchestrator.jsonl");
    let server = example_server(&transcript);
    let whole = example_workspace();
    let (events, code, err) = run(&mut example(&server, &whole.ws(), &whole.outside("runs")));
    assert_eq!(code, Some(0), "{err}");
    (server, whole, events)
}

#[test]
fn the_example_killed_at_thirty_points_resumes_to_the_same_end_without_asking_twice() {
    let (server, whole, events) = uninterrupted();
    let expected_answer = answer(&events);
    assert!(expected_answer.contains("Specialists"), "{expected_answer}");
    let expected_files = changed_files(&whole.ws());
    assert!(expected_files.0.contains("shout"), "{}", expected_files.0);
    let every_response: BTreeSet<String> = server.asked().into_iter().collect();

    let (mut cut_short, mut children_resumed) = (0, 0);
    for (i, point) in kill_points(events.len()).into_iter().enumerate() {
        let s = example_workspace();
        let runs = s.outside("runs");
        let before = server.asked().len();
        if !kill_after(&mut example(&server, &s.ws(), &runs), point) {
            panic!("kill point {i} (line {point}): the run ended before it");
        }
        let (id, dir) = only_run(&runs);
        let kept = recorded(&dir);
        // The journal says the run can be resumed, and which contexts go on.
        let mut show = command();
        show.env("WONOPCODE_RUNS_DIR", &runs)
            .args(["runs", "show", &id]);
        let shown = String::from_utf8_lossy(&show.output().unwrap().stdout).into_owned();
        if shown.contains(&format!("run {id}  finished")) {
            // The run ended between the line and the kill: nothing to resume here.
            continue;
        }
        assert!(
            shown.contains(&format!("run {id}  interrupted")) && shown.contains("resumable"),
            "{shown}"
        );
        let asked_before = server.asked().len();
        let (events, code, err) = run(&mut resume(
            &server,
            &runs,
            &id,
            &["--on-interrupted", "rerun"],
        ));
        let context = format!("kill point {i} (line {point}), run {id}: {err}");
        assert_eq!(code, Some(0), "{context}");
        assert_eq!(answer(&events), expected_answer, "{context}");
        assert_eq!(changed_files(&s.ws()), expected_files, "{context}");
        let resumed = events
            .iter()
            .find(|e| e["type"] == "run.resumed" && e["from"] == id.as_str())
            .unwrap_or_else(|| panic!("{context}: no run.resumed"));
        // The children the kill cut off say they go on where they stopped; no other does.
        let unfinished: BTreeSet<&str> = resumed["unfinished"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .filter(|c| *c != "0")
            .collect();
        let said: BTreeSet<&str> = events
            .iter()
            .filter(|e| e["type"] == "context.started" && e["resumed"] == true)
            .filter_map(|e| e["context"].as_str())
            .collect();
        assert_eq!(said, unfinished, "{context}");
        children_resumed += said.len();
        // No response the killed run had recorded is asked for again, and between them
        // the two runs asked for every response.
        let asked = server.asked();
        let again: Vec<&String> = asked[asked_before..]
            .iter()
            .filter(|l| kept.contains(*l))
            .collect();
        assert!(again.is_empty(), "{context}: asked again {again:?}");
        let both: BTreeSet<String> = asked[before..].iter().cloned().collect();
        assert_eq!(both, every_response, "{context}");
        if asked.len() > asked_before {
            cut_short += 1;
        }
    }
    // The kills landed while there was work left, not after the run had done it all.
    assert!(
        cut_short >= 20,
        "only {cut_short} of 30 kills left work to resume"
    );
    assert!(children_resumed > 0, "no kill cut a child off");
}

/// A server for one context: response N is `responses[N]`, labelled `N`.
fn scripted_server(responses: Vec<Vec<Value>>) -> ModelServer {
    ModelServer::start(Box::new(move |request| {
        let messages = request["messages"].as_array()?;
        let turn = messages.iter().filter(|m| m["role"] == "assistant").count();
        Some((turn.to_string(), anthropic_sse(responses.get(turn)?)))
    }))
}

/// The native loop against `server`, in `ws`, journaled under `runs`.
fn native(server: &ModelServer, ws: &Path, runs: &Path, prompt: &str) -> std::process::Command {
    let mut cmd = command();
    cmd.env("WONOPCODE_RUNS_DIR", runs)
        .env("ANTHROPIC_API_KEY", "k")
        .env("ANTHROPIC_BASE_URL", &server.base_url)
        .args(["--provider", "anthropic", "--model", "claude-sonnet-4-5"])
        .args(["--yes", "--json", "-C"])
        .arg(ws)
        .arg(prompt);
    cmd
}

/// Starts `cmd` and kills it (SIGKILL) at the first stdout line holding every one of
/// `marks`.
fn kill_at(cmd: &mut std::process::Command, marks: &[&str]) {
    let (mut child, _) = crate::support::spawn_until(cmd, marks);
    let _ = child.kill();
    let _ = child.wait();
}

/// A run whose `bash` call appends a line to `log.txt` after a pause, then answers.
fn appending() -> Vec<Vec<Value>> {
    vec![
        crate::support::calling(
            "toolu_1",
            "bash",
            r#"{"command":"sleep 0.3; echo line >> log.txt"}"#,
        ),
        crate::support::answer("Appended."),
    ]
}

fn lines_in(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

#[test]
fn a_command_cut_off_by_a_kill_follows_the_resume_policy() {
    // Killed while the command ran (whether it still appends depends on the sandbox,
    // which takes its commands down with wonopcode): `skip` does not run it again and
    // tells the model; `rerun` runs it again, appending once more even where it had
    // appended already: the documented cost of that policy.
    for (policy, again) in [("skip", 0), ("rerun", 1)] {
        let server = scripted_server(appending());
        let s = Scratch::new();
        let runs = s.outside("runs");
        kill_at(
            &mut native(&server, &s.ws(), &runs, "Append a line."),
            &["item.started", "\"bash\""],
        );
        std::thread::sleep(Duration::from_millis(800));
        let before = lines_in(&s.ws().join("log.txt"));
        let (id, _) = only_run(&runs);
        let (events, code, err) = run(&mut resume(
            &server,
            &runs,
            &id,
            &["--on-interrupted", policy],
        ));
        assert_eq!(code, Some(0), "{policy}: {err}");
        assert_eq!(answer(&events), "Appended.", "{policy}");
        assert_eq!(
            lines_in(&s.ws().join("log.txt")),
            before + again,
            "{policy}"
        );
        // Response 0 came from the journal: the server was asked for it once, by the
        // killed run.
        assert_eq!(server.asked(), ["0", "1"], "{policy}");
        let told = events
            .iter()
            .find(|e| e["type"] == "item.completed" && e["item"]["call_id"] == "toolu_1")
            .unwrap();
        let skipped = told["item"]["output"]
            .as_str()
            .is_some_and(|o| o.contains("was not run again"));
        assert_eq!(skipped, policy == "skip", "{told}");
    }

    // Killed after the command finished: its result comes from the journal, whatever the
    // policy, and it is not run again.
    let server = scripted_server(appending());
    let s = Scratch::new();
    let runs = s.outside("runs");
    kill_at(
        &mut native(&server, &s.ws(), &runs, "Append a line."),
        &["item.completed", "\"bash\""],
    );
    let (id, _) = only_run(&runs);
    let (events, code, err) = run(&mut resume(
        &server,
        &runs,
        &id,
        &["--on-interrupted", "rerun"],
    ));
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(answer(&events), "Appended.");
    assert_eq!(lines_in(&s.ws().join("log.txt")), 1);
    assert_eq!(server.asked(), ["0", "1"]);
}

#[test]
fn a_journal_torn_at_any_byte_of_its_last_record_resumes_from_the_one_before() {
    // A run that read a file and was killed before its answer: the last record of its
    // event log is the read's result.
    let server = scripted_server(vec![
        crate::support::calling("toolu_1", "read", r#"{"path":"notes.txt"}"#),
        crate::support::answer("The notes say hello."),
    ]);
    let s = Scratch::new();
    s.file("notes.txt", "hello\n");
    let runs = s.outside("runs");
    kill_at(
        &mut native(&server, &s.ws(), &runs, "Read the notes."),
        &["item.completed", "\"read\""],
    );
    let (id, dir) = only_run(&runs);
    // The log as it was when the read's result was its last record.
    let text = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    let mut whole = Vec::new();
    for line in text.lines() {
        whole.extend_from_slice(line.as_bytes());
        whole.push(b'\n');
        if line.contains("item.completed") && line.contains("toolu_1") {
            break;
        }
    }
    let last = whole[..whole.len() - 1]
        .iter()
        .rposition(|b| *b == b'\n')
        .unwrap()
        + 1;
    let meta = std::fs::read(dir.join("run.json")).unwrap();
    // Every cut of the last record, each on a copy of the run (a resume is a new run).
    for cut in last..whole.len() {
        let copy = s.outside(&format!("runs-{cut}"));
        std::fs::create_dir_all(copy.join(&id)).unwrap();
        std::fs::write(copy.join(&id).join("run.json"), &meta).unwrap();
        std::fs::copy(
            dir.join("responses.jsonl"),
            copy.join(&id).join("responses.jsonl"),
        )
        .unwrap();
        std::fs::write(copy.join(&id).join("events.jsonl"), &whole[..cut]).unwrap();
        let (events, code, err) = run(&mut resume(
            &server,
            &copy,
            &id,
            &["--on-interrupted", "skip"],
        ));
        assert_eq!(code, Some(0), "cut at {cut}: {err}");
        assert_eq!(answer(&events), "The notes say hello.", "cut at {cut}");
        if cut > last {
            assert!(err.contains("cut short (line"), "cut at {cut}: {err}");
        }
        // Torn or not, the read's result is not needed from the model again: the read
        // runs again (it is read-only) or comes from the journal.
        let result = events
            .iter()
            .find(|e| e["type"] == "item.completed" && e["item"]["call_id"] == "toolu_1")
            .unwrap();
        assert!(
            result["item"]["output"].as_str().unwrap().contains("hello"),
            "{result}"
        );
    }
    // The model was asked for the first response once, and for the answer by every resume.
    let asked = server.asked();
    assert_eq!(asked.iter().filter(|l| *l == "0").count(), 1, "{asked:?}");
}

#[test]
fn a_conversation_continued_after_a_suspension_records_and_replays_where_it_stopped() {
    // Live: the first run suspends on a write, the second (`--resume`) approves it and
    // answers; each records its own responses.
    let server = scripted_server(vec![
        crate::support::calling("toolu_1", "write", r#"{"path":"out.txt","content":"x"}"#),
        crate::support::answer("Written."),
    ]);
    let s = Scratch::new();
    let live = |history: &Path, record: &Path, extra: &[&str]| {
        let mut cmd = command();
        cmd.env("WONOPCODE_RUNS_DIR", s.outside("runs"))
            .env("ANTHROPIC_API_KEY", "k")
            .env("ANTHROPIC_BASE_URL", &server.base_url)
            .args([
                "--provider",
                "anthropic",
                "--model",
                "claude-sonnet-4-5",
                "--json",
                "-C",
            ])
            .arg(s.ws())
            .arg("--history")
            .arg(history)
            .arg("--record")
            .arg(record)
            .args(extra);
        run(&mut cmd)
    };
    let history = s.outside("h.jsonl");
    let (first, second) = (s.outside("t1.jsonl"), s.outside("t2.jsonl"));
    let (_, code, err) = live(&history, &first, &["--unattended", "suspend", "Write x."]);
    assert_eq!(code, Some(3), "{err}");
    let (events, code, err) = live(&history, &second, &["--resume", "--yes"]);
    assert_eq!(
        (code, answer(&events).as_str()),
        (Some(0), "Written."),
        "{err}"
    );
    // The continuation's recording goes on from the conversation's second response.
    let numbers: Vec<u64> = std::fs::read_to_string(&second)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["type"] == "turn")
        .map(|r| r["turn"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers, [1]);

    // Replayed, each part from its own recording, into a fresh history and workspace.
    let again = Scratch::new();
    let replayed = again.outside("h.jsonl");
    let replay = |transcript: &Path, extra: &[&str]| {
        let mut cmd = command();
        cmd.args(["--json", "-C"])
            .arg(again.ws())
            .arg("--history")
            .arg(&replayed)
            .arg("--replay")
            .arg(transcript)
            .args(extra);
        run(&mut cmd)
    };
    let (_, code, err) = replay(&first, &["--unattended", "suspend", "Write x."]);
    assert_eq!(code, Some(3), "{err}");
    let (events, code, err) = replay(&second, &["--resume", "--yes"]);
    assert_eq!(
        (code, answer(&events).as_str()),
        (Some(0), "Written."),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(again.ws().join("out.txt")).unwrap(),
        "x"
    );
}

/// The items a context completed (messages, tool calls and their results), without ids and
/// timings, sorted (read-only calls finish in any order): what must read the same in two
/// runs.
fn items_of(events: &[Value], context: &str) -> Vec<String> {
    let mut items: Vec<String> = events
        .iter()
        .filter(|e| e["context"] == context && e["type"] == "item.completed")
        .map(|e| {
            let item = &e["item"];
            json!([
                item["kind"],
                item["text"],
                item["name"],
                item["arguments"],
                item["output"]
            ])
            .to_string()
        })
        .collect();
    items.sort();
    items
}

#[test]
fn a_fork_serves_the_run_up_to_its_point_and_asks_the_rest_of_another_model() {
    let (server, original, events) = uninterrupted();
    let runs = original.outside("runs");
    let (id, _) = only_run(&runs);
    let fork = |at: &str, extra: &[&str]| {
        let s = example_workspace();
        let before = server.asked_of().len();
        let mut cmd = command();
        cmd.env("WONOPCODE_RUNS_DIR", &runs)
            .env("ANTHROPIC_API_KEY", "k")
            .env("ANTHROPIC_BASE_URL", &server.base_url)
            .args(["fork", &id, "--at", at, "-C"])
            .arg(s.ws())
            .args(extra);
        let (events, code, err) = run(&mut cmd);
        assert_eq!(code, Some(0), "{at}: {err}");
        let asked: BTreeSet<(String, String)> =
            server.asked_of()[before..].iter().cloned().collect();
        (s, events, asked)
    };

    // At the coder's second response: its first, and everything not after it in the tree,
    // come from the journal; the coder goes on live (its own model, as it chooses one).
    let (s, forked, asked) = fork("0.2:1", &[]);
    let labels: Vec<&str> = asked.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(labels, ["0.2:1", "0.2:2", "0.2:3", "0.2:4"]);
    assert!(
        forked
            .iter()
            .any(|e| e["type"] == "run.forked" && e["from"] == id.as_str() && e["at"] == "0.2:1"),
        "{forked:?}"
    );
    for context in ["0.1", "0.2", "0.3", "0.4"] {
        assert_eq!(
            items_of(&forked, context),
            items_of(&events, context),
            "{context}"
        );
    }
    assert_eq!(answer(&forked), answer(&events));
    assert_eq!(changed_files(&s.ws()), changed_files(&original.ws()));
    let fork_id = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .find(|name| *name != id)
        .unwrap();
    let meta: Value = serde_json::from_str(
        &std::fs::read_to_string(runs.join(&fork_id).join("run.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(meta["origin"], format!("{id}@0.2:1"));

    // At the root's second response with another model: the root's responses from there on
    // are that model's; the specialists' come from the journal.
    let (_, forked, asked) = fork("0:1", &["--model", "claude-haiku-4-5"]);
    let expected: BTreeSet<(String, String)> = ["0:1", "0:2", "0:3"]
        .iter()
        .map(|l| (l.to_string(), "claude-haiku-4-5".to_owned()))
        .collect();
    assert_eq!(asked, expected);
    assert_eq!(items_of(&forked, "0.1"), items_of(&events, "0.1"));

    // In the run's own workspace, as the run left it: the files the run changed go back to
    // what they were before it, and the fork's calls make them again up to its point.
    let expected = changed_files(&original.ws());
    let mut cmd = command();
    cmd.env("WONOPCODE_RUNS_DIR", &runs)
        .env("ANTHROPIC_API_KEY", "k")
        .env("ANTHROPIC_BASE_URL", &server.base_url)
        .args(["fork", &id, "--at", "0.2:1", "-C"])
        .arg(original.ws());
    let (forked, code, err) = run(&mut cmd);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("fork: restored greet.sh"), "{err}");
    assert_eq!(answer(&forked), answer(&events));
    assert_eq!(changed_files(&original.ws()), expected);

    // A point past what the journal holds is refused in one line.
    let mut cmd = command();
    cmd.env("WONOPCODE_RUNS_DIR", &runs)
        .args(["fork", &id, "--at", "0.2:9"]);
    let (_, code, err) = run(&mut cmd);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(
        err.trim(),
        format!(
            "error: --at 0.2:9: run {id}'s journal has 5 response(s) of context 0.2, numbered from 0"
        )
    );
}

#[test]
fn a_run_stopped_with_ctrl_c_says_so_and_resume_goes_on_with_it() {
    let server = scripted_server(vec![
        crate::support::calling(
            "toolu_1",
            "bash",
            r#"{"command":"sleep 2; echo line >> log.txt"}"#,
        ),
        crate::support::answer("Appended."),
    ]);
    let s = Scratch::new();
    let runs = s.outside("runs");
    let (mut child, lines) = crate::support::spawn_until(
        &mut native(&server, &s.ws(), &runs, "Append a line."),
        &["item.started", "\"bash\""],
    );
    assert_eq!(crate::support::interrupt(&mut child), Some(130));
    let rest: Vec<Value> = lines
        .map_while(Result::ok)
        .filter_map(|l| serde_json::from_str(&l).ok())
        .collect();
    let (id, _) = only_run(&runs);
    // The last event says the run stopped, and which run resumes it.
    let last = rest.last().unwrap();
    assert_eq!(
        (last["type"].as_str(), last["run_id"].as_str()),
        (Some("run.interrupted"), Some(id.as_str())),
        "{rest:?}"
    );
    // `--resume` in the workspace finds it; the cancelled command runs again (`rerun`).
    let mut cmd = command();
    cmd.env("WONOPCODE_RUNS_DIR", &runs)
        .env("ANTHROPIC_API_KEY", "k")
        .env("ANTHROPIC_BASE_URL", &server.base_url)
        .args(["--resume", "--on-interrupted", "rerun", "-C"])
        .arg(s.ws());
    let (events, code, err) = run(&mut cmd);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(answer(&events), "Appended.");
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "run.resumed" && e["from"] == id.as_str()),
        "{events:?}"
    );
    assert_eq!(lines_in(&s.ws().join("log.txt")), 1);
    assert_eq!(server.asked(), ["0", "1"]);
}

#[test]
fn what_cannot_be_resumed_or_forked_is_refused_in_one_line() {
    let s = Scratch::new();
    let runs = s.outside("runs");
    let t = s.transcript("t.jsonl", &[crate::support::answer("Done.")]);
    let mut cmd = command();
    cmd.env("WONOPCODE_RUNS_DIR", &runs)
        .arg("--replay")
        .arg(&t)
        .arg("-C")
        .arg(s.ws())
        .arg("go");
    let (_, code, err) = run(&mut cmd);
    assert_eq!(code, Some(0), "{err}");
    let (id, _) = only_run(&runs);
    let refused = |args: &[&str]| {
        let mut cmd = command();
        cmd.env("WONOPCODE_RUNS_DIR", &runs).args(args);
        let (_, code, err) = run(&mut cmd);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        err
    };
    let err = refused(&["resume", &id]);
    assert!(
        err.contains(&format!("run {id} finished: there is nothing to resume")),
        "{err}"
    );
    let err = refused(&["resume", "nope"]);
    assert!(err.contains("no run `nope`"), "{err}");
    let err = refused(&["fork", &id, "--at", "0.1:0"]);
    assert!(err.contains("has 0 response(s) of context 0.1"), "{err}");
    let err = refused(&["fork", &id, "--at", "zero"]);
    assert!(err.contains("give CONTEXT:RESPONSE"), "{err}");
    let err = refused(&["--resume", "-C", s.ws().to_str().unwrap()]);
    assert!(err.contains("no interrupted or suspended run of"), "{err}");
}

#[test]
fn a_journal_cannot_plant_wider_settings_for_the_next_resume() {
    let s = Scratch::new();
    // The runs directory moved into the workspace, where commands may write.
    let runs = s.ws().join(".runs");
    let mut turn = crate::support::call(
        "c1",
        "bash",
        r#"{"command": "ls .runs > seen.txt 2>&1; echo planted > .runs/planted 2>&1; echo done"}"#,
    );
    turn.push(crate::support::done("tool_use"));
    let t = s.transcript("t.jsonl", &[turn, crate::support::answer("Done.")]);
    let mut cmd = command();
    cmd.env("WONOPCODE_RUNS_DIR", &runs)
        .args(["--json", "--yes", "--replay"])
        .arg(&t)
        .arg("-C")
        .arg(s.ws())
        .arg("go");
    let (_, code, err) = run(&mut cmd);
    assert_eq!(code, Some(0), "{err}");
    // Hidden from commands wherever it is.
    assert!(
        !runs.join("planted").exists(),
        "a command wrote into the runs directory"
    );
    let seen = std::fs::read_to_string(s.ws().join("seen.txt")).unwrap_or_default();
    assert!(
        !seen.contains("run.json") && !seen.lines().any(|l| l.starts_with("2026")),
        "{seen}"
    );

    // Someone who could write it plants a setting in the run's stored settings, and makes
    // the run look interrupted.
    let (id, dir) = only_run(&runs);
    let meta_path = dir.join("run.json");
    let original = std::fs::read_to_string(&meta_path).unwrap();
    let mut meta: Value = serde_json::from_str(&original).unwrap();
    meta["status"] = "running".into();
    meta["pid"] = 999_999_999u64.into();
    let untouched = meta.to_string();
    let stored = meta["invocation"]["settings"].clone();
    assert_eq!(stored["yes"], true, "{stored}");
    meta["invocation"]["settings"]["sandbox"] = "full-access".into();
    std::fs::write(&meta_path, meta.to_string()).unwrap();
    let resume = |extra: &[&str]| {
        let mut cmd = command();
        cmd.env("WONOPCODE_RUNS_DIR", &runs)
            .args(["resume", &id])
            .args(extra);
        run(&mut cmd)
    };
    let (_, code, err) = resume(&[]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    // Once the stored settings are not this user's, every wide one is put to the person.
    assert!(
        err.contains("wider settings than you gave: --yes --sandbox full-access"),
        "{err}"
    );
    // Given again by the person, they count.
    let (_, _, err) = resume(&["--", "--yes", "--sandbox", "full-access"]);
    assert!(!err.contains("wider settings"), "{err}");
    // A journal from before settings were kept has its command line: planted there, the
    // same question.
    let mut legacy: Value = serde_json::from_str(&untouched).unwrap();
    let invocation = legacy["invocation"].as_object_mut().unwrap();
    invocation.remove("settings");
    invocation.remove("json");
    invocation.insert(
        "args".into(),
        json!([
            "--sandbox",
            "full-access",
            "--json",
            "--yes",
            "--replay",
            t,
            "-C",
            s.ws(),
            "go"
        ]),
    );
    std::fs::write(&meta_path, legacy.to_string()).unwrap();
    let (_, code, err) = resume(&[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("wider settings than you gave: --yes --sandbox full-access"),
        "{err}"
    );
    // And it still resumes, read into the same settings.
    let (events, _, err) = resume(&["--", "--yes", "--sandbox", "full-access"]);
    assert!(!err.contains("wider settings"), "{err}");
    assert!(
        events.iter().any(|e| e["type"] == "session.started"),
        "{err}"
    );
    // The command line as this user typed it (sealed) resumes without a question.
    std::fs::write(&meta_path, untouched).unwrap();
    let (_, _, err) = resume(&[]);
    assert!(!err.contains("wider settings"), "{err}");
}

/// Makes the run in `dir` look interrupted (its process gone before its end).
fn interrupt(dir: &Path) {
    let path = dir.join("run.json");
    let mut meta: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    meta["status"] = "running".into();
    meta["pid"] = 999_999_999u64.into();
    std::fs::write(&path, meta.to_string()).unwrap();
}

/// A transcript whose model writes `done.txt` with `bash`, then answers "Wrote it.".
fn writing_transcript(s: &Scratch) -> PathBuf {
    let mut turn = crate::support::call(
        "c1",
        "bash",
        r#"{"command": "echo ran >> done.txt && echo ok"}"#,
    );
    turn.push(crate::support::done("tool_use"));
    s.transcript("t.jsonl", &[turn, crate::support::answer("Wrote it.")])
}

/// `wonopcode resume RUN -- --json`, with the runs directory `runs`.
fn resumed(runs: &Path, id: &str, extra: &[&str]) -> (Vec<Value>, Option<i32>, String) {
    let mut cmd = command();
    cmd.env("WONOPCODE_RUNS_DIR", runs)
        .args(["resume", id, "--", "--json"])
        .args(extra);
    run(&mut cmd)
}

#[test]
fn a_batch_tasks_run_and_an_mcp_calls_run_resume_like_any_other() {
    let s = Scratch::new();
    let t = writing_transcript(&s);

    // A batch task's run: its journal in the task's `runs/`, resumed by its directory.
    let batch = s.outside("batch");
    std::fs::create_dir_all(batch.join("ws")).unwrap();
    std::fs::write(
        batch.join("tasks.jsonl"),
        format!(
            "{}\n",
            json!({"id": "t1", "prompt": "write it", "workspace": "ws"})
        ),
    )
    .unwrap();
    let mut cmd = command();
    cmd.arg("batch")
        .arg(batch.join("tasks.jsonl"))
        .arg("--out")
        .arg(batch.join("out"))
        .args(["--yes", "--replay"])
        .arg(&t);
    let (_, code, err) = run(&mut cmd);
    assert_eq!(code, Some(0), "{err}");
    let task_runs = batch.join("out/tasks/t1/runs");
    let (id, dir) = only_run(&task_runs);
    let workspace = std::fs::read_dir(batch.join("out/tasks/t1"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("done.txt").exists())
        .expect("the task's workspace");
    interrupt(&dir);
    let (events, code, err) = resumed(&s.outside("elsewhere"), dir.to_str().unwrap(), &[]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(answer(&events), "Wrote it.", "{err}");
    // Its finished command was answered from the journal, not run again.
    assert_eq!(
        std::fs::read_to_string(workspace.join("done.txt")).unwrap(),
        "ran\n"
    );
    // The resumed run's journal is beside the one it resumes.
    let beside: Vec<Value> = std::fs::read_dir(&task_runs)
        .unwrap()
        .map(|e| e.unwrap().path().join("run.json"))
        .filter_map(|p| serde_json::from_str(&std::fs::read_to_string(p).ok()?).ok())
        .collect();
    assert!(
        beside.iter().any(|m| m["resumes"] == id.as_str()),
        "{beside:?}"
    );

    // An MCP call's run: the loop by its name, in the server's workspace.
    let runs = s.outside("mcp-runs");
    let server = format!(
        "w={} mcp-server -C {} --replay {} --allow bash",
        crate::support::bin().display(),
        s.ws().display(),
        t.display()
    );
    let mut cmd = command();
    cmd.env("WONOPCODE_RUNS_DIR", &runs)
        .current_dir(s.ws())
        .args(["mcp", "--mcp", &server, "call", "w", "standard"])
        .arg(r#"{"prompt": "write the file"}"#);
    let (_, code, err) = run(&mut cmd);
    assert_eq!(code, Some(0), "{err}");
    let (id, dir) = only_run(&runs);
    let meta: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(
        meta["invocation"]["settings"]["loop"]["named"], "standard",
        "{meta}"
    );
    interrupt(&dir);
    // The server ran confined by the client's sandbox, where the user's key is hidden: its
    // run is not sealed, so its wide setting is the person's to give again.
    let (_, code, err) = resumed(&runs, &id, &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("wider settings than you gave: --allow bash"),
        "{err}"
    );
    let (events, code, err) = resumed(&runs, &id, &["--allow", "bash"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(answer(&events), "Wrote it.", "{err}");
    assert_eq!(
        std::fs::read_to_string(s.ws().join("done.txt")).unwrap(),
        "ran\n"
    );
}

/// A server for a conversation: the response to prompt `P` after `N` tool results is
/// `script[P][N]`, labelled `P.N`.
fn conversation_server(script: Vec<(&'static str, Vec<Vec<Value>>)>) -> ModelServer {
    ModelServer::start(Box::new(move |request| {
        let messages = request["messages"].as_array()?;
        let at = messages.iter().rposition(|m| {
            m["role"] == "user"
                && script
                    .iter()
                    .any(|(prompt, _)| text_of(&m["content"]) == *prompt)
        })?;
        let prompt = text_of(&messages[at]["content"]);
        let results = messages[at + 1..]
            .iter()
            .filter(|m| m["role"] == "user")
            .count();
        let (_, responses) = script.iter().find(|(p, _)| *p == prompt)?;
        Some((
            format!("{prompt}.{results}"),
            anthropic_sse(responses.get(results)?),
        ))
    }))
}

/// Sends SIGHUP to the process of the only run under `runs` (its `run.json` names it), as a
/// terminal that closes does.
pub(crate) fn hang_up_the_only_run(runs: &Path) {
    let (_, dir) = only_run(runs);
    let meta: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    let pid = meta["pid"].as_u64().unwrap().to_string();
    let hup = std::process::Command::new("kill")
        .args(["-HUP", &pid])
        .status();
    assert!(hup.unwrap().success());
}

/// The REPL on a pseudo-terminal against `server`, journaled under `runs`, with `flags`.
fn repl_on(
    server: &ModelServer,
    s: &Scratch,
    runs: &Path,
    flags: &[&str],
) -> rexpect::session::PtySession {
    let mut cmd = command();
    cmd.env("WONOPCODE_RUNS_DIR", runs)
        .env("XDG_DATA_HOME", s.outside("data"))
        .env("ANTHROPIC_API_KEY", "k")
        .env("ANTHROPIC_BASE_URL", &server.base_url)
        .args([
            "--provider",
            "anthropic",
            "--model",
            "claude-sonnet-4-5",
            "--yes",
        ])
        .args(flags)
        .arg("-C")
        .arg(s.ws());
    rexpect::session::spawn_command(cmd, Some(30_000)).unwrap()
}

#[test]
fn a_session_closed_at_its_prompt_resumes_without_running_a_command_or_asking_a_model() {
    let appending = |line: &str, answer: &str| {
        vec![
            crate::support::calling(
                "toolu_1",
                "bash",
                &format!(r#"{{"command":"echo {line} >> log.txt"}}"#),
            ),
            crate::support::answer(answer),
        ]
    };
    let server = conversation_server(vec![
        (
            "Wait.",
            vec![crate::support::calling(
                "toolu_1",
                "bash",
                r#"{"command":"sleep 30"}"#,
            )],
        ),
        ("Append two.", appending("two", "Two appended.")),
        ("Append three.", appending("three", "Three appended.")),
    ]);
    let s = Scratch::new();
    let runs = s.outside("runs");
    let mut session = repl_on(&server, &s, &runs, &[]);
    use crate::repl::{enter, expect, ready};
    // A turn cancelled with Ctrl-C while its command runs, then two that each run one.
    ready(&mut session);
    enter(&mut session, "Wait.");
    expect(&mut session, "sleep 30");
    session.send("\x03").unwrap();
    session.flush().unwrap();
    expect(&mut session, "cancelled");
    ready(&mut session);
    enter(&mut session, "Append two.");
    expect(&mut session, "Two appended.");
    ready(&mut session);
    enter(&mut session, "Append three.");
    expect(&mut session, "Three appended.");
    ready(&mut session);
    // The terminal closes at the prompt.
    hang_up_the_only_run(&runs);
    let _ = session.exp_eof();
    let asked = server.asked();
    assert_eq!(lines_in(&s.ws().join("log.txt")), 2, "{asked:?}");

    // Nothing was cut off, so there is nothing to resume...
    let (id, _) = only_run(&runs);
    let mut cmd = command();
    cmd.env("WONOPCODE_RUNS_DIR", &runs).args(["resume", &id]);
    let (_, code, err) = run(&mut cmd);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "run {id} stopped between turns, with nothing cut off: go on with its conversation with `wonopcode -r {id}`"
        )),
        "{err}"
    );
    // ... and `-r` at a terminal lists the conversation to go on with, which goes on from
    // its messages: nothing runs again, no model is asked.
    let mut session = repl_on(&server, &s, &runs, &["-r"]);
    expect(&mut session, "Wait.");
    expect(&mut session, "go on with which");
    session.send("\r").unwrap();
    session.flush().unwrap();
    ready(&mut session);
    enter(&mut session, "/exit");
    let said = session.exp_eof().unwrap();
    assert_eq!(server.asked(), asked, "{said}");
    assert_eq!(lines_in(&s.ws().join("log.txt")), 2, "{said}");
}
