//! Command-line flags.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// wonopcode: an agent-loop host. Give it a prompt; a loop streams model output, runs the
/// tools the model asks for on your workspace, and repeats until the model is done.
#[derive(Debug, Parser)]
#[command(name = "wonopcode", version, about, long_about = None)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    /// What to do instead of running a prompt.
    #[command(subcommand)]
    pub command: Option<Command>,

    /// The prompt. Without it: read from stdin when piped, or start an interactive session.
    pub prompt: Option<String>,

    /// Print the event stream as JSON Lines on stdout, and nothing else there.
    #[arg(long)]
    pub json: bool,

    /// Append every message to this JSONL file (fsync'd); an existing file resumes its session.
    #[arg(long, value_name = "FILE")]
    pub history: Option<PathBuf>,

    /// Continue a suspended run from --history instead of sending a new prompt.
    #[arg(long, requires = "history", conflicts_with = "prompt")]
    pub resume: bool,

    /// With --resume: answer the pending call CALL_ID with TEXT instead of running it
    /// (repeatable). Pending calls without an answer run, under the permissions of this run.
    #[arg(long, value_name = "CALL_ID=TEXT", requires = "resume", value_parser = parse_answer)]
    pub answer: Vec<(String, String)>,

    /// Which loop runs the prompt: the native loop, the embedded default guest, or a guest
    /// file (`custom`, with --agent-loop).
    #[arg(long, value_enum, value_name = "TYPE")]
    pub loop_type: Option<LoopType>,

    /// Run this guest component as the loop (implies --loop-type=custom).
    #[arg(long, value_name = "PATH")]
    pub agent_loop: Option<PathBuf>,

    /// Run the loop registered under this name (see --list-loops; implies --loop-type=custom).
    #[arg(long, value_name = "NAME")]
    pub agent_loop_name: Option<String>,

    /// List the named loops (built-in, registry.yaml, directories) and exit.
    #[arg(long, conflicts_with_all = ["prompt", "validate_module", "resume"])]
    pub list_loops: bool,

    /// Check the guest given with --agent-loop or --agent-loop-name, report each check, and
    /// exit (0 when all pass).
    #[arg(long, conflicts_with_all = ["prompt", "resume"])]
    pub validate_module: bool,

    /// Create a new guest project in DIR (named after its last component) from a template,
    /// with the host's WIT, and exit. Needs --lang.
    #[arg(long, value_name = "DIR", requires = "lang", conflicts_with_all = ["prompt", "list_loops", "validate_module", "resume"])]
    pub new_guest: Option<PathBuf>,

    /// The language of --new-guest.
    #[arg(long, value_enum, value_name = "LANG", requires = "new_guest")]
    pub lang: Option<GuestLang>,

    /// Write the run's contexts, turns and tool calls as Chrome trace-event JSON (Perfetto).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,

    /// The model.
    #[command(flatten)]
    pub model: ModelArgs,

    /// Tool permissions.
    #[command(flatten)]
    pub permissions: PermissionArgs,

    /// The session's settings.
    #[command(flatten)]
    pub run: RunArgs,
}

/// Which model answers: a provider, or a recorded transcript.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Model")]
pub struct ModelArgs {
    /// Answer model requests from a recorded transcript (offline, deterministic).
    #[arg(long, value_name = "FILE")]
    pub replay: Option<PathBuf>,

    /// Record every model request and answer to a transcript that --replay can read.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,

    /// Provider to talk to: anthropic, openai, openrouter, deepseek, groq, ollama, vllm,
    /// llamacpp, openai-compatible, or one defined in the config file. Default: the config's
    /// `provider`, else the first provider whose key is set.
    #[arg(long, value_name = "ID", conflicts_with = "replay")]
    pub provider: Option<String>,

    /// Model id at the provider (default: the config's `model`, else the provider's default).
    #[arg(long, value_name = "ID", conflicts_with = "replay")]
    pub model: Option<String>,

    /// Base URL of the provider's API up to the version, e.g. http://127.0.0.1:8000/v1.
    #[arg(long, value_name = "URL", conflicts_with = "replay")]
    pub base_url: Option<String>,

    /// With --replay, stream each chunk MS milliseconds after the previous one, as a model would.
    #[arg(long, value_name = "MS", requires = "replay", value_parser = clap::value_parser!(u64).range(0..=10_000))]
    pub replay_pace: Option<u64>,
}

/// What tools may do without asking, and what happens when nobody can be asked.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Permissions")]
pub struct PermissionArgs {
    /// Allow every tool call that the permission policy would ask about.
    #[arg(short = 'y', long)]
    pub yes: bool,

    /// Allow a tool without asking: TOOL or TOOL:PATTERN (bash: command prefix; files: glob).
    #[arg(long, value_name = "RULE")]
    pub allow: Vec<String>,

