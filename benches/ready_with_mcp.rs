//! Time to a ready REPL, with no MCP server configured and with three, for wonopcode beside
//! Claude Code and Codex (pinned in `peer_agents.rs`, installed from npm into
//! `target/peers/` on the first run) on the same machine: from spawning the agent on a
//! pseudo-terminal to its prompt drawn — wonopcode's `>`, Claude Code's `? for shortcuts`,
//! Codex's `Ask Codex to do anything` — with the terminal's questions answered at once
//! (`pty.rs`).
//!
//! The three servers are the ones the end-to-end tests run (`tests/mcp-servers`, installed
//! pinned by this benchmark when missing): the reference `everything` and `filesystem`
//! servers (Node) and the reference `time` server (Python), configured the way each agent
//! reads servers — wonopcode's `mcp_servers` in its config file, Claude Code's
//! `--mcp-config` file, Codex's `[mcp_servers]` in its `config.toml`. Each agent's home is
//! set up as a user's second day finds it (onboarding done, the workspace trusted); its
//! model is a closed loopback port, which no agent calls before a prompt. After the timed
//! runs, each agent is asked `/mcp` once and must list the three servers, so a figure is
//! never that of an agent that ignored them. Before each timed launch the last one's
//! servers are given 1.5 s to end (a server reads the closed stdin that stops it only once
//! it has booted), so no launch shares the two cores with them. Codex's TUI talks to an
//! app-server daemon that outlives it and keeps the servers up between launches: its row
//! is that, and a second row stops the daemon before each launch.
//!
//! `cargo bench -p wonopcode-benches --bench ready_with_mcp`; `READY_RUNS` (5) runs each
//! row, the median reported; `PEERS_AGENTS=wonopcode,Codex` picks the agents.

// Benchmark set-up has no user input; a failure there is a bug to see at once.
#![allow(clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use wonopcode_benches::peer_agents::{install_peers, picked};
use wonopcode_benches::pty::Terminal;
use wonopcode_benches::release_bin;

/// The pause before each timed launch.
const SETTLE: Duration = Duration::from_millis(1500);

/// A model URL nothing listens on: no agent asks its model anything before a prompt.
const NO_MODEL: &str = "http://127.0.0.1:9";
/// An API key in the shape of Anthropic's; Claude Code is told it approved its last 20.
const KEY: &str = "sk-ant-bench-0123456789abcdefghij";

/// One of the three servers: its name and its command line.
struct McpServer {
    name: &'static str,
    command: String,
    args: Vec<String>,
}

/// An agent's command for a home and a workspace, with these servers configured (or none).
type CommandFor = Box<dyn Fn(&Path, &Path, &[McpServer]) -> Command>;

/// One agent at a terminal: its command, and what its prompt shows once it is drawn.
struct Agent {
    name: &'static str,
    command: CommandFor,
    ready: &'static str,
}

