//! Command-line flags: the prompt's and the run's here, the subcommands' in `commands.rs`.

use std::path::PathBuf;

use clap::Parser;

mod commands;

pub use commands::*;

/// wonopcode: an agent-loop host. Give it a prompt; a loop streams model output, runs the
/// tools the model asks for on your workspace, and repeats until the model is done.
#[derive(Debug, Parser)]
#[command(name = "wonopcode", version, about, long_about = None)]
#[command(args_conflicts_with_subcommands = true, after_help = EXAMPLES)]
pub struct Args {
    /// What to do instead of running a prompt.
    #[command(subcommand)]
    pub command: Option<Command>,

    /// A prompt's run (what `wonopcode run` takes, also accepted without `run`).
    #[command(flatten)]
    pub prompt: PromptArgs,
}

impl Args {
    /// Whether `--verbose` was given to a prompt's run (`wonopcode -v` or `wonopcode run -v`).
    pub fn verbose(&self) -> bool {
        self.run_flags().verbose
    }

    /// Whether `--debug-guest` was given to a prompt's run.
    pub fn debug_guest(&self) -> bool {
        self.run_flags().debug_guest
    }

    /// The flags of the prompt's run, with `run` or without.
    fn run_flags(&self) -> &PromptArgs {
        match &self.command {
            Some(Command::Run(prompt)) => prompt,
            _ => &self.prompt,
        }
    }
}

/// The examples at the end of `--help`.
const EXAMPLES: &str = "\
Examples:
  wonopcode                                             an interactive session (REPL); while a turn
                                                        runs, Enter steers it and Tab queues the next prompt
  wonopcode \"Find the TODOs and list them by file\"      at a terminal: the session, opened with this prompt
  wonopcode -p \"Find the TODOs and list them by file\"   one prompt, then exit (also when not at a terminal)
  git diff | wonopcode \"Review this change\"             the diff goes with the prompt
  wonopcode exec --full-auto -m sonnet \"Fix the tests\"  one prompt, no questions inside the workspace
  wonopcode run --agent-loop-name coder \"Fix the tests\" a named loop (see `wonopcode loops list`)
  wonopcode --replay examples/demo/transcript.jsonl -C examples/demo/workspace --yes \"...\"
                                                        a recorded run, offline
  wonopcode loops validate guest.wasm                   check a guest component
  wonopcode completions bash > ~/.local/share/bash-completion/completions/wonopcode

Exit codes: 0 done, 1 failed, 2 usage, 3 suspended, 4 iteration limit, 5 budget,
6 a call needed approval and nobody could be asked, 130 interrupted, 141 output closed
(see the README).";

/// Everything a prompt's run takes: `wonopcode [FLAGS] [PROMPT]` and `wonopcode run`.
#[derive(Debug, Clone, clap::Args)]
pub struct PromptArgs {
    /// The prompt. At a terminal it opens the interactive session, as `claude "…"` does
    /// (`-p`, `exec` or `--json`: this prompt only). Without it: read from stdin when piped,
    /// or the interactive session; `-` reads it from stdin. `@path` of an image or PDF in
    /// it attaches the file.
    pub prompt: Option<String>,

    /// The model.
    #[command(flatten)]
    pub model: ModelArgs,

    /// Which loop runs the prompt: the native loop (default), the embedded default guest,
    /// or a guest file (`custom`, with --agent-loop).
    #[arg(long, value_enum, value_name = "TYPE", help_heading = "Loop")]
    pub loop_type: Option<LoopType>,

    /// Run this guest component as the loop (implies --loop-type=custom): a file, or a
    /// component published to an OCI registry (oci://HOST/REPO:TAG or oci://HOST/REPO@sha256:…).
    #[arg(long, value_name = "PATH", help_heading = "Loop")]
    pub agent_loop: Option<PathBuf>,

    /// Run the loop registered under this name (see --list-loops; implies --loop-type=custom).
    #[arg(long, value_name = "NAME", help_heading = "Loop")]
    pub agent_loop_name: Option<String>,

    /// Debug the guest: compile it with debug info for gdb and lldb and without optimisation,
    /// and show a trap's backtrace with the guest's source lines (build the guest with its
    /// debug info: `cargo build` without `--release`). Also WONOPCODE_DEBUG_GUEST=1.
    #[arg(long, help_heading = "Loop")]
    pub debug_guest: bool,

    /// List the named loops (built-in, registry.yaml, directories) and exit; the same as
    /// `wonopcode loops list`.
    #[arg(long, conflicts_with_all = ["prompt", "validate_module", "resume"], help_heading = "Loop")]
    pub list_loops: bool,

