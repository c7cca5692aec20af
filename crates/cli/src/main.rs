//! The `wonopcode` binary: parses flags, runs a session, maps the outcome to an exit code.
//! All logic lives in the library crates; this is wiring and rendering.

mod acp;
mod agent_check;
mod args;
mod attach;
mod batch;
mod config_edit;
mod config_file;
mod conversations;
mod dispatch;
mod exit;
mod form;
mod hook_check;
mod loops;
mod loops_test;
mod mcp;
mod mcp_config;
mod mcp_server;
mod mention;
mod new_guest;
mod piped;
mod prompter;
mod render;
mod repl;
mod restart;
mod rewind;
mod run;
mod runs;
mod sandbox;
mod session;
mod telemetry;
mod trust;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

/// Logs to stderr as `WONOPCODE_LOG` says; `--verbose` adds every request's and response's
/// raw payload (`wonopcode::wire`, credentials redacted).
fn init_tracing(verbose: bool) {
    let mut filter = tracing_subscriber::EnvFilter::try_from_env("WONOPCODE_LOG")
        // rmcp logs its transports' failures itself; wonopcode reports each MCP failure once,
        // in its own words (`WONOPCODE_LOG=rmcp=debug` shows rmcp's).
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,rmcp=off"));
    if verbose {
        let wire = format!("{}=trace", wonopcode_providers::http::wire_log::TARGET);
        if let Ok(directive) = wire.parse() {
            filter = filter.add_directive(directive);
        }
    }
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

/// Ends the process quietly with [`exit::BROKEN_PIPE`] when the reader of stdout or stderr
/// went away (`wonopcode runs list | head -1`, `wonopcode -p x 2>&1 | head -1`): Rust
/// ignores SIGPIPE, so a write to a closed pipe is an error, which `println!` and
/// `eprintln!` turn into a panic (whose report, on the closed stderr, would abort); every
/// other panic is reported as before.
fn quiet_on_broken_pipe() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or_default();
        let epipe = format!("os error {EPIPE}");
        let printing = message.starts_with("failed printing to stdout")
            || message.starts_with("failed printing to stderr");
        if printing && message.contains(&epipe) {
            std::process::exit(i32::from(exit::BROKEN_PIPE));
        }
        report(info);
    }));
}

/// When the command line failed to parse and its first word is close to a command's name
/// (`wonopcode complitions bash`), the line saying which was meant: the first word is
/// otherwise read as a prompt, which hides the typo behind another error.
fn misspelled_command() -> Option<String> {
    let first = std::env::args().nth(1)?;
    let command = args::Args::command();
    let names: Vec<&str> = command
        .get_subcommands()
        .map(clap::Command::get_name)
        .collect();
    if first.starts_with('-') || names.contains(&first.as_str()) {
        return None;
    }
    let closest = names
        .iter()
        .map(|name| (strsim::levenshtein(&first, name), *name))
        .min()?;
    (closest.0 <= 2).then(|| {
        format!(
            "error: unknown command `{first}`; did you mean `{}`? (`wonopcode --help` lists them)",
            closest.1
        )
    })
}

/// EPIPE's number (the same on Linux and macOS).
const EPIPE: i32 = 32;

fn main() -> ExitCode {
    quiet_on_broken_pipe();
    let matches = match args::Args::command().try_get_matches() {
        Ok(m) => m,
        Err(e) => {
            if e.use_stderr()
                && let Some(said) = misspelled_command()
            {
                eprintln!("{said}");
                return ExitCode::from(exit::USAGE);
            }
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() {
                exit::USAGE
            } else {
                exit::SUCCESS
            });
        }
    };
    let args = match args::Args::from_arg_matches(&matches) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(exit::USAGE);
        }
    };
    if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) {
        console::set_colors_enabled(false);
        console::set_colors_enabled_stderr(false);
    }
    init_tracing(args.verbose());
    if args.debug_guest() {
        wonopcode_wasm_host::debug::turn_on();
    }
    // Before the runtime: the exporter's HTTP client runs on a thread of its own.
    if let Err(e) = telemetry::start(&args) {
        eprintln!("error: {e}");
        return ExitCode::from(exit::USAGE);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(exit::ERROR);
        }
    };
    let outcome = runtime.block_on(dispatch::run(args, matches));
    // Blocking stdin readers (REPL, prompts) must not keep the process alive.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    telemetry::shutdown();
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            let code = if e.downcast_ref::<session::UsageError>().is_some() {
                exit::USAGE
            } else {
                exit::ERROR
            };
            ExitCode::from(code)
        }
    }
}
