//! The REPL's turns: a line read at the prompt (or typed during the last turn), run as a
//! slash command or a prompt, and what was typed while it ran (`type_ahead`) taken care of
//! once it ends: a finished turn sends what waits for it, one prompt at a time, and what
//! was half typed comes back at the prompt; a turn that did not finish sends nothing on its
//! own, and everything typed comes back at the prompt.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;

use anyhow::bail;
use wonopcode_agent_loop::LoopResult;
use wonopcode_protocol::{LoopStatus, Part, Usage};
use wonopcode_tools::permission::Mode;

use super::said::Said;
use super::type_ahead::TypeAhead;
use super::{Line, LineEditor, SlashCommand};
use crate::exit;
use crate::render::one_line;
use crate::render::typed::Typing;
use crate::repl::editor::history_file;
use crate::run::{Cli, waits_in_child};

/// What the REPL runs next.
enum Next {
    Prompt(String, Vec<Part>),
    Answers(Vec<(String, String)>),
}

/// What was typed during turns, waiting to be used.
#[derive(Default)]
struct Typed {
    /// Prompts to send, one turn each, before the prompt is shown again.
    prompts: VecDeque<String>,
    /// The text the next prompt starts with.
    draft: String,
}

impl Typed {
    /// Takes in what was typed during a turn that ended with `status`; `unsent`: what was
    /// sent into the turn and no request took.
    fn after_turn(&mut self, status: LoopStatus, unsent: Vec<String>, typing: Typing) {
        if status == LoopStatus::Complete {
            if !unsent.is_empty() {
                self.prompts.push_back(unsent.join("\n\n"));
            }
            self.prompts.extend(typing.queued);
            self.draft = typing.draft;
            return;
        }
        let back: Vec<String> = unsent
            .into_iter()
            .chain(typing.queued)
            .chain(std::iter::once(typing.draft))
            .chain(self.prompts.drain(..))
            .filter(|t| !t.trim().is_empty())
            .collect();
        if !back.is_empty() {
            eprintln!(
                "(the turn did not finish, so what you typed meanwhile was not sent: it is back at the prompt)"
            );
        }
        self.draft = back.join("\n");
    }
}

impl Cli {
    /// The REPL, its first line `opening` when the session was opened with a prompt (as if
    /// typed at the prompt: a slash command, `!`, `@file` work in it too).
    pub(crate) async fn repl(&mut self, mut opening: Option<String>) -> anyhow::Result<u8> {
        self.banner();
        self.in_repl = true;
        self.refusals.stop_turns(self.session.canceller());
        let custom = self
            .session
            .command_files()
            .iter()
            .map(|c| (c.name.clone(), c.description.clone()))
            .collect();
        let editor = LineEditor::start(
            history_file(),
            self.session.workspace().to_path_buf(),
            custom,
        );
        let mut spent = Usage::default();
        let mut typed = Typed::default();
        // After a resume that failed (a guest that cannot resume), the next line is a new
        // prompt, which closes the waiting calls as not run.
        let mut offer_answers = true;
        // Whether the last key at the prompt was Ctrl-C.
        let mut interrupted = false;
        // The `!` commands run and `#` notes added since the last prompt, told to the model
        // with the next.
        let mut ran = Vec::new();
        loop {
            let marker = super::mode::marker(self.session.mode());
            let next = if !offer_answers || self.session.pending().is_empty() {
                // The line the session opened with, else one typed during the last turn,
                // else one read at the prompt.
                let waiting = opening.take().map(|line| (line, "")).or_else(|| {
                    typed
                        .prompts
                        .pop_front()
                        .map(|line| (line, " (typed during the last turn)"))
                });
                let line = match waiting {
                    Some((line, note)) => {
                        eprintln!("{marker} {}{}", one_line(&line), console::style(note).dim());
                        line
                    }
                    None => match editor.read(&marker, std::mem::take(&mut typed.draft)).await {
                        Line::End => return Ok(exit::SUCCESS),
                        // The line is cleared; a second Ctrl-C, at the empty prompt, quits.
                        Line::Interrupted if interrupted => return Ok(exit::SUCCESS),
                        Line::Interrupted => {
                            interrupted = true;
                            eprintln!("(Ctrl-C again or Ctrl-D to quit)");
                            continue;
                        }
                        Line::Rewind => {
                            interrupted = false;
                            self.run_command(SlashCommand::Rewind(None), &mut spent)
                                .await;
                            continue;
                        }
                        Line::NextMode(draft) => {
                            interrupted = false;
                            self.next_mode();
                            typed.draft = draft;
                            continue;
                        }
                        Line::Text(line) => line,
                    },
                };
                interrupted = false;
                match self.said(&line, &mut ran, &mut spent).await {
                    Said::Nothing => continue,
                    Said::Exit => return Ok(exit::SUCCESS),
                    Said::Prompt(prompt, attached) => Next::Prompt(prompt, attached),
                }
            } else {
                let Some(answers) = self.answer_pending(&editor).await else {
                    return Ok(exit::SUCCESS);
                };
                Next::Answers(answers)
            };
            // A line half typed before a prompt typed during the last turn is still being
            // typed during this one.
            let (result, typing) = self.turn(next, std::mem::take(&mut typed.draft)).await?;
            if self.refusals.took_stop() {
                eprintln!(
                    "(refused: the turn stopped; say what to do instead, or press t at the question to tell the model and let it go on)"
                );
            }
            let unsent = self.session.steering().take();
            typed.after_turn(result.status, unsent, typing);
            // Calls waiting in child contexts are answered through the run's journal (the
            // tree is started again; `report` says how), not here.
            offer_answers = result.status != LoopStatus::Error && !waits_in_child(&result);
            spent.add(&result.usage);
            let code = self.finish(&result);
            if self.stopped_by.load(Ordering::SeqCst) != 0 {
                return Ok(code);
            }
            if code == exit::ERROR && self.session.failure().is_some() {
                bail!("stopping: the history file can no longer be written");
            }
            if opening.is_none() {
                opening = self.approve_plan(&result).await;
            }
        }
    }

