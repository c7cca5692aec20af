//! `wonopcode mcp list | tools | call`: the MCP servers a run would start, started the same
//! way, without a model, so a user can see why a server's tools are missing or what a tool
//! answers before a model ever calls it.

use std::time::Duration;

use std::io::IsTerminal;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

use indicatif::{MultiProgress, ProgressDrawTarget};
use wonopcode_mcp::{AcceptDefaults, CallToolResult, Elicitor, to_text};
use wonopcode_session::config;
use wonopcode_session::mcp::{self, Inspection};

use crate::args::{McpAction, McpArgs};
use crate::exit;
use crate::prompter::TerminalPrompter;
use crate::render::one_line;
use crate::session::{reported, workspace_root};

/// Runs `wonopcode mcp ACTION`; returns the exit code.
pub async fn run(args: &McpArgs) -> anyhow::Result<u8> {
    // The config file read and written as a file: one that does not parse is named, not
    // loaded.
    let file = args.config.as_deref();
    match &args.action {
        McpAction::Add(add) => return crate::mcp_config::add(add, file),
        McpAction::Remove { server } => return crate::mcp_config::remove(server, file),
        McpAction::Get { server } => return crate::mcp_config::get(server, file, args.json),
        _ => {}
    }
    let root = workspace_root(args.cwd.as_deref())?;
    let config = config::load(args.config.as_deref())?;
    let only = match &args.action {
        // Answered above.
        McpAction::Add(_) | McpAction::Remove { .. } | McpAction::Get { .. } => None,
        McpAction::List => None,
        McpAction::Tools { server } | McpAction::Call { server, .. } => Some(server.as_str()),
        McpAction::Login { server } => {
            let saved = mcp::sign_in(&config, &args.mcp, server, open_in_browser)
                .await
                .map_err(reported)?;
            eprintln!(
                "signed in to `{server}`; the tokens are in {}",
                saved.display()
            );
            return Ok(exit::SUCCESS);
        }
        McpAction::Logout { server } => {
            let removed = mcp::sign_out(&config, &args.mcp, server).map_err(reported)?;
            eprintln!(
                "{}",
                if removed {
                    format!("signed out of `{server}`")
                } else {
                    format!("`{server}` was not signed in to")
                }
            );
            return Ok(exit::SUCCESS);
        }
    };
    let inspection = Inspection::start(&config, &args.mcp, &root, only, elicitor(args.yes))
        .await
        .map_err(reported)?;
    match &args.action {
        McpAction::List => Ok(list(&inspection, args.json)),
        McpAction::Tools { server } => tools(&inspection, server, args.json),
        McpAction::Call {
            server,
            tool,
            arguments,
        } => {
            let arguments = arguments.as_deref();
            match call(&inspection, server, tool, arguments, args.json).await {
                // A server that wants more scopes: signed in to again, and called again.
                Err(refused)
                    if inspection
                        .step_up(&config, &args.mcp, server, open_in_browser)
                        .await
                        .map_err(reported)? =>
                {
                    eprintln!("({refused:#}; signed in again with the scopes it asked for)");
                    call(&inspection, server, tool, arguments, args.json).await
                }
                outcome => outcome,
            }
        }
        McpAction::Login { .. }
        | McpAction::Logout { .. }
        | McpAction::Add(_)
        | McpAction::Remove { .. }
        | McpAction::Get { .. } => Ok(exit::SUCCESS),
    }
}

/// Who fills in servers' forms: the person at the terminal, else (with `--yes`) their
/// defaults, else nobody (servers are told so).
fn elicitor(yes: bool) -> Option<Arc<dyn Elicitor>> {
    if std::io::stdin().is_terminal() {
        let progress = MultiProgress::with_draw_target(ProgressDrawTarget::hidden());
        // Forms only: no approval is asked here.
        Some(Arc::new(TerminalPrompter {
            progress,
            config_file: None,
            workspace: std::path::PathBuf::new(),
            refusals: Default::default(),
        }))
    } else if yes {
        Some(Arc::new(AcceptDefaults))
    } else {
        None
    }
}

