//! What a user pays for the same task with wonopcode, Claude Code and Codex (pinned in
//! `peer_agents.rs`), billed by a loopback model server written here the way the providers
//! document prompt caching:
//!
//! - **Anthropic Messages** (wonopcode, Claude Code): blocks read in the order tools, system,
//!   messages; a prefix is cached only where a `cache_control` breakpoint asks (at most four),
//!   for its TTL (`5m`, or `1h`), refreshed when read; a request reads the longest cached
//!   prefix found at a breakpoint or up to 20 blocks before one; nothing below 1,024 tokens is
//!   cached (4,096 for Haiku 4.5), and each model has a cache of its own; writes bill at
//!   1.25× input (2× for `1h`), reads at 0.1×. Claude Sonnet 4.5's prices ($3 in, $15 out
//!   per million tokens), Haiku 4.5's for a request naming Haiku.
//! - **OpenAI Responses** (Codex): the longest prefix (by item) a request shares with one
//!   seen before is read from the cache, counted in 128-token steps from 1,024, at 0.1×; no
//!   write premium. GPT-5's prices ($1.25 in, $10 out).
//!
//! A token is four bytes of a block's JSON, the same rule for every agent. The scripted
//! model reads one 8 KB source file per response with the agent's own tool (`read`, Claude
//! Code's `Read`, a `cat` through Codex's `exec_command`), then answers; the task is a new
//! file each response (`new`) or the same three files again and again (`reread`). Every
//! request an agent makes is billed, side requests included; every run is checked (exit 0,
//! the answer printed, N tool results that gave the file's text), and wonopcode's own
//! reported cost must match the bill.
//!
//! `cargo bench -p wonopcode-benches --bench cost`; `COST_N=20,50` picks the rows,
//! `COST_AGENTS=wonopcode,Codex` the agents, `COST_TASKS=new` the tasks; `COST_DUMP=DIR` keeps
//! every request body, one JSON line each, in `DIR/AGENT-TASK-N.jsonl`. wonopcode runs
//! twice: on the Messages API (beside Claude Code) and on the Responses API (beside Codex).

// Benchmark set-up has no user input; a failure there is a bug to see at once.
#![allow(clippy::expect_used)]

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wonopcode_benches::peer_agents::{
    Agent, install_peers, messages_reply, peer_agents, picked, serve, sse, start,
    wonopcode_on_messages,
};
use wonopcode_benches::release_bin;

/// USD per million tokens.
#[derive(Clone, Copy)]
struct Prices {
    input: f64,
    write_5m: f64,
    write_1h: f64,
    read: f64,
    output: f64,
}

const SONNET: Prices = Prices {
    input: 3.0,
    write_5m: 3.75,
    write_1h: 6.0,
    read: 0.30,
    output: 15.0,
};
const HAIKU: Prices = Prices {
    input: 1.0,
    write_5m: 1.25,
    write_1h: 2.0,
    read: 0.10,
    output: 5.0,
};
const GPT5: Prices = Prices {
    input: 1.25,
    write_5m: 1.25,
    write_1h: 1.25,
    read: 0.125,
    output: 10.0,
};

/// The fewest tokens a cached prefix may have: 1,024 for Claude Sonnet 4.5 and for GPT-5,
/// 4,096 for Claude Haiku 4.5 (Anthropic's prompt-caching documentation).
fn min_cached(model: &str) -> u64 {
    if model.contains("haiku") { 4096 } else { 1024 }
}
/// How many blocks before a breakpoint the Messages API looks for a cached prefix.
const LOOKBACK: usize = 20;
/// Output tokens billed per response (each is one short tool call or answer).
const OUTPUT_TOKENS: u64 = 30;
/// Bytes of each source file.
const FILE_BYTES: usize = 8 * 1024;

/// Tokens of a block's JSON text: a quarter of its bytes, rounded up.
fn tokens(json: &str) -> u64 {
    (json.len() as u64).div_ceil(4)
}

/// One block of a request as the cache sees it: its content's hash (markers left out), its
/// tokens, and the TTL of the breakpoint on it.
struct Block {
    hash: u64,
    tokens: u64,
    breakpoint: Option<Duration>,
}

fn block(value: &Value) -> Block {
    let mut content = value.clone();
    let breakpoint = content
        .as_object_mut()
        .and_then(|m| m.remove("cache_control"));
    let text = content.to_string();
    let mut hasher = DefaultHasher::new();
    text.hash(&mut hasher);
    Block {
        hash: hasher.finish(),
        tokens: tokens(&text),
        breakpoint: breakpoint.map(|c| match c["ttl"].as_str() {
            Some("1h") => Duration::from_secs(3600),
            _ => Duration::from_secs(300),
        }),
    }
}