    /// The line the REPL starts with: the model, the loop, the sandbox, the approvals and
    /// the mode, then the workspace and how to get help or leave.
    fn banner(&self) {
        let model = self.session.model();
        let mode = match self.session.mode() {
            Mode::Ask => String::new(),
            other => format!(" · mode: {other} (Shift-Tab to change)"),
        };
        eprintln!(
            "wonopcode · {}/{} · loop {} · sandbox {} · approvals: {}{mode}",
            model.provider,
            model.id,
            self.session.loop_name(),
            self.session.sandbox_mode(),
            self.approvals
        );
        eprintln!(
            "workspace {} · /help for commands · Ctrl-D to quit",
            self.session.workspace().display()
        );
    }

    /// `!command`: runs it with the run's `bash` tool and shows what it said; the command
    /// and its output are kept in `ran` for the next prompt.
    pub(super) async fn shell(&mut self, command: &str, ran: &mut Vec<String>) {
        if command.is_empty() {
            eprintln!("`!` runs a shell command in the workspace: !git status");
            return;
        }
        match self.session.shell(command).await {
            Some((said, _failed)) => {
                eprintln!("{}", super::shell::shown(&said));
                ran.push(super::shell::note(command, &said));
            }
            None => eprintln!("this run has no `bash` tool, so `!` cannot run a command"),
        }
    }

    /// Runs a prompt or the answers to a suspended run with the keyboard read meanwhile,
    /// the line being typed starting as `draft`: its result, and what was typed.
    async fn turn(&mut self, next: Next, draft: String) -> anyhow::Result<(LoopResult, Typing)> {
        self.typed.update(|typing| typing.draft = draft);
        let typing = TypeAhead::start(
            self.typed.clone(),
            self.session.steering(),
            self.session.canceller(),
        );
        let result = match next {
            Next::Prompt(prompt, attached) => self.session.prompt_with(&prompt, attached).await,
            Next::Answers(answers) => self.session.resume(answers).await?,
        };
        let typing = match typing {
            Some(typing) => typing.stop(),
            None => self.typed.take(),
        };
        Ok((result, typing))
    }

    /// Shows each call the suspended run waits on and reads its answer: a typed line
    /// answers the call, an empty line lets it run (asking for approval as usual). `None`:
    /// the user quit.
    async fn answer_pending(&self, editor: &LineEditor) -> Option<Vec<(String, String)>> {
        let mut answers = Vec::new();
        for call in self.session.pending() {
            eprintln!(
                "the run waits on `{}` ({}): {}",
                one_line(&call.name),
                one_line(&call.id),
                one_line(&call.arguments)
            );
            let label = format!("answer {} (Enter: let it run) >", one_line(&call.id));
            let label = console::style(label).yellow().bold().to_string();
            let line = loop {
                match editor.read(&label, String::new()).await {
                    Line::Text(line) => break line,
                    // The rewind list and the mode are the prompt's, not an answer's: asked
                    // again.
                    Line::Rewind | Line::NextMode(_) => {}
                    Line::Interrupted | Line::End => return None,
                }
            };
            match line.trim() {
                "/exit" | "/quit" => return None,
                "" => {}
                text => answers.push((call.id, text.to_owned())),
            }
        }
        Some(answers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typing(draft: &str, queued: &[&str]) -> Typing {
        Typing {
            draft: draft.to_owned(),
            queued: queued.iter().map(|q| (*q).to_owned()).collect(),
        }
    }

    #[test]
    fn a_finished_turn_sends_what_waits_and_keeps_the_half_typed_line() {
        let mut typed = Typed::default();
        typed.after_turn(
            LoopStatus::Complete,
            vec!["too late".to_owned(), "for the turn".to_owned()],
            typing("half", &["then tests", "then docs"]),
        );
        assert_eq!(
            typed.prompts,
            ["too late\n\nfor the turn", "then tests", "then docs"]
        );
        assert_eq!(typed.draft, "half");
    }

    #[test]
    fn a_turn_that_did_not_finish_sends_nothing_and_gives_it_all_back() {
        let mut typed = Typed::default();
        typed.prompts.push_back("waiting since before".to_owned());
        typed.after_turn(
            LoopStatus::Cancelled,
            vec!["steer".to_owned()],
            typing("half", &["queued"]),
        );
        assert!(typed.prompts.is_empty());
        assert_eq!(typed.draft, "steer\nqueued\nhalf\nwaiting since before");
    }
}
