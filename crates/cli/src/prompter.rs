//! Questions on the terminal: permission prompts (once / always for this key / deny), and the
//! questions guest loops ask (`ui.request-input`, `ui.request-confirmation`); MCP servers'
//! forms are in `form`.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use indicatif::MultiProgress;
use std::path::Path;
use wonopcode_protocol::PermissionRequest;

use wonopcode_session::TurnCanceller;
use wonopcode_tools::permission::{Answer, PermissionPolicy, Prompter, Rule};
use wonopcode_wasm_host::GuestPrompter;

use crate::config_edit;
use crate::render::{diff_lines, one_line, visible};
use crate::repl::type_ahead;

/// Asks on stderr and reads the answer from stdin (a terminal). Serves the permission policy
/// and guest loops alike.
pub struct TerminalPrompter {
    /// Spinners to hide while asking.
    pub progress: MultiProgress,
    /// The config file an approval answered "always, for you" or "always, for this
    /// project" is written to (`--config`, else the user's).
    pub config_file: Option<std::path::PathBuf>,
    /// The workspace "always, for this project" is for.
    pub workspace: std::path::PathBuf,
    /// Whether a "no" stops the turn, and whether one did.
    pub refusals: Arc<Refusals>,
}

/// A "no" at a call's question at the REPL stops the turn, as Claude Code's "No" does: the
/// person says what to do next at the prompt (`t` refuses and lets the model go on). Where
/// nobody waits at a prompt after the turn (a one-prompt run), a "no" only refuses the call.
#[derive(Default)]
pub struct Refusals {
    /// The turn a "no" stops, once the REPL has started.
    canceller: OnceLock<TurnCanceller>,
    /// Whether a "no" stopped the turn since it was last asked.
    stopped: AtomicBool,
}

impl Refusals {
    /// From now on a "no" stops the turn `canceller` cancels.
    pub fn stop_turns(&self, canceller: TurnCanceller) {
        let _ = self.canceller.set(canceller);
    }

    /// Whether a "no" stops the turn.
    fn stop(&self) -> bool {
        self.canceller.get().is_some()
    }

    /// A "no" was given: the turn is stopped when refusals stop it.
    fn refused(&self) {
        if let Some(canceller) = self.canceller.get()
            && canceller.cancel()
        {
            self.stopped.store(true, Ordering::SeqCst);
        }
    }

    /// Whether a "no" stopped the last turn (then cleared).
    pub fn took_stop(&self) -> bool {
        self.stopped.swap(false, Ordering::SeqCst)
    }
}

/// Runs `ask`, a question read from the terminal, off the async runtime with the status
/// lines hidden and the keyboard taken from the type-ahead (`type_ahead::question`). Every
/// question reads the terminal through here, so a key typed before one was drawn never
/// answers it; `ask` is told whether the person was typing as it appeared. `None` when
/// the blocking task could not run.
async fn on_the_terminal<R: Send + 'static>(
    progress: MultiProgress,
    ask: impl FnOnce(bool) -> R + Send + 'static,
) -> Option<R> {
    // The keyboard is taken before the status lines are hidden: taking it reads the keys
    // waiting into the typed line, which redraws through `progress`, and a redraw inside
    // `suspend` would wait on the lock `suspend` holds.
    tokio::task::spawn_blocking(move || {
        type_ahead::question(|typing| progress.suspend(|| ask(typing)))
    })
    .await
    .ok()
}

/// Writes `question` and reads one line; `None` at the end of input.
pub async fn read_line(question: String, progress: MultiProgress) -> Option<String> {
    on_the_terminal(progress, move |_typing| {
        let mut stderr = std::io::stderr();
        let _ = write!(stderr, "{question}");
        let _ = stderr.flush();
        let mut line = String::new();
        match std::io::stdin().read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line.trim_end_matches(['\n', '\r']).to_owned()),
        }
    })
    .await
    .flatten()
}

/// A short answer, trimmed and lower-cased (empty at the end of input).
async fn read_answer(question: String, progress: MultiProgress) -> String {
    read_line(question, progress)
        .await
        .map(|l| l.trim().to_lowercase())
        .unwrap_or_default()
}

