//! The `--history` file: the conversation as JSON Lines, appended and fsync'd message by
//! message, so a crash or Ctrl-C never loses a stored message and the file always parses.
//!
//! Records: `{"type":"session",...}` first, then `{"type":"message","message":...}` per
//! message, `{"type":"reset","messages":[...]}` when compaction replaced the history, and
//! `{"type":"call_started","call_id":...}` / `{"type":"call_ended","call_id":...,"ran":...}`
//! around each tool call, so that after a crash the next run knows which unanswered calls
//! were running (and may have taken effect) and which never started.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use std::collections::HashMap;

use wonopcode_os::durable;
use wonopcode_protocol::event::ItemStatus;
use wonopcode_protocol::event::now_rfc3339;
use wonopcode_protocol::message::pending_tool_calls;
use wonopcode_protocol::{EventKind, Message, Part, Role};

use crate::error::SessionError;

/// A history error saying `message`.
fn error(message: String) -> SessionError {
    SessionError::History(message)
}

/// One line of the history file.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Record {
    Session {
        session_id: String,
        created: String,
        version: u32,
    },
    Message {
        message: Message,
    },
    Reset {
        messages: Vec<Message>,
    },
    CallStarted {
        call_id: String,
    },
    CallEnded {
        call_id: String,
        /// Whether the call ran (false: refused or suspended before running).
        ran: bool,
    },
}

/// What the history says of a tool call since its last reset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CallState {
    /// Started (running, or waiting for approval), never ended.
    Started,
    /// Ran to its end; its result may not have been stored.
    Ran,
    /// Ended without running (refused, or suspended for approval).
    NotRun,
}

/// An open history file.
pub struct History {
    path: PathBuf,
    file: File,
    /// Session id read from, or written to, the file.
    pub session_id: String,
    /// Where a torn last record found on opening was kept (`<file>.torn`).
    pub torn: Option<PathBuf>,
}

