//! The line editor: `reedline` on a thread of its own (it blocks on the terminal, and its
//! parts are not `Send`), asked for one line at a time. Its history is kept under the data
//! directory (`~/.local/share/wonopcode/repl-history`), so Up finds what was typed in
//! earlier runs; where it cannot be written, the REPL says so once and keeps it in memory.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::mpsc;

use reedline::{
    ColumnarMenu, EditCommand, Emacs, FileBackedHistory, KeyCode, KeyModifiers, MenuBuilder,
    Prompt, PromptEditMode, PromptHistorySearch, PromptHistorySearchStatus, Reedline,
    ReedlineEvent, ReedlineMenu, Signal, ValidationResult, Validator, default_emacs_keybindings,
};
use tokio::sync::oneshot;

use super::complete::PromptCompleter;
use super::keys::{DOUBLE_ESC_SIGNAL, NEXT_MODE_SIGNAL, PromptKeys};
use super::paste::Pastes;

/// Lines of history kept.
const HISTORY_LINES: usize = 10_000;

/// What reading a line gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// A line (a multi-line one joined with newlines, its `\` continuations removed).
    Text(String),
    /// Ctrl-C: the line, if any, is dropped.
    Interrupted,
    /// Ctrl-D at an empty prompt, or the terminal closed.
    End,
    /// Esc twice at an empty prompt: the rewind list.
    Rewind,
    /// Shift-Tab: the next approval mode; the line typed so far, to start the next read.
    NextMode(String),
}

/// A request to the editor's thread: the prompt to show, the text the line starts with,
/// and where to send the line.
type Request = (String, String, oneshot::Sender<Line>);

/// The REPL's line editor.
pub struct LineEditor {
    requests: mpsc::Sender<Request>,
}

impl LineEditor {
    /// Starts the editor's thread; `history` is where its history lives (`None`: memory
    /// only), `workspace` the directory whose files `@` completes, `custom` the custom
    /// commands Tab offers after `/`. A history file that
    /// cannot be opened is said in one line on stderr.
    pub fn start(
        history: Option<PathBuf>,
        workspace: PathBuf,
        custom: Vec<(String, String)>,
    ) -> Self {
        let (requests, incoming) = mpsc::channel::<Request>();
        std::thread::spawn(move || {
            let pastes = Pastes::default();
            let mut editor = Some(build(history, workspace, custom, pastes.clone()));
            for (prompt, draft, reply) in incoming {
                let line = match editor.as_mut().map(|e| read(e, &pastes, &prompt, &draft)) {
                    Some(Ok(line)) => line,
                    // A terminal the editor cannot drive (one that does not report the
                    // cursor's position): plain lines from then on, said once.
                    Some(Err(e)) => {
                        eprintln!(
                            "warning: the line editor cannot drive this terminal ({e}); lines are read without editing"
                        );
                        editor = None;
                        read_plain(&prompt)
                    }
                    None => {
                        if !draft.is_empty() {
                            eprintln!("(typed during the turn, not sent: {draft})");
                        }
                        read_plain(&prompt)
                    }
                };
                if reply.send(line).is_err() {
                    break;
                }
            }
        });
        Self { requests }
    }

    /// Reads one line after `prompt` (`> `, `answer w >`), starting with `draft` (what was
    /// typed during a turn and not sent).
    pub async fn read(&self, prompt: &str, draft: String) -> Line {
        let (reply, answer) = oneshot::channel();
        if self
            .requests
            .send((prompt.to_owned(), draft, reply))
            .is_err()
        {
            return Line::End;
        }
        answer.await.unwrap_or(Line::End)
    }
}

/// Where the history is kept by default.
pub fn history_file() -> Option<PathBuf> {
    dirs::data_dir().map(|d| d.join("wonopcode").join("repl-history"))
}

