//! The subcommands' flags: `batch`, `fork`, `rewind`, `resume`, `loops`, `config`,
//! `trust`, `sandbox`, `runs`, `mcp-server`, `acp`, `mcp` and the rest.

use std::path::PathBuf;

use clap::Subcommand;

use super::{
    GuestKind, GuestLang, LoopType, ModelArgs, OnInterruptedArg, PermissionArgs, PromptArgs,
    RunArgs, parse_answer,
};

/// The subcommands. Without one, wonopcode runs a prompt as `run` would.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a prompt, or start an interactive session without one (the default command).
    Run(Box<PromptArgs>),
    /// Run one prompt and exit (`run --print`, as `codex exec`): the prompt is the argument,
    /// or stdin when it is `-` or piped.
    Exec(Box<PromptArgs>),
    /// The named loops: list them, check a guest, start a new one.
    Loops(LoopsArgs),
    /// The config file: where it is, and what it sets.
    Config(ConfigArgs),
    /// Print the completion script of SHELL on stdout (for example
    /// `wonopcode completions zsh > ~/.zfunc/_wonopcode`).
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Try the MCP servers of the config file and of --mcp without a model: list them, list
    /// a server's tools, call one.
    Mcp(McpArgs),
    /// Serve the named loops as MCP tools for other agents (Codex, Claude Code, any MCP
    /// client): on stdio, or on streamable HTTP with --http.
    McpServer(Box<McpServerArgs>),
    /// Serve an editor over the Agent Client Protocol on stdio (Zed, JetBrains, Neovim):
    /// each session the editor opens runs in its folder with these settings.
    Acp(Box<AcpArgs>),
    /// The sandbox of the commands a model runs.
    Sandbox(SandboxArgs),
    /// Trust a workspace: its hooks and its agents' hooks and MCP servers are used from now
    /// on, until what they would run changes. Shows what it would run first.
    Trust(TrustArgs),
    /// The journals of past runs: list them, show one, remove old ones.
    Runs(RunsArgs),
    /// Go on with an interrupted run from its journal: started again as it was, its finished
    /// responses and tool calls answered from the journal, live from where it stopped.
    Resume(ResumeArgs),
    /// Start a new run from another at one of its responses: the responses before it come
    /// from the run's journal (its tool calls run again), and that response and the rest
    /// are asked of the model (another, with --model or --provider) — to try a decision
    /// again.
    Fork(ForkArgs),
    /// Take back the changes a run's file tools made from one of its prompts on (the files
    /// as they were before it); a file changed since by someone else is a conflict, listed
    /// and left alone unless --force.
    Rewind(RewindArgs),
    /// Take back the changes of the last prompt of this workspace's latest run (`rewind`
    /// of that prompt).
    Undo(UndoArgs),
    /// Run the prompts of a tasks file (JSON Lines, one task a line), K at a time, each in
    /// its own scratch workspace; results under --out, and a re-run skips finished tasks.
    /// `wonopcode batch merge` joins the results of shards.
    Batch(Box<BatchArgs>),
}

