//! wonopcode beside the agents people would pick instead: Claude Code
//! (`@anthropic-ai/claude-code`) and Codex (`@openai/codex`), pinned in `peer_agents.rs` and installed from
//! npm into `target/peers/` by this benchmark on its first run (`npm` must be on `PATH`).
//!
//! One scripted model drives all three: a loopback server that answers N responses, each a
//! call of the agent's own shell tool running `true K` (K the call's number), then a last
//! answer `Done.`. It speaks
//! Anthropic Messages to wonopcode and Claude Code and the Responses API to Codex (a
//! `model_providers` entry with `wire_api = "responses"`). The model always knows what to
//! answer from the request alone: the number of tool results in its history.
//!
//! Each agent runs as a user runs it headless, with its own sandbox where it has one:
//! - `wonopcode --provider anthropic --yes PROMPT` with the default `workspace-write` kernel
//!   sandbox and its journal kept;
//! - `claude -p PROMPT --allowedTools Bash` (its sandbox needs bubblewrap and socat set up by
//!   the user, so it runs commands without one: in its favour here);
//! - `codex exec -s workspace-write PROMPT` (its bubblewrap and seccomp sandbox).
//!
//! Reported per agent and N (20, 100, 400): whole-process wall time (the median of
//! `PEERS_RUNS` runs, 3 by default) and peak RSS, from `wait4`: the largest resident set of
//! the process and any child it waited for. The native binaries are run directly, not
//! through npm's node wrapper. Every run is checked: exit 0, `Done.` printed, the server saw
//! N tool results that did not fail, and one request per response.
//! `cargo bench -p wonopcode-benches --bench peers`; `PEERS_N=20,100` picks the rows and
//! `PEERS_AGENTS=wonopcode,Codex` the agents.

// Benchmark set-up has no user input; a failure there is a bug to see at once.
#![allow(clippy::expect_used)]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use wonopcode_benches::peer_agents::{
    Agent, install_peers, messages_reply, peer_agents, picked, serve, sse, start,
    wonopcode_on_messages,
};
use wonopcode_benches::{release_bin, wait_with_peak_rss};

/// What the scripted model saw: one entry per main-conversation request.
#[derive(Default)]
struct Seen {
    /// Requests that offered a shell tool.
    requests: usize,
    /// The most tool results one request carried.
    results: usize,
    /// Tool results that reported a failure.
    failures: Vec<String>,
}

/// The scripted model: how many shell calls it asks for before it answers.
struct Script {
    calls: usize,
    seen: Mutex<Seen>,
}

/// The parts of an Anthropic Messages request the script reads; the rest is skipped
/// unparsed, so the server's own time stays small beside an agent's.
#[derive(Deserialize)]
struct MessagesRequest<'a> {
    #[serde(borrow)]
    model: Option<&'a RawValue>,
    #[serde(default)]
    tools: Vec<NamedTool>,
    #[serde(default, borrow)]
    messages: Vec<MessageIn<'a>>,
}

/// A tool's name.
#[derive(Deserialize)]
struct NamedTool {
    name: String,
}

/// One message: its content, a string or a list of blocks.
#[derive(Deserialize)]
struct MessageIn<'a> {
    #[serde(borrow)]
    content: Option<&'a RawValue>,
}

/// A content block: its type, and for a tool result its content and error flag.
#[derive(Deserialize)]
struct BlockIn<'a> {
    r#type: &'a str,
    #[serde(default)]
    is_error: bool,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
}

/// The parts of a Responses API request the script reads.
#[derive(Deserialize)]
struct ResponsesRequest<'a> {
    #[serde(default, borrow)]
    input: Vec<ItemIn<'a>>,
}

/// An input item: its type, and for a call's output the output.
#[derive(Deserialize)]
struct ItemIn<'a> {
    r#type: Option<&'a str>,
    #[serde(borrow)]
    output: Option<&'a RawValue>,
}

impl Script {
    /// The SSE body answering one request, by its path and JSON body.
    fn answer(&self, path: &str, body: &[u8]) -> Option<String> {
        if path.starts_with("/v1/messages") {
            Some(self.messages(&serde_json::from_slice(body).expect("a Messages request")))
        } else if path.starts_with("/v1/responses") {
            Some(self.responses(&serde_json::from_slice(body).expect("a Responses request")))
        } else {
            None
        }
    }

    /// Anthropic Messages: the shell tool is `Bash` (Claude Code) or `bash` (wonopcode).
    fn messages(&self, body: &MessagesRequest) -> String {
        let shell = ["Bash", "bash"]
            .into_iter()
            .find(|t| body.tools.iter().any(|tool| tool.name == *t));
        let blocks: Vec<Vec<BlockIn>> = body
            .messages
            .iter()
            .filter_map(|m| m.content.filter(|c| c.get().starts_with('[')))
            .map(|c| serde_json::from_str(c.get()).expect("content blocks"))
            .collect();
        let results: Vec<&BlockIn> = blocks
            .iter()
            .flatten()
            .filter(|b| b.r#type == "tool_result")
            .collect();
        let done = results.len();
        if shell.is_some() {
            let mut seen = self.seen.lock().expect("seen");
            seen.requests += 1;
            seen.results = seen.results.max(done);
            if let Some(last) = results.last().filter(|r| r.is_error) {
                seen.failures
                    .push(last.content.map(|c| c.get().to_owned()).unwrap_or_default());
            }
        }
        let model: Value = body
            .model
            .and_then(|m| serde_json::from_str(m.get()).ok())
            .unwrap_or(Value::Null);
        let start = json!({"type": "message_start", "message": {"id": format!("msg_{done}"), "type": "message", "role": "assistant", "model": model, "content": [], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 1}}});
        let call = shell
            .filter(|_| done < self.calls)
            .map(|name| (name, format!("toolu_{done}"), shell_input(name, done)));
        messages_reply(start, call, 5)
    }