fn build(
    history: Option<PathBuf>,
    workspace: PathBuf,
    custom: Vec<(String, String)>,
    pastes: Pastes,
) -> Reedline {
    let mut keybindings = default_emacs_keybindings();
    keybindings.add_binding(
        KeyModifiers::NONE,
        KeyCode::Tab,
        ReedlineEvent::UntilFound(vec![
            ReedlineEvent::Menu("commands".to_owned()),
            ReedlineEvent::MenuNext,
        ]),
    );
    // Shift-Tab: back through an open menu, else the next approval mode. Terminals send it
    // as `ESC [ Z`, which reads as BackTab with or without Shift.
    for modifiers in [KeyModifiers::SHIFT, KeyModifiers::NONE] {
        keybindings.add_binding(
            modifiers,
            KeyCode::BackTab,
            ReedlineEvent::UntilFound(vec![
                ReedlineEvent::MenuPrevious,
                ReedlineEvent::ExecuteHostCommand(NEXT_MODE_SIGNAL.to_owned()),
            ]),
        );
    }
    let menu = ColumnarMenu::default().with_name("commands");
    let editor = Reedline::create()
        .with_edit_mode(Box::new(PromptKeys::new(Emacs::new(keybindings), pastes)))
        // A paste arrives whole: its newlines never send the line.
        .use_bracketed_paste(true)
        .with_completer(Box::new(PromptCompleter { workspace, custom }))
        // A lone completion is taken at once, as a shell takes it.
        .with_quick_completions(true)
        .with_menu(ReedlineMenu::EngineCompleter(Box::new(menu)))
        .with_validator(Box::new(Continuation));
    let Some(path) = history else {
        return editor;
    };
    if let Some(dir) = path.parent() {
        // The typed prompts are the person's alone: a new directory is theirs only.
        let _ = std::os::unix::fs::DirBuilderExt::mode(
            std::fs::DirBuilder::new().recursive(true),
            0o700,
        )
        .create(dir);
    }
    match FileBackedHistory::with_file(HISTORY_LINES, path.clone()) {
        Ok(history) => editor.with_history(Box::new(history)),
        Err(e) => {
            eprintln!(
                "warning: the REPL's history cannot be kept in {}: {e}; it lasts until you quit",
                path.display()
            );
            editor
        }
    }
}

fn read(
    editor: &mut Reedline,
    pastes: &Pastes,
    prompt: &str,
    draft: &str,
) -> std::io::Result<Line> {
    let prompt = Plain(prompt.to_owned());
    if !draft.is_empty() {
        editor.run_edit_commands(&[EditCommand::InsertString(draft.to_owned())]);
    }
    loop {
        return Ok(match editor.read_line(&prompt)? {
            // Esc twice: a line typed is cleared, an empty prompt opens the rewind list.
            Signal::Success(text) if text == DOUBLE_ESC_SIGNAL => {
                if editor.current_buffer_contents().is_empty() {
                    Line::Rewind
                } else {
                    editor.run_edit_commands(&[EditCommand::Clear]);
                    continue;
                }
            }
            Signal::Success(text) if text == NEXT_MODE_SIGNAL => {
                let typed = editor.current_buffer_contents().to_owned();
                editor.run_edit_commands(&[EditCommand::Clear]);
                Line::NextMode(typed)
            }
            Signal::Success(text) => {
                // Written now, so a run that ends without dropping the editor keeps it too.
                if let Err(e) = editor.sync_history() {
                    tracing::warn!("cannot write the REPL's history: {e}");
                }
                Line::Text(pastes.expand(&joined(&text)))
            }
            Signal::CtrlC => Line::Interrupted,
            // Ctrl-D, and any signal a later reedline adds: the end of input, never a prompt.
            _ => Line::End,
        });
    }
}

/// One line from stdin without editing, after `prompt`.
fn read_plain(prompt: &str) -> Line {
    eprint!("{prompt} ");
    let mut line = String::new();
    match std::io::stdin().read_line(&mut line) {
        Ok(0) | Err(_) => Line::End,
        Ok(_) => Line::Text(line.trim_end_matches(['\n', '\r']).to_owned()),
    }
}

/// A multi-line entry as one prompt: each `\` that ended a line removed.
fn joined(text: &str) -> String {
    text.lines()
        .map(|line| line.strip_suffix('\\').unwrap_or(line))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A line ending in `\` goes on to the next.
struct Continuation;

impl Validator for Continuation {
    fn validate(&self, line: &str) -> ValidationResult {
        if line.ends_with('\\') {
            ValidationResult::Incomplete
        } else {
            ValidationResult::Complete
        }
    }
}

/// The prompt, as given, with `… ` before continuation lines.
struct Plain(String);

impl Prompt for Plain {
    fn render_prompt_left(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.0)
    }

    fn render_prompt_right(&self) -> Cow<'_, str> {
        Cow::Borrowed("")
    }

    fn render_prompt_indicator(&self, _mode: PromptEditMode) -> Cow<'_, str> {
        Cow::Borrowed(" ")
    }

    fn render_prompt_multiline_indicator(&self) -> Cow<'_, str> {
        Cow::Borrowed("… ")
    }

    fn render_prompt_history_search_indicator(&self, search: PromptHistorySearch) -> Cow<'_, str> {
        let failing = match search.status {
            PromptHistorySearchStatus::Passing => "",
            PromptHistorySearchStatus::Failing => "failing ",
        };
        Cow::Owned(format!("({failing}search: {}) ", search.term))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continuation_backslashes_are_removed() {
        assert_eq!(joined("first \\\nsecond"), "first \nsecond");
        assert_eq!(joined("one line"), "one line");
    }
}