/// How long a person who was typing as a one-key question appeared must pause before a
/// key answers it.
const SETTLE: std::time::Duration = std::time::Duration::from_millis(600);

/// The keys a one-key question takes: each with the word echoed when it answers, the
/// line that says them when another key is pressed, and what Enter alone and Esc answer.
pub(crate) struct Keys {
    answers: Vec<(char, String)>,
    help: String,
    /// What Enter alone answers (`None`: it is another key).
    enter: Option<char>,
    /// What Esc answers.
    escape: char,
}

impl Keys {
    /// A question answered by one of `answers` (`(key, word echoed)`), Esc answering `n`.
    fn new<W: Into<String>>(
        answers: impl IntoIterator<Item = (char, W)>,
        help: impl Into<String>,
    ) -> Self {
        Self {
            answers: answers.into_iter().map(|(k, w)| (k, w.into())).collect(),
            help: help.into(),
            enter: None,
            escape: 'n',
        }
    }

    /// A choice among `answers` where Enter takes `default` and Esc `escape`.
    pub(crate) fn choice<W: Into<String>>(
        answers: impl IntoIterator<Item = (char, W)>,
        help: impl Into<String>,
        default: char,
        escape: char,
    ) -> Self {
        Self {
            enter: Some(default),
            escape,
            ..Self::new(answers, help)
        }
    }

    /// A call's approval: `t` refuses with a line for the model, `u` and `p` approve for
    /// good; `stops`: whether `n` stops the turn (said in its help).
    fn call(stops: bool) -> Self {
        let no = if stops {
            "n or Esc (no, and stop the turn)"
        } else {
            "n or Esc (no)"
        };
        Self::new(
            [
                ('y', "yes"),
                ('a', "always"),
                ('p', "always, for this project"),
                ('u', "always, for you"),
                ('n', "no"),
                ('t', "no, and"),
            ],
            format!(
                "y (once), a (always), p (always, for this project), u (always, for you: both written to your config), {no}, or t (no, and tell the model what to do instead)"
            ),
        )
    }

    /// A sandbox escalation's approval: never beyond the session.
    fn escalation() -> Self {
        Self::new(
            [('y', "yes"), ('a', "always"), ('n', "no")],
            "y (once), a (always), or n or Esc (no)",
        )
    }

    /// A yes/no question whose default is no (`[y/N]`).
    fn yes_no() -> Self {
        Self::choice(
            [('y', "yes"), ('n', "no")],
            "y (yes), or n, Esc or Enter (no)",
            'n',
            'n',
        )
    }

    /// The answer `key` gives, when it gives one.
    fn answer(&self, key: char) -> Option<char> {
        let key = key.to_ascii_lowercase();
        self.answers.iter().any(|(k, _)| *k == key).then_some(key)
    }

    /// The word echoed for the answer `key` (nothing for one that has none).
    fn word(&self, key: char) -> &str {
        self.answers
            .iter()
            .find(|(k, _)| *k == key)
            .map_or("", |(_, word)| word.as_str())
    }
}

