//! `events.jsonl`: every context's events of a run, one JSON object a line (`{"seq": N,
//! "event": {...}}`, the event as `--json` prints it), appended as they happen. Streaming
//! deltas are left out (the finished item holds what they built up). A record that has an
//! effect or ends a step — a finished tool call, a finished or failed turn, a context's end —
//! is fsync'd before the run goes on, so what is on disk after a crash is every effect up to
//! it. A start (the session's, a context's) is not waited for: nothing has happened yet
//! that a crash could lose, and the next fsync of the file takes it to disk first. Reading
//! tolerates one torn last record (a power cut mid-write): it is reported and left out, and
//! everything before it is read.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use wonopcode_os::durable;
use wonopcode_protocol::event::ItemStatus;
use wonopcode_protocol::{Event, EventKind};

use crate::JournalError;

/// One line of the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalRecord {
    /// Its place in the log, from 0.
    pub seq: u64,
    /// What happened.
    pub event: Event,
}

/// The log of one run, open for appending.
pub struct EventLog {
    path: PathBuf,
    file: File,
    next: u64,
}

impl EventLog {
    /// Creates the log at `path` (a new, empty file).
    pub fn create(path: &Path) -> Result<Self, JournalError> {
        let file = crate::private::options()
            .create_new(true)
            .append(true)
            .open(path)
            .map_err(|e| JournalError::io(path, &e))?;
        Ok(Self {
            path: path.to_path_buf(),
            file,
            next: 0,
        })
    }

    /// Appends `event` (nothing for a streaming delta), fsync'd when it has an effect.
    pub fn append(&mut self, event: &Event) -> Result<(), JournalError> {
        // Streamed text and a running call's output so far are shown, not kept: the
        // completed item holds them whole.
        let passing = match &event.kind {
            EventKind::ItemDelta { .. } => true,
            EventKind::ItemUpdated { item } => item
                .details
                .tool_call()
                .is_some_and(|call| call.status == ItemStatus::InProgress),
            _ => false,
        };
        if passing {
            return Ok(());
        }
        let record = JournalRecord {
            seq: self.next,
            event: event.clone(),
        };
        let mut line = serde_json::to_string(&record).unwrap_or_default();
        line.push('\n');
        self.file
            .write_all(line.as_bytes())
            .map_err(|e| JournalError::io(&self.path, &e))?;
        self.next += 1;
        if has_effect(&event.kind) {
            durable::sync_data(&self.file).map_err(|e| JournalError::io(&self.path, &e))?;
        }
        Ok(())
    }
}

/// Whether an event records something that happened in the world or ends a step: what must
/// be on disk before the run goes on. A finished tool call is; an agent message is not (the
/// response it came from is in `responses.jsonl`, fsync'd there), nor a hook's say, nor a
/// start (an fsync writes the whole file, so the next one takes it along, still in order).
fn has_effect(kind: &EventKind) -> bool {
    match kind {
        EventKind::ItemCompleted { item } => item.details.tool_call().is_some(),
        EventKind::ContextCompleted { .. }
        | EventKind::TurnCompleted { .. }
        | EventKind::TurnFailed { .. } => true,
        _ => false,
    }
}

/// A last record cut short (the process or the machine died while writing it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Torn {
    /// Its line, from 1.
    pub line: usize,
    /// The byte offset it starts at: where the log would be cut to drop it.
    pub offset: u64,
    /// Why it does not read.
    pub why: String,
}

/// A log as read back.
#[derive(Debug, Clone, PartialEq)]
pub struct Read {
    /// Every whole record, in order.
    pub records: Vec<JournalRecord>,
    /// The torn last record, if the log ends with one.
    pub torn: Option<Torn>,
}

