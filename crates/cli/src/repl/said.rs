//! What a line typed at the REPL's prompt comes to: a `!` command, a `#` note, a slash
//! command run here, or a prompt to send — with its custom command's text, the `@file`
//! texts it mentions and the images and documents it attaches. The REPL's loop reads a
//! line and hands it here; what is left to send goes to the turn.

use wonopcode_protocol::{Part, Usage};

use super::SlashCommand;
use crate::run::Cli;

/// What a typed line comes to.
pub(super) enum Said {
    /// Nothing to send: it was handled here (a command, a note) or refused with a line
    /// saying why; the prompt is shown again.
    Nothing,
    /// The person leaves (`/exit`, or a command that switches the session).
    Exit,
    /// A prompt to send, the notes of the commands run since the last one before it, and
    /// what it attaches.
    Prompt(String, Vec<Part>),
}

impl Cli {
    /// What `line` comes to (see [`Said`]). `ran` holds the `!` commands and `#` notes since
    /// the last prompt, told to the model with the next; `spent` is the session's usage,
    /// which a command may add to.
    pub(super) async fn said(
        &mut self,
        line: &str,
        ran: &mut Vec<String>,
        spent: &mut Usage,
    ) -> Said {
        let prompt = line.trim();
        if prompt.is_empty() {
            return Said::Nothing;
        }
        // `!cmd` runs a command; `!!text` sends `!text`.
        let prompt = match prompt.strip_prefix('!') {
            Some(text) if text.starts_with('!') => text,
            Some(command) => {
                self.shell(command.trim(), ran).await;
                return Said::Nothing;
            }
            None => prompt,
        };
        // `# note` goes into the project's instruction file.
        if let Some(note) = super::memory::note_of(prompt) {
            match super::memory::remember(self.session.workspace(), note) {
                Ok(file) => {
                    eprintln!("added to {file}: {note}");
                    ran.push(super::shell::memory_note(file, note));
                }
                Err(why) => eprintln!("{why}; nothing was added"),
            }
            return Said::Nothing;
        }
        // A command that stands for a prompt (`/review`, `/init`, a custom one from
        // `.claude/commands/`, where no built-in has its name) sends it.
        let custom = match SlashCommand::parse(prompt) {
            Some(Ok(_)) => None,
            _ => self.custom_prompt(prompt).await,
        };
        let asked;
        let prompt = match (custom, SlashCommand::parse(prompt)) {
            (Some(text), _) => {
                asked = text;
                asked.as_str()
            }
            (None, Some(Ok(SlashCommand::Exit))) => return Said::Exit,
            (None, Some(Ok(command))) => match command.prompt() {
                Some(text) => {
                    asked = text;
                    asked.as_str()
                }
                None => {
                    self.run_command(command, spent).await;
                    if self.switch_to.is_some() {
                        return Said::Exit;
                    }
                    return Said::Nothing;
                }
            },
            (None, Some(Err(why))) => {
                eprintln!("{why}");
                return Said::Nothing;
            }
            (None, None) => prompt,
        };
        // `//text` sends `/text`.
        let prompt = prompt
            .strip_prefix('/')
            .filter(|p| p.starts_with('/'))
            .unwrap_or(prompt);
        let mentioned = crate::mention::with_file_texts(
            prompt,
            self.session.workspace(),
            self.session.hidden_paths(),
        );
        let (prompt, attached) = match mentioned.and_then(|p| Ok((p, self.attach_from(prompt)?))) {
            Ok(both) => both,
            Err(why) => {
                eprintln!("{why}; nothing was sent");
                return Said::Nothing;
            }
        };
        if let Some(why) = self.session.reload_if_changed().await {
            eprintln!("warning: {why}; the running version of the loop stays");
        }
        Said::Prompt(
            super::shell::with_notes(std::mem::take(ran), prompt),
            attached,
        )
    }
}