impl History {
    /// Opens `path` for appending, creating it with a session record if it does not exist;
    /// returns the messages it already holds.
    pub fn open(path: &Path, new_session_id: &str) -> Result<(Self, Vec<Message>), SessionError> {
        let existing = match std::fs::read(path) {
            Ok(bytes) => Some(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                return Err(error(format!(
                    "cannot read history file {}: {e}",
                    path.display()
                )));
            }
        };
        let bytes = existing.as_deref().unwrap_or_default();
        // A last line without its newline is a record a crash or a full disk cut short
        // (maybe inside a character): it is kept aside, not lost, and the file ends on a
        // whole record again before anything is appended.
        let whole = bytes
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |at| at + 1);
        let text = std::str::from_utf8(&bytes[..whole]).map_err(|e| {
            let line = bytes[..e.valid_up_to()]
                .iter()
                .filter(|b| **b == b'\n')
                .count()
                + 1;
            error(format!(
                "{}:{line}: invalid history record: not UTF-8 text",
                path.display()
            ))
        })?;
        let (session_id, mut messages, calls) = if text.trim().is_empty() && whole == bytes.len() {
            (new_session_id.to_owned(), Vec::new(), HashMap::new())
        } else {
            parse(text, path)?
        };
        let torn = if whole < bytes.len() {
            Some(set_aside(path, &bytes[whole..], whole as u64)?)
        } else {
            None
        };
        // A new history is the owner's alone: it holds every prompt and tool output.
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| {
                error(format!(
                    "cannot open history file {} for writing: {e}",
                    path.display()
                ))
            })?;
        let mut history = Self {
            path: path.to_path_buf(),
            file,
            session_id,
            torn,
        };
        if bytes.iter().all(u8::is_ascii_whitespace) {
            history.append_record(&Record::Session {
                session_id: history.session_id.clone(),
                created: now_rfc3339(),
                version: 1,
            })?;
        }
        if let Some(answers) = answer_interrupted(&messages, &calls) {
            history.append(&answers)?;
            messages.push(answers);
        }
        Ok((history, messages))
    }

    /// Records what a root context's `event` changes in the conversation (a message, a
    /// compaction, a tool call's start and end; nothing for the rest): the one rule that
    /// makes the history file from the root's events, as a run writes it and as
    /// `wonopcode runs history` makes it from a run's journal.
    pub fn keep(&mut self, event: &EventKind) -> Result<(), SessionError> {
        match record_of(event) {
            Some(record) => self.append_record(&record),
            None => Ok(()),
        }
    }

    /// Writes a new history file at `path` (one that exists is refused, never overwritten)
    /// from a run's root events: the conversation as that run would have kept it with
    /// `--history`, so it can be continued with `--history`.
    pub fn from_events<'a>(
        path: &Path,
        session_id: &str,
        events: impl IntoIterator<Item = &'a EventKind>,
    ) -> Result<(), SessionError> {
        if path.exists() {
            return Err(error(format!("{} exists: give a new file", path.display())));
        }
        let (mut history, _) = Self::open(path, session_id)?;
        for event in events {
            history.keep(event)?;
        }
        Ok(())
    }

    /// Records that a tool call of the root context started (it is about to be decided on
    /// and run).
    pub fn call_started(&mut self, call_id: &str) -> Result<(), SessionError> {
        self.append_record(&Record::CallStarted {
            call_id: call_id.to_owned(),
        })
    }

    /// Records that a tool call ended; `ran` is false when it was refused or suspended.
    pub fn call_ended(&mut self, call_id: &str, ran: bool) -> Result<(), SessionError> {
        self.append_record(&Record::CallEnded {
            call_id: call_id.to_owned(),
            ran,
        })
    }

    /// Appends a message and syncs it to disk.
    pub fn append(&mut self, message: &Message) -> Result<(), SessionError> {
        self.append_record(&Record::Message {
            message: message.clone(),
        })
    }

    /// Records that the history is now exactly `messages` (after compaction).
    pub fn reset(&mut self, messages: &[Message]) -> Result<(), SessionError> {
        self.append_record(&Record::Reset {
            messages: messages.to_vec(),
        })
    }

    /// Appends one record, whole or not at all: a write that fails part way (a full disk)
    /// is cut off again, so the file never ends in a fragment.
    fn append_record(&mut self, record: &Record) -> Result<(), SessionError> {
        let written = serde_json::to_string(record)
            .map_err(std::io::Error::other)
            .and_then(|mut line| {
                line.push('\n');
                let before = self.file.metadata()?.len();
                let wrote = self
                    .file
                    .write_all(line.as_bytes())
                    .and_then(|()| durable::sync_data(&self.file));
                if wrote.is_err() {
                    // Best effort: if even this fails, the next open sets the tail aside.
                    let _ = self.file.set_len(before);
                }
                wrote
            });
        written.map_err(|e| {
            error(format!(
                "cannot write history file {}: {e}",
                self.path.display()
            ))
        })
    }
}

/// Keeps the torn tail of `path` (from byte `whole` on) in `<path>.torn`, appended to what
/// is there, then cuts the history back to its last whole record.
fn set_aside(path: &Path, tail: &[u8], whole: u64) -> Result<PathBuf, SessionError> {
    let mut aside = path.as_os_str().to_owned();
    aside.push(".torn");
    let aside = PathBuf::from(aside);
    let failed = |e: std::io::Error| {
        error(format!(
            "{}: cannot keep its incomplete last record aside in {}: {e}",
            path.display(),
            aside.display()
        ))
    };
    let mut kept = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&aside)
        .map_err(failed)?;
    kept.write_all(tail)
        .and_then(|()| kept.write_all(b"\n"))
        .and_then(|()| kept.sync_data())
        .map_err(failed)?;
    OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|f| f.set_len(whole).and_then(|()| f.sync_data()))
        .map_err(|e| {
            error(format!(
                "cannot repair history file {}: {e}",
                path.display()
            ))
        })?;
    Ok(aside)
}