    /// Ask before a tool runs: TOOL or TOOL:PATTERN.
    #[arg(long, value_name = "RULE")]
    pub ask: Vec<String>,

    /// Never run a tool: TOOL or TOOL:PATTERN.
    #[arg(long, value_name = "RULE")]
    pub deny: Vec<String>,

    /// What a call needing approval becomes when nobody can be asked.
    #[arg(long, value_enum, value_name = "MODE")]
    pub unattended: Option<UnattendedArg>,
}

/// Settings of the session a prompt (or a served call) runs in.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Session")]
pub struct RunArgs {
    /// Config file (default: wonopcode/config.yaml in the user's config directory, if present).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Workspace root: tools run here and cannot reach outside it.
    #[arg(short = 'C', long = "cwd", value_name = "DIR")]
    pub cwd: Option<PathBuf>,

    /// Also look for named loops in this directory (searched first; repeatable).
    #[arg(long, value_name = "DIR")]
    pub loops_dir: Vec<PathBuf>,

    /// Do not read or write the cache of compiled guest components.
    #[arg(long)]
    pub no_cache: bool,

    /// Model requests allowed per prompt.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_iterations: Option<u32>,

    /// Run at most N child contexts of one parallel spawn at once (default 4).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=256))]
    pub max_parallel: Option<u32>,

    /// Limit on each bash command, in milliseconds: the timeout of every call, which a
    /// model may lower but not raise.
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=600_000))]
    pub bash_timeout_ms: Option<u64>,

    /// The most the whole run may cost, in US dollars (for example 0.50): a request whose
    /// worst case could pass it is not sent, and the run ends `budget_exceeded` (exit 5).
    #[arg(long, value_name = "USD", value_parser = parse_dollars)]
    pub max_cost: Option<u64>,

    /// The most tokens (prompt, cached and output) the whole run may use, kept the same way.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_tokens: Option<u64>,

    /// How long after its start the run may still send a request (for example 90s, 10m).
    #[arg(long, value_name = "TIME", value_parser = parse_wall)]
    pub max_wall: Option<std::time::Duration>,

    /// How far commands the model runs may reach: read-only, workspace-write (the default:
    /// writes in the workspace and temp dirs, no network) or full-access (no confinement).
    /// Enforced by the kernel; `wonopcode sandbox check` says what this machine can enforce.
    #[arg(long, value_name = "MODE", value_parser = parse_sandbox_mode)]
    pub sandbox: Option<wonopcode_sandbox::SandboxMode>,

    /// An MCP server for this run, besides the config file's `mcp_servers`: its tools are
    /// offered as `mcp__NAME__TOOL` (repeatable; COMMAND is split like a shell would, or is
    /// the http(s) address of a streamable HTTP server).
    #[arg(long, value_name = "NAME=COMMAND", value_parser = parse_mcp)]
    pub mcp: Vec<(String, String)>,
}

/// The subcommands: actions that are not a run.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Try the MCP servers of the config file and of --mcp without a model: list them, list
    /// a server's tools, call one.
    Mcp(McpArgs),
    /// Serve the named loops as MCP tools for other agents (Codex, Claude Code, any MCP
    /// client): on stdio, or on streamable HTTP with --http.
    McpServer(Box<McpServerArgs>),
    /// The sandbox of the commands a model runs.
    Sandbox(SandboxArgs),
}

/// `wonopcode sandbox`.
#[derive(Debug, clap::Args)]
pub struct SandboxArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: SandboxAction,
}

/// `wonopcode sandbox ...` actions.
#[derive(Debug, Subcommand)]
pub enum SandboxAction {
    /// What this machine's kernel can enforce, one line per feature and per mode (exit 1
    /// when the confining modes cannot be enforced).
    Check,
}

/// Dollars as micro-cents (1e-8 USD).
fn parse_dollars(text: &str) -> Result<u64, String> {
    let dollars: f64 = text
        .trim_start_matches('$')
        .parse()
        .map_err(|_| format!("`{text}` is not an amount of dollars (for example 0.50)"))?;
    wonopcode_agent_loop::budget::micro_cents(dollars)
        .map_err(|_| format!("`{text}` must be more than 0 dollars"))
}

fn parse_wall(text: &str) -> Result<std::time::Duration, String> {
    match humantime::parse_duration(text) {
        Ok(d) if !d.is_zero() => Ok(d),
        Ok(_) => Err("the time must be more than zero".to_owned()),
        Err(e) => Err(format!(
            "`{text}` is not a time (for example 90s or 10m): {e}"
        )),
    }
}

fn parse_sandbox_mode(text: &str) -> Result<wonopcode_sandbox::SandboxMode, String> {
    text.parse()
}