/// `wonopcode batch`.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct BatchArgs {
    /// `merge`, instead of running a tasks file.
    #[command(subcommand)]
    pub command: Option<BatchCommand>,

    /// The tasks file: JSON Lines, each with a `prompt` and optionally `id`, `workspace`,
    /// `git` {url, ref}, `loop`, `provider`, `model`, `replay`, `max_iterations`, `max_cost`,
    /// `max_tokens`, `max_wall` (docs/batch.md).
    #[arg(value_name = "TASKS.jsonl", required = true)]
    pub tasks: Option<PathBuf>,

    /// The results directory (created when missing; a re-run with the same one skips the
    /// tasks that finished).
    #[arg(long, value_name = "DIR", required_unless_present = "list")]
    pub out: Option<PathBuf>,

    /// Tasks running at once.
    #[arg(long, value_name = "K", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub concurrency: u32,

    /// Run only the tasks whose id hashes to shard I of N (0 <= I < N): N machines split
    /// one tasks file (a Kubernetes Indexed Job, deploy/kubernetes/).
    #[arg(long, value_name = "I/N", value_parser = parse_shard)]
    pub shard: Option<wonopcode_batch::Shard>,

    /// Print the ids of the tasks the batch would run (in this shard, not finished in
    /// --out), one a line, and run nothing.
    #[arg(long)]
    pub list: bool,

    /// Run again the tasks whose stored result is not `complete`.
    #[arg(long)]
    pub retry_failed: bool,

    /// Tasks' `workspace` directories must lie beneath DIR (default: the tasks file's
    /// directory).
    #[arg(long, value_name = "DIR")]
    pub workspace_root: Option<PathBuf>,

    /// Cancel a task that runs longer than this (for example 10m); it ends `timed_out`.
    #[arg(long, value_name = "TIME", value_parser = parse_wall)]
    pub task_timeout: Option<std::time::Duration>,

    /// Print each task's result, then the summary, as JSON Lines on stdout.
    #[arg(long)]
    pub json: bool,

    /// The loop of every task that names none: a guest file (or an oci:// reference).
    #[arg(long, value_name = "PATH", help_heading = "Loop")]
    pub agent_loop: Option<PathBuf>,

    /// The loop of every task that names none: a named loop or agent.
    #[arg(long, value_name = "NAME", help_heading = "Loop")]
    pub agent_loop_name: Option<String>,

    /// The loop of every task that names none: standard or wasm.
    #[arg(long, value_enum, value_name = "TYPE", help_heading = "Loop")]
    pub loop_type: Option<LoopType>,

    /// The model of every task that names none.
    #[command(flatten)]
    pub model: ModelArgs,

    /// Tool permissions (nobody is asked in a batch: give --yes or --allow rules).
    #[command(flatten)]
    pub permissions: PermissionArgs,

    /// The session's settings; -C/--cwd is the workspace copied for each task that names
    /// none.
    #[command(flatten)]
    pub run: RunArgs,
}

/// `wonopcode batch` subcommands.
#[derive(Debug, Subcommand)]
pub enum BatchCommand {
    /// Join the results directories of a batch's shards into one.
    Merge {
        /// The shards' results directories.
        #[arg(value_name = "DIR", required = true)]
        dirs: Vec<PathBuf>,
        /// The merged results directory.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
}

pub(super) fn parse_shard(text: &str) -> Result<wonopcode_batch::Shard, String> {
    text.parse()
}

/// `wonopcode fork`.
#[derive(Debug, clap::Args)]
pub struct ForkArgs {
    /// The run's id, or the start of one (`wonopcode runs list`).
    pub id: String,

    /// Where: CONTEXT:RESPONSE, the context path and the number (from 0) of its first
    /// response to ask of the model (`wonopcode runs show` lists them).
    #[arg(long, value_name = "CONTEXT:RESPONSE")]
    pub at: String,

    /// The provider from there on (default: the run's).
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,

    /// The model from there on (default: the run's).
    #[arg(long, value_name = "ID")]
    pub model: Option<String>,

    /// Answer from there on from this transcript instead of a live model.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["provider", "model"])]
    pub replay: Option<PathBuf>,

    /// The fork's workspace (default: the run's). The files the run changed there go back
    /// to what they were before it, and the fork's tool calls make them again up to its
    /// point.
    #[arg(short = 'C', long = "cwd", value_name = "DIR")]
    pub cwd: Option<PathBuf>,

    /// Leave the workspace's files as they are: the fork's tool calls run again on them.
    #[arg(long)]
    pub keep_files: bool,

    /// Flags added to the run's own (after `--`), for example `-- --json`.
    #[arg(last = true, value_name = "FLAGS")]
    pub flags: Vec<String>,
}

/// `wonopcode rewind`.
#[derive(Debug, clap::Args)]
pub struct RewindArgs {
    /// The run's id, or the start of one (`wonopcode runs list`).
    pub id: String,

    /// The prompt (from 1) whose changes and every later one's are taken back.
    #[arg(long, value_name = "PROMPT", value_parser = clap::value_parser!(u32).range(1..))]
    pub to: u32,

    /// Only this context's changes and its children's (`0.2`): a specialist's work, its
    /// siblings' kept. Give it again for several (`--context 0.2 --context 0.3`).
    #[arg(long, value_name = "CONTEXT", conflicts_with = "conversation")]
    pub context: Vec<String>,