/// One key answering a question (`keys` says which), read with the terminal raw: the key
/// answers at once (Esc and Enter as `keys` says; any other key says which keys answer;
/// an Enter typed with it, `y⏎` by habit, goes with it). Ctrl-C answers as Esc does and
/// interrupts the turn as it does elsewhere: raw, the terminal makes it a key, so it is
/// raised again as SIGINT. `None` when the terminal cannot be read raw (the caller reads a
/// line instead).
///
/// Keys waiting when it appears were typed for something else and are dropped. When the
/// person was typing as it appeared (`typing`, or characters were waiting), a key answers only
/// after a pause of [`SETTLE`] with no key: a steering line typed on without looking up
/// (`a`, `p`, `y` are common letters) never approves anything.
pub(crate) async fn read_key(
    question: String,
    progress: MultiProgress,
    keys: Keys,
) -> Option<char> {
    use crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
    use std::time::{Duration, Instant};
    on_the_terminal(progress, move |mut typing| {
        // Raw before the question shows, so a key typed at once is not held back as a
        // line; lines then end with a carriage return of their own.
        crossterm::terminal::enable_raw_mode().ok()?;
        while event::poll(Duration::ZERO).unwrap_or(false) {
            // A character is typing; an Enter left from the last question's `y⏎` is not
            // (raw, a line feed reads as Ctrl-J).
            if let Ok(Event::Key(key)) = event::read()
                && matches!(key.code, KeyCode::Char(_))
                && !key.modifiers.contains(KeyModifiers::CONTROL)
            {
                typing = true;
            }
        }
        let question = question.replace('\n', "\r\n");
        // Asked again after a hint: a menu's last line (where the answer goes), not the
        // whole menu.
        let again = question.rsplit("\r\n").next().unwrap_or(&question);
        let mut stderr = std::io::stderr();
        let _ = write!(stderr, "{question}");
        let _ = stderr.flush();
        let mut settled_at = typing.then(|| Instant::now() + SETTLE);
        let mut told = false;
        let mut interrupted = false;
        let key = loop {
            let Ok(read) = event::read() else {
                break keys.escape;
            };
            let Event::Key(key) = read else {
                continue;
            };
            if key.kind != KeyEventKind::Press {
                continue;
            }
            let ctrl_c =
                key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL);
            if let Some(at) = settled_at
                && !ctrl_c
            {
                let now = Instant::now();
                if now < at {
                    settled_at = Some(now + SETTLE);
                    if !told {
                        told = true;
                        let _ = write!(
                            stderr,
                            "\r\n  (what you were typing is not an answer: stop, read the question, then press a key)\r\n{again}"
                        );
                        let _ = stderr.flush();
                    }
                    continue;
                }
                settled_at = None;
            }
            let answer = match key.code {
                KeyCode::Char('c') if ctrl_c => {
                    interrupted = true;
                    Some(keys.escape)
                }
                KeyCode::Char(c) => keys.answer(c),
                KeyCode::Esc => Some(keys.escape),
                KeyCode::Enter => keys.enter,
                _ => None,
            };
            match answer {
                Some(answer) => break answer,
                None => {
                    let _ = write!(stderr, "\r\n  press {}\r\n{again}", keys.help);
                    let _ = stderr.flush();
                }
            }
        };
        // An Enter typed with the key is part of the answer.
        while event::poll(Duration::ZERO).unwrap_or(false) {
            let _ = event::read();
        }
        let word = keys.word(key);
        let _ = write!(stderr, "{word}\r\n");
        let _ = stderr.flush();
        let _ = crossterm::terminal::disable_raw_mode();
        if interrupted {
            let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGINT);
        }
        Some(key)
    })
    .await
    .flatten()
}

/// An approval's key (`keys`: a call's or a sandbox escalation's): one at a terminal, else
/// the first of a line.
async fn approval_key(question: String, progress: MultiProgress, keys: Keys) -> char {
    match read_key(question.clone(), progress.clone(), keys).await {
        Some(key) => key,
        None => read_answer(question, progress)
            .await
            .chars()
            .next()
            .unwrap_or('n'),
    }
}

/// `u`'s and `p`'s rules: each key "always" covers, allowed from now on (a command's words
/// as a prefix, a file tool's path as it was asked about).
fn rules_for(request: &PermissionRequest) -> Vec<Rule> {
    PermissionPolicy::approval_keys(request)
        .iter()
        .map(|key| {
            let (tool, subject) = key.split_once(':').unwrap_or((key.as_str(), ""));
            Rule::allowing(tool, subject)
        })
        .collect()
}