/// The answers to the calls a run that stopped part way left unanswered, when one of them
/// was running or had run: each is told what the history knows of it. `None` when no call
/// was under way, so that a suspended run's calls stay open for `--resume`.
fn answer_interrupted(messages: &[Message], calls: &HashMap<String, CallState>) -> Option<Message> {
    let pending = pending_tool_calls(messages);
    let under_way = |id: &str| matches!(calls.get(id), Some(CallState::Started | CallState::Ran));
    if !pending.iter().any(|(id, _, _)| under_way(id)) {
        return None;
    }
    let parts = pending
        .into_iter()
        .map(|(id, _, _)| {
            let content = match calls.get(&id) {
                Some(CallState::Started) => {
                    "interrupted: wonopcode stopped while this call was running (or waiting \
                     for approval); it may have taken effect in part or in full"
                }
                Some(CallState::Ran) => {
                    "ran, but wonopcode stopped before its result was stored; check its \
                     effects before running it again"
                }
                Some(CallState::NotRun) | None => {
                    "not run: wonopcode stopped before this call started"
                }
            };
            Part::ToolResult {
                call_id: id,
                content: content.to_owned(),
                is_error: true,
            }
        })
        .collect();
    Some(Message {
        role: Role::Tool,
        parts,
    })
}

/// The record a root context's event makes in the history, if any.
fn record_of(event: &EventKind) -> Option<Record> {
    match event {
        EventKind::MessageCreated { message } => Some(Record::Message {
            message: message.clone(),
        }),
        EventKind::ContextCompacted { messages, .. } => Some(Record::Reset {
            messages: messages.clone(),
        }),
        EventKind::ItemStarted { item } => {
            item.details.tool_call().map(|call| Record::CallStarted {
                call_id: call.call_id.clone(),
            })
        }
        EventKind::ItemCompleted { item } => {
            item.details.tool_call().map(|call| Record::CallEnded {
                call_id: call.call_id.clone(),
                ran: call.status != ItemStatus::Declined,
            })
        }
        _ => None,
    }
}

/// The conversation as far as the records read so far make it.
#[derive(Default)]
struct Folded {
    session_id: Option<String>,
    messages: Vec<Message>,
    calls: HashMap<String, CallState>,
}

impl Folded {
    fn apply(&mut self, record: Record) {
        match record {
            Record::Session { session_id, .. } => self.session_id = Some(session_id),
            Record::Message { message } => {
                // A call id used again (as recorded transcripts do) starts with no state.
                for (id, _, _) in message.tool_calls() {
                    self.calls.remove(id);
                }
                self.messages.push(message);
            }
            Record::Reset { messages } => {
                self.messages = messages;
                self.calls.clear();
            }
            Record::CallStarted { call_id } => {
                self.calls.insert(call_id, CallState::Started);
            }
            Record::CallEnded { call_id, ran } => {
                let state = if ran {
                    CallState::Ran
                } else {
                    CallState::NotRun
                };
                self.calls.insert(call_id, state);
            }
        }
    }
}

/// The conversation the root's `events` (of one run, or of a run and the runs that went
/// on with it, in order) leave — as a history file kept from them would hold it when
/// opened, calls cut off by a stop answered as such.
pub fn conversation_of<'a>(events: impl IntoIterator<Item = &'a EventKind>) -> Vec<Message> {
    let mut folded = Folded::default();
    for record in events.into_iter().filter_map(record_of) {
        folded.apply(record);
    }
    if let Some(answers) = answer_interrupted(&folded.messages, &folded.calls) {
        folded.messages.push(answers);
    }
    folded.messages
}

type Parsed = (String, Vec<Message>, HashMap<String, CallState>);