    /// Check the guest given with --agent-loop or --agent-loop-name (or as the one argument:
    /// `--validate-module FILE`), report each check, and exit (0 when all pass); the same as
    /// `wonopcode loops validate`.
    #[arg(long, conflicts_with = "resume", help_heading = "Loop")]
    pub validate_module: bool,

    /// Create a new guest project in DIR (named after its last component) from a template,
    /// with the host's WIT, and exit. Needs --lang; the same as `wonopcode loops new`.
    #[arg(long, value_name = "DIR", requires = "lang", conflicts_with_all = ["prompt", "list_loops", "validate_module", "resume"], help_heading = "Loop")]
    pub new_guest: Option<PathBuf>,

    /// The language of --new-guest.
    #[arg(
        long,
        value_enum,
        value_name = "LANG",
        requires = "new_guest",
        help_heading = "Loop"
    )]
    pub lang: Option<GuestLang>,

    /// What --new-guest makes: an agent loop (the default) or a hook component.
    #[arg(
        long,
        value_enum,
        value_name = "KIND",
        requires = "new_guest",
        help_heading = "Loop"
    )]
    pub kind: Option<GuestKind>,

    /// Tool permissions.
    #[command(flatten)]
    pub permissions: PermissionArgs,

    /// Run the prompt and exit, never an interactive session (Claude Code's `-p`): the
    /// prompt is the argument, or what is piped.
    #[arg(short = 'p', long, help_heading = "Output")]
    pub print: bool,

    /// Print the event stream as JSON Lines on stdout, and nothing else there.
    #[arg(long, help_heading = "Output")]
    pub json: bool,

    /// Claude Code's `--output-format`: `text` (the default), `json` (one `result` object
    /// at the end) or `stream-json` (a message per line), in Claude Code's own schema, so
    /// scripts written for `claude -p` read it; one prompt, never the REPL. `--json` is
    /// wonopcode's own event stream.
    #[arg(
        long,
        value_enum,
        value_name = "FORMAT",
        help_heading = "Output",
        conflicts_with = "json"
    )]
    pub output_format: Option<OutputFormatArg>,

    /// Write the model's last answer to FILE too, after each turn (Codex's
    /// `-o/--output-last-message`).
    #[arg(short = 'o', long, value_name = "FILE", help_heading = "Output")]
    pub output_last_message: Option<PathBuf>,

    /// Show the answer as the model wrote it, without rendering its Markdown (headings,
    /// emphasis, lists, tables, highlighted code); it is never rendered when stdout is not
    /// a terminal.
    #[arg(long, help_heading = "Output")]
    pub no_markdown: bool,

    /// Every request's and response's raw payload on stderr (keys and credentials
    /// redacted, long strings cut); with --list-loops: every column, and paths in full.
    #[arg(short, long, help_heading = "Output")]
    pub verbose: bool,

    /// Write the run's contexts, turns and tool calls as Chrome trace-event JSON (Perfetto).
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub trace: Option<PathBuf>,

    /// Attach an image (PNG, JPEG, GIF, WebP) or a PDF to the prompt (the first one, in an
    /// interactive session): a path, `-` for stdin, or a `data:` URL. Repeatable, or
    /// comma-separated.
    #[arg(
        short = 'i',
        long = "image",
        value_name = "FILE",
        value_delimiter = ',',
        conflicts_with = "resume",
        help_heading = "Session"
    )]
    pub images: Vec<String>,

    /// Append every message to this JSONL file (fsync'd); an existing file resumes its session.
    #[arg(long, value_name = "FILE", help_heading = "Session")]
    pub history: Option<PathBuf>,

    /// Go on with this workspace's latest conversation, kept in the journal (Claude
    /// Code's `-c`): the prompt given is its next, else the REPL goes on with it.
    #[arg(short = 'c', long = "continue", conflicts_with_all = ["resume", "history"], help_heading = "Session")]
    pub continue_latest: bool,

    /// Go on with the conversation ID (a run's id from `wonopcode runs list`, or its
    /// start), the prompt given as its next; without ID: continue a suspended run from
    /// --history, else this workspace's latest interrupted or suspended run (as `wonopcode
    /// resume RUN_ID` does), else pick a conversation from a list.
    #[arg(
        short = 'r',
        long,
        num_args = 0..=1,
        default_missing_value = "",
        value_name = "ID",
        help_heading = "Session"
    )]
    pub resume: Option<String>,

    /// When a run is resumed from its journal: what to do with a call it had started and not
    /// finished when the tool cannot tell whether it had its effect (a command, a patch):
    /// run it again, skip it (the model is told), or ask (default; --yes runs it again,
    /// nobody to ask skips it).
    #[arg(long, value_enum, value_name = "POLICY", help_heading = "Session")]
    pub on_interrupted: Option<OnInterruptedArg>,

    /// With --resume: answer the pending call CALL_ID with TEXT instead of running it
    /// (repeatable; CONTEXT:CALL_ID for a call of a child context). Pending calls without an
    /// answer run, under the permissions of this run.
    #[arg(long, value_name = "[CONTEXT:]CALL_ID=TEXT", requires = "resume", value_parser = parse_answer, help_heading = "Session")]
    pub answer: Vec<(String, String)>,

    /// The session's settings.
    #[command(flatten)]
    pub run: RunArgs,
}