/// A Messages request's blocks, in the order the API reads them.
fn messages_blocks(body: &Value) -> Vec<Block> {
    let mut blocks: Vec<Block> = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(block)
        .collect();
    match &body["system"] {
        Value::String(text) => blocks.push(block(&json!({"type": "text", "text": text}))),
        Value::Array(items) => blocks.extend(items.iter().map(block)),
        _ => {}
    }
    for message in body["messages"].as_array().into_iter().flatten() {
        match &message["content"] {
            Value::String(text) => blocks.push(block(&json!({"type": "text", "text": text}))),
            Value::Array(items) => blocks.extend(items.iter().map(block)),
            _ => {}
        }
    }
    blocks
}

/// What one request was billed.
#[derive(Default, Clone, Copy)]
struct Usage {
    input: u64,
    write_5m: u64,
    write_1h: u64,
    read: u64,
    output: u64,
}

impl Usage {
    fn usd(&self, p: Prices) -> f64 {
        (self.input as f64 * p.input
            + self.write_5m as f64 * p.write_5m
            + self.write_1h as f64 * p.write_1h
            + self.read as f64 * p.read
            + self.output as f64 * p.output)
            / 1e6
    }

    fn prompt(&self) -> u64 {
        self.input + self.write_5m + self.write_1h + self.read
    }
}

/// Each prefix of `blocks` (the first one, the first two, …): its hash and its tokens.
fn prefixes(blocks: &[Block], model: &str) -> (Vec<u64>, Vec<u64>) {
    // A cache is the model's own: the same prefix sent to another model is not a hit.
    let mut hash = {
        let mut hasher = DefaultHasher::new();
        model.hash(&mut hasher);
        hasher.finish()
    };
    let mut sum = 0_u64;
    blocks
        .iter()
        .map(|b| {
            let mut hasher = DefaultHasher::new();
            (hash, b.hash).hash(&mut hasher);
            hash = hasher.finish();
            sum += b.tokens;
            (hash, sum)
        })
        .unzip()
}

/// The provider's cache: prefix hashes and when they expire.
#[derive(Default)]
struct Cache {
    entries: HashMap<u64, Instant>,
}

impl Cache {
    /// Bills a Messages request to `model` and writes what its breakpoints ask.
    fn messages(&mut self, blocks: &[Block], model: &str, now: Instant) -> Usage {
        let (prefix, total) = prefixes(blocks, model);
        let alive = |i: usize, entries: &HashMap<u64, Instant>| {
            entries.get(&prefix[i]).is_some_and(|until| *until > now)
        };
        let breakpoints: Vec<usize> = (0..blocks.len())
            .filter(|&i| blocks[i].breakpoint.is_some())
            .collect();
        // The longest cached prefix found at a breakpoint or in the lookback before one.
        let hit = breakpoints
            .iter()
            .filter_map(|&b| {
                (b.saturating_sub(LOOKBACK)..=b)
                    .rev()
                    .find(|&i| alive(i, &self.entries))
            })
            .max();
        let read = hit.map_or(0, |i| total[i]);
        if let Some(i) = hit {
            // A read refreshes the entry for its TTL (five minutes unless it was written longer).
            let until = self.entries[&prefix[i]].max(now + Duration::from_secs(300));
            self.entries.insert(prefix[i], until);
        }
        let mut usage = Usage {
            read,
            output: OUTPUT_TOKENS,
            ..Usage::default()
        };
        let mut written = read;
        for &b in &breakpoints {
            if total[b] < min_cached(model) || total[b] <= written {
                continue;
            }
            let ttl = blocks[b].breakpoint.unwrap_or_default();
            let cost = total[b] - written;
            if ttl > Duration::from_secs(300) {
                usage.write_1h += cost;
            } else {
                usage.write_5m += cost;
            }
            written = total[b];
            self.entries.insert(prefix[b], now + ttl);
        }
        usage.input = total.last().copied().unwrap_or(0) - written;
        usage
    }