/// `wonopcode mcp-server`.
#[derive(Debug, clap::Args)]
pub struct McpServerArgs {
    /// Serve streamable HTTP on ADDR (for example 127.0.0.1:8080; port 0 picks a free one)
    /// instead of stdio. The address served is printed on stderr.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<std::net::SocketAddr>,

    /// With --http: also accept requests whose Host is HOST (repeatable). Only loopback
    /// names are accepted otherwise, against DNS rebinding.
    #[arg(long, value_name = "HOST", requires = "http")]
    pub allow_host: Vec<String>,

    /// Offer only the loop NAME (repeatable; default: every named loop, see --list-loops).
    #[arg(long = "loop", value_name = "NAME")]
    pub loops: Vec<String>,

    /// The model.
    #[command(flatten)]
    pub model: ModelArgs,

    /// Tool permissions.
    #[command(flatten)]
    pub permissions: PermissionArgs,

    /// The session's settings.
    #[command(flatten)]
    pub run: RunArgs,
}

/// `wonopcode mcp`.
#[derive(Debug, clap::Args)]
pub struct McpArgs {
    /// What to do with the servers.
    #[command(subcommand)]
    pub action: McpAction,

    /// Config file (default: wonopcode/config.yaml in the user's config directory, if present).
    #[arg(long, value_name = "FILE", global = true)]
    pub config: Option<PathBuf>,

    /// Workspace root: where servers without a `cwd` start.
    #[arg(short = 'C', long = "cwd", value_name = "DIR", global = true)]
    pub cwd: Option<PathBuf>,

    /// An MCP server besides the config file's (repeatable; COMMAND is split like a shell
    /// would, or is the http(s) address of a streamable HTTP server).
    #[arg(long, value_name = "NAME=COMMAND", value_parser = parse_mcp, global = true)]
    pub mcp: Vec<(String, String)>,

    /// Print JSON on stdout (one object per line), and nothing else there.
    #[arg(long, global = true)]
    pub json: bool,

    /// When nobody is at the terminal, accept each form a server asks for with its defaults
    /// (else forms are declined).
    #[arg(short = 'y', long, global = true)]
    pub yes: bool,
}

/// `wonopcode mcp ...` actions.
#[derive(Debug, Subcommand)]
pub enum McpAction {
    /// Each server: whether it started, how long it took, how many tools it offers (exit 1
    /// when one did not start).
    List,
    /// The tools of SERVER, named as a model sees them, with their descriptions.
    Tools {
        /// The server's name in `mcp_servers` (or --mcp).
        server: String,
    },
    /// Sign in to the HTTP server SERVER with OAuth: the browser opens its sign-in page
    /// ($BROWSER, else the system's), and the tokens are kept for later runs.
    Login {
        /// The server's name in `mcp_servers` (or --mcp).
        server: String,
    },
    /// Forget the OAuth tokens of SERVER.
    Logout {
        /// The server's name in `mcp_servers` (or --mcp).
        server: String,
    },
    /// Call TOOL of SERVER with ARGUMENTS and print the answer (exit 1 when the tool reports
    /// an error). The arguments are checked against the tool's schema first.
    Call {
        /// The server's name in `mcp_servers` (or --mcp).
        server: String,
        /// The tool's name on the server (`read_file`, not `mcp__fs__read_file`).
        tool: String,
        /// A JSON object (default `{}`).
        arguments: Option<String>,
    },
}

/// `NAME=COMMAND` of `--mcp`.
fn parse_mcp(value: &str) -> Result<(String, String), String> {
    match value.split_once('=') {
        Some((name, command)) if !name.is_empty() && !command.trim().is_empty() => {
            Ok((name.to_owned(), command.to_owned()))
        }
        _ => Err(format!("expected NAME=COMMAND, got `{value}`")),
    }
}

/// `--loop-type` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LoopType {
    /// The native StandardLoop (default).
    Standard,
    /// The embedded default guest: the same algorithm as a WebAssembly component.
    Wasm,
    /// A guest component given with --agent-loop or --agent-loop-name.
    Custom,
}

/// `--unattended` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum UnattendedArg {
    /// Refuse the call and tell the model.
    Deny,
    /// Stop the run with status suspended (exit code 3); continue with --resume.
    Suspend,
}

/// Languages `--new-guest` has a template for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GuestLang {
    /// Rust with wit-bindgen.
    Rust,
    /// Python with componentize-py.
    Python,
    /// JavaScript with componentize-js.
    Js,
}

/// `CALL_ID=TEXT` of `--answer`.
fn parse_answer(value: &str) -> Result<(String, String), String> {
    match value.split_once('=') {
        Some((id, text)) if !id.trim().is_empty() => Ok((id.trim().to_owned(), text.to_owned())),
        _ => Err(format!(
            "`{value}` is not CALL_ID=TEXT (the call ids a run waits on are printed when it suspends)"
        )),
    }
}
