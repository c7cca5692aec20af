//! `/config` and `/doctor`: what this session read and whether its parts work here, each
//! part one line, so a person can tell "the sandbox is off" or "that server failed" from
//! the REPL without another terminal. `/doctor` starts nothing and asks no model: it says
//! what the session already found, and probes only what is cheap and read-only (the
//! kernel's sandbox features, the config file).

use wonopcode_mcp::ServerState;
use wonopcode_sandbox::Support;
use wonopcode_session::config;
use wonopcode_session::trust::{WorkspaceExecutables, trusted_with};

use crate::render::{clip, one_line};
use crate::run::Cli;

/// How a line of `/doctor` begins: fine, or something to look at.
const OK: &str = "ok";
const LOOK: &str = "!!";

impl Cli {
    /// `/config`: the config file the session read and what it sets (as `wonopcode config
    /// show` prints it), and where to change it.
    pub(crate) fn config(&self) {
        match crate::config_file::shown(self.config_file.as_deref()) {
            Ok(lines) => {
                for line in lines {
                    eprintln!("{line}");
                }
                eprintln!(
                    "(edit the file and start again; the flags this session was given are in /status)"
                );
            }
            Err(e) => eprintln!("the config file cannot be read now: {e:#}"),
        }
    }

    /// `/doctor`: one line for each part of the session — the binary, the config file, the
    /// sandbox, the model, the MCP servers, the workspace's trust — `ok` or `!!` with
    /// what to do.
    pub(crate) fn doctor(&self) {
        let mut lines: Vec<(bool, String)> = Vec::new();
        let binary = std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| "(its path cannot be read)".to_owned());
        lines.push((
            true,
            format!("wonopcode {} at {binary}", env!("CARGO_PKG_VERSION")),
        ));
        let file = self.config_file.as_deref();
        lines.push(match config::load(file).map(|c| c.file) {
            Ok(Some(path)) => (true, format!("config: {} parses", path.display())),
            Ok(None) => (
                true,
                "config: no file; every setting has its default".to_owned(),
            ),
            Err(e) => (
                false,
                format!("config: {}", clip(&one_line(&e.to_string()), 200)),
            ),
        });
        lines.push(self.sandbox_line());
        let model = self.session.model();
        lines.push((true, format!("model: {}/{}", model.provider, model.id)));
        lines.extend(self.server_lines());
        lines.push(self.trust_line());
        for (fine, line) in lines {
            eprintln!("  {} {line}", if fine { OK } else { LOOK });
        }
    }

    /// Whether this session's sandbox mode is enforced by the kernel here.
    fn sandbox_line(&self) -> (bool, String) {
        let mode = self.session.sandbox_mode();
        let support = Support::detect();
        match mode {
            wonopcode_sandbox::SandboxMode::FullAccess => (
                true,
                format!("sandbox: {mode}: commands run unconfined, as asked"),
            ),
            _ if support.enforces() => (
                true,
                format!(
                    "sandbox: {mode}, enforced by the kernel (`wonopcode sandbox check` has the details)"
                ),
            ),
            _ => (
                false,
                format!(
                    "sandbox: {mode} cannot be enforced on this kernel (`wonopcode sandbox check` says what is missing)"
                ),
            ),
        }
    }

    /// One line per MCP server: its tools, still starting, or why it failed.
    fn server_lines(&self) -> Vec<(bool, String)> {
        let servers = self.session.mcp_servers();
        if servers.is_empty() {
            return vec![(true, "mcp: no server configured".to_owned())];
        }
        servers
            .into_iter()
            .map(|server| {
                let name = one_line(&server.name);
                match server.state {
                    ServerState::Ready => (
                        true,
                        format!("mcp `{name}`: up, {} tool(s)", server.tools.len()),
                    ),
                    ServerState::Starting => (
                        true,
                        format!("mcp `{name}`: still starting; its tools join when it is ready"),
                    ),
                    ServerState::Failed(reason) => (
                        false,
                        format!(
                            "mcp `{name}`: failed: {} (`wonopcode mcp list` tries it again)",
                            clip(&one_line(&reason), 160)
                        ),
                    ),
                }
            })
            .collect()
    }

    /// Whether the workspace's own hooks, commands and servers run in this session.
    fn trust_line(&self) -> (bool, String) {
        let workspace = self.session.workspace();
        let found = WorkspaceExecutables::scan(workspace);
        if found.files.is_empty() {
            return (
                true,
                "workspace: nothing of its own would run (no hooks, commands or MCP servers in it)"
                    .to_owned(),
            );
        }
        match trusted_with(workspace, self.trusted, &found) {
            Ok(true) => (
                true,
                format!(
                    "workspace: trusted; its {} file(s) that run something are used",
                    found.files.len()
                ),
            ),
            Ok(false) => (
                false,
                format!(
                    "workspace: not trusted; its {} file(s) that run something are skipped (`wonopcode trust` shows and grants them)",
                    found.files.len()
                ),
            ),
            Err(e) => (false, format!("workspace: its trust cannot be read: {e}")),
        }
    }
}