    /// Bills a Responses request to `model` (automatic caching) and remembers its prefixes.
    fn responses(&mut self, blocks: &[Block], model: &str, now: Instant) -> Usage {
        let (prefix, total) = prefixes(blocks, model);
        let mut cached = 0;
        for (hash, sum) in prefix.into_iter().zip(total.iter().copied()) {
            if self.entries.get(&hash).is_some_and(|until| *until > now) && sum >= min_cached(model)
            {
                cached = sum / 128 * 128;
            }
            self.entries.insert(hash, now + Duration::from_secs(300));
        }
        let sum = total.last().copied().unwrap_or(0);
        Usage {
            input: sum - cached,
            read: cached,
            output: OUTPUT_TOKENS,
            ..Usage::default()
        }
    }
}

/// A Responses request's items, in order: instructions, tools, input.
fn responses_blocks(body: &Value) -> Vec<Block> {
    let mut blocks = Vec::new();
    if let Some(text) = body["instructions"].as_str() {
        blocks.push(block(&json!({"type": "text", "text": text})));
    }
    blocks.extend(body["tools"].as_array().into_iter().flatten().map(block));
    blocks.extend(body["input"].as_array().into_iter().flatten().map(block));
    blocks
}

/// Which file each response reads.
#[derive(Clone, Copy)]
enum Task {
    /// A new file each response.
    New,
    /// The same three files in turn.
    Reread,
}

impl Task {
    fn name(self) -> &'static str {
        match self {
            Task::New => "new",
            Task::Reread => "reread",
        }
    }

    fn file(self, k: usize) -> String {
        match self {
            Task::New => format!("src/f{k}.rs"),
            Task::Reread => format!("src/f{}.rs", k % 3),
        }
    }
}

/// The scripted model and its bill.
struct Script {
    calls: usize,
    task: Task,
    workspace: PathBuf,
    state: Mutex<State>,
    /// `COST_DUMP`: the file each request's body is appended to, one JSON line each.
    dump: Option<Mutex<std::fs::File>>,
}

#[derive(Default)]
struct State {
    cache: Cache,
    usd: f64,
    total: Usage,
    requests: usize,
    first: Option<u64>,
    results: usize,
    failures: Vec<String>,
}

impl Script {
    fn answer(&self, path: &str, body: &[u8]) -> Option<String> {
        if let Some(dump) = &self.dump {
            use std::io::Write;
            let mut file = dump.lock().expect("COST_DUMP file");
            file.write_all(body)
                .and_then(|()| file.write_all(b"\n"))
                .expect("COST_DUMP");
        }
        let body: Value = serde_json::from_slice(body).expect("a JSON request");
        let now = Instant::now();
        if path.starts_with("/v1/messages") {
            Some(self.messages(&body, now))
        } else if path.starts_with("/v1/responses") {
            Some(self.responses(&body, now))
        } else {
            None
        }
    }

    fn bill(
        &self,
        usage: Usage,
        prices: Prices,
        main: bool,
        results: usize,
        failure: Option<String>,
    ) {
        let mut state = self.state.lock().expect("state");
        state.requests += 1;
        state.usd += usage.usd(prices);
        let t = &mut state.total;
        t.input += usage.input;
        t.write_5m += usage.write_5m;
        t.write_1h += usage.write_1h;
        t.read += usage.read;
        t.output += usage.output;
        if main {
            state.first.get_or_insert(usage.prompt());
            state.results = state.results.max(results);
            state.failures.extend(failure);
        }
    }

