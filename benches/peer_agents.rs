//! What the whole-process benchmarks against other agents share: the pinned peers (Claude
//! Code and Codex from npm, installed once into `target/peers/`), the paths of their native
//! binaries, and a loopback HTTP/1.1 server that answers each request from its path and body
//! with server-sent events.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use serde_json::Value;

/// Claude Code, as pinned for every benchmark.
pub const CLAUDE_CODE: &str = "@anthropic-ai/claude-code@2.1.332";
/// Codex, likewise.
pub const CODEX: &str = "@openai/codex@0.171.0";

/// The native binaries of the pinned peers, run directly rather than through npm's node
/// wrapper.
pub struct Peers {
    /// Claude Code's `claude`.
    pub claude: PathBuf,
    /// Codex's `codex`.
    pub codex: PathBuf,
}

/// Installs the pinned peers into `ROOT/target/peers/` unless they are there already.
pub fn install_peers(root: &Path) -> Peers {
    let dir = root.join("target/peers");
    let installed = |spec: &str| {
        let (name, version) = spec.rsplit_once('@').expect("name@version");
        std::fs::read_to_string(dir.join("node_modules").join(name).join("package.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .is_some_and(|p| p["version"] == version)
    };
    if !(installed(CLAUDE_CODE) && installed(CODEX)) {
        std::fs::create_dir_all(&dir).expect("target/peers");
        std::fs::write(dir.join("package.json"), "{\"private\":true}\n").expect("package.json");
        let status = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&dir)
            .args([CLAUDE_CODE, CODEX])
            .status()
            .expect("npm runs (the peers are installed from npm)");
        assert!(status.success(), "npm install {CLAUDE_CODE} {CODEX}");
    }
    let modules = dir.join("node_modules");
    Peers {
        claude: modules.join("@anthropic-ai/claude-code-linux-x64/claude"),
        codex: modules.join("@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"),
    }
}

/// Whether the agent `name` is among those the variable `var` picks (`var=wonopcode,Codex`;
/// every agent when it is unset).
pub fn picked(var: &str, name: &str) -> bool {
    std::env::var(var)
        .ok()
        .is_none_or(|only| only.split(',').any(|n| n == name))
}

/// Server-sent events, `event:` and `data:` per event.
pub fn sse(events: &[(&str, Value)]) -> String {
    events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect()
}

/// What answers a request: its path and body, to the events of its reply (`None`: 404).
pub type Answer = dyn Fn(&str, &[u8]) -> Option<String> + Send + Sync;

/// A loopback HTTP/1.1 server (keep-alive, a thread per connection); its base URL.
pub fn serve(answer: Arc<Answer>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let answer = answer.clone();
            std::thread::spawn(move || connection(stream, &*answer));
        }
    });
    url
}

/// Requests on one connection, answered in turn until the client closes it.
fn connection(stream: TcpStream, answer: &Answer) {
    let mut writer = stream.try_clone().expect("clone");
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("").to_owned();
        let mut length = 0;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end().to_ascii_lowercase();
            if header.is_empty() {
                break;
            }
            if let Some(v) = header.strip_prefix("content-length:") {
                length = v.trim().parse().expect("content-length");
            }
            assert!(
                !header.starts_with("transfer-encoding:"),
                "a chunked request body: {header}"
            );
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let reply = match answer(&path, &body) {
            Some(events) => format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{events}",
                events.len()
            ),
            None => "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n".to_owned(),
        };
        if writer.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

/// Builds an agent's command for a server URL, a response count, a home and a workspace.
pub type CommandFor = Box<dyn Fn(&str, usize, &Path, &Path) -> Command>;

/// One agent as a whole-process benchmark runs it.
pub struct Agent {
    /// Its name in the tables.
    pub name: &'static str,
    /// Its command.
    pub command: CommandFor,
}

/// wonopcode as a user runs it headless (`--yes`, at most `n + 1` requests) on the Messages
/// API at `url`, keeping its journal under `home`.
pub fn wonopcode_on_messages(bin: &Path, url: &str, n: usize, home: &Path, ws: &Path) -> Command {
    let mut c = Command::new(bin);
    c.env("ANTHROPIC_BASE_URL", url)
        .env("ANTHROPIC_API_KEY", "k")
        .env("WONOPCODE_RUNS_DIR", home.join("runs"))
        .args(["--provider", "anthropic", "--model", "claude-sonnet-4-5"])
        .args(["--yes", "--max-iterations", &(n + 1).to_string(), "-C"])
        .arg(ws);
    c
}

