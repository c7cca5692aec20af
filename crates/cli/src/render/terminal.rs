//! The human renderer: streamed answer text on stdout; reasoning (dimmed), tool calls (a
//! spinner while they run, one line after), todo lists and usage on stderr. Sub-contexts are
//! shown on stderr, indented by depth and labelled with their module: when they start and
//! end, their tool calls and their answers; after a turn that spawned any, a summary tree.
//! Colors follow `NO_COLOR` and whether the stream is a terminal.

use std::collections::HashMap;
use std::io::Write;
use std::time::Duration;

use console::style;
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use wonopcode_protocol::event::{
    HookItem, HookVerdict, Item, ItemDetails, ItemStatus, TodoItem, TodoStatus, ToolCallItem,
};
use wonopcode_protocol::{ContextStatus, Event, EventKind, LoopStatus};

use super::Renderer;
use super::diff::diff_lines;
use super::markdown::MarkdownStream;
use super::status::StatusLines;
use super::tree::{TurnContexts, cost, elapsed, in_out, tokens};
use super::typed::TypedLines;
use super::visible::{clip, one_line, visible_event};

/// Lines of a sub-context's answer shown; the rest is in its parent's tool result.
const CHILD_ANSWER_LINES: usize = 4;

/// Characters of each of those lines shown.
const CHILD_LINE_CHARS: usize = 160;

/// Lines of a finished `edit` or `write`'s diff shown under it.
const FOLDED_DIFF_LINES: usize = 8;

/// Lines of a command's output shown under it; the model saw all of it.
const COMMAND_OUTPUT_LINES: usize = 4;

#[derive(Clone, Copy, PartialEq, Eq)]
enum TextKind {
    Answer,
    Reasoning,
}

/// Renders for a person.
pub struct TerminalRenderer {
    progress: MultiProgress,
    spinners: HashMap<String, ProgressBar>,
    text_items: HashMap<String, TextKind>,
    stdout_mid_line: bool,
    stderr_mid_line: bool,
    contexts: TurnContexts,
    root_module: String,
    status: StatusLines,
    /// The answer's Markdown renderer; `None`: the text as the model sent it.
    markdown: Option<MarkdownStream>,
    /// What the person types while the turn runs, drawn under every other line.
    typed: TypedLines,
}

impl TerminalRenderer {
    /// A renderer drawing spinners through `progress` above `typed`, the answer's
    /// Markdown rendered when `markdown` (its styles in colour when stdout takes them).
    pub fn new(progress: MultiProgress, typed: TypedLines, markdown: bool) -> Self {
        Self {
            markdown: markdown.then(|| MarkdownStream::new(console::colors_enabled())),
            status: StatusLines::new(progress.clone(), typed.clone()),
            typed,
            progress,
            spinners: HashMap::new(),
            text_items: HashMap::new(),
            stdout_mid_line: false,
            stderr_mid_line: false,
            contexts: TurnContexts::default(),
            root_module: String::new(),
        }
    }

