//! The slash commands that show the session and its workspace without asking the model:
//! `/status`, `/diff`, `/memory`, `/mcp` and `/export`.

use std::fmt::Write as _;

use wonopcode_mcp::ServerState;
use wonopcode_protocol::Usage;
use wonopcode_protocol::message::{Part, Role};
use wonopcode_session::instructions::ProjectInstructions;

use crate::render::{clip, cost, in_out, one_line};
use crate::run::Cli;

/// What `/export` writes when no file is named.
const EXPORT_FILE: &str = "conversation.md";

impl Cli {
    /// `/status`: what the banner said, and the conversation so far.
    pub(crate) fn status(&self, spent: &Usage) {
        let model = self.session.model();
        eprintln!("model      {}/{}", model.provider, model.id);
        eprintln!("loop       {}", self.session.loop_name());
        eprintln!("sandbox    {}", self.session.sandbox_mode());
        eprintln!("approvals  {}", self.approvals);
        eprintln!("mode       {} (Shift-Tab to change)", self.session.mode());
        eprintln!("workspace  {}", self.session.workspace().display());
        let prompts = self.session.prompts().len();
        let kept = match (&self.history, self.session.run_id()) {
            (Some(path), _) => format!("kept in {}", path.display()),
            (None, Some(run)) => format!("run {run}"),
            (None, None) => "not kept".to_owned(),
        };
        eprintln!("session    {prompts} prompt(s), {kept}");
        eprintln!("spent      {} · {}", in_out(spent), cost(spent));
    }

    /// `/diff`: `git diff` of the working tree, run as `!` runs a command (in the sandbox),
    /// shown and not told to the model.
    pub(crate) async fn diff(&self) {
        let command = "git --no-pager diff --stat && git --no-pager diff";
        match self.session.shell(command).await {
            Some((said, _)) if said.trim().is_empty() => {
                eprintln!("no changes in the working tree (git diff is empty)")
            }
            Some((said, _)) => eprintln!("{}", super::shell::shown(&said)),
            None => eprintln!("this run has no `bash` tool, so `/diff` cannot run git"),
        }
    }

    /// `/memory`: the instruction files the model is told, and where `#` notes go.
    pub(crate) fn memory(&self) {
        let workspace = self.session.workspace();
        let found = ProjectInstructions::find(workspace, self.session.hidden_paths());
        if found.files.is_empty() {
            eprintln!("no instruction file is told to the model (AGENTS.md, CLAUDE.md)");
        } else {
            eprintln!("told to the model, in this order:");
            for file in &found.files {
                let shown = file.strip_prefix(workspace).unwrap_or(file);
                eprintln!("  {}", one_line(&shown.display().to_string()));
            }
            if found.truncated {
                eprintln!(
                    "  (cut at {} KiB)",
                    wonopcode_session::instructions::MAX_BYTES / 1024
                );
            }
        }
        eprintln!(
            "`# note` adds a line to {} (edit the files in your editor; the next session reads them)",
            super::memory::notes_file(workspace)
        );
    }

    /// `/mcp`: each configured server, where it is (starting, failed, ready), and a ready
    /// one's tools.
    pub(crate) fn mcp(&self) {
        let servers = self.session.mcp_servers();
        if servers.is_empty() {
            eprintln!("no MCP server is configured (`wonopcode mcp add` configures one)");
            return;
        }
        for server in servers {
            let shown = match server.state {
                ServerState::Starting => "starting; its tools join when it is ready".to_owned(),
                ServerState::Failed(reason) => {
                    format!("failed: {}", clip(&one_line(&reason), 100))
                }
                ServerState::Ready => format!(
                    "{} tool(s): {}",
                    server.tools.len(),
                    clip(&one_line(&server.tools.join(", ")), 100)
                ),
            };
            eprintln!("  {:<16} {shown}", one_line(&server.name));
        }
    }

    /// `/export [FILE]`: the conversation as Markdown, in the workspace unless FILE says
    /// elsewhere; an existing file is not overwritten.
    pub(crate) fn export(&self, file: Option<&str>) {
        let path = self.session.workspace().join(file.unwrap_or(EXPORT_FILE));
        let text = markdown(self.session.messages());
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()));
        match written {
            Ok(()) => eprintln!("the conversation is in {}", path.display()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => eprintln!(
                "/export: {} exists; name another file (/export FILE)",
                path.display()
            ),
            Err(e) => eprintln!("/export: cannot write {}: {e}", path.display()),
        }
    }
}

/// The conversation as Markdown: each prompt and answer, each tool call with its result.
fn markdown(messages: &[wonopcode_protocol::Message]) -> String {
    let mut out = String::from("# Conversation\n");
    for message in messages {
        for part in message.parts.iter() {
            let _ = match (message.role, part) {
                (Role::User, Part::Text { text }) => write!(out, "\n## Prompt\n\n{text}\n"),
                (Role::Assistant, Part::Text { text }) => write!(out, "\n## Answer\n\n{text}\n"),
                (
                    _,
                    Part::ToolCall {
                        name, arguments, ..
                    },
                ) => {
                    write!(out, "\n**{name}** `{}`\n", one_line(arguments))
                }
                (_, Part::ToolResult { content, .. }) => {
                    write!(out, "\n```\n{}\n```\n", content.trim_end())
                }
                _ => Ok(()),
            };
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use wonopcode_protocol::Message;

    #[test]
    fn the_export_has_each_prompt_answer_call_and_result() {
        let messages = vec![
            Message::user("Read the notes."),
            Message::new(
                Role::Assistant,
                vec![Part::ToolCall {
                    id: "c1".to_owned(),
                    name: "read".to_owned(),
                    arguments: r#"{"path": "notes.txt"}"#.to_owned(),
                }],
            ),
            Message::new(
                Role::Tool,
                vec![Part::ToolResult {
                    call_id: "c1".to_owned(),
                    content: "remember the milk\n".to_owned(),
                    is_error: false,
                }],
            ),
            Message::text(Role::Assistant, "The milk."),
        ];
        assert_eq!(
            markdown(&messages),
            "# Conversation\n\n## Prompt\n\nRead the notes.\n\n**read** `{\"path\": \"notes.txt\"}`\n\n```\nremember the milk\n```\n\n## Answer\n\nThe milk.\n"
        );
    }
}