    /// Take back the files (the default, unless --conversation alone is given).
    #[arg(long)]
    pub code: bool,

    /// Take back the conversation: a new run goes on from before the prompt (an editor
    /// loads it as the session; `wonopcode runs history` makes a --history file of it).
    /// With --code, both.
    #[arg(long)]
    pub conversation: bool,

    #[command(flatten)]
    pub apply: RewindApply,
}

/// `wonopcode undo`.
#[derive(Debug, clap::Args)]
pub struct UndoArgs {
    /// The workspace (default: the current directory).
    #[arg(short = 'C', long = "cwd", value_name = "DIR")]
    pub cwd: Option<PathBuf>,

    #[command(flatten)]
    pub apply: RewindApply,
}

/// How a rewind is applied.
#[derive(Debug, clap::Args)]
pub struct RewindApply {
    /// Say what would be restored, change nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Restore files changed by someone else since the run changed them too.
    #[arg(long)]
    pub force: bool,
}

/// `wonopcode resume`.
#[derive(Debug, clap::Args)]
pub struct ResumeArgs {
    /// The run's id, or the start of one (`wonopcode runs list`).
    pub id: String,

    /// What to do with a call the run had started and not finished, when the tool cannot
    /// tell whether it had its effect (default: ask).
    #[arg(long, value_enum, value_name = "POLICY")]
    pub on_interrupted: Option<OnInterruptedArg>,

    /// A suspended run: answer the call it waits on with TEXT instead of running it
    /// (repeatable); CALL_ID alone when one waiting call has it, CONTEXT:CALL_ID (`0.2:toolu_06`)
    /// for a call of a child context. Calls without an answer run, asking for approval
    /// again (`-- --yes` approves them).
    #[arg(long, value_name = "[CONTEXT:]CALL_ID=TEXT", value_parser = parse_answer)]
    pub answer: Vec<(String, String)>,

    /// Flags added to the run's own (after `--`), for example `-- --json`.
    #[arg(last = true, value_name = "FLAGS")]
    pub flags: Vec<String>,
}

/// Where to look for named loops, for the commands that list or check them.
#[derive(Debug, Clone, clap::Args)]
pub struct LoopSearchArgs {
    /// Config file (default: wonopcode/config.yaml in the user's config directory, if present).
    #[arg(long, value_name = "FILE", global = true)]
    pub config: Option<PathBuf>,

    /// Also look for named loops in this directory (searched first; repeatable).
    #[arg(long, value_name = "DIR", global = true)]
    pub loops_dir: Vec<PathBuf>,

    /// The workspace whose agents (`.wonopcode/agents/`, `.claude/agents/`) are listed
    /// (default: the current directory).
    #[arg(short = 'C', long = "cwd", value_name = "DIR", global = true)]
    pub cwd: Option<PathBuf>,

    /// Do not read or write the cache of compiled guest components.
    #[arg(long, global = true)]
    pub no_cache: bool,

    /// Print JSON on stdout, and nothing else there.
    #[arg(long, global = true)]
    pub json: bool,
}

/// `wonopcode loops`.
#[derive(Debug, clap::Args)]
pub struct LoopsArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: LoopsAction,

    /// Where to look.
    #[command(flatten)]
    pub search: LoopSearchArgs,
}