/// Writes `rules` first in the config file's `permissions.rules`, or for `project` (a
/// workspace) in its `projects.PATH.permissions.rules` (first match wins, so they answer
/// these calls before any rule that asks); the file written.
fn remember(
    rules: &[Rule],
    file: Option<&Path>,
    project: Option<&Path>,
) -> anyhow::Result<std::path::PathBuf> {
    let path = config_edit::path(file)?;
    let mut document = config_edit::read(&path)?;
    let mut scope = config_edit::top(&mut document, &path)?;
    if let Some(project) = project {
        let projects = config_edit::mapping_at(scope, "projects", &path)?;
        scope = config_edit::mapping_at(projects, &project.to_string_lossy(), &path)?;
    }
    let permissions = config_edit::mapping_at(scope, "permissions", &path)?;
    let listed = config_edit::list_at(permissions, "rules", &path)?;
    for (at, rule) in rules.iter().enumerate() {
        listed.insert(at, serde_yaml::to_value(rule)?);
    }
    config_edit::write(&path, &document)?;
    Ok(path)
}

/// A question's answers, one line each (`key  what it does`), and the line the key is
/// typed on.
fn menu(answers: &[(char, &str)]) -> String {
    let mut lines: Vec<String> = answers
        .iter()
        .map(|(key, what)| format!("    {key}  {what}"))
        .collect();
    lines.push("  answer: ".to_owned());
    lines.join("\n")
}

/// Asked after `t`: the line goes back to the model as the refusal.
const TELL: &str = "  tell the model what to do instead: ";

/// A yes/no question, one key at a terminal (a line where it cannot be read raw): only an
/// explicit yes is yes.
pub async fn confirm(question: String, progress: MultiProgress) -> bool {
    match read_key(question.clone(), progress.clone(), Keys::yes_no()).await {
        Some(key) => key == 'y',
        None => matches!(read_answer(question, progress).await.as_str(), "y" | "yes"),
    }
}

/// Lines of a diff shown in an approval prompt; a longer change says how much is left out.
const APPROVAL_DIFF_LINES: usize = 200;

/// What an "always" answer approves, in words: the same call again for the rest of the
/// session (each simple command of a `bash` line, or the tool on this path).
fn always_covers(request: &PermissionRequest) -> String {
    if request.subject.is_none() {
        return format!("every `{}` call in this session", one_line(&request.tool));
    }
    let keys = PermissionPolicy::approval_keys(request);
    let subjects: Vec<String> = keys
        .iter()
        .map(|key| {
            let subject = key.split_once(':').map_or(key.as_str(), |(_, s)| s);
            format!("`{}`", one_line(subject))
        })
        .collect();
    match request.tool.as_str() {
        "bash" => format!("{} in this session", subjects.join(", ")),
        tool => format!(
            "`{}` on {} in this session",
            one_line(tool),
            subjects.join(", ")
        ),
    }
}