fn parse(text: &str, path: &Path) -> Result<Parsed, SessionError> {
    let mut folded = Folded::default();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        // Only whole lines come here: a torn last one was set aside by `open`.
        let record: Record = serde_json::from_str(line).map_err(|e| {
            error(format!(
                "{}:{}: invalid history record: {e}",
                path.display(),
                index + 1
            ))
        })?;
        folded.apply(record);
    }
    let Some(session_id) = folded.session_id else {
        return Err(error(format!(
            "{}:1: not a wonopcode history file (no session record)",
            path.display()
        )));
    };
    Ok((session_id, folded.messages, folded.calls))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls(ids: &[&str]) -> Message {
        Message {
            role: Role::Assistant,
            parts: ids
                .iter()
                .map(|id| Part::ToolCall {
                    id: (*id).to_owned(),
                    name: "bash".to_owned(),
                    arguments: "{}".to_owned(),
                })
                .collect(),
        }
    }

    fn answers(message: &Message) -> Vec<(String, String)> {
        message
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::ToolResult {
                    call_id, content, ..
                } => Some((call_id.clone(), content.clone())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn calls_under_way_when_a_run_stopped_are_answered_for_what_they_were() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.jsonl");
        let (mut h, _) = History::open(&path, "s").unwrap();
        h.append(&Message::user("go")).unwrap();
        h.append(&calls(&["ran", "running", "queued"])).unwrap();
        h.call_started("ran").unwrap();
        h.call_ended("ran", true).unwrap();
        h.call_started("running").unwrap();
        drop(h); // the process is killed here
        let (_, messages) = History::open(&path, "s").unwrap();
        let found = answers(messages.last().unwrap());
        assert_eq!(found.len(), 3);
        assert!(
            found[0]
                .1
                .starts_with("ran, but wonopcode stopped before its result")
        );
        assert!(
            found[1]
                .1
                .starts_with("interrupted: wonopcode stopped while this call was running")
        );
        assert!(
            found[2]
                .1
                .starts_with("not run: wonopcode stopped before this call started")
        );
        // The answers are stored: the next open finds nothing left to answer.
        let (_, again) = History::open(&path, "s").unwrap();
        assert_eq!(again.len(), messages.len());
        assert!(pending_tool_calls(&again).is_empty());
    }

    #[test]
    fn a_suspended_runs_calls_stay_open_for_resume() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.jsonl");
        let (mut h, _) = History::open(&path, "s").unwrap();
        h.append(&Message::user("go")).unwrap();
        h.append(&calls(&["waiting"])).unwrap();
        h.call_started("waiting").unwrap();
        h.call_ended("waiting", false).unwrap();
        drop(h);
        let (_, messages) = History::open(&path, "s").unwrap();
        assert_eq!(pending_tool_calls(&messages).len(), 1);
    }

    #[test]
    fn appends_reopens_and_folds_resets() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.jsonl");
        let (mut h, existing) = History::open(&path, "s1").unwrap();
        assert!(existing.is_empty());
        h.append(&Message::user("one")).unwrap();
        h.append(&Message::user("two")).unwrap();
        h.reset(&[Message::user("summary")]).unwrap();
        h.append(&Message::user("three")).unwrap();
        drop(h);
        let (h, messages) = History::open(&path, "ignored").unwrap();
        assert_eq!(h.session_id, "s1");
        let texts: Vec<String> = messages.iter().map(Message::text_content).collect();
        assert_eq!(texts, ["summary", "three"]);
    }

    #[test]
    fn a_torn_last_line_is_ignored_but_a_bad_middle_line_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.jsonl");
        let (mut h, _) = History::open(&path, "s").unwrap();
        h.append(&Message::user("kept")).unwrap();
        drop(h);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str(r#"{"type":"message","mess"#);
        std::fs::write(&path, &text).unwrap();
        let (_, messages) = History::open(&path, "s").unwrap();
        assert_eq!(messages.len(), 1);

        std::fs::write(
            &path,
            format!(
                "{}\nnot json\n{}\n",
                text.lines().next().unwrap(),
                text.lines().nth(1).unwrap()
            ),
        )
        .unwrap();
        let err = History::open(&path, "s").err().unwrap().to_string();
        assert!(
            err.ends_with(":2: invalid history record: expected ident at line 1 column 2"),
            "{err}"
        );
    }

    #[test]
    fn a_file_that_is_not_a_history_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.jsonl");
        std::fs::write(
            &path,
            "{\"type\":\"message\",\"message\":{\"role\":\"user\",\"parts\":[]}}\n",
        )
        .unwrap();
        let err = History::open(&path, "s").err().unwrap().to_string();
        assert!(err.contains("not a wonopcode history file"), "{err}");
    }
}