    fn messages(&self, body: &Value, now: Instant) -> String {
        let blocks = messages_blocks(body);
        let model = body["model"].as_str().unwrap_or_default();
        let usage = self
            .state
            .lock()
            .expect("state")
            .cache
            .messages(&blocks, model, now);
        let prices = if model.contains("haiku") {
            HAIKU
        } else {
            SONNET
        };
        let tool = ["Read", "read"].into_iter().find(|t| {
            body["tools"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|d| d["name"] == *t)
        });
        let results: Vec<&Value> = body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m["content"].as_array())
            .flatten()
            .filter(|b| b["type"] == "tool_result")
            .collect();
        let done = results.len();
        // A read is done when it gave the file's text (or wonopcode's pointer to the earlier
        // read of an unchanged one), as on the Responses side: an empty or cleared result
        // would bill cheaper and must not pass.
        let failure = results
            .last()
            .filter(|r| {
                let text = r["content"].to_string();
                r["is_error"] == true
                    || !(text.contains("fn item_") || text.contains("as the result of call"))
            })
            .map(|r| r["content"].to_string());
        self.bill(usage, prices, tool.is_some(), done, failure);
        let usage_json = json!({
            "input_tokens": usage.input,
            "cache_creation_input_tokens": usage.write_5m + usage.write_1h,
            "cache_read_input_tokens": usage.read,
            "output_tokens": 1
        });
        let start = json!({"type": "message_start", "message": {"id": format!("msg_{done}"), "type": "message", "role": "assistant", "model": model, "content": [], "stop_reason": null, "stop_sequence": null, "usage": usage_json}});
        let call = tool.filter(|_| done < self.calls).map(|name| {
            let file = self.task.file(done);
            let input = match name {
                "Read" => json!({"file_path": self.workspace.join(&file)}),
                _ => json!({"path": file}),
            };
            (name, format!("toolu_{done}"), input)
        });
        messages_reply(start, call, OUTPUT_TOKENS)
    }

    fn responses(&self, body: &Value, now: Instant) -> String {
        let blocks = responses_blocks(body);
        let model = body["model"].as_str().unwrap_or_default();
        let usage = self
            .state
            .lock()
            .expect("state")
            .cache
            .responses(&blocks, model, now);
        let outputs: Vec<&Value> = body["input"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|i| i["type"] == "function_call_output")
            .collect();
        let done = outputs.len();
        let failure = outputs
            .last()
            .map(|o| o["output"].to_string())
            // A file's text, or wonopcode's pointer to the earlier read of an unchanged one.
            .filter(|text| !text.contains("fn item_") && !text.contains("as the result of call"));
        self.bill(usage, GPT5, true, done, failure);
        // wonopcode reads with its `read` tool; Codex has a shell only.
        let reads = body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|t| t["name"] == "read");
        let item = if done < self.calls {
            let file = self.task.file(done);
            let (name, arguments) = match reads {
                true => ("read", json!({"path": file})),
                false => ("exec_command", json!({"cmd": format!("cat {file}")})),
            };
            json!({"type": "function_call", "id": format!("fc_{done}"), "call_id": format!("call_{done}"), "name": name, "arguments": arguments.to_string(), "status": "completed"})
        } else {
            json!({"type": "message", "id": format!("msg_{done}"), "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": "Done.", "annotations": []}]})
        };
        let usage_json = json!({"input_tokens": usage.prompt(), "input_tokens_details": {"cached_tokens": usage.read}, "output_tokens": OUTPUT_TOKENS, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": usage.prompt() + OUTPUT_TOKENS});
        let mut events = vec![(
            "response.created",
            json!({"type": "response.created", "response": {"id": "resp", "object": "response", "status": "in_progress", "output": []}}),
        )];
        // The answer's text as a delta too, as the API streams it.
        if item["type"] == "message" {
            events.push((
                "response.output_text.delta",
                json!({"type": "response.output_text.delta", "item_id": item["id"], "output_index": 0, "content_index": 0, "delta": "Done."}),
            ));
        }
        events.push((
            "response.output_item.done",
            json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        ));
        events.push((
            "response.completed",
            json!({"type": "response.completed", "response": {"id": "resp", "object": "response", "status": "completed", "output": [item], "usage": usage_json}}),
        ));
        sse(&events)
    }
}

/// An 8 KB source file: numbered functions, different in every file.
fn source(k: usize) -> String {
    let mut text = String::new();
    let mut i = 0;
    while text.len() < FILE_BYTES {
        text.push_str(&format!(
            "pub fn item_{k}_{i}(x: u64) -> u64 {{\n    x.wrapping_mul({}) ^ {}\n}}\n\n",
            k * 31 + i,
            i * 7 + 1
        ));
        i += 1;
    }
    text
}

fn agents(root: &Path) -> Vec<Agent> {
    let peers = install_peers(root);
    let wonopcode = release_bin();
    let on_responses = wonopcode.clone();
    let prompt = |n: usize| {
        format!("Read the {n} source files you are told of, one at a time, then say Done.")
    };
    [
        Agent {
            name: "wonopcode",
            command: Box::new(move |url, n, home, ws| {
                let mut c = wonopcode_on_messages(&wonopcode, url, n, home, ws);
                c.arg(prompt(n));
                c
            }),
        },
        Agent {
            name: "wonopcode (Responses)",
            command: Box::new(move |url, n, home, ws| {
                let mut c = Command::new(&on_responses);
                c.env("OPENAI_API_KEY", "k")
                    .env("WONOPCODE_RUNS_DIR", home.join("runs"))
                    .args(["--provider", "openai", "--model", "gpt-5", "--base-url"])
                    .arg(format!("{url}/v1"))
                    .args(["--yes", "--max-iterations", &(n + 1).to_string(), "-C"])
                    .arg(ws)
                    .arg(prompt(n));
                c
            }),
        },
    ]
    .into_iter()
    .chain(peer_agents(peers, "Read", prompt))
    .collect()
}