/// `wonopcode loops ...` actions.
#[derive(Debug, Subcommand)]
pub enum LoopsAction {
    /// The named loops, in the order a name is looked up (the same as --list-loops).
    List {
        /// Every column, and paths in full.
        #[arg(short, long)]
        verbose: bool,
    },
    /// Check a guest component (a file, or a loop's name) and report each check; exit 0 when
    /// all pass (the same as --validate-module).
    Validate {
        /// The guest's file, or the name of a named loop.
        guest: String,
    },
    /// Create a guest project in DIR from a template, with the host's WIT (the same as
    /// --new-guest).
    New {
        /// The project's directory (its last component names the guest).
        dir: PathBuf,
        /// The guest's language.
        #[arg(long, value_enum, value_name = "LANG")]
        lang: GuestLang,
        /// An agent loop or a hook component.
        #[arg(long, value_enum, value_name = "KIND", default_value = "loop")]
        kind: GuestKind,
    },
    /// Make a core WebAssembly module a guest component (as `wasm-tools component new
    /// --adapt`): for C, or any toolchain that writes core modules; the module carries its
    /// world from its bindings, and its WASI imports get the adapter wonopcode carries.
    Componentize {
        /// The core module.
        module: PathBuf,
        /// The component to write (an existing file is replaced only once it is made).
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
    },
    /// Run a guest's tests: each test file names the guest, and per test the prompt, the
    /// model's scripted responses, stand-ins for host tools and what must hold at the end
    /// (docs/guest-authoring.md, "Testing a guest"). One verdict line per test (with --json,
    /// one JSON document); exit 0 when all pass.
    Test {
        /// Test files (YAML).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Run each test under `--debug-guest`: a failing test's verdict is followed by what
        /// its run said on stderr, a trap's backtrace with the guest's source lines among it.
        #[arg(long)]
        debug_guest: bool,
    },
}

/// `wonopcode config`.
#[derive(Debug, clap::Args)]
pub struct ConfigArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: ConfigAction,

    /// Config file (default: wonopcode/config.yaml in the user's config directory).
    #[arg(long, value_name = "FILE", global = true)]
    pub config: Option<PathBuf>,
}

/// `wonopcode config ...` actions.
#[derive(Debug, Subcommand)]
pub enum ConfigAction {
    /// The config file's path, and whether it exists.
    Path,
    /// The settings the config file gives, defaults filled in, as YAML.
    Show,
}

/// `wonopcode trust`.
#[derive(Debug, clap::Args)]
pub struct TrustArgs {
    /// The workspace (default: the current directory).
    #[arg(value_name = "DIR", conflicts_with_all = ["list", "revoke"])]
    pub dir: Option<PathBuf>,

    /// What DIR (or the current directory) would run, and whether it is trusted; changes
    /// nothing.
    #[arg(long, conflicts_with_all = ["list", "revoke"])]
    pub show: bool,

    /// The trusted workspaces.
    #[arg(long, conflicts_with = "revoke")]
    pub list: bool,

    /// Stop trusting DIR.
    #[arg(long, value_name = "DIR")]
    pub revoke: Option<PathBuf>,
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

/// `wonopcode runs`.
#[derive(Debug, clap::Args)]
pub struct RunsArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: RunsAction,
}

/// `wonopcode runs ...` actions.
#[derive(Debug, Subcommand)]
pub enum RunsAction {
    /// The runs kept, newest first: id, status, start, loop, model, first prompt.
    List {
        /// One JSON object per run (its `run.json`).
        #[arg(long)]
        json: bool,
    },
    /// One run: what it is, and what its journal holds per context.
    Show {
        /// The run's id, or the start of one.
        id: String,
    },
    /// Writes the root's conversation, from the journal, as a new --history FILE (what the
    /// run would have kept with --history), to go on with it.
    History {
        /// The run's id, or the start of one.
        id: String,
        /// The history file to write (one that exists is refused).
        file: PathBuf,
    },
    /// Removes old runs (never a running one): past the newest KEEP, or older than AGE.
    Gc {
        /// How many runs to keep.
        #[arg(long, value_name = "KEEP", default_value_t = 100)]
        keep: usize,
        /// Also remove runs older than this (for example 30d, 12h).
        #[arg(long, value_name = "AGE", value_parser = parse_wall)]
        older_than: Option<std::time::Duration>,
    },
}

/// Dollars as micro-cents (1e-8 USD).
pub(super) fn parse_dollars(text: &str) -> Result<u64, String> {
    let dollars: f64 = text
        .trim_start_matches('$')
        .parse()
        .map_err(|_| format!("`{text}` is not an amount of dollars (for example 0.50)"))?;
    wonopcode_agent_loop::budget::micro_cents(dollars)
        .map_err(|_| format!("`{text}` must be more than 0 dollars"))
}