    /// An event of a sub-context: one indented, labelled line on stderr for what matters.
    fn render_child(&mut self, event: &Event) {
        let path = &event.context;
        let indent = "  ".repeat(path.depth());
        let label = |module: &str| style(format!("[{path} {module}]")).cyan().to_string();
        match &event.kind {
            EventKind::ContextStarted {
                module,
                task,
                resumed,
            } => {
                self.contexts.started(path, module);
                self.status
                    .start(path, format!("{} working", label(module)));
                let task = clip(task.lines().next().unwrap_or(""), 80);
                let resumed = if *resumed {
                    style(" (resumed)").dim().to_string()
                } else {
                    String::new()
                };
                self.err_line(&format!(
                    "{indent}{} {}{resumed} {task}",
                    style("▸").cyan(),
                    label(module)
                ));
            }
            EventKind::ContextCompleted {
                module,
                status,
                error,
                duration_ms,
                requests,
                usage,
                modified_files,
            } => {
                self.status.stop(path);
                self.contexts
                    .ended(path, *status, *duration_ms, *requests, *usage);
                let mark = match status {
                    ContextStatus::Completed => style("◂").green(),
                    _ => style("◂").red(),
                };
                let why = error
                    .as_deref()
                    .map(|e| format!(": {}", e.lines().next().unwrap_or("")))
                    .unwrap_or_default();
                let line = format!(
                    "{indent}{mark} {} {}{why} {}",
                    label(module),
                    status.as_str(),
                    style(format!(
                        "· {} · {} · {}{}",
                        elapsed(*duration_ms),
                        tokens(usage),
                        cost(usage),
                        if modified_files.is_empty() {
                            String::new()
                        } else {
                            format!(" · changed {}", modified_files.join(", "))
                        }
                    ))
                    .dim()
                );
                self.err_line(&line);
            }
            EventKind::ItemCompleted { item } => {
                let module = self.contexts.module(path).unwrap_or("").to_owned();
                match &item.details {
                    ItemDetails::ToolCall(call) | ItemDetails::McpToolCall(call) => {
                        let line = tool_line(call);
                        self.err_line(&format!("{indent}  {} {line}", label(&module)));
                        for line in call_details(call, &format!("{indent}    ")) {
                            self.err_line(&line);
                        }
                    }
                    ItemDetails::AgentMessage { text } => {
                        let mut lines: Vec<String> = text
                            .lines()
                            .filter(|l| !l.trim().is_empty())
                            .take(CHILD_ANSWER_LINES + 1)
                            .map(|l| {
                                let l = clip(l, CHILD_LINE_CHARS);
                                format!("{indent}  {} {}", label(&module), style(l).dim())
                            })
                            .collect();
                        if lines.len() > CHILD_ANSWER_LINES {
                            lines.truncate(CHILD_ANSWER_LINES);
                            lines.push(format!(
                                "{indent}  {} {}",
                                label(&module),
                                style("…").dim()
                            ));
                        }
                        for line in lines {
                            self.err_line(&line);
                        }
                    }
                    ItemDetails::Error { message } => self.err_line(&format!(
                        "{indent}  {} {} {message}",
                        label(&module),
                        style("!").red().bold()
                    )),
                    ItemDetails::Info { message } => self.err_line(&format!(
                        "{indent}  {} {}",
                        label(&module),
                        style(format!("· {message}")).dim()
                    )),
                    ItemDetails::Hook(hook) => {
                        if let Some(line) = hook_line(hook) {
                            self.err_line(&format!("{indent}  {} {line}", label(&module)));
                        }
                    }
                    // The CLI prints the host's warnings itself (`warning:`).
                    ItemDetails::Reasoning { .. }
                    | ItemDetails::TodoList { .. }
                    | ItemDetails::Progress { .. }
                    | ItemDetails::UserMessage { .. }
                    | ItemDetails::Diagnostic { .. } => {}
                }
            }
            EventKind::ItemDelta { text, .. } => self.status.streamed(path, text.len()),
            // A child's progress: one line under its label each time it says more.
            EventKind::ItemStarted { item } | EventKind::ItemUpdated { item } => {
                if let ItemDetails::Progress { message, fraction } = &item.details {
                    let module = self.contexts.module(path).unwrap_or("").to_owned();
                    self.err_line(&format!(
                        "{indent}  {} {}",
                        label(&module),
                        style(format!("… {}", progress_text(message, *fraction))).dim()
                    ));
                }
            }
            _ => {}
        }
    }

    /// Writes `text` to stdout. Whole lines (the Markdown renderer's) go above the status
    /// lines, which stay drawn and ticking; text that stops mid-line hides them first, since
    /// drawn after it they would erase it.
    fn out(&mut self, text: &str) {
        if !text.is_empty() && !text.ends_with('\n') {
            self.status.show(false);
        }
        self.progress.suspend(|| {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
        });
        if !text.is_empty() {
            self.stdout_mid_line = !text.ends_with('\n');
        }
    }

    fn err_line(&mut self, line: &str) {
        if self.stdout_mid_line {
            self.out("\n");
        }
        let prefix = if self.stderr_mid_line { "\n" } else { "" };
        self.stderr_mid_line = false;
        self.progress.suspend(|| eprintln!("{prefix}{line}"));
    }

    fn todo_list(&mut self, items: &[TodoItem]) {
        let mut lines = vec![style("todo:").bold().to_string()];
        for t in items {
            let mark = match t.status {
                TodoStatus::Completed => style("[x]").green(),
                TodoStatus::InProgress => style("[~]").yellow(),
                TodoStatus::Pending => style("[ ]").dim(),
            };
            lines.push(format!("  {mark} {}", t.content));
        }
        self.err_line(&lines.join("\n"));
    }