impl Read {
    /// Reads the log at `path`: every whole record, and a torn last one reported, not read.
    /// A bad record before the last is an error naming its line.
    pub fn of(path: &Path) -> Result<Self, JournalError> {
        let bytes = std::fs::read(path).map_err(|e| JournalError::io(path, &e))?;
        let mut records = Vec::new();
        let mut offset = 0usize;
        let mut number = 0usize;
        while offset < bytes.len() {
            number += 1;
            let end = bytes[offset..].iter().position(|b| *b == b'\n');
            let line = &bytes[offset..end.map_or(bytes.len(), |e| offset + e)];
            let last = end.is_none_or(|e| offset + e + 1 >= bytes.len());
            let parsed = std::str::from_utf8(line)
                .map_err(|e| e.to_string())
                .and_then(|text| {
                    serde_json::from_str::<JournalRecord>(text).map_err(|e| e.to_string())
                });
            match (parsed, end) {
                (Ok(record), Some(_)) => records.push(record),
                // Whole JSON without its newline is still a write cut short.
                (Ok(_), None) => {
                    return Ok(Self {
                        records,
                        torn: Some(Torn {
                            line: number,
                            offset: offset as u64,
                            why: "it has no newline: its write was cut short".to_owned(),
                        }),
                    });
                }
                (Err(why), _) if last => {
                    return Ok(Self {
                        records,
                        torn: Some(Torn {
                            line: number,
                            offset: offset as u64,
                            why,
                        }),
                    });
                }
                (Err(why), _) => {
                    return Err(JournalError::Corrupt {
                        path: path.display().to_string(),
                        line: number,
                        why,
                    });
                }
            }
            offset = end.map_or(bytes.len(), |e| offset + e + 1);
        }
        Ok(Self {
            records,
            torn: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wonopcode_protocol::ContextPath;
    use wonopcode_protocol::event::now_rfc3339;

    fn event(kind: EventKind) -> Event {
        Event {
            context: ContextPath::root(),
            ts: now_rfc3339(),
            kind,
        }
    }

    fn started() -> Event {
        event(EventKind::SessionStarted {
            session_id: "s".into(),
            loop_name: "standard".into(),
            model: "m".into(),
            schema_version: 1,
        })
    }

    #[test]
    fn a_log_reads_back_whole_without_its_deltas() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let mut log = EventLog::create(&path).unwrap();
        log.append(&started()).unwrap();
        log.append(&event(EventKind::ItemDelta {
            item_id: "i".into(),
            text: "x".into(),
        }))
        .unwrap();
        log.append(&started()).unwrap();
        let read = Read::of(&path).unwrap();
        assert_eq!(read.torn, None);
        let seqs: Vec<u64> = read.records.iter().map(|r| r.seq).collect();
        assert_eq!(seqs, [0, 1]);
        // A log is created new: an existing one is never overwritten.
        assert!(EventLog::create(&path).is_err());
    }

    #[test]
    fn a_last_record_torn_at_any_byte_is_reported_and_the_rest_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let mut log = EventLog::create(&path).unwrap();
        for _ in 0..3 {
            log.append(&started()).unwrap();
        }
        let whole = std::fs::read(&path).unwrap();
        let last_start = whole[..whole.len() - 1]
            .iter()
            .rposition(|b| *b == b'\n')
            .unwrap()
            + 1;
        for cut in last_start..whole.len() {
            std::fs::write(&path, &whole[..cut]).unwrap();
            let read = Read::of(&path).unwrap();
            assert_eq!(read.records.len(), 2, "cut at {cut}");
            match &read.torn {
                None => assert_eq!(cut, last_start, "cut at {cut}: nothing torn"),
                Some(torn) => {
                    assert_eq!((torn.line, torn.offset), (3, last_start as u64), "{torn:?}")
                }
            }
        }
        // A bad record before the last is an error naming its line.
        let mut broken = whole.clone();
        broken[0] = b'x';
        std::fs::write(&path, &broken).unwrap();
        let e = Read::of(&path).unwrap_err().to_string();
        assert!(e.contains("events.jsonl:1: not a journal record"), "{e}");
    }
}