#[async_trait]
impl Prompter for TerminalPrompter {
    async fn ask(&self, request: &PermissionRequest) -> Answer {
        // The exact subject, every character shown: a multi-line command in full, on lines
        // of its own; then the change a file tool would make.
        let tool = one_line(&request.tool);
        let what = match request.subject.as_deref() {
            Some(s) if s.contains('\n') => {
                let lines: Vec<String> =
                    s.lines().map(|l| format!("    {}", one_line(l))).collect();
                format!("`{tool}` on\n{}\n ", lines.join("\n"))
            }
            Some(s) => format!("`{tool}` on `{}`", one_line(s)),
            None => format!("`{tool}`"),
        };
        let diff = request
            .preview
            .as_deref()
            .map(|d| {
                let mut lines = diff_lines(d, "    ", APPROVAL_DIFF_LINES, false);
                lines.push(String::new());
                lines.join("\n")
            })
            .unwrap_or_default();
        let stops = self.refusals.stop();
        let no = if stops {
            "no, and stop the turn (Esc)"
        } else {
            "no (Esc)"
        };
        let question = format!(
            "{diff}{} allow {what}?\n{}",
            console::style("?").yellow().bold(),
            menu(&[
                ('y', "yes, this once"),
                ('a', &format!("yes, and always {}", always_covers(request))),
                ('p', "yes, and always in this project (kept in your config)"),
                ('u', "yes, and always, for you (kept in your config)"),
                ('n', no),
                ('t', "no, and tell the model what to do instead"),
            ])
        );
        match approval_key(question, self.progress.clone(), Keys::call(stops)).await {
            'y' => Answer::Once,
            'a' => Answer::Always,
            key @ ('u' | 'p') => {
                let rules = rules_for(request);
                let (project, where_) = match key {
                    'p' => (Some(self.workspace.as_path()), "in this workspace"),
                    _ => (None, "in every workspace"),
                };
                let said = match remember(&rules, self.config_file.as_deref(), project) {
                    Ok(path) => format!(
                        "  allowed from now on, {where_} ({}): {}",
                        path.display(),
                        rules
                            .iter()
                            .map(|r| match &r.pattern {
                                Some(pattern) => format!("`{}:{pattern}`", r.tool),
                                None => format!("`{}`", r.tool),
                            })
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    Err(e) => format!("  allowed for this session only: {e:#}"),
                };
                self.progress.suspend(|| eprintln!("{}", one_line(&said)));
                Answer::Always
            }
            't' => match read_line(TELL.to_owned(), self.progress.clone()).await {
                Some(said) if !said.trim().is_empty() => Answer::DenyWith(said.trim().to_owned()),
                _ => Answer::Deny,
            },
            _ => {
                self.refusals.refused();
                Answer::Deny
            }
        }
    }

    async fn ask_escalation(&self, tool: &str, subject: &str, blocked: &str) -> Answer {
        // A command is run again unconfined; a file tool's write is let through.
        let (tool, subject) = (one_line(tool), one_line(subject));
        let (what, always) = if tool == "bash" {
            (
                format!("run `{subject}` again outside the sandbox"),
                format!("`{subject}` outside the sandbox"),
            )
        } else {
            (
                format!("let `{tool}` write `{subject}`"),
                format!("`{tool}` writing `{subject}`"),
            )
        };
        let question = format!(
            "{} the sandbox stopped `{tool}` ({}): {what}?\n{}",
            console::style("!").red().bold(),
            one_line(blocked),
            menu(&[
                ('y', "yes, this once"),
                ('a', &format!("yes, and always {always} in this session")),
                ('n', "no: it stays in the sandbox (Esc)"),
            ])
        );
        match approval_key(question, self.progress.clone(), Keys::escalation()).await {
            'y' => Answer::Once,
            'a' => Answer::Always,
            _ => Answer::Deny,
        }
    }

    async fn confirm_repetition(&self, tool: &str, count: usize) -> bool {
        let tool = one_line(tool);
        let question = format!(
            "{} the model called `{tool}` {count} times in a row with the same arguments. Let it go on? [y/N]: ",
            console::style("?").yellow().bold()
        );
        confirm(question, self.progress.clone()).await
    }
}

#[async_trait]
impl GuestPrompter for TerminalPrompter {
    async fn input(&self, guest: &str, prompt: &str) -> Option<String> {
        let (guest, prompt) = (one_line(guest), visible(prompt));
        let question = format!("{} [{guest}] {prompt} ", console::style("?").cyan().bold());
        read_line(question, self.progress.clone()).await
    }

    async fn confirm(&self, guest: &str, message: &str) -> bool {
        let (guest, message) = (one_line(guest), visible(message));
        let question = format!(
            "{} [{guest}] {message} [y/N]: ",
            console::style("?").cyan().bold()
        );
        confirm(question, self.progress.clone()).await
    }

    async fn form(
        &self,
        guest: &str,
        message: &str,
        schema: &serde_json::Map<String, serde_json::Value>,
        fields: &[String],
    ) -> Option<serde_json::Map<String, serde_json::Value>> {
        // The same questions as an MCP server's form.
        let form = wonopcode_mcp::Form {
            message: message.to_owned(),
            schema: schema.clone(),
            fields: fields.to_vec(),
        };
        match wonopcode_mcp::Elicitor::elicit(self, guest, &form).await {
            wonopcode_mcp::Elicited::Accept(values) => {
                Some(wonopcode_mcp::with_defaults(values, schema))
            }
            _ => None,
        }
    }
}