pub(super) fn parse_wall(text: &str) -> Result<std::time::Duration, String> {
    match humantime::parse_duration(text) {
        Ok(d) if !d.is_zero() => Ok(d),
        Ok(_) => Err("the time must be more than zero".to_owned()),
        Err(e) => Err(format!(
            "`{text}` is not a time (for example 90s or 10m): {e}"
        )),
    }
}

pub(super) fn parse_sandbox_mode(text: &str) -> Result<wonopcode_sandbox::SandboxMode, String> {
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

    /// With --http: the bearer token clients must send is the one in FILE (made, mode 0600,
    /// when missing). Without it a new token is made at each start, printed once on stderr
    /// and kept in wonopcode's data directory (`mcp-server.token`).
    #[arg(
        long,
        value_name = "FILE",
        requires = "http",
        conflicts_with = "no_auth"
    )]
    pub token_file: Option<PathBuf>,

    /// With --http on a loopback address: accept requests without a token (any local user
    /// can then run the loops).
    #[arg(long, requires = "http")]
    pub no_auth: bool,

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

/// `wonopcode acp`.
#[derive(Debug, clap::Args)]
pub struct AcpArgs {
    /// The model.
    #[command(flatten)]
    pub model: ModelArgs,

    /// Tool permissions (what the editor is asked about, and what runs unasked).
    #[command(flatten)]
    pub permissions: PermissionArgs,

    /// The sessions' settings (their workspace is the folder the editor names).
    #[command(flatten)]
    pub run: RunArgs,

    /// The loop the sessions run (default: the native loop).
    #[arg(long, value_name = "PATH", help_heading = "Loop")]
    pub agent_loop: Option<PathBuf>,

    /// The named loop or agent the sessions run.
    #[arg(long, value_name = "NAME", help_heading = "Loop")]
    pub agent_loop_name: Option<String>,
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
    /// Add a server to your config file's `mcp_servers`, as `claude mcp add` does:
    /// `wonopcode mcp add NAME -- COMMAND [ARGS...]`, or `wonopcode mcp add NAME URL`.
    Add(McpAddArgs),
    /// Remove SERVER from your config file.
    Remove {
        /// The server's name in `mcp_servers`.
        server: String,
    },
    /// SERVER's entry in your config file.
    Get {
        /// The server's name in `mcp_servers`.
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

/// `wonopcode mcp add`, with `claude mcp add`'s arguments.
#[derive(Debug, clap::Args)]
pub struct McpAddArgs {
    /// The server's name: its tools are `mcp__NAME__TOOL`.
    pub name: String,
    /// The program that runs the server, or a streamable HTTP server's http(s) address.
    pub command_or_url: String,
    /// The program's arguments (after `--` when one starts with `-`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
    /// `stdio` (a program; the default) or `http` (the default for an http(s) address).
    #[arg(short = 't', long, value_enum)]
    pub transport: Option<McpTransport>,
    /// A variable set for the program, KEY=VALUE (repeatable; `${VAR}` is read from your
    /// environment when the server starts, so the file need not hold the key).
    #[arg(short = 'e', long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// A header sent to an HTTP server, `Name: value` (repeatable).
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,
    /// Whose config: `user` (yours, the default). `project` and `local` are Claude Code's
    /// workspace scopes, which wonopcode refuses: it starts no workspace's own servers.
    #[arg(short = 's', long, value_enum, default_value = "user")]
    pub scope: McpScope,
}

/// `mcp add --transport`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum McpTransport {
    /// A program on stdin and stdout.
    Stdio,
    /// Streamable HTTP.
    Http,
    /// The older HTTP+SSE transport (refused).
    Sse,
}

/// `mcp add --scope`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum McpScope {
    /// Your config file.
    User,
    /// Claude Code's: the workspace's `.mcp.json` (refused).
    Project,
    /// Claude Code's: this workspace, for you (refused).
    Local,
}

/// `NAME=COMMAND` of `--mcp`.
pub(super) fn parse_mcp(value: &str) -> Result<(String, String), String> {
    match value.split_once('=') {
        Some((name, command)) if !name.is_empty() && !command.trim().is_empty() => {
            Ok((name.to_owned(), command.to_owned()))
        }
        _ => Err(format!("expected NAME=COMMAND, got `{value}`")),
    }
}
