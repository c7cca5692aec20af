//! The `wonopcode` binary: parses flags, runs a session, maps the outcome to an exit code.
//! All logic lives in the library crates; this is wiring and rendering.

mod acp;
mod agent_check;
mod args;
mod attach;
mod batch;
mod config_file;
mod dispatch;
mod exit;
mod form;
mod loops;
mod mcp;
mod mcp_server;
mod new_guest;
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

fn main() -> ExitCode {
    let matches = match args::Args::command().try_get_matches() {
        Ok(m) => m,
        Err(e) => {
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