fn list(inspection: &Inspection, json: bool) -> u8 {
    if inspection.names().is_empty() && !json {
        eprintln!(
            "no MCP server is configured (mcp_servers in the config file, or --mcp NAME=COMMAND)"
        );
    }
    for name in inspection.names() {
        if let Some(server) = inspection.servers().iter().find(|s| s.name() == name) {
            let tools = inspection.tools(name).len();
            if json {
                println!(
                    "{}",
                    serde_json::json!({
                        "server": name,
                        "status": "started",
                        "tools": tools,
                        "startup_ms": millis(server.startup()),
                    })
                );
            } else {
                println!(
                    "{name}  started  {tools} tool{}  {}",
                    if tools == 1 { "" } else { "s" },
                    humantime::format_duration(rounded(server.startup()))
                );
            }
        } else if let Some(failure) = inspection.failures().iter().find(|f| &f.server == name) {
            if json {
                println!(
                    "{}",
                    serde_json::json!({"server": name, "status": "failed", "error": failure.reason})
                );
            } else {
                println!("{name}  failed  {}", one_line(&failure.reason));
            }
        }
    }
    if inspection.failures().is_empty() {
        exit::SUCCESS
    } else {
        exit::ERROR
    }
}

fn tools(inspection: &Inspection, server: &str, json: bool) -> anyhow::Result<u8> {
    failed_to_start(inspection, server)?;
    for tool in inspection.tools(server) {
        let spec = wonopcode_agent_loop::Tool::spec(tool.as_ref());
        if json {
            println!(
                "{}",
                serde_json::json!({
                    "name": spec.name,
                    "server": server,
                    "tool": tool.remote_name(),
                    "description": spec.description,
                    "input_schema": spec.parameters,
                })
            );
        } else {
            let summary = spec.description.lines().next().unwrap_or("");
            println!("{}  {}", spec.name, one_line(summary));
        }
    }
    Ok(exit::SUCCESS)
}

async fn call(
    inspection: &Inspection,
    server: &str,
    tool: &str,
    arguments: Option<&str>,
    json: bool,
) -> anyhow::Result<u8> {
    failed_to_start(inspection, server)?;
    let cancel = CancellationToken::new();
    let on_ctrl_c = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_ctrl_c.cancel();
        }
    });
    let result: CallToolResult = inspection
        .call(server, tool, arguments.unwrap_or("{}"), &cancel)
        .await
        .map_err(reported)?;
    let (text, is_error) = to_text(&result);
    if json {
        println!("{}", serde_json::to_string(&result)?);
    } else if !text.is_empty() {
        println!("{text}");
    }
    if is_error {
        eprintln!("error: `{tool}` of the MCP server `{server}` reported an error");
        return Ok(exit::ERROR);
    }
    Ok(exit::SUCCESS)
}

/// Shows the sign-in page's address and opens it: with `$BROWSER` (a command; the address
/// is its last argument) when set, else the system's opener. The browser runs on its own.
fn open_in_browser(url: &str) {
    eprintln!("sign in at: {url}");
    let browser = std::env::var("BROWSER")
        .ok()
        .filter(|b| !b.trim().is_empty());
    let mut words: Vec<String> = match &browser {
        Some(command) => command.split_whitespace().map(str::to_owned).collect(),
        None if cfg!(target_os = "macos") => vec!["open".to_owned()],
        None => vec!["xdg-open".to_owned()],
    };
    words.push(url.to_owned());
    let started = std::process::Command::new(&words[0])
        .args(&words[1..])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    match started {
        // Reaped by a thread of its own, so no zombie is left while wonopcode waits.
        Ok(mut child) => drop(std::thread::spawn(move || child.wait())),
        Err(e) => eprintln!(
            "(cannot open a browser with `{}`: {e}; open the address yourself)",
            words[0]
        ),
    }
}

/// A server asked for by name that did not start: its reason, as an error.
fn failed_to_start(inspection: &Inspection, server: &str) -> anyhow::Result<()> {
    match inspection.failures().iter().find(|f| f.server == server) {
        Some(failure) => anyhow::bail!(
            "the MCP server `{server}` did not start: {}",
            failure.reason
        ),
        None => Ok(()),
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// To the millisecond, as a person reads a start-up time.
fn rounded(duration: Duration) -> Duration {
    Duration::from_millis(millis(duration))
}