    /// A spinner for an item while it lasts: a running tool, a loop's progress.
    fn spinner(&mut self, id: &str, message: String) {
        if self.stdout_mid_line {
            self.out("\n");
        }
        let bar = self.progress.add(ProgressBar::new_spinner());
        self.typed.keep_last();
        bar.set_style(
            ProgressStyle::with_template("{spinner:.cyan} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.set_message(message);
        // A ticker is a thread: none where nothing is drawn (stderr not a terminal).
        if !bar.is_hidden() {
            bar.enable_steady_tick(Duration::from_millis(80));
        }
        self.spinners.insert(id.to_owned(), bar);
    }

    fn clear_spinner(&mut self, id: &str) {
        if let Some(bar) = self.spinners.remove(id) {
            bar.finish_and_clear();
            self.progress.remove(&bar);
        }
    }

    fn tool_started(&mut self, id: &str, item: &ToolCallItem) {
        self.spinner(id, summary(item));
    }

    fn tool_finished(&mut self, id: &str, item: &ToolCallItem) {
        self.clear_spinner(id);
        let line = tool_line(item);
        self.err_line(&line);
        for line in call_details(item, "  ") {
            self.err_line(&line);
        }
    }
}

/// What a finished call did, under its line: a file tool's diff, folded; the first lines a
/// command printed. Nothing for a call that did not run.
fn call_details(item: &ToolCallItem, indent: &str) -> Vec<String> {
    if item.status == ItemStatus::Declined {
        return Vec::new();
    }
    let diffs: String = item.changes().filter_map(|c| c.diff.as_deref()).collect();
    if !diffs.is_empty() {
        return diff_lines(&diffs, indent, FOLDED_DIFF_LINES, true);
    }
    if item.command.is_none() {
        return Vec::new();
    }
    // `bash`'s result is its headline (the exit code, what the sandbox blocked), then
    // `stdout:` and `stderr:` sections.
    let output = item.output.as_deref().unwrap_or("");
    let printed: Vec<&str> = output
        .lines()
        .skip_while(|l| !matches!(*l, "stdout:" | "stderr:"))
        .filter(|l| !matches!(*l, "stdout:" | "stderr:") && !l.trim().is_empty())
        .collect();
    let bar = style("│").dim();
    let mut lines: Vec<String> = printed
        .iter()
        .take(COMMAND_OUTPUT_LINES)
        .map(|l| format!("{indent}{bar} {}", style(clip(&one_line(l), 120)).dim()))
        .collect();
    if printed.len() > COMMAND_OUTPUT_LINES {
        lines.push(format!(
            "{indent}{bar} {}",
            style(format!(
                "… {} more line(s)",
                printed.len() - COMMAND_OUTPUT_LINES
            ))
            .dim()
        ));
    }
    lines
}

/// A loop's progress as one line: its message, and how far along when it says.
fn progress_text(message: &str, fraction: Option<f32>) -> String {
    let message = clip(message.lines().next().unwrap_or(""), 100);
    match fraction {
        Some(f) => format!("{message} ({:.0}%)", f * 100.0),
        None => message,
    }
}

/// The line of a hook that had a say (one that ran and said nothing shows none): the event,
/// the hook, the call's tool, what it decided and why.
fn hook_line(item: &HookItem) -> Option<String> {
    let decided = match item.decision {
        HookVerdict::None => return None,
        HookVerdict::Allow => "allowed",
        HookVerdict::Deny => "denied",
        HookVerdict::Ask => "left it to the rules",
        HookVerdict::Rewrite => "rewrote the call",
        HookVerdict::Block => "objected",
        HookVerdict::Failed => "failed",
    };
    let tool = item
        .tool
        .as_deref()
        .map(|t| format!(" {t}"))
        .unwrap_or_default();
    let why = item
        .reason
        .as_deref()
        .map(|r| format!(": {}", one_line(r)))
        .unwrap_or_default();
    Some(format!(
        "{} hook {}{tool} `{}` {decided}{why} · {}",
        style("⚑").yellow(),
        item.event,
        clip(&item.hook, 60),
        elapsed(item.duration_ms)
    ))
}

/// The line of a finished tool call: a mark, the call, its time or its first error line.
fn tool_line(item: &ToolCallItem) -> String {
    let took = item
        .duration_ms
        .map(|ms| format!(" · {}", elapsed(ms)))
        .unwrap_or_default();
    match item.status {
        ItemStatus::Completed => format!(
            "{} {}{}",
            style("✓").green(),
            summary(item),
            style(took).dim()
        ),
        ItemStatus::Declined => {
            // Why, without the "permission denied for `bash`:" the mark already says.
            let why = item
                .output
                .as_deref()
                .and_then(|o| o.lines().next())
                .map(|line| line.split_once(": ").map_or(line, |(_, why)| why))
                .filter(|why| !why.is_empty());
            let note = match why {
                Some(why) => format!("(not run: {why})"),
                None => "(not run)".to_owned(),
            };
            format!(
                "{} {} {}",
                style("⊘").yellow(),
                summary(item),
                style(note).dim()
            )
        }
        _ => {
            let first = item
                .output
                .as_deref()
                .and_then(|o| o.lines().next())
                .unwrap_or("");
            format!(
                "{} {}{} {}",
                style("✗").red(),
                summary(item),
                style(took).dim(),
                style(first).red()
            )
        }
    }
}

/// A one-line description of a tool call: the tool and its main argument (a search's
/// pattern, a command, a path), cut at a word with `…` past 80 characters; the tool alone
/// when it has no argument.
/// The width the answer's Markdown is wrapped at: stdout's, when it is a terminal.
fn stdout_width() -> Option<usize> {
    console::Term::stdout()
        .size_checked()
        .map(|(_, width)| usize::from(width))
}

/// Lines of a running command's output shown under its spinner.
const LIVE_LINES: usize = 5;

/// A running call's spinner text with the last lines it printed under it (already made
/// visible), each cut to the terminal's width so that none wraps and the spinner redraws
/// in place.
fn live_lines(item: &ToolCallItem, printed: &str) -> String {
    let width = usize::from(console::Term::stderr().size().1);
    let room = width.saturating_sub(6).max(20);
    let last: Vec<&str> = printed.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut text = summary(item);
    for line in &last[last.len().saturating_sub(LIVE_LINES)..] {
        let cut: String = line.replace('\t', "    ").chars().take(room).collect();
        text.push_str(&format!("\n  {}", style(format!("│ {cut}")).dim()));
    }
    text
}

fn summary(item: &ToolCallItem) -> String {
    let args: serde_json::Value = serde_json::from_str(&item.arguments).unwrap_or_default();
    if let Some(todos) = args.get("todos").and_then(|t| t.as_array()) {
        return format!("{} {} item(s)", style(&item.name).bold(), todos.len());
    }
    let keys: &[&str] = match item.name.as_str() {
        "grep" | "glob" => &["pattern", "path"],
        _ => &["command", "path", "pattern", "url", "query"],
    };
    let main = keys
        .iter()
        .find_map(|k| args.get(*k).and_then(|v| v.as_str()))
        .map(str::to_owned)
        .unwrap_or_else(|| match &args {
            serde_json::Value::Object(object) if object.is_empty() => String::new(),
            // Arguments that are no JSON, as sent.
            serde_json::Value::Null => item.arguments.clone(),
            // Written again, so `\u2713` is `✓` (serde_json escapes only what it must).
            other => other.to_string(),
        });
    // The argument is read out of the JSON text, so its escapes are characters again.
    let main = clip(main.lines().next().unwrap_or(""), 80);
    if main.is_empty() {
        return style(&item.name).bold().to_string();
    }
    format!("{} {}", style(&item.name).bold(), one_line(&main))
}

impl Renderer for TerminalRenderer {
    fn render(&mut self, event: &Event) {
        // What the model, tools, guests and servers said, never acting on the screen.
        let Some(event) = visible_event(event) else {
            return;
        };
        let event = event.as_ref();
        if event.context.depth() > 0 {
            self.render_child(event);
        } else {
            self.render_root(event);
        }
        self.status
            .show(!self.stdout_mid_line && !self.stderr_mid_line);
    }
}

impl TerminalRenderer {
    /// Streamed text of the root: an answer on stdout, reasoning dimmed on stderr. The status
    /// lines are hidden first: drawn after text in the middle of a line, they would erase it.
    fn root_delta(&mut self, item_id: &str, text: &str) {
        let kind = self.text_items.get(item_id).copied();
        match kind {
            Some(TextKind::Answer) => match &mut self.markdown {
                Some(markdown) => {
                    // Read when a piece ends a line, which is when lines are drawn: the
                    // terminal may have been resized since.
                    if text.contains('\n') {
                        markdown.set_width(stdout_width());
                    }
                    let drawn = markdown.push(text);
                    self.out(&drawn);
                }
                None => self.out(text),
            },
            Some(TextKind::Reasoning) => {
                self.status.show(false);
                let dimmed = style(text).dim().italic().to_string();
                self.progress.suspend(|| eprint!("{dimmed}"));
                self.stderr_mid_line = !text.ends_with('\n');
            }
            None => {}
        }
    }

    /// A finished item of the root: a tool's outcome, the end of streamed text, an error,
    /// a note, a hook's line.
    fn item_completed(&mut self, item: &wonopcode_protocol::event::Item) {
        match &item.details {
            ItemDetails::ToolCall(call) | ItemDetails::McpToolCall(call) => {
                self.tool_finished(&item.id, call)
            }
            ItemDetails::AgentMessage { .. } => {
                if let Some(markdown) = &mut self.markdown {
                    markdown.set_width(stdout_width());
                    let rest = markdown.finish();
                    self.out(&rest);
                }
                if self.stdout_mid_line {
                    self.out("\n");
                }
            }
            ItemDetails::Reasoning { .. } => {
                if self.stderr_mid_line {
                    self.err_line("");
                }
            }
            ItemDetails::Error { message } => {
                self.err_line(&format!("{} {message}", style("!").red().bold()))
            }
            ItemDetails::Info { message } => {
                self.err_line(&style(format!("· {message}")).dim().to_string());
            }
            // What the person sent into the turn, where the model reads it.
            ItemDetails::UserMessage { text } => {
                for (i, line) in text.lines().enumerate() {
                    let marker = if i == 0 { "›" } else { " " };
                    self.err_line(&format!("{} {line}", style(marker).cyan().bold()));
                }
                self.err_line(&style("  (sent into the running turn)").dim().to_string());
                self.typed.refresh();
            }
            ItemDetails::Hook(hook) => {
                if let Some(line) = hook_line(hook) {
                    self.err_line(&line);
                }
            }
            ItemDetails::Progress { .. } => self.clear_spinner(&item.id),
            // The CLI prints the host's warnings itself (`warning:`).
            ItemDetails::TodoList { .. } | ItemDetails::Diagnostic { .. } => {}
        }
    }

    /// The turn's closing lines: how it ended, its requests, tokens and cost, and the
    /// summary of its contexts.
    fn turn_ended(
        &mut self,
        status: LoopStatus,
        iterations: u32,
        usage: &wonopcode_protocol::Usage,
    ) {
        self.status.stop_all();
        for (_, bar) in self.spinners.drain() {
            bar.finish_and_clear();
        }
        // An answer cut off (a cancelled turn) still shows what it had.
        if let Some(markdown) = &mut self.markdown {
            markdown.set_width(stdout_width());
            let rest = markdown.finish();
            self.out(&rest);
        }
        let cost = cost(usage);
        // Every context's requests, as the tokens are every context's.
        let requests = iterations + self.contexts.requests();
        let what = match status {
            LoopStatus::Complete => "done",
            LoopStatus::Suspended => "suspended",
            LoopStatus::MaxIterations => "stopped at the iteration limit",
            LoopStatus::Error => "failed",
            LoopStatus::Cancelled => "cancelled",
            LoopStatus::BudgetExceeded => "stopped by the budget",
        };
        self.err_line(
            &style(format!(
                "· {what} · {requests} model request(s) · {} · {cost}",
                in_out(usage)
            ))
            .dim()
            .to_string(),
        );
        for line in self.contexts.summary(&self.root_module, status, usage) {
            self.err_line(&style(line).dim().to_string());
        }
    }

    /// An item of the root context began: a text, a tool call's spinner, the todo list, a
    /// progress bar.
    fn root_item_started(&mut self, item: &Item) {
        match &item.details {
            ItemDetails::AgentMessage { .. } => {
                self.text_items.insert(item.id.clone(), TextKind::Answer);
            }
            ItemDetails::Reasoning { .. } => {
                self.text_items.insert(item.id.clone(), TextKind::Reasoning);
            }
            ItemDetails::ToolCall(call) | ItemDetails::McpToolCall(call) => {
                self.tool_started(&item.id, call)
            }
            ItemDetails::TodoList { items } => self.todo_list(items),
            ItemDetails::Progress { message, fraction } => {
                self.spinner(&item.id, progress_text(message, *fraction));
            }
            ItemDetails::Error { .. }
            | ItemDetails::Info { .. }
            | ItemDetails::UserMessage { .. }
            | ItemDetails::Hook(_)
            | ItemDetails::Diagnostic { .. } => {}
        }
    }

    /// An item of the root context changed: the todo list, a running call's output, a
    /// progress bar.
    fn root_item_updated(&mut self, item: &Item) {
        match &item.details {
            ItemDetails::TodoList { items } => self.todo_list(items),
            ItemDetails::ToolCall(call) | ItemDetails::McpToolCall(call) => {
                if let (Some(bar), Some(printed)) = (self.spinners.get(&item.id), &call.output) {
                    bar.set_message(live_lines(call, printed));
                }
            }
            ItemDetails::Progress { message, fraction } => {
                if let Some(bar) = self.spinners.get(&item.id) {
                    bar.set_message(progress_text(message, *fraction));
                }
            }
            _ => {}
        }
    }

    /// An event of the root context: its answer on stdout, everything else on stderr.
    fn render_root(&mut self, event: &Event) {
        match &event.kind {
            EventKind::ItemStarted { item } => self.root_item_started(item),
            EventKind::ItemDelta { item_id, text } => {
                self.status.streamed(&event.context, text.len());
                self.root_delta(item_id, text);
            }
            EventKind::ItemCompleted { item } => self.item_completed(item),
            EventKind::ItemUpdated { item } => self.root_item_updated(item),
            EventKind::ModelRetry {
                attempt,
                delay_ms,
                reason,
            } => {
                let wait = *delay_ms as f64 / 1000.0;
                self.err_line(
                    &style(format!(
                        "· {reason}; retrying in {wait:.1} s (attempt {attempt})"
                    ))
                    .yellow()
                    .to_string(),
                );
            }
            EventKind::ContextCompacted {
                strategy,
                tokens_before,
                tokens_after,
                ..
            } => {
                let line = compacted_line(strategy, *tokens_before, *tokens_after);
                self.err_line(&style(line).dim().to_string());
            }
            EventKind::TurnCompleted {
                status,
                iterations,
                usage,
                ..
            }
            | EventKind::TurnFailed {
                status,
                iterations,
                usage,
                ..
            } => {
                self.turn_ended(*status, *iterations, usage);
            }
            EventKind::LoopReloaded {
                loop_name, module, ..
            } => {
                self.root_module.clone_from(loop_name);
                self.err_line(
                    &style(format!("· reloaded loop `{loop_name}` from {module}"))
                        .dim()
                        .to_string(),
                );
            }
            EventKind::SessionStarted { loop_name, .. } => self.root_module.clone_from(loop_name),
            // The turn's line sums the usage; a response's own is for --json and traces.
            EventKind::ResponseCompleted { .. } => {}
            EventKind::ProjectInstructionsLoaded { files, truncated } => {
                let cut = if *truncated { " (cut at 32 KiB)" } else { "" };
                self.err_line(
                    &style(format!("· project instructions: {}{cut}", files.join(", ")))
                        .dim()
                        .to_string(),
                );
            }
            EventKind::RunResumed {
                from, unfinished, ..
            } => self.err_line(
                &style(format!(
                    "· resuming run {from}: what it finished comes from its journal; {} context(s) go on where they stopped",
                    unfinished.len()
                ))
                .dim()
                .to_string(),
            ),
            EventKind::RunForked { from, at } => self.err_line(
                &style(format!(
                    "· a fork of run {from} at {at}: the responses before it come from its journal"
                ))
                .dim()
                .to_string(),
            ),
            EventKind::RunInterrupted { run_id } => {
                if let Some(id) = run_id {
                    self.err_line(
                        &style(format!("· run {id} interrupted: `wonopcode resume {id}` goes on from here"))
                            .dim()
                            .to_string(),
                    );
                }
            }
            EventKind::McpServerFailed { server, error } => self.err_line(&format!(
                "{} MCP server `{server}` is not available: {error}; its tools are absent",
                style("!").yellow().bold()
            )),
            EventKind::TurnStarted => {
                self.contexts.begin();
                self.status
                    .start(&event.context, style("Working").bold().to_string());
            }
            EventKind::ContextStarted { .. }
            | EventKind::ContextCompleted { .. }
            | EventKind::MessageCreated { .. } => {}
        }
    }
}

/// The line a compaction of the root's conversation is shown as.
fn compacted_line(strategy: &str, tokens_before: u64, tokens_after: u64) -> String {
    match strategy {
        "clear" => format!("· conversation cleared (~{tokens_before} tokens dropped)"),
        "withdraw" => {
            "· the prompt was not answered: it is left out of the conversation".to_owned()
        }
        "rewind" => format!("· conversation taken back: ~{tokens_before} → ~{tokens_after} tokens"),
        _ => format!("· context compacted ({strategy}): ~{tokens_before} → ~{tokens_after} tokens"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, arguments: &str) -> ToolCallItem {
        serde_json::from_value(serde_json::json!({
            "call_id": "c1", "name": name, "arguments": arguments, "status": "completed"
        }))
        .unwrap()
    }

    fn shown(name: &str, arguments: &str) -> String {
        console::strip_ansi_codes(&summary(&call(name, arguments))).into_owned()
    }

    #[test]
    fn a_call_is_summed_up_by_its_main_argument() {
        assert_eq!(
            shown("grep", r#"{"pattern": "TODO", "path": "."}"#),
            "grep TODO"
        );
        assert_eq!(shown("bash", r#"{"command": "ls -la"}"#), "bash ls -la");
        assert_eq!(shown("delegate", "{}"), "delegate");
        // Escapes in the JSON are characters again.
        assert_eq!(
            shown("mcp__notes__add", r#"{"mark": "\u2713 done"}"#),
            r#"mcp__notes__add {"mark":"✓ done"}"#
        );
        assert_eq!(
            shown("webfetch", r#"{"url": "https://example.com/caf\u00e9"}"#),
            "webfetch https://example.com/café"
        );
        let long = format!(r#"{{"command": "echo {}"}}"#, "word ".repeat(30));
        let line = shown("bash", &long);
        assert!(line.ends_with("word…"), "{line}");
        assert!(line.chars().count() <= "bash ".len() + 80, "{line}");
    }

    fn root(kind: EventKind) -> Event {
        Event {
            context: wonopcode_protocol::ContextPath::root(),
            ts: String::new(),
            kind,
        }
    }

    #[test]
    fn the_status_lines_stay_while_whole_lines_stream_and_hide_mid_line() {
        let progress = MultiProgress::with_draw_target(indicatif::ProgressDrawTarget::hidden());
        let typed = TypedLines::new(progress.clone());
        // Raw text hides them from the first piece that stops mid-line; Markdown's whole
        // lines never do.
        for (markdown, shown) in [(true, [true; 3]), (false, [true, false, false])] {
            let mut r = TerminalRenderer::new(progress.clone(), typed.clone(), markdown);
            r.render(&root(EventKind::TurnStarted));
            let message = wonopcode_protocol::event::Item {
                id: "m1".to_owned(),
                details: ItemDetails::AgentMessage {
                    text: String::new(),
                },
            };
            r.render(&root(EventKind::ItemStarted { item: message }));
            for (piece, shown) in ["First line.\n", "A second ", "line streams"]
                .iter()
                .zip(shown)
            {
                r.render(&root(EventKind::ItemDelta {
                    item_id: "m1".to_owned(),
                    text: (*piece).to_owned(),
                }));
                assert_eq!(r.status.drawn().0, shown, "{piece:?}, markdown {markdown}");
            }
            r.render(&root(EventKind::ItemDelta {
                item_id: "m1".to_owned(),
                text: " on.\n".to_owned(),
            }));
            assert!(r.status.drawn().0, "back once the line ends");
            // Markdown's lines streamed under the one status line drawn at the start: its
            // spinner never restarted.
            if markdown {
                assert_eq!(r.status.drawn().1, 1);
            }
        }
    }

    #[test]
    fn short_times_in_ms_longer_ones_in_seconds() {
        assert_eq!(elapsed(870), "870 ms");
        assert_eq!(elapsed(4017), "4.0 s");
    }
}