/// One run: the agent's bill for `n` responses of `task`.
fn run(agent: &Agent, task: Task, n: usize, home: &Path, ws: &Path) -> State {
    let script = Arc::new(Script {
        calls: n,
        task,
        workspace: ws.to_path_buf(),
        state: Mutex::default(),
        dump: std::env::var_os("COST_DUMP").map(|dir| {
            let dir = PathBuf::from(dir);
            std::fs::create_dir_all(&dir).expect("COST_DUMP directory");
            let path = dir.join(format!("{}-{}-{n}.jsonl", agent.name, task.name()));
            Mutex::new(std::fs::File::create(path).expect("COST_DUMP file"))
        }),
    });
    let answering = script.clone();
    let url = serve(Arc::new(move |path: &str, body: &[u8]| {
        answering.answer(path, body)
    }));
    let mut agent_run = start((agent.command)(&url, n, home, ws), home, ws);
    let status = agent_run.child.wait().expect("wait");
    let out = agent_run.stdout.clone();
    let errors = agent_run.stderr();
    let state = std::mem::take(&mut *script.state.lock().expect("state"));
    assert!(status.success(), "{} exited {status}: {errors}", agent.name);
    assert!(out.contains("Done."), "{}: {out}{errors}", agent.name);
    assert_eq!(state.results, n, "{}: tool results", agent.name);
    assert!(
        state.failures.is_empty(),
        "{}: failed reads: {:?}",
        agent.name,
        state.failures
    );
    if agent.name.starts_with("wonopcode") {
        let reported = reported_cost(&errors)
            .unwrap_or_else(|| panic!("{}: no cost in its last line: {errors}", agent.name));
        assert!(
            (reported - state.usd).abs() <= state.usd * 0.01 + 0.0002,
            "{}: reported ${reported:.4}, billed ${:.4}",
            agent.name,
            state.usd
        );
    }
    state
}

/// The dollars of wonopcode's closing `· done · …` line (`$0.1234`).
fn reported_cost(stderr: &str) -> Option<f64> {
    let line = stderr.lines().rev().find(|l| l.contains("· done ·"))?;
    line.rsplit('$')
        .next()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let list = |var: &str, default: &str| -> Vec<String> {
        std::env::var(var)
            .unwrap_or_else(|_| default.to_owned())
            .split(',')
            .map(|s| s.trim().to_owned())
            .collect()
    };
    let sizes: Vec<usize> = list("COST_N", "20,50,100")
        .iter()
        .map(|n| n.parse().expect("COST_N: numbers"))
        .collect();
    let tasks: Vec<Task> = list("COST_TASKS", "new,reread")
        .iter()
        .map(|t| match t.as_str() {
            "new" => Task::New,
            "reread" => Task::Reread,
            other => panic!("COST_TASKS: `{other}` is neither new nor reread"),
        })
        .collect();
    let agents: Vec<Agent> = agents(&root)
        .into_iter()
        .filter(|a| picked("COST_AGENTS", a.name))
        .collect();
    let scratch = tempfile::tempdir().expect("temp dir");
    println!(
        "| task | N | agent | requests | prompt tokens | read from cache | written to cache | first request | bill |"
    );
    println!("|---|---:|---|---:|---:|---:|---:|---:|---:|");
    for task in &tasks {
        for &n in &sizes {
            for agent in &agents {
                let dir = scratch
                    .path()
                    .join(agent.name)
                    .join(format!("{}-{n}", task.name()));
                let (home, ws) = (dir.join("home"), dir.join("workspace"));
                std::fs::create_dir_all(&home).expect("home");
                std::fs::create_dir_all(ws.join("src")).expect("workspace");
                for k in 0..n.max(3) {
                    std::fs::write(ws.join(format!("src/f{k}.rs")), source(k)).expect("source");
                }
                let state = run(agent, *task, n, &home, &ws);
                let t = state.total;
                let prompt = t.prompt();
                println!(
                    "| {} | {n} | {} | {} | {prompt} | {:.0}% | {:.0}% | {} | ${:.3} |",
                    task.name(),
                    agent.name,
                    state.requests,
                    100.0 * t.read as f64 / prompt.max(1) as f64,
                    100.0 * (t.write_5m + t.write_1h) as f64 / prompt.max(1) as f64,
                    state.first.unwrap_or_default(),
                    state.usd,
                );
            }
        }
    }
}
