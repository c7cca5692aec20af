//! The `--history` file: the conversation as JSON Lines, appended and fsync'd message by
//! message, so a crash or Ctrl-C never loses a stored message and the file always parses.
//!
//! Records: `{"type":"session",...}` first, then `{"type":"message","message":...}` per
//! message, and `{"type":"reset","messages":[...]}` when compaction replaced the history.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use wonopcode_agent_loop::Message;
use wonopcode_agent_loop::event::now_rfc3339;

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
        let existing = match std::fs::read_to_string(path) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                return Err(error(format!(
                    "cannot read history file {}: {e}",
                    path.display()
                )));
            }
        };
        let (session_id, messages) = match &existing {
            Some(text) if !text.trim().is_empty() => parse(text, path)?,
            _ => (new_session_id.to_owned(), Vec::new()),
        };
        // A last line without its newline is a record a crash or a full disk cut short: it
        // is kept aside, not lost, and the file ends on a whole record again before anything
        // is appended.
        let torn = match &existing {
            Some(text) if !text.is_empty() && !text.ends_with('\n') => {
                let whole = text.rfind('\n').map_or(0, |at| at + 1);
                Some(set_aside(path, &text[whole..], whole as u64)?)
            }
            _ => None,
        };
        let file = OpenOptions::new()
            .create(true)
            .append(true)
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
        if existing.as_deref().is_none_or(|t| t.trim().is_empty()) {
            history.append_record(&Record::Session {
                session_id: history.session_id.clone(),
                created: now_rfc3339(),
                version: 1,
            })?;
        }
        Ok((history, messages))
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
                    .and_then(|()| self.file.sync_data());
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
fn set_aside(path: &Path, tail: &str, whole: u64) -> Result<PathBuf, SessionError> {
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
        .open(&aside)
        .map_err(failed)?;
    kept.write_all(format!("{tail}\n").as_bytes())
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

fn parse(text: &str, path: &Path) -> Result<(String, Vec<Message>), SessionError> {
    let mut session_id = None;
    let mut messages = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    for (index, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let record: Record = match serde_json::from_str(line) {
            Ok(r) => r,
            // A last line cut short by a crash mid-write: everything before it is intact.
            Err(e) if index + 1 == lines.len() && !text.ends_with('\n') => {
                tracing::warn!(line = index + 1, error = %e, "ignoring an incomplete last line in the history file");
                break;
            }
            Err(e) => {
                return Err(error(format!(
                    "{}:{}: invalid history record: {e}",
                    path.display(),
                    index + 1
                )));
            }
        };
        match record {
            Record::Session { session_id: id, .. } => session_id = Some(id),
            Record::Message { message } => messages.push(message),
            Record::Reset { messages: all } => messages = all,
        }
    }
    let Some(session_id) = session_id else {
        return Err(error(format!(
            "{}:1: not a wonopcode history file (no session record)",
            path.display()
        )));
    };
    Ok((session_id, messages))
}

#[cfg(test)]
mod tests {
    use super::*;

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