/// Claude Code headless (`-p`) on the Messages API at `url`, allowed `tool`.
pub fn claude_code(bin: &Path, url: &str, tool: &str) -> Command {
    let mut c = Command::new(bin);
    c.env("ANTHROPIC_BASE_URL", url)
        .env("ANTHROPIC_API_KEY", "k")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .args(["--model", "claude-sonnet-4-5", "--allowedTools", tool])
        .arg("-p");
    c
}

/// Codex `exec` in its `workspace-write` sandbox, on the Responses API at `url` (a
/// `model_providers` entry in its own home under `home`).
pub fn codex_exec(bin: &Path, url: &str, home: &Path) -> Command {
    let codex_home = home.join(".codex");
    std::fs::create_dir_all(&codex_home).expect("CODEX_HOME");
    std::fs::write(
        codex_home.join("config.toml"),
        format!(
            "model = \"gpt-5.5\"\nmodel_provider = \"bench\"\n\n[model_providers.bench]\nname = \"bench\"\nbase_url = \"{url}/v1\"\nwire_api = \"responses\"\nenv_key = \"BENCH_API_KEY\"\n"
        ),
    )
    .expect("config.toml");
    let mut c = Command::new(bin);
    c.env("CODEX_HOME", &codex_home)
        .env("BENCH_API_KEY", "k")
        .args(["exec", "--skip-git-repo-check", "-s", "workspace-write"]);
    c
}

/// A started agent: its process, and its stderr read to the end on a thread.
pub struct Started {
    /// The process (its stdout already taken and read by [`Started::stdout`]).
    pub child: std::process::Child,
    /// All it printed on stdout.
    pub stdout: String,
    errors: std::thread::JoinHandle<String>,
}

impl Started {
    /// All it printed on stderr (call once the process has ended).
    pub fn stderr(self) -> String {
        self.errors.join().unwrap_or_default()
    }
}

/// Starts `command` in `ws` with `home` as its home and no colour, and reads its stdout to
/// the end (the caller then waits for it as it needs).
pub fn start(mut command: Command, home: &Path, ws: &Path) -> Started {
    let mut child = command
        .current_dir(ws)
        .env("HOME", home)
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the agent starts");
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = err.read_to_string(&mut text);
        text
    });
    let mut stdout = String::new();
    let _ = out.read_to_string(&mut stdout);
    Started {
        child,
        stdout,
        errors,
    }
}

/// The events of a scripted Messages API response: `start` (the `message_start` event),
/// then one block: a tool call of `tool` with `input` when given, else the answer `Done.`;
/// `output_tokens` in its closing usage.
pub fn messages_reply(
    start: Value,
    call: Option<(&str, String, Value)>,
    output_tokens: u64,
) -> String {
    let (block, delta, stop) = match call {
        Some((tool, id, input)) => (
            serde_json::json!({"type": "tool_use", "id": id, "name": tool, "input": {}}),
            serde_json::json!({"type": "input_json_delta", "partial_json": input.to_string()}),
            "tool_use",
        ),
        None => (
            serde_json::json!({"type": "text", "text": ""}),
            serde_json::json!({"type": "text_delta", "text": "Done."}),
            "end_turn",
        ),
    };
    sse(&[
        ("message_start", start),
        (
            "content_block_start",
            serde_json::json!({"type": "content_block_start", "index": 0, "content_block": block}),
        ),
        (
            "content_block_delta",
            serde_json::json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        ),
        (
            "content_block_stop",
            serde_json::json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "message_delta",
            serde_json::json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": output_tokens}}),
        ),
        ("message_stop", serde_json::json!({"type": "message_stop"})),
    ])
}

/// Claude Code (allowed `tool`) and Codex, each given `prompt(n)` for a run of `n`
/// responses: the two peers as every benchmark runs them.
pub fn peer_agents(peers: Peers, tool: &'static str, prompt: fn(usize) -> String) -> [Agent; 2] {
    let Peers { claude, codex } = peers;
    [
        Agent {
            name: "Claude Code",
            command: Box::new(move |url, n, _home, _ws| {
                let mut c = claude_code(&claude, url, tool);
                c.arg(prompt(n));
                c
            }),
        },
        Agent {
            name: "Codex",
            command: Box::new(move |url, n, home, _ws| {
                let mut c = codex_exec(&codex, url, home);
                c.arg(prompt(n));
                c
            }),
        },
    ]
}
