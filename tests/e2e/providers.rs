//! The real binary against real HTTP: a loopback server speaks the Anthropic and OpenAI
//! stream formats, the run calls a real tool on a real file, `--record` writes the
//! transcript and `--replay` reproduces the same event log offline.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use wonopcode_wasm_host::guest_paths;

use crate::support::{Scratch, events, stderr, wonopcode};

/// A server answering each connection with the next scripted reply.
pub(crate) struct Loopback {
    pub(crate) base_url: String,
    pub(crate) requests: Arc<Mutex<Vec<String>>>,
    /// Each request's line (`POST /v1/messages HTTP/1.1`).
    pub(crate) lines: Arc<Mutex<Vec<String>>>,
    /// Each request's head as sent (request line and headers).
    pub(crate) heads: Arc<Mutex<Vec<String>>>,
}

/// One scripted reply: status, content type, extra header lines (each ending in CRLF), body.
pub(crate) struct Scripted {
    pub(crate) status: u16,
    pub(crate) content_type: &'static str,
    pub(crate) headers: &'static str,
    pub(crate) body: Vec<u8>,
}

/// Answers with (status, extra headers, body): an event stream for a 200, JSON otherwise.
fn serve(replies: Vec<(u16, &'static str, String)>) -> Loopback {
    serve_scripted(
        replies
            .into_iter()
            .map(|(status, headers, body)| Scripted {
                status,
                content_type: if status == 200 {
                    "text/event-stream"
                } else {
                    "application/json"
                },
                headers,
                body: body.into_bytes(),
            })
            .collect(),
    )
}

pub(crate) fn serve_scripted(replies: Vec<Scripted>) -> Loopback {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    let requests = Arc::new(Mutex::new(Vec::new()));
    let lines = Arc::new(Mutex::new(Vec::new()));
    let heads = Arc::new(Mutex::new(Vec::new()));
    let (seen, seen_lines, seen_heads) = (requests.clone(), lines.clone(), heads.clone());
    std::thread::spawn(move || {
        for (reply, stream) in replies.into_iter().zip(listener.incoming()) {
            let mut stream = stream.unwrap();
            let mut buf = Vec::new();
            let mut chunk = [0u8; 8192];
            let body_start = loop {
                let n = stream.read(&mut chunk).unwrap();
                buf.extend_from_slice(&chunk[..n]);
                if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    break at + 4;
                }
            };
            let head = String::from_utf8_lossy(&buf[..body_start]).into_owned();
            seen_lines
                .lock()
                .unwrap()
                .push(head.lines().next().unwrap_or("").to_owned());
            seen_heads.lock().unwrap().push(head.clone());
            let head = head.to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map(|v| v.trim().parse().unwrap())
                .unwrap_or(0);
            while buf.len() < body_start + length {
                let n = stream.read(&mut chunk).unwrap();
                buf.extend_from_slice(&chunk[..n]);
            }
            seen.lock()
                .unwrap()
                .push(String::from_utf8_lossy(&buf[body_start..]).into_owned());
            let Scripted {
                status,
                content_type,
                headers,
                body,
            } = reply;
            let head = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\n{headers}connection: close\r\ncontent-length: {}\r\n\r\n",
                body.len()
            );
            stream.write_all(head.as_bytes()).unwrap();
            stream.write_all(&body).unwrap();
        }
    });
    Loopback {
        base_url,
        requests,
        lines,
        heads,
    }
}

fn openai_chunk(delta: &str, finish: Option<&str>) -> String {
    let finish = finish.map_or("null".to_owned(), |f| format!("\"{f}\""));
    format!(
        "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":{finish}}}]}}\n\n"
    )
}