/// Which model answers: a provider, or a recorded transcript.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Provider")]
pub struct ModelArgs {
    /// Answer model requests from a recorded transcript (offline, deterministic).
    #[arg(long, value_name = "FILE")]
    pub replay: Option<PathBuf>,

    /// Record every model request and answer to a transcript that --replay can read.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,

    /// Provider to talk to: anthropic, openai, openrouter, deepseek, groq, gemini, azure,
    /// bedrock, vertex, ollama, vllm, llamacpp, openai-compatible, or one defined in the
    /// config file. Default: the config's
    /// `provider`, else the first provider whose key is set.
    #[arg(long, value_name = "ID")]
    pub provider: Option<String>,

    /// Model id at the provider, or a short name the catalog knows (`opus`, `sonnet`,
    /// `haiku`; Gemini's `pro`, `flash`) (default: the config's `model`, else the
    /// provider's default).
    #[arg(short = 'm', long, value_name = "ID")]
    pub model: Option<String>,

    /// Base URL of the provider's API up to the version, e.g. http://127.0.0.1:8000/v1.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,

    /// Codex's `--oss` (its local model through Ollama) is not built in: refused with the
    /// flags that do it (`--base-url http://localhost:11434/v1 -m MODEL`).
    #[arg(long, hide = true)]
    pub oss: bool,

    /// Codex's `--skip-git-repo-check`: accepted, and nothing to skip — wonopcode runs in any
    /// directory, a git repository or not.
    #[arg(long)]
    pub skip_git_repo_check: bool,

    /// How much the model thinks before answering: off, low, medium, high, or a budget in
    /// tokens (default: the config's `thinking`, else `MAX_THINKING_TOKENS`, else the model's).
    #[arg(long, value_name = "LEVEL", value_parser = parse_thinking)]
    pub thinking: Option<wonopcode_session::generation::Thinking>,

    /// The most tokens one response may have (default: the config's `max_output_tokens`,
    /// else the model's cap).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_output_tokens: Option<u32>,

    /// Sampling temperature, 0 to 2 (default: the config's `temperature`, else the API's).
    #[arg(long, value_name = "T")]
    pub temperature: Option<f32>,

    /// Which of OpenAI's APIs to speak: `responses` (the `openai` preset's default) or `chat`
    /// (Chat Completions, every OpenAI-compatible server's). Overrides the provider's `api`.
    #[arg(long, value_enum, value_name = "API")]
    pub wire: Option<WireArg>,

    /// With --replay, stream each chunk MS milliseconds after the previous one, as a model would.
    #[arg(long, value_name = "MS", requires = "replay", value_parser = clap::value_parser!(u64).range(0..=10_000))]
    pub replay_pace: Option<u64>,

    /// With --replay, what happens where the recording cannot answer (past its end, or a
    /// request that differs): `strict` fails there; `prefix` goes on live from there, with
    /// --provider/--model or else the recorded model (with --record, to extend a recording).
    #[arg(
        long,
        value_enum,
        value_name = "MODE",
        requires = "replay",
        default_value = "strict"
    )]
    pub replay_mode: ReplayModeArg,
}

/// `--on-interrupted`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OnInterruptedArg {
    /// Run it again.
    Rerun,
    /// Do not run it; tell the model.
    Skip,
    /// Ask the person.
    Ask,
}

/// `--permission-mode`, in Claude Code's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PermissionModeArg {
    /// Ask as usual.
    Default,
    /// File edits without a question.
    #[value(name = "acceptEdits", alias = "accept-edits")]
    AcceptEdits,
    /// Read-only; the model plans.
    Plan,
    /// No sandbox and no questions.
    #[value(name = "bypassPermissions", alias = "bypass-permissions")]
    BypassPermissions,
}