    /// The Responses API: Codex's shell tool is `exec_command`.
    fn responses(&self, body: &ResponsesRequest) -> String {
        let outputs: Vec<&ItemIn> = body
            .input
            .iter()
            .filter(|i| i.r#type == Some("function_call_output"))
            .collect();
        let done = outputs.len();
        {
            let mut seen = self.seen.lock().expect("seen");
            seen.requests += 1;
            seen.results = seen.results.max(done);
            if let Some(last) = outputs.last() {
                let text = last.output.map(|o| o.get().to_owned()).unwrap_or_default();
                if !text.contains("exited with code 0") {
                    seen.failures.push(text);
                }
            }
        }
        let item = if done < self.calls {
            json!({"type": "function_call", "id": format!("fc_{done}"), "call_id": format!("call_{done}"), "name": "exec_command", "arguments": json!({"cmd": command(done)}).to_string(), "status": "completed"})
        } else {
            json!({"type": "message", "id": format!("msg_{done}"), "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": "Done.", "annotations": []}]})
        };
        sse(&[
            (
                "response.created",
                json!({"type": "response.created", "response": {"id": "resp", "object": "response", "status": "in_progress", "output": []}}),
            ),
            (
                "response.output_item.done",
                json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
            ),
            (
                "response.completed",
                json!({"type": "response.completed", "response": {"id": "resp", "object": "response", "status": "completed", "output": [item], "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}}}),
            ),
        ])
    }
}

/// The command of call `k`: `true` with the call's number, so no two calls are the same
/// (an agent may stop a model that repeats itself).
fn command(k: usize) -> String {
    format!("true {k}")
}

/// The arguments of call `k` in each Anthropic agent's shell tool: Claude Code's `Bash`
/// wants a description for its user, wonopcode's `bash` takes only the command.
fn shell_input(tool: &str, k: usize) -> Value {
    match tool {
        "Bash" => json!({"command": command(k), "description": "Run true"}),
        _ => json!({"command": command(k)}),
    }
}

fn agents(root: &Path) -> Vec<Agent> {
    let peers = install_peers(root);
    let wonopcode = release_bin();
    let prompt = |n: usize| format!("Run `true` {n} times, one command at a time.");
    [Agent {
        name: "wonopcode",
        command: Box::new(move |url, n, home, ws| {
            let mut c = wonopcode_on_messages(&wonopcode, url, n, home, ws);
            c.arg(prompt(n));
            c
        }),
    }]
    .into_iter()
    .chain(peer_agents(peers, "Bash", prompt))
    .collect()
}

/// One run of an agent against a fresh script of `n` calls: wall time and peak RSS in MiB.
// The child is waited for with `wait4` (for its own rusage), which clippy cannot see.
#[allow(clippy::zombie_processes)]
fn run(agent: &Agent, n: usize, home: &Path, ws: &Path) -> (Duration, f64) {
    let script = Arc::new(Script {
        calls: n,
        seen: Mutex::default(),
    });
    let answering = script.clone();
    let url = serve(Arc::new(move |path: &str, body: &[u8]| {
        answering.answer(path, body)
    }));
    let started = Instant::now();
    let agent_run = start((agent.command)(&url, n, home, ws), home, ws);
    let (code, peak) = wait_with_peak_rss(agent_run.child.id());
    let took = started.elapsed();
    let out = agent_run.stdout.clone();
    let errors = agent_run.stderr();
    let seen = script.seen.lock().expect("seen");
    assert_eq!(code, 0, "{} exited {code}: {errors}", agent.name);
    assert!(out.contains("Done."), "{}: {out}{errors}", agent.name);
    assert_eq!(seen.results, n, "{}: tool results", agent.name);
    assert_eq!(seen.requests, n + 1, "{}: requests", agent.name);
    assert!(
        seen.failures.is_empty(),
        "{}: failed calls: {:?}",
        agent.name,
        seen.failures
    );
    (took, peak)
}

fn main() {
    // `cargo bench` passes `--bench`; a filter or `--list` from the harness is not used.
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let sizes: Vec<usize> = std::env::var("PEERS_N")
        .unwrap_or_else(|_| "20,100,400".to_owned())
        .split(',')
        .map(|n| n.trim().parse().expect("PEERS_N: numbers"))
        .collect();
    let runs: usize = std::env::var("PEERS_RUNS")
        .ok()
        .map_or(3, |n| n.parse().expect("PEERS_RUNS: a number"));
    let agents: Vec<Agent> = agents(&root)
        .into_iter()
        .filter(|a| picked("PEERS_AGENTS", a.name))
        .collect();
    let scratch = tempfile::tempdir().expect("temp dir");
    println!("| agent | N | wall (median of {runs}) | peak RSS |");
    println!("|---|---:|---:|---:|");
    for agent in &agents {
        let home = scratch.path().join(agent.name).join("home");
        let ws = scratch.path().join(agent.name).join("workspace");
        std::fs::create_dir_all(&home).expect("home");
        std::fs::create_dir_all(&ws).expect("workspace");
        // A first run sets up the agent's home, as a user's second run finds it.
        run(agent, 1, &home, &ws);
        for &n in &sizes {
            let mut times = Vec::new();
            let mut peak = 0.0_f64;
            for _ in 0..runs {
                let (took, rss) = run(agent, n, &home, &ws);
                times.push(took);
                peak = peak.max(rss);
            }
            times.sort();
            println!(
                "| {} | {n} | {:.2} s | {:.0} MiB |",
                agent.name,
                times[times.len() / 2].as_secs_f64(),
                peak
            );
        }
    }
}