/// Turn 1 reads `notes.txt` (arguments split mid-key), turn 2 answers.
fn openai_turns() -> Vec<String> {
    let first = [
        openai_chunk(r#"{"role":"assistant","content":"Reading."}"#, None),
        openai_chunk(r#"{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"read","arguments":"{\"pa"}}]}"#, None),
        openai_chunk(r#"{"tool_calls":[{"index":0,"function":{"arguments":"th\":\"notes.txt\"}"}}]}"#, None),
        openai_chunk("{}", Some("tool_calls")),
        "data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":20}}\n\n".to_owned(),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let second = [
        openai_chunk(r#"{"content":"The notes say: remember the milk."}"#, None),
        openai_chunk("{}", Some("stop")),
        "data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":150,\"completion_tokens\":9}}\n\n".to_owned(),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    vec![first, second]
}

pub(crate) fn anthropic_turns() -> Vec<String> {
    let event = |name: &str, data: &str| format!("event: {name}\ndata: {data}\n\n");
    let first = [
        event("message_start", r#"{"type":"message_start","message":{"id":"m1","type":"message","role":"assistant","content":[],"usage":{"input_tokens":100,"output_tokens":1}}}"#),
        event("content_block_start", r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#),
        event("content_block_delta", r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Read the notes first."}}"#),
        event("content_block_delta", r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"SIG-abc"}}"#),
        event("content_block_stop", r#"{"type":"content_block_stop","index":0}"#),
        event("content_block_start", r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"read","input":{}}}"#),
        event("content_block_delta", r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \"no"}}"#),
        event("content_block_delta", r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"tes.txt\"}"}}"#),
        event("content_block_stop", r#"{"type":"content_block_stop","index":1}"#),
        event("message_delta", r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":30}}"#),
        event("message_stop", r#"{"type":"message_stop"}"#),
    ]
    .concat();
    let second = [
        event("message_start", r#"{"type":"message_start","message":{"usage":{"input_tokens":160,"cache_read_input_tokens":40,"output_tokens":1}}}"#),
        event("ping", r#"{"type": "ping"}"#),
        event("content_block_start", r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#),
        event("content_block_delta", r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"The notes say: remember the milk."}}"#),
        event("content_block_stop", r#"{"type":"content_block_stop","index":0}"#),
        event("message_delta", r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}"#),
        event("message_stop", r#"{"type":"message_stop"}"#),
    ]
    .concat();
    vec![first, second]
}

/// Responses API events, `event:` and `data:` each, as OpenAI streams them.
fn responses_events(events: &[&str]) -> String {
    events
        .iter()
        .map(|data| {
            let name = serde_json::from_str::<Value>(data).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned();
            format!("event: {name}\ndata: {data}\n\n")
        })
        .collect()
}

/// Responses API turn 1: a reasoning item (summary and encrypted content), then a call of
/// `read` with its arguments in two fragments. Turn 2 answers.
fn responses_turns() -> Vec<String> {
    let first = responses_events(&[
        r#"{"type":"response.created","response":{"id":"resp_1","status":"in_progress","output":[]}}"#,
        r#"{"type":"response.output_item.added","output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}}"#,
        r#"{"type":"response.reasoning_summary_text.delta","item_id":"rs_1","output_index":0,"summary_index":0,"delta":"Read the notes first."}"#,
        r#"{"type":"response.output_item.done","output_index":0,"item":{"id":"rs_1","type":"reasoning","encrypted_content":"enc-1","summary":[{"type":"summary_text","text":"Read the notes first."}]}}"#,
        r#"{"type":"response.output_item.added","output_index":1,"item":{"id":"fc_1","type":"function_call","status":"in_progress","arguments":"","call_id":"call_1","name":"read"}}"#,
        r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":1,"delta":"{\"path\": \"no"}"#,
        r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":1,"delta":"tes.txt\"}"}"#,
        r#"{"type":"response.output_item.done","output_index":1,"item":{"id":"fc_1","type":"function_call","status":"completed","arguments":"{\"path\": \"notes.txt\"}","call_id":"call_1","name":"read"}}"#,
        r#"{"type":"response.completed","response":{"id":"resp_1","status":"completed","usage":{"input_tokens":120,"input_tokens_details":{"cached_tokens":20},"output_tokens":40,"output_tokens_details":{"reasoning_tokens":16},"total_tokens":160}}}"#,
    ]);
    vec![first, responses_answer("The notes say: remember the milk.")]
}

/// A Responses API turn that answers `text`.
fn responses_answer(text: &str) -> String {
    let delta = serde_json::json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": text}).to_string();
    responses_events(&[
        r#"{"type":"response.created","response":{"id":"resp_2","status":"in_progress","output":[]}}"#,
        r#"{"type":"response.output_item.added","output_index":0,"item":{"id":"msg_1","type":"message","role":"assistant","content":[]}}"#,
        &delta,
        r#"{"type":"response.completed","response":{"id":"resp_2","status":"completed","usage":{"input_tokens":200,"input_tokens_details":{"cached_tokens":0},"output_tokens":9,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":209}}}"#,
    ])
}

/// Gemini turn 1: a signed call of `read`; turn 2 answers. Each chunk is a whole
/// `GenerateContentResponse`, as `streamGenerateContent?alt=sse` sends them.
fn gemini_turns() -> Vec<String> {
    let first = [
        r#"data: {"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"read","args":{"path":"notes.txt"}},"thoughtSignature":"SIG-gem"}]},"index":0}],"usageMetadata":{"promptTokenCount":90,"candidatesTokenCount":12,"thoughtsTokenCount":30},"responseId":"r1"}"#,
        r#"data: {"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":90,"candidatesTokenCount":12,"thoughtsTokenCount":30},"responseId":"r1"}"#,
    ]
    .map(|l| format!("{l}\n\n"))
    .concat();
    let second = [
        r#"data: {"candidates":[{"content":{"role":"model","parts":[{"text":"The notes say: remember the milk."}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":140,"candidatesTokenCount":9},"responseId":"r2"}"#,
    ]
    .map(|l| format!("{l}\n\n"))
    .concat();
    vec![first, second]
}

/// Events without their timestamps, durations and session id, for comparing two runs.
fn comparable(events: &[Value]) -> Vec<Value> {
    events
        .iter()
        .map(|e| {
            let mut e = e.clone();
            let map = e.as_object_mut().unwrap();
            map.remove("ts");
            map.remove("session_id");
            // A response's time (`response.completed`).
            map.remove("duration_ms");
            map.remove("first_chunk_ms");
            if let Some(item) = map.get_mut("item").and_then(|i| i.as_object_mut()) {
                item.remove("duration_ms");
            }
            e
        })
        .collect()
}

/// Runs a live turn against the server, then replays its recording; returns the live
/// events and the requests the server saw.
fn live_then_replay(
    provider: &str,
    key: &str,
    replies: Vec<(u16, &'static str, String)>,
) -> (Vec<Value>, Vec<String>) {
    live_then_replay_with(&[], provider, key, replies)
}

/// The same, with extra flags on both runs.
fn live_then_replay_with(
    flags: &[&str],
    provider: &str,
    key: &str,
    replies: Vec<(u16, &'static str, String)>,
) -> (Vec<Value>, Vec<String>) {
    let scratch = Scratch::new();
    scratch.file("notes.txt", "remember the milk\n");
    let server = serve(replies);
    let live_events = live_and_replayed(
        &scratch,
        &[(key.to_owned(), "test-key".to_owned())],
        &[flags, &["--provider", provider, "--model", "test-model"]].concat(),
        &server.base_url,
        flags,
    );
    let requests = server.requests.lock().unwrap().clone();
    (live_events, requests)
}

/// Asks "what do my notes say?" in `scratch` with `env` and `args` added, against the
/// provider at `base_url`, recording the run; replays the recording with `flags` and checks
/// it reproduces the run. Returns the live run's events.
pub(crate) fn live_and_replayed(
    scratch: &Scratch,
    env: &[(String, String)],
    args: &[&str],
    base_url: &str,
    flags: &[&str],
) -> Vec<Value> {
    let recorded = scratch.outside("recorded.jsonl");
    let live = wonopcode()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .args(args)
        .args(["--json", "-y", "--base-url", base_url])
        .arg("--record")
        .arg(&recorded)
        .arg("-C")
        .arg(scratch.ws())
        .arg("what do my notes say?")
        .output()
        .unwrap();
    assert_eq!(live.status.code(), Some(0), "stderr: {}", stderr(&live));
    let live_events = events(&live);
    // Each live response says how long its first chunk took, within its whole time.
    for response in live_events
        .iter()
        .filter(|e| e["type"] == "response.completed")
    {
        let first = response["first_chunk_ms"].as_u64().expect("first_chunk_ms");
        assert!(
            first <= response["duration_ms"].as_u64().unwrap(),
            "{response}"
        );
    }

    let replayed = wonopcode()
        .args(flags)
        .args(["--json", "-y", "--replay"])
        .arg(&recorded)
        .arg("-C")
        .arg(scratch.ws())
        .arg("what do my notes say?")
        .output()
        .unwrap();
    assert_eq!(
        replayed.status.code(),
        Some(0),
        "stderr: {}",
        stderr(&replayed)
    );
    assert_eq!(
        comparable(&events(&replayed)),
        comparable(&live_events),
        "replay reproduces the run"
    );
    live_events
}

pub(crate) fn final_text(events: &[Value]) -> String {
    events
        .iter()
        .filter(|e| e["type"] == "item.completed" && e["item"]["kind"] == "agent_message")
        .map(|e| e["item"]["text"].as_str().unwrap().to_owned())
        .next_back()
        .unwrap()
}

fn tool_output(events: &[Value]) -> String {
    let call = events
        .iter()
        .find(|e| e["type"] == "item.completed" && e["item"]["kind"] == "tool_call")
        .expect("a tool call ran");
    call["item"].to_string()
}

#[test]
fn openai_compatible_tool_turn_records_and_replays() {
    let replies = openai_turns().into_iter().map(|b| (200, "", b)).collect();
    let (events, requests) =
        live_then_replay_with(&["--wire", "chat"], "openai", "OPENAI_API_KEY", replies);
    assert_eq!(final_text(&events), "The notes say: remember the milk.");
    assert!(tool_output(&events).contains("remember the milk"));
    assert_eq!(requests.len(), 2);
    let second: Value = serde_json::from_str(&requests[1]).unwrap();
    let messages = second["messages"].as_array().unwrap();
    let tool = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("the tool result went back");
    assert_eq!(tool["tool_call_id"], "call_1");
    assert!(
        tool["content"]
            .as_str()
            .unwrap()
            .contains("remember the milk")
    );
    let done = events
        .iter()
        .find(|e| e["type"] == "turn.completed")
        .unwrap();
    assert_eq!(done["usage"]["input_tokens"], 250);
    assert_eq!(done["usage"]["output_tokens"], 29);
}

#[test]
fn responses_tool_turn_sends_the_reasoning_back_and_replays() {
    let replies = responses_turns()
        .into_iter()
        .map(|b| (200, "", b))
        .collect();
    let (events, requests) = live_then_replay("openai", "OPENAI_API_KEY", replies);
    assert_eq!(final_text(&events), "The notes say: remember the milk.");
    assert!(tool_output(&events).contains("remember the milk"));
    let first: Value = serde_json::from_str(&requests[0]).unwrap();
    assert_eq!(first["store"], false);
    assert!(
        first["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "read")
    );
    let second: Value = serde_json::from_str(&requests[1]).unwrap();
    let input = second["input"].as_array().unwrap();
    let reasoning = input
        .iter()
        .find(|i| i["type"] == "reasoning")
        .expect("the reasoning went back");
    assert_eq!(reasoning["encrypted_content"], "enc-1");
    assert_eq!(reasoning["summary"][0]["text"], "Read the notes first.");
    let output = input
        .iter()
        .find(|i| i["type"] == "function_call_output")
        .expect("the call's output went back");
    assert_eq!(output["call_id"], "call_1");
    assert!(
        output["output"]
            .as_str()
            .unwrap()
            .contains("remember the milk")
    );
    let done = events
        .iter()
        .find(|e| e["type"] == "turn.completed")
        .unwrap();
    assert_eq!(done["usage"]["input_tokens"], 100 + 200);
    assert_eq!(done["usage"]["cache_read_tokens"], 20);
    assert_eq!(done["usage"]["reasoning_tokens"], 16);
}

#[test]
fn gemini_tool_turn_sends_the_signature_back_on_the_call_and_replays() {
    let replies = gemini_turns().into_iter().map(|b| (200, "", b)).collect();
    let (events, requests) = live_then_replay("gemini", "GEMINI_API_KEY", replies);
    assert_eq!(final_text(&events), "The notes say: remember the milk.");
    assert!(tool_output(&events).contains("remember the milk"));
    let second: Value = serde_json::from_str(&requests[1]).unwrap();
    let call = &second["contents"][1]["parts"][0];
    assert_eq!(call["thoughtSignature"], "SIG-gem");
    assert_eq!(call["functionCall"]["name"], "read");
    let result = &second["contents"][2]["parts"][0]["functionResponse"];
    assert_eq!(result["name"], "read");
    assert!(
        result["response"]["content"]
            .as_str()
            .unwrap()
            .contains("remember the milk")
    );
    let done = events
        .iter()
        .find(|e| e["type"] == "turn.completed")
        .unwrap();
    assert_eq!(done["usage"]["input_tokens"], 90 + 140);
    assert_eq!(done["usage"]["output_tokens"], 12 + 30 + 9);
}

/// The root speaks the Responses API and delegates to an agent file on Anthropic: one
/// recording holds both, and replaying it gives the same events.
#[test]
fn a_responses_orchestrator_and_an_anthropic_agent_record_and_replay() {
    let scratch = Scratch::new();
    scratch.file("notes.txt", "remember the milk\n");
    scratch.file(
        ".claude/agents/reviewer.md",
        "---\nname: reviewer\ndescription: Reviews notes.\ntools: Read\nmodel: claude-test\nprovider: anthropic\n---\n\nYou review notes.\n",
    );
    let call = |id: &str, name: &str, arguments: &str| {
        let item = serde_json::json!({"id": format!("fc_{id}"), "type": "function_call", "status": "completed", "arguments": arguments, "call_id": id, "name": name}).to_string();
        let added = serde_json::json!({"type": "response.output_item.added", "output_index": 0, "item": {"id": format!("fc_{id}"), "type": "function_call", "arguments": "", "call_id": id, "name": name}}).to_string();
        let done = serde_json::json!({"type": "response.output_item.done", "output_index": 0, "item": serde_json::from_str::<Value>(&item).unwrap()}).to_string();
        responses_events(&[
            &added,
            &done,
            r#"{"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":50,"output_tokens":10}}}"#,
        ])
    };
    let openai = serve(vec![
        (
            200,
            "",
            call(
                "call_s",
                "spawn_agent",
                r#"{"agent": "reviewer", "task": "Review notes.txt."}"#,
            ),
        ),
        (200, "", call("call_w", "wait", "{}")),
        (
            200,
            "",
            responses_answer("The reviewer says the notes are fine."),
        ),
    ]);
    let anthropic = serve(vec![(200, "", anthropic_turns()[1].clone())]);
    let recorded = scratch.outside("recorded.jsonl");
    let run = |extra: &[&std::ffi::OsStr]| {
        wonopcode()
            .env("OPENAI_API_KEY", "openai-key")
            .env("ANTHROPIC_API_KEY", "anthropic-key")
            .env("ANTHROPIC_BASE_URL", &anthropic.base_url)
            .args(["--json", "-y", "--agents", "reviewer"])
            .args(extra)
            .arg("-C")
            .arg(scratch.ws())
            .arg("have the notes reviewed")
            .output()
            .unwrap()
    };
    let live = run(&[
        "--provider".as_ref(),
        "openai".as_ref(),
        "--model".as_ref(),
        "test-model".as_ref(),
        "--base-url".as_ref(),
        openai.base_url.as_ref(),
        "--record".as_ref(),
        recorded.as_os_str(),
    ]);
    assert_eq!(live.status.code(), Some(0), "stderr: {}", stderr(&live));
    let live_events = events(&live);
    assert_eq!(
        final_text(&live_events),
        "The reviewer says the notes are fine."
    );
    assert_eq!(openai.requests.lock().unwrap().len(), 3);
    assert_eq!(
        anthropic.requests.lock().unwrap().len(),
        1,
        "{live_events:#?}"
    );
    assert!(
        anthropic.lines.lock().unwrap()[0].starts_with("POST /v1/messages"),
        "{:?}",
        anthropic.lines.lock().unwrap()
    );
    assert!(openai.lines.lock().unwrap()[0].starts_with("POST /v1/responses"));
    let child = live_events
        .iter()
        .find(|e| e["type"] == "context.started" && e["context"] == "0.1")
        .expect("the agent ran in a child context");
    assert_eq!(child["module"], "reviewer");

    let replayed = run(&["--replay".as_ref(), recorded.as_os_str()]);
    assert_eq!(
        replayed.status.code(),
        Some(0),
        "stderr: {}",
        stderr(&replayed)
    );
    // The root and its agent run side by side: each context's events are the same, in
    // the same order, however the two interleave.
    let by_context = |events: &[Value]| {
        let mut contexts: std::collections::BTreeMap<String, Vec<Value>> = Default::default();
        for event in comparable(events) {
            let context = event["context"].as_str().unwrap_or_default().to_owned();
            contexts.entry(context).or_default().push(event);
        }
        contexts
    };
    let (live, replay) = (by_context(&live_events), by_context(&events(&replayed)));
    assert_eq!(live.keys().collect::<Vec<_>>(), ["0", "0.1"]);
    assert_eq!(replay, live, "replay reproduces both providers' responses");
    assert_eq!(
        openai.requests.lock().unwrap().len(),
        3,
        "the replay is offline"
    );
}

#[test]
fn anthropic_tool_turn_sends_the_signed_thinking_back_and_replays() {
    let replies = anthropic_turns()
        .into_iter()
        .map(|b| (200, "", b))
        .collect();
    let (events, requests) = live_then_replay("anthropic", "ANTHROPIC_API_KEY", replies);
    assert_eq!(final_text(&events), "The notes say: remember the milk.");
    assert!(tool_output(&events).contains("remember the milk"));
    let second: Value = serde_json::from_str(&requests[1]).unwrap();
    let assistant = &second["messages"][1];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(assistant["content"][0]["type"], "thinking");
    assert_eq!(assistant["content"][0]["signature"], "SIG-abc");
    assert_eq!(assistant["content"][1]["input"]["path"], "notes.txt");
    assert_eq!(second["messages"][2]["content"][0]["type"], "tool_result");
    let done = events
        .iter()
        .find(|e| e["type"] == "turn.completed")
        .unwrap();
    assert_eq!(done["usage"]["cache_read_tokens"], 40);
    // The second request starts with what the first asked the API to cache: the same tools
    // and system prompt (closed by a breakpoint), and the first's messages as they were.
    let first: Value = serde_json::from_str(&requests[0]).unwrap();
    let unmarked = |value: &Value| {
        value
            .to_string()
            .replace(r#","cache_control":{"type":"ephemeral"}"#, "")
    };
    assert_eq!(first["system"][0]["cache_control"]["type"], "ephemeral");
    assert_eq!(first["tools"], second["tools"]);
    assert_eq!(first["system"], second["system"]);
    let asked = first["messages"].as_array().unwrap();
    assert_eq!(
        unmarked(&Value::from(asked.clone())),
        unmarked(&Value::from(
            second["messages"].as_array().unwrap()[..asked.len()].to_vec()
        ))
    );
    // The moving breakpoint: on the first request's prompt, and on the second's newest turn.
    assert_eq!(asked[0]["content"][0]["cache_control"]["type"], "ephemeral");
    assert_eq!(
        second["messages"][2]["content"][0]["cache_control"]["type"],
        "ephemeral"
    );
}

#[test]
fn a_rate_limit_is_retried_and_the_retry_is_visible() {
    let mut replies = vec![(
        429,
        "retry-after: 0\r\n",
        r#"{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}"#.to_owned(),
    )];
    replies.extend(openai_turns().into_iter().map(|b| (200, "", b)));
    let (events, requests) = live_then_replay_with(
        &["--wire", "chat"],
        "openai-compatible",
        "OPENAI_COMPATIBLE_API_KEY",
        replies,
    );
    assert_eq!(requests.len(), 3);
    let retry = events
        .iter()
        .find(|e| e["type"] == "model.retry")
        .expect("a model.retry event");
    assert_eq!(retry["attempt"], 2);
    assert!(
        retry["reason"].as_str().unwrap().contains("HTTP 429"),
        "{retry}"
    );
    assert_eq!(final_text(&events), "The notes say: remember the milk.");
}

#[test]
fn no_key_and_no_replay_says_how_to_set_one() {
    let scratch = Scratch::new();
    let out = wonopcode()
        .arg("-C")
        .arg(scratch.ws())
        .arg("hi")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("ANTHROPIC_API_KEY") && err.contains("--replay FILE"),
        "{err}"
    );
}

/// A loopback Anthropic API answering a prompt with text (the notes turn's last response).
pub(crate) fn anthropic_answering() -> Loopback {
    serve(
        anthropic_turns()
            .into_iter()
            .skip(1)
            .map(|t| (200, "", t))
            .collect(),
    )
}

#[test]
fn anthropic_base_url_is_taken_from_its_variable_with_or_without_the_version() {
    let scratch = Scratch::new();
    for with_version in [false, true] {
        let server = anthropic_answering();
        let base = match with_version {
            true => server.base_url.clone(),
            false => server.base_url.trim_end_matches("/v1").to_owned(),
        };
        let out = wonopcode()
            .env("ANTHROPIC_API_KEY", "k")
            .env("ANTHROPIC_BASE_URL", &base)
            .args(["--provider", "anthropic", "-C"])
            .arg(scratch.ws())
            .arg("hi")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{base}: {}", stderr(&out));
        assert_eq!(
            server.lines.lock().unwrap().first().map(String::as_str),
            Some("POST /v1/messages HTTP/1.1"),
            "{base}"
        );
    }
}

#[test]
fn claude_codes_gateway_token_url_and_headers_need_no_flag() {
    // Claude Code's LLM-gateway set-up, as it is: a URL, a token and headers, no key, no flag.
    let scratch = Scratch::new();
    let server = anthropic_answering();
    // A prompt through the gateway at `base_url`.
    let through = |base_url: &str| {
        wonopcode()
            .env("ANTHROPIC_AUTH_TOKEN", "gateway-token")
            .env("ANTHROPIC_BASE_URL", base_url)
            .env(
                "ANTHROPIC_CUSTOM_HEADERS",
                "X-Team: core\nX-Gateway-Route: fast",
            )
            .args(["--model", "test-model", "-C"])
            .arg(scratch.ws())
            .arg("hi")
            .output()
            .unwrap()
    };
    let out = through(&server.base_url);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let head = server.heads.lock().unwrap()[0].clone();
    assert!(head.starts_with("POST /v1/messages HTTP/1.1"), "{head}");
    let has = |line: &str| head.lines().any(|l| l.eq_ignore_ascii_case(line));
    assert!(has("authorization: Bearer gateway-token"), "{head}");
    assert!(
        has("x-team: core") && has("x-gateway-route: fast"),
        "{head}"
    );
    assert!(!head.to_ascii_lowercase().contains("x-api-key"), "{head}");

    // A refused token names its variable.
    let refused = serve(vec![(
        401,
        "",
        r#"{"type":"error","error":{"type":"authentication_error","message":"bad token"}}"#
            .to_owned(),
    )]);
    let out = through(&refused.base_url);
    assert_ne!(out.status.code(), Some(0));
    let err = stderr(&out);
    assert!(err.contains("ANTHROPIC_AUTH_TOKEN"), "{err}");
}

#[test]
fn a_wrong_key_names_the_variable_and_fails_the_run() {
    let scratch = Scratch::new();
    let server = serve(vec![(
        401,
        "",
        r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#
            .to_owned(),
    )]);
    let out = wonopcode()
        .env("ANTHROPIC_API_KEY", "wrong")
        .args(["--provider", "anthropic", "--base-url"])
        .arg(&server.base_url)
        .arg("-C")
        .arg(scratch.ws())
        .arg("hi")
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    let err = stderr(&out);
    assert!(
        err.contains("invalid x-api-key") && err.contains("check the key in ANTHROPIC_API_KEY"),
        "{err}"
    );
}

#[test]
fn the_wasm_loop_runs_the_same_turn_against_a_real_provider() {
    let replies = anthropic_turns()
        .into_iter()
        .map(|b| (200, "", b))
        .collect();
    let (events, requests) = live_then_replay_with(
        &["--loop-type", "wasm"],
        "anthropic",
        "ANTHROPIC_API_KEY",
        replies,
    );
    assert_eq!(final_text(&events), "The notes say: remember the milk.");
    assert!(tool_output(&events).contains("remember the milk"));
    let second: Value = serde_json::from_str(&requests[1]).unwrap();
    assert_eq!(second["messages"][1]["content"][0]["signature"], "SIG-abc");
}

#[test]
fn a_guest_switches_to_another_configured_provider_and_the_replay_follows() {
    let scratch = Scratch::new();
    let openai = serve(Vec::new());
    let anthropic_text = anthropic_turns().pop().unwrap();
    let anthropic = serve(vec![(200, "", anthropic_text)]);
    let config = scratch.outside("config.yaml");
    std::fs::write(
        &config,
        format!(
            "providers:\n  anthropic:\n    base_url: {}\n    models:\n      claude-test: {{input: 3, output: 15}}\n",
            anthropic.base_url
        ),
    )
    .unwrap();
    let recorded = scratch.outside("recorded.jsonl");
    let run = |extra: &[&std::ffi::OsStr]| {
        wonopcode()
            .env("OPENAI_API_KEY", "openai-key")
            .env("ANTHROPIC_API_KEY", "anthropic-key")
            .arg("--config")
            .arg(&config)
            .args(["--json", "--agent-loop", guest_paths::MISBEHAVE])
            .args(extra)
            .arg("-C")
            .arg(scratch.ws())
            .arg("switch anthropic claude-test")
            .output()
            .unwrap()
    };
    let live = run(&[
        "--provider".as_ref(),
        "openai".as_ref(),
        "--base-url".as_ref(),
        openai.base_url.as_ref(),
        "--record".as_ref(),
        recorded.as_os_str(),
    ]);
    assert_eq!(live.status.code(), Some(0), "stderr: {}", stderr(&live));
    let live_events = events(&live);
    assert_eq!(
        final_text(&live_events),
        "anthropic/claude-test: The notes say: remember the milk."
    );
    // The switched-to provider got the request, with its own key; the first one none.
    assert_eq!(anthropic.requests.lock().unwrap().len(), 1);
    assert!(openai.requests.lock().unwrap().is_empty());
    let transcript = std::fs::read_to_string(&recorded).unwrap();
    assert!(
        transcript.contains(r#""model":{"id":"claude-test","provider":"anthropic""#),
        "{transcript}"
    );

    let replayed = run(&["--replay".as_ref(), recorded.as_os_str()]);
    assert_eq!(
        replayed.status.code(),
        Some(0),
        "stderr: {}",
        stderr(&replayed)
    );
    assert_eq!(comparable(&events(&replayed)), comparable(&live_events));
}

#[test]
fn a_local_server_that_is_not_running_is_named_with_how_to_start_it_at_once() {
    let scratch = Scratch::new();
    // A port nothing listens on: bound, then let go.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let base = format!("http://127.0.0.1:{port}/v1");
    let out = wonopcode()
        .args(["--provider", "ollama", "--base-url", &base])
        .arg("-C")
        .arg(scratch.ws())
        .arg("hi")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "cannot connect to the ollama server at {base} for model `qwen3:8b`"
        )) && err.contains(
            "is it running? start it with `ollama serve`, or give its address with --base-url"
        ),
        "{err}"
    );
    // The first refusal says it: no retries, and the reason once.
    assert!(!err.contains("retrying"), "{err}");
    assert_eq!(err.matches("cannot connect").count(), 1, "{err}");
}

/// One answer with no tool calls, as an OpenAI-compatible stream.
fn openai_answer(text: &str) -> String {
    [
        openai_chunk(&serde_json::json!({ "content": text }).to_string(), None),
        openai_chunk("{}", Some("stop")),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat()
}

/// A `--json -y` run against a loopback Chat Completions server that answers "ok" once, with
/// `args` added (the workspace and the prompt among them); its output and the system prompt
/// of its one request.
pub(crate) fn one_openai_answer(
    args: impl FnOnce(&mut assert_cmd::Command),
) -> (std::process::Output, String) {
    let server = serve(vec![(200, "", openai_answer("ok"))]);
    let mut run = wonopcode();
    run.env("OPENAI_API_KEY", "test-key")
        .args([
            "--json",
            "-y",
            "--provider",
            "openai-compatible",
            "--model",
            "m",
        ])
        .args(["--base-url", &server.base_url]);
    args(&mut run);
    let out = run.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let body: Value = serde_json::from_str(&server.requests.lock().unwrap()[0]).unwrap();
    let system = body["messages"][0]["content"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    (out, system)
}

#[test]
fn the_agents_md_and_claude_md_files_reach_the_model_after_its_system_prompt() {
    let scratch = Scratch::new();
    // The scratch workspace is the repository's `app/` directory.
    let repo = scratch.ws();
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    scratch.file("AGENTS.md", "Run tests with `make check`.\n");
    scratch.file("app/AGENTS.md", "This directory is the web app.\n");
    // Claude Code's files: the repository's, with an import, and the person's own.
    scratch.file("app/CLAUDE.md", "Follow @docs/style.md\n");
    scratch.file("app/docs/style.md", "Two spaces, no tabs.\n");
    let claude_home = scratch.outside("claude");
    std::fs::create_dir_all(&claude_home).unwrap();
    std::fs::write(claude_home.join("CLAUDE.md"), "Answer in English.\n").unwrap();
    let ask = |extra: &[&str]| {
        let (out, system) = one_openai_answer(|run| {
            run.env("CLAUDE_CONFIG_DIR", &claude_home)
                .args(extra)
                .arg("-C")
                .arg(repo.join("app"))
                .arg("hi");
        });
        (events(&out), system)
    };
    let (events, system) = ask(&[]);
    assert!(system.starts_with("You are wonopcode"), "{system}");
    let told: Vec<usize> = [
        "Answer in English.",
        "Run tests with `make check`.",
        "This directory is the web app.",
        "Follow @docs/style.md",
        "Two spaces, no tabs.",
    ]
    .iter()
    .map(|t| {
        system
            .find(t)
            .unwrap_or_else(|| panic!("{t} not told: {system}"))
    })
    .collect();
    assert!(
        told.windows(2).all(|w| w[0] < w[1]),
        "the person's first, then outermost first: {system}"
    );
    let loaded = events
        .iter()
        .find(|e| e["type"] == "project_instructions.loaded")
        .unwrap_or_else(|| panic!("{events:?}"));
    let files = loaded["files"].as_array().unwrap();
    assert_eq!(files.len(), 5, "{loaded}");
    assert!(files[1].as_str().unwrap().ends_with("/AGENTS.md"));
    assert_eq!(files[2], "AGENTS.md");
    assert_eq!(files[3], "CLAUDE.md");

    let (events, system) = ask(&["--no-project-instructions"]);
    assert!(!system.contains("make check"), "{system}");
    assert!(
        !events
            .iter()
            .any(|e| e["type"] == "project_instructions.loaded")
    );
}

#[test]
fn the_model_is_told_the_date_the_platform_and_the_repositorys_branch_and_status() {
    let scratch = Scratch::new();
    let ws = scratch.ws();
    let git = |args: &[&str]| crate::support::git(&ws, args);
    scratch.file("kept.txt", "one\n");
    git(&["init", "-q"]);
    git(&["add", "kept.txt"]);
    git(&["commit", "-qm", "first"]);
    scratch.file("kept.txt", "two\n");
    scratch.file("new.txt", "new\n");
    // A repository whose config runs a command at each `git status`: it never runs (where
    // it could write, inside the workspace).
    let ran = ws.join("fsmonitor-ran");
    git(&[
        "config",
        "core.fsmonitor",
        &format!("touch {}; false", ran.display()),
    ]);
    let (_, system) = one_openai_answer(|run| {
        run.env("SHELL", "/bin/zsh").arg("-C").arg(&ws).arg("hi");
    });
    let today = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    for told in [
        "<environment>",
        &format!("Today's date: {}", &today[..10]),
        &format!("Platform: {}", std::env::consts::OS),
        "Shell: zsh",
        "Git repository: yes",
        "Current branch: trunk",
        " M kept.txt",
        "?? new.txt",
        "</environment>",
    ] {
        assert!(system.contains(told), "`{told}` not told: {system}");
    }
    assert!(system.trim_end().ends_with("</environment>"), "{system}");
    assert!(!ran.exists(), "the repository's fsmonitor command ran");

    // Outside a repository it says so, and runs no git.
    let elsewhere = scratch.outside("plain");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let (_, system) = one_openai_answer(|run| {
        run.arg("-C").arg(&elsewhere).arg("hi");
    });
    assert!(system.contains("Git repository: no"), "{system}");
}

#[test]
fn session_and_subagent_start_hooks_add_to_what_the_model_is_told() {
    let scratch = Scratch::new();
    scratch.file(
        ".claude/settings.json",
        r#"{"hooks": {
          "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo 'Release freeze until Friday.'"}]}],
          "SubagentStart": [{"matcher": "standard", "hooks": [{"type": "command",
            "command": "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"SubagentStart\", \"additionalContext\": \"Answer in one line.\"}}'"}]}]
        }}"#,
    );
    // The guest makes no request itself: the one request is its native child's.
    let spawn = serde_json::json!({"module": {"named": "standard"}, "task": "Hi."});
    let (out, system) = one_openai_answer(|run| {
        run.env("HOME", scratch.outside("home"))
            .args(["--trust-workspace", "--agent-loop", guest_paths::MISBEHAVE])
            .arg("-C")
            .arg(scratch.ws())
            .arg(format!("spawn {spawn}"));
    });
    let session = system.find("Release freeze until Friday.");
    let child = system.find("Answer in one line.");
    assert!(session.is_some() && child > session, "{system}");
    // Each hook is an item: the session's at the root, between turns; the child's in it.
    let events = events(&out);
    let hook = |event: &str| {
        events
            .iter()
            .find(|e| e["item"]["kind"] == "hook" && e["item"]["event"] == event)
            .unwrap_or_else(|| panic!("no {event} hook item: {events:?}"))["context"]
            .clone()
    };
    assert_eq!(hook("SessionStart"), "0");
    assert_eq!(hook("SubagentStart"), "0.1");
}

#[test]
fn a_prefix_replay_serves_the_recording_then_goes_live_and_records_both() {
    let s = Scratch::new();
    s.file("a.txt", "hi\n");
    // A recording of one response (a read), of the model the loopback server stands for.
    let recorded = s.outside("recorded.jsonl");
    std::fs::write(
        &recorded,
        crate::support::model_transcript(
            serde_json::json!({"id": "m", "provider": "openai-compatible", "context_window": 200000, "max_output": 1000}),
            &[("0", None, crate::support::calling("c1", "read", r#"{"path": "a.txt"}"#))],
        ),
    )
    .unwrap();
    let server = serve(vec![(200, "", openai_answer("It says hi."))]);
    let extended = s.outside("extended.jsonl");
    let out = wonopcode()
        .env("OPENAI_API_KEY", "test-key")
        .args(["-y", "--replay-mode", "prefix", "--replay"])
        .arg(&recorded)
        .args(["--base-url", &server.base_url, "--record"])
        .arg(&extended)
        .arg("-C")
        .arg(s.ws())
        .arg("What does a.txt say?")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "It says hi.");
    // The server was asked once, after the recorded read, with its output.
    let requests = server.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert!(requests[0].contains("hi\\n"), "{}", requests[0]);
    // The new recording holds both responses and replays offline, strictly.
    let again = wonopcode()
        .args(["-y", "--replay"])
        .arg(&extended)
        .arg("-C")
        .arg(s.ws())
        .arg("What does a.txt say?")
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert_eq!(String::from_utf8_lossy(&again.stdout).trim(), "It says hi.");

    // A live model's flags beside a strict replay are refused, saying why.
    let refused = wonopcode()
        .args(["--replay"])
        .arg(&recorded)
        .args(["--model", "other", "hi"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("with --replay they need --replay-mode prefix"),
        "{}",
        stderr(&refused)
    );
}

#[test]
fn generation_settings_reach_the_request_and_ones_a_model_cannot_take_stop_the_run_first() {
    let scratch = Scratch::new();
    // One prompt against `server` with `MAX_THINKING_TOKENS` as given and `args`.
    let run = |server: &Loopback, thinking_env: Option<&str>, args: &[&str]| {
        let mut command = wonopcode();
        command
            .env("ANTHROPIC_API_KEY", "k")
            .env("ANTHROPIC_BASE_URL", &server.base_url)
            .env_remove("MAX_THINKING_TOKENS");
        if let Some(tokens) = thinking_env {
            command.env("MAX_THINKING_TOKENS", tokens);
        }
        command
            .args(["--provider", "anthropic"])
            .args(args)
            .arg("-C")
            .arg(scratch.ws())
            .arg("hi")
            .output()
            .unwrap()
    };
    let first_request = |server: &Loopback| -> Value {
        serde_json::from_str(&server.requests.lock().unwrap()[0]).unwrap()
    };
    let sonnet = ["--model", "claude-sonnet-4-5"];
    let haiku = ["--model", "claude-3-5-haiku-latest"];

    // On a model that thinks: the budget and the cap go out as the flags say.
    let server = anthropic_answering();
    let flags = [
        &sonnet[..],
        &["--thinking", "4096", "--max-output-tokens", "16000"],
    ]
    .concat();
    let out = run(&server, None, &flags);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(first_request(&server)["thinking"]["budget_tokens"], 4096);
    assert_eq!(first_request(&server)["max_tokens"], 16000);

    // Claude Code's variable is read as it reads it.
    let server = anthropic_answering();
    let out = run(&server, Some("5000"), &sonnet);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(first_request(&server)["thinking"]["budget_tokens"], 5000);

    // A model that does not think (by the catalog): one line, before any request.
    let server = anthropic_answering();
    let out = run(
        &server,
        None,
        &[&haiku[..], &["--thinking", "high"]].concat(),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("claude-3-5-haiku-latest") && err.contains("does not think"),
        "{err}"
    );
    assert!(server.requests.lock().unwrap().is_empty());
    // MAX_THINKING_TOKENS, meant for Claude Code's models, refuses no model that does not think.
    let out = run(&server, Some("5000"), &haiku);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(first_request(&server).get("thinking").is_none());

    // A level that is not one: a usage error naming what is accepted.
    let out = run(&server, None, &["--thinking", "lots"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("off, low, medium, high"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_agent_files_generation_settings_reach_its_requests_and_a_model_that_cannot_take_them_stops_it_first()
 {
    let scratch = Scratch::new();
    let home = scratch.outside("home");
    let agents = home.join(".claude/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("thinker.md"),
        "---\nname: thinker\ndescription: Thinks first\nprovider: anthropic\nmodel: claude-sonnet-4-5\nthinking: 4096\nmax-output-tokens: 16000\n---\nThink, then answer.\n",
    )
    .unwrap();
    std::fs::write(
        agents.join("quick.md"),
        "---\nname: quick\ndescription: Answers at once\nprovider: anthropic\nmodel: claude-3-5-haiku-latest\nthinking: high\n---\nAnswer.\n",
    )
    .unwrap();
    let run = |server: &Loopback, agent: &str, args: &[&str]| {
        wonopcode()
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("ANTHROPIC_API_KEY", "k")
            .env("ANTHROPIC_BASE_URL", &server.base_url)
            .env_remove("MAX_THINKING_TOKENS")
            .env_remove("WONOPCODE_AGENT_LOOPS_PATH")
            .args(["--agent-loop-name", agent])
            .args(args)
            .arg("-C")
            .arg(scratch.ws())
            .arg("hi")
            .output()
            .unwrap()
    };
    let server = anthropic_answering();
    let out = run(&server, "thinker", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let first: Value = serde_json::from_str(&server.requests.lock().unwrap()[0]).unwrap();
    assert_eq!(first["thinking"]["budget_tokens"], 4096, "{first}");
    assert_eq!(first["max_tokens"], 16000);
    // A flag wins over the file.
    let server = anthropic_answering();
    let out = run(&server, "thinker", &["--thinking", "2048"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let first: Value = serde_json::from_str(&server.requests.lock().unwrap()[0]).unwrap();
    assert_eq!(first["thinking"]["budget_tokens"], 2048);
    // The file's model does not think: one line naming it, before any request.
    let server = anthropic_answering();
    let out = run(&server, "quick", &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("claude-3-5-haiku-latest") && err.contains("does not think"),
        "{err}"
    );
    assert!(server.requests.lock().unwrap().is_empty());
}

#[test]
fn verbose_shows_each_raw_payload_with_credentials_redacted() {
    let scratch = Scratch::new();
    let key = "sk-ant-do-not-print-me";
    let run = |verbose: bool| {
        let server = anthropic_answering();
        let mut cmd = wonopcode();
        cmd.env("ANTHROPIC_API_KEY", key)
            .args(["--provider", "anthropic", "--base-url", &server.base_url])
            .arg("-C")
            .arg(scratch.ws());
        if verbose {
            cmd.arg("--verbose");
        }
        let out = cmd.arg("hi").output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        (stderr(&out), server.base_url)
    };
    let (err, base) = run(true);
    assert!(err.contains(&format!("→ POST {base}/messages")), "{err}");
    assert!(err.contains("x-api-key: [redacted]"), "{err}");
    // The body as sent (its keys in whichever order this build's serde_json keeps).
    assert!(
        err.contains(r#""messages":[{"#) && err.contains(r#""content":"#),
        "the body: {err}"
    );
    assert!(err.contains("← message_start "), "each event: {err}");
    assert!(!err.contains(key), "the key never shows: {err}");
    let (quiet, _) = run(false);
    assert!(!quiet.contains("→ POST"), "{quiet}");
}