/// `-a/--ask-for-approval`, in Codex's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AskForApprovalArg {
    /// Ask before what is not known to be safe.
    Untrusted,
    /// Run in the sandbox; ask when the sandbox stops a command.
    OnFailure,
    /// The model asks when it needs to.
    OnRequest,
    /// Never ask.
    Never,
}

/// `--output-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormatArg {
    /// The answer as text (wonopcode's usual output).
    Text,
    /// Claude Code's one `result` object.
    Json,
    /// Claude Code's messages, one per line.
    StreamJson,
}

impl OutputFormatArg {
    /// Claude Code's schema: `Some(true)` a message per line, `Some(false)` the result only.
    pub fn claude(self) -> Option<bool> {
        match self {
            Self::Text => None,
            Self::Json => Some(false),
            Self::StreamJson => Some(true),
        }
    }
}

/// `--replay-mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReplayModeArg {
    /// Fail where the recording cannot answer.
    Strict,
    /// Go live where the recording cannot answer.
    Prefix,
}

/// What tools may do without asking, and what happens when nobody can be asked.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Permissions and sandbox")]
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

    /// Claude Code's `--allowedTools`: its rules (`"Bash(git diff:*)" Read`, separated by
    /// spaces or commas) as --allow rules (docs/decisions.md, "Claude Code's and Codex's
    /// flags").
    #[arg(long = "allowedTools", visible_alias = "allowed-tools", value_name = "RULES", num_args = 1..)]
    pub allowed_tools: Vec<String>,

    /// Claude Code's `--disallowedTools`: its rules as --deny rules.
    #[arg(long = "disallowedTools", visible_alias = "disallowed-tools", value_name = "RULES", num_args = 1..)]
    pub disallowed_tools: Vec<String>,

    /// What a call needing approval becomes when nobody can be asked.
    #[arg(long, value_enum, value_name = "MODE")]
    pub unattended: Option<UnattendedArg>,

    /// Work without questions inside the workspace (Codex's `--full-auto`): `--sandbox
    /// workspace-write`, and the file tools and `bash` allowed; other tools (MCP, the web)
    /// still ask, and so does a command the sandbox stopped.
    #[arg(long, conflicts_with_all = ["sandbox", "dangerously_skip_permissions"])]
    pub full_auto: bool,

    /// Claude Code's `--permission-mode`: `default`; `acceptEdits` (file edits without a
    /// question); `plan` (read-only: the sandbox and the file tools change nothing, and the
    /// model is told to plan); `bypassPermissions` (as --dangerously-skip-permissions).
    #[arg(long, value_enum, value_name = "MODE")]
    pub permission_mode: Option<PermissionModeArg>,

    /// Codex's `-a/--ask-for-approval`: `untrusted` and `on-request` ask as wonopcode does;
    /// `on-failure` works without questions inside the workspace (as --full-auto); `never`
    /// too, and a call that would still ask is refused, the model told.
    #[arg(short = 'a', long, value_enum, value_name = "POLICY")]
    pub ask_for_approval: Option<AskForApprovalArg>,

    /// No sandbox and no questions (Claude Code's flag; Codex's
    /// `--dangerously-bypass-approvals-and-sandbox` too): every call runs with your full
    /// rights. For a throwaway machine or container only.
    #[arg(
        long,
        visible_alias = "dangerously-bypass-approvals-and-sandbox",
        conflicts_with = "sandbox"
    )]
    pub dangerously_skip_permissions: bool,
}

/// Settings of the session a prompt (or a served call) runs in.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Session")]
pub struct RunArgs {
    /// Config file (default: wonopcode/config.yaml in the user's config directory, if present).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Workspace root: tools run here and cannot reach outside it (default: the current
    /// directory).
    #[arg(short = 'C', long = "cwd", value_name = "DIR")]
    pub cwd: Option<PathBuf>,

    /// Also look for named loops in this directory (searched first; repeatable).
    #[arg(long, value_name = "DIR", help_heading = "Loop")]
    pub loops_dir: Vec<PathBuf>,

    /// Do not read or write the cache of compiled guest components.
    #[arg(long, help_heading = "Loop")]
    pub no_cache: bool,