fn main() {
    // `cargo bench` passes `--bench`; a filter or `--list` from the harness is not used.
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let runs: usize = std::env::var("READY_RUNS")
        .ok()
        .map_or(5, |n| n.parse().expect("READY_RUNS: a number"));
    let scratch = tempfile::tempdir_in(root.join("target")).expect("temp dir");
    let ws = scratch.path().join("workspace");
    std::fs::create_dir_all(&ws).expect("workspace");
    let ws = ws.canonicalize().expect("workspace");
    let servers = mcp_servers(&root, &ws);
    let agents: Vec<Agent> = agents(&root)
        .into_iter()
        .filter(|a| picked("PEERS_AGENTS", a.name))
        .collect();
    println!(
        "| agent | no MCP server (median of {runs}) | three MCP servers (median) | three, slowest run |"
    );
    println!("|---|---:|---:|---:|");
    for agent in &agents {
        let home = scratch.path().join(agent.name.replace(' ', "-"));
        std::fs::create_dir_all(&home).expect("home");
        let mut row = Vec::new();
        for configured in [&servers[..0], &servers[..]] {
            // A first launch leaves what a person's second one finds (caches, state).
            launch(agent, &home, &ws, configured).0.end();
            let mut times: Vec<Duration> = (0..runs)
                .map(|_| {
                    // The last launch's servers boot to their end before they read the
                    // closed stdin that stops them: they are left that time, so no launch
                    // shares the two cores with them.
                    std::thread::sleep(SETTLE);
                    let (terminal, took) = launch(agent, &home, &ws, configured);
                    terminal.end();
                    took
                })
                .collect();
            times.sort();
            row.push(times);
        }
        lists_the_servers(agent, &home, &ws, &servers);
        // What Codex leaves running goes with the row.
        stop_codex_daemon(&home.join(".codex"));
        println!(
            "| {} | {:.0} ms | {:.0} ms | {:.0} ms |",
            agent.name,
            ms(row[0][runs / 2]),
            ms(row[1][runs / 2]),
            ms(row[1][runs - 1]),
        );
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The agent on a terminal, returned once its prompt is drawn, with the time from its
/// spawn to then.
fn launch(agent: &Agent, home: &Path, ws: &Path, servers: &[McpServer]) -> (Terminal, Duration) {
    let mut command = (agent.command)(home, ws, servers);
    command
        .current_dir(ws)
        .env("HOME", home)
        .env("TERM", "xterm-256color")
        .env_remove("NO_COLOR");
    let started = Instant::now();
    let mut terminal = Terminal::start(command);
    terminal.until(agent.ready);
    (terminal, started.elapsed())
}

/// Stops the Codex app-server daemons under `codex_home` (and so the MCP servers they
/// hold), and waits for them to be gone.
fn stop_codex_daemon(codex_home: &Path) {
    let pattern = codex_home.join("packages/app-server-daemon");
    let _ = Command::new("pkill").arg("-f").arg(&pattern).status();
    for _ in 0..50 {
        let running = Command::new("pgrep")
            .arg("-f")
            .arg(&pattern)
            .output()
            .is_ok_and(|o| !o.stdout.is_empty());
        if !running {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Asks the agent `/mcp` and waits for the last server's name: it read the servers.
fn lists_the_servers(agent: &Agent, home: &Path, ws: &Path, servers: &[McpServer]) {
    let (mut terminal, _) = launch(agent, home, ws, servers);
    terminal.type_keys(b"/mcp");
    // A TUI's completion menu opens on `/`; Enter then takes the command.
    std::thread::sleep(Duration::from_millis(300));
    terminal.type_keys(b"\r");
    for server in servers {
        terminal.until(server.name);
    }
    terminal.end();
}

/// The three servers, installed when missing: `npm ci` of `tests/mcp-servers`, and its
/// `requirements.txt` for the Python one.
fn mcp_servers(root: &Path, ws: &Path) -> Vec<McpServer> {
    let dir = root.join("tests/mcp-servers");
    let bin = dir.join("node_modules/.bin");
    if !bin.join("mcp-server-everything").exists() {
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--prefix"])
            .arg(&dir)
            .status()
            .expect("npm runs");
        assert!(status.success(), "npm ci --prefix tests/mcp-servers");
    }
    let has_time = Command::new("python3")
        .args(["-c", "import mcp_server_time"])
        .status()
        .is_ok_and(|s| s.success());
    if !has_time {
        let status = Command::new("python3")
            .args(["-m", "pip", "install", "--quiet", "-r"])
            .arg(dir.join("requirements.txt"))
            .status()
            .expect("pip runs");
        assert!(
            status.success(),
            "pip install -r tests/mcp-servers/requirements.txt"
        );
    }
    let path = |p: PathBuf| p.to_string_lossy().into_owned();
    vec![
        McpServer {
            name: "bench-everything",
            command: path(bin.join("mcp-server-everything")),
            args: Vec::new(),
        },
        McpServer {
            name: "bench-files",
            command: path(bin.join("mcp-server-filesystem")),
            args: vec![path(ws.to_path_buf())],
        },
        McpServer {
            name: "bench-time",
            command: "python3".to_owned(),
            args: ["-m", "mcp_server_time", "--local-timezone", "UTC"]
                .map(str::to_owned)
                .to_vec(),
        },
    ]
}

fn agents(root: &Path) -> Vec<Agent> {
    let bin = release_bin();
    let peers = install_peers(root);
    let (claude, codex) = (peers.claude, peers.codex);
    vec![
        Agent {
            name: "wonopcode",
            command: Box::new(move |home, ws, servers| {
                let config = home.join("config.yaml");
                // JSON is YAML: one flow mapping per server.
                let mut yaml = String::new();
                if !servers.is_empty() {
                    yaml.push_str("mcp_servers:\n");
                }
                for s in servers {
                    let entry = serde_json::json!({"command": s.command, "args": s.args});
                    yaml.push_str(&format!("  {}: {entry}\n", s.name));
                }
                std::fs::write(&config, yaml).expect("config.yaml");
                let mut c = Command::new(&bin);
                c.env("ANTHROPIC_BASE_URL", NO_MODEL)
                    .env("ANTHROPIC_API_KEY", KEY)
                    .env("XDG_CACHE_HOME", home.join("cache"))
                    .env("XDG_DATA_HOME", home.join("data"))
                    .env("XDG_CONFIG_HOME", home.join("xdg-config"))
                    .env("WONOPCODE_RUNS_DIR", home.join("runs"))
                    .args(["--provider", "anthropic", "--model", "claude-sonnet-4-5"])
                    .arg("--config")
                    .arg(&config)
                    .arg("-C")
                    .arg(ws);
                c
            }),
            ready: ">",
        },
        Agent {
            name: "Claude Code",
            command: Box::new(move |home, ws, servers| {
                let state = serde_json::json!({
                    "hasCompletedOnboarding": true,
                    "theme": "dark",
                    "numStartups": 5,
                    "customApiKeyResponses": {"approved": [&KEY[KEY.len() - 20..]], "rejected": []},
                    "projects": {ws.to_string_lossy(): {"hasTrustDialogAccepted": true}},
                });
                std::fs::write(home.join(".claude.json"), state.to_string()).expect(".claude.json");
                let listed: serde_json::Map<String, serde_json::Value> = servers
                    .iter()
                    .map(|s| {
                        let entry = serde_json::json!({"command": s.command, "args": s.args});
                        (s.name.to_owned(), entry)
                    })
                    .collect();
                let config = home.join("mcp.json");
                std::fs::write(
                    &config,
                    serde_json::json!({"mcpServers": listed}).to_string(),
                )
                .expect("mcp.json");
                let mut c = Command::new(&claude);
                c.env("ANTHROPIC_BASE_URL", NO_MODEL)
                    .env("ANTHROPIC_API_KEY", KEY)
                    .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
                    .args(["--model", "claude-sonnet-4-5", "--mcp-config"])
                    .arg(&config);
                c
            }),
            ready: "? for shortcuts",
        },
        Agent {
            name: "Codex",
            command: codex_command(codex.clone(), false),
            ready: "Ask Codex to do anything",
        },
        Agent {
            name: "Codex, its daemon stopped first",
            command: codex_command(codex, true),
            ready: "Ask Codex to do anything",
        },
    ]
}

/// Codex's TUI with the servers in its `config.toml`. Its TUI talks to an app-server
/// daemon that outlives it and keeps the MCP servers up between launches; `cold` stops
/// that daemon before each launch (a person's first launch after a reboot, or a changed
/// config).
fn codex_command(codex: PathBuf, cold: bool) -> CommandFor {
    Box::new(move |home, ws, servers| {
        let codex_home = home.join(".codex");
        std::fs::create_dir_all(&codex_home).expect("CODEX_HOME");
        if cold {
            stop_codex_daemon(&codex_home);
        }
        // A model of no preset: a preset's "try the newer model" screen would stand
        // before the prompt.
        let mut toml = format!(
            "model = \"bench-model\"\nmodel_provider = \"bench\"\n\n[model_providers.bench]\nname = \"bench\"\nbase_url = \"{NO_MODEL}/v1\"\nwire_api = \"responses\"\nenv_key = \"BENCH_API_KEY\"\n\n[projects.{:?}]\ntrust_level = \"trusted\"\n",
            ws.to_string_lossy()
        );
        for s in servers {
            toml.push_str(&format!(
                "\n[mcp_servers.{}]\ncommand = {:?}\nargs = {:?}\n",
                s.name, s.command, s.args
            ));
        }
        std::fs::write(codex_home.join("config.toml"), toml).expect("config.toml");
        let mut c = Command::new(&codex);
        c.env("CODEX_HOME", &codex_home).env("BENCH_API_KEY", "k");
        c
    })
}