    /// Let the native loop delegate with spawn_agent, send_input, wait, close_agent and
    /// list_agents, to these agents and loops (comma-separated, or `all`).
    #[arg(
        long,
        value_name = "NAMES",
        value_delimiter = ',',
        help_heading = "Loop"
    )]
    pub agents: Vec<String>,

    /// The system prompt, instead of wonopcode's (or the config's, or the agent file's);
    /// instruction files and the environment are still told after it (Claude Code's flag).
    #[arg(long, value_name = "TEXT", help_heading = "Loop")]
    pub system_prompt: Option<String>,

    /// Text added at the end of the system prompt (Claude Code's flag).
    #[arg(long, value_name = "TEXT", help_heading = "Loop")]
    pub append_system_prompt: Option<String>,

    /// Another directory commands may write, as the workspace (Codex's and Claude Code's
    /// `--add-dir`; the file tools stay in the workspace). Repeatable.
    #[arg(long, value_name = "DIR", help_heading = "Permissions and sandbox")]
    pub add_dir: Vec<PathBuf>,

    /// Do not tell the model the instruction files: yours (~/.codex/AGENTS.md,
    /// ~/.claude/CLAUDE.md) and the project's AGENTS.md and CLAUDE.md files (the workspace's
    /// and those above it up to the repository root).
    #[arg(long)]
    pub no_project_instructions: bool,

    /// Trust the workspace for this run: its `.claude/settings*.json` hooks and its agent
    /// files' hooks and MCP servers are used without the question (not remembered; see
    /// `wonopcode trust`).
    #[arg(long)]
    pub trust_workspace: bool,

    /// Model requests allowed per prompt (default: the config's `max_iterations`, else 50);
    /// Claude Code's `--max-turns` too.
    #[arg(long, visible_alias = "max-turns", value_name = "N", value_parser = clap::value_parser!(u32).range(1..), help_heading = "Loop")]
    pub max_iterations: Option<u32>,

    /// Run at most N child contexts of one parallel spawn at once (default 4).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=256), help_heading = "Loop")]
    pub max_parallel: Option<u32>,

    /// Limit on each bash command, in milliseconds: the timeout of every call, which a
    /// model may lower but not raise (default 120000).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=600_000), help_heading = "Permissions and sandbox")]
    pub bash_timeout_ms: Option<u64>,

    /// Answer these host tools' calls with fixed text instead of running them: a JSON
    /// object of tool name to `{"text": ...}` or `{"error": ...}` (what `wonopcode loops
    /// test` writes for a test's `tools:`).
    #[arg(long, value_name = "FILE", hide = true)]
    pub tool_stand_ins: Option<PathBuf>,

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
    #[arg(short = 's', long, value_name = "MODE", value_parser = parse_sandbox_mode, help_heading = "Permissions and sandbox")]
    pub sandbox: Option<wonopcode_sandbox::SandboxMode>,

    /// An MCP server for this run, besides the config file's `mcp_servers`: its tools are
    /// offered as `mcp__NAME__TOOL` (repeatable; COMMAND is split like a shell would, or is
    /// the http(s) address of a streamable HTTP server).
    #[arg(long, value_name = "NAME=COMMAND", value_parser = parse_mcp)]
    pub mcp: Vec<(String, String)>,

    /// Do not keep the run's journal (its events and model responses under the data dir's
    /// `wonopcode/runs/`; `wonopcode runs` lists them).
    #[arg(long)]
    pub no_journal: bool,

    /// Export the run's contexts, model responses and tool calls as OpenTelemetry spans to
    /// this OTLP/HTTP endpoint (for example http://localhost:4318); without it, the
    /// standard OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT turn export
    /// on (docs/telemetry.md).
    #[arg(long, value_name = "URL", help_heading = "Output")]
    pub otlp_endpoint: Option<String>,
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
    /// C with clang's wasm32-wasi target and wasi-libc (Debian's packages), on wit-bindgen's
    /// bindings written into the project.
    C,
}

/// What a new guest project is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GuestKind {
    /// An agent loop (`wonopcode:agent-loop`), run with --agent-loop.
    Loop,
    /// A hook (`wonopcode:hooks`), named in a hook entry.
    Hook,
}

/// `[CONTEXT:]CALL_ID=TEXT` of `--answer` (the context stays in the id; `restart` reads it).
fn parse_answer(value: &str) -> Result<(String, String), String> {
    match value.split_once('=') {
        Some((id, text)) if !id.trim().is_empty() => Ok((id.trim().to_owned(), text.to_owned())),
        _ => Err(format!(
            "`{value}` is not CALL_ID=TEXT (the call ids a run waits on are printed when it suspends)"
        )),
    }
}

/// `--wire` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum WireArg {
    /// OpenAI's Responses API.
    Responses,
    /// Chat Completions.
    Chat,
}

/// `--thinking`'s value, with what it accepts when it is not one.
fn parse_thinking(text: &str) -> Result<wonopcode_session::generation::Thinking, String> {
    text.parse()
}
