//! The transcript format: JSONL, one header line, then one record per model request keyed by
//! (context path, turn index), holding the chunks the model streamed (or the error that
//! refused the request) and a fingerprint of the request that produced them. `--replay`
//! reads it; `--record` writes it. Documented in `docs/replay.md`.

use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use wonopcode_agent_loop::{ContextPath, ModelInfo, ModelRequest, Role, StreamChunk};

use crate::divergence::{AddedMessages, Difference};

/// The `format` value of the header.
pub const FORMAT: &str = "wonopcode-transcript";
/// The version this build reads and writes.
pub const VERSION: u32 = 1;

/// One line of a transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Record {
    /// First line: format, version and the model the turns came from.
    Header {
        /// Always `wonopcode-transcript`.
        format: String,
        /// Format version.
        version: u32,
        /// The recorded model.
        model: ModelInfo,
    },
    /// One model request and what came back (the file calls it a `turn`, as it did before
    /// wonopcode's words settled: a turn is now a prompt and its run).
    #[serde(rename = "turn")]
    Response(ResponseRecord),
}

/// One model request and its answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResponseRecord {
    /// Context that made the request.
    pub context: ContextPath,
    /// Index of the request within that context (0-based, counting every request).
    #[serde(rename = "turn")]
    pub index: u32,
    /// The model that answered, when it is not the header's (a guest switched models).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelInfo>,
    /// Fingerprint of the request; when absent, any request matches (hand-written files).
    /// Boxed: it is most of a record's size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<Box<Fingerprint>>,
    /// The streamed chunks, in order.
    #[serde(default)]
    pub chunks: Vec<StreamChunk>,
    /// Set when the provider refused the request instead of streaming.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RecordedError>,
}

/// A provider refusal (HTTP 4xx/5xx).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedError {
    /// HTTP status, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The provider's message.
    pub message: String,
}

/// What identifies a request, with enough detail to say what differed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fingerprint {
    /// Hash of everything below.
    pub hash: String,
    /// Hash of the system prompt, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// `role:hash` of each message.
    pub messages: Vec<String>,
    /// Tool names offered.
    pub tools: Vec<String>,
    /// Hash of the generation options.
    pub options: String,
    /// The first characters of the prompt (the last user message's text), so a request
    /// that diverges can say which prompt the recording expects. Not part of `hash`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// The messages this request added to its context's history, readable, so a replay
    /// that diverges can show the recorded message beside the live one. Not part of `hash`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub added: Option<AddedMessages>,
}

/// Characters of a prompt kept in a fingerprint.
const PROMPT_CHARS: usize = 200;

fn role_name(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

fn short_hash(bytes: &[u8]) -> String {
    hex::encode(&Sha256::digest(bytes)[..8])
}

fn json_hash<T: Serialize>(value: &T) -> String {
    short_hash(serde_json::to_string(value).unwrap_or_default().as_bytes())
}

impl Fingerprint {
    /// Fingerprints a request.
    pub fn of(request: &ModelRequest) -> Self {
        let system = request.system.as_deref().map(|s| short_hash(s.as_bytes()));
        let messages: Vec<String> = request
            .messages
            .iter()
            .map(|m| format!("{}:{}", role_name(m.role), json_hash(m)))
            .collect();
        let tools: Vec<String> = request.tools.iter().map(|t| t.name.clone()).collect();
        let options = json_hash(&(
            &request.options,
            request
                .tools
                .iter()
                .map(|t| &t.parameters)
                .collect::<Vec<_>>(),
        ));
        let hash = json_hash(&(&system, &messages, &tools, &options));
        let prompt = request
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .map(|m| m.text_content().chars().take(PROMPT_CHARS).collect());
        Self {
            hash,
            system,
            messages,
            tools,
            options,
            prompt,
            added: None,
        }
    }

    /// Says what differs between a recorded fingerprint (`self`) and a live one, or `None`.
    pub fn difference(&self, live: &Fingerprint) -> Option<Difference> {
        if self.hash == live.hash {
            return None;
        }
        if let (Some(recorded), Some(now)) = (&self.prompt, &live.prompt)
            && recorded != now
        {
            return Some(Difference::Prompt {
                recorded: recorded.clone(),
                live: now.clone(),
            });
        }
        if self.system != live.system {
            return Some(Difference::System);
        }
        if self.tools != live.tools {
            return Some(Difference::Tools {
                recorded: self.tools.clone(),
                live: live.tools.clone(),
            });
        }
        for (index, (rec, now)) in self.messages.iter().zip(&live.messages).enumerate() {
            if rec != now {
                let role = now.split_once(':').map_or("?", |(r, _)| r).to_owned();
                return Some(Difference::Message { index, role });
            }
        }
        if self.messages.len() != live.messages.len() {
            return Some(Difference::Count {
                recorded: self.messages.len(),
                live: live.messages.len(),
            });
        }
        Some(Difference::Options)
    }
}

/// Errors reading a transcript.
#[derive(Debug, thiserror::Error)]
pub enum TranscriptError {
    /// The file could not be read.
    #[error("cannot read transcript {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A line is not a valid record.
    #[error("{path}:{line}: {message}")]
    Invalid {
        /// The file.
        path: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// A parsed transcript.
#[derive(Debug, Clone)]
pub struct Transcript {
    /// The recorded model.
    pub model: ModelInfo,
    /// Turns in file order.
    pub turns: Vec<ResponseRecord>,
}

impl Transcript {
    /// Reads and checks a transcript file: header first, valid records, no duplicate keys.
    pub fn load(path: &Path) -> Result<Self, TranscriptError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| TranscriptError::Io {
            path: shown.clone(),
            source,
        })?;
        Self::parse(&text, &shown)
    }

    /// Reads a transcript its run was writing when it stopped (a crash, a kill): a last
    /// record cut short (no newline, or not whole JSON) is left out, and its line returned.
    pub fn load_unfinished(path: &Path) -> Result<(Self, Option<usize>), TranscriptError> {
        let shown = path.display().to_string();
        let mut text = std::fs::read_to_string(path).map_err(|source| TranscriptError::Io {
            path: shown.clone(),
            source,
        })?;
        let last_start = text.trim_end_matches('\n').rfind('\n').map_or(0, |n| n + 1);
        let last = &text[last_start..];
        let whole = last.ends_with('\n') && serde_json::from_str::<Record>(last).is_ok();
        let mut torn = None;
        if !last.is_empty() && !whole && last_start > 0 {
            torn = Some(text[..last_start].lines().count() + 1);
            text.truncate(last_start);
        }
        Ok((Self::parse(&text, &shown)?, torn))
    }

    /// Parses transcript text; `path` is only used in messages.
    pub fn parse(text: &str, path: &str) -> Result<Self, TranscriptError> {
        let invalid = |line: usize, message: String| TranscriptError::Invalid {
            path: path.to_owned(),
            line,
            message,
        };
        let mut model = None;
        let mut turns: Vec<ResponseRecord> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (index, raw) in text.lines().enumerate() {
            let line = index + 1;
            if raw.trim().is_empty() {
                continue;
            }
            let record: Record = serde_json::from_str(raw)
                .map_err(|e| invalid(line, format!("invalid transcript record: {e}")))?;
            match record {
                Record::Header {
                    format,
                    version,
                    model: m,
                } => {
                    if model.is_some() || !turns.is_empty() {
                        return Err(invalid(
                            line,
                            "the header must be the first record, and only one".to_owned(),
                        ));
                    }
                    if format != FORMAT {
                        return Err(invalid(
                            line,
                            format!("not a wonopcode transcript (format `{format}`)"),
                        ));
                    }
                    if version != VERSION {
                        return Err(invalid(
                            line,
                            format!(
                                "transcript version {version} is not supported (this build reads {VERSION})"
                            ),
                        ));
                    }
                    model = Some(m);
                }
                Record::Response(turn) => {
                    if model.is_none() {
                        return Err(invalid(
                            line,
                            "the first record must be the header".to_owned(),
                        ));
                    }
                    if !seen.insert((turn.context.clone(), turn.index)) {
                        return Err(invalid(
                            line,
                            format!(
                                "duplicate record for context {} turn {}",
                                turn.context, turn.index
                            ),
                        ));
                    }
                    turns.push(turn);
                }
            }
        }
        let model = model.ok_or_else(|| invalid(1, "empty transcript: no header".to_owned()))?;
        Ok(Self { model, turns })
    }
}

/// Numbers each context's requests from 0 in the order they are made: the `turn` of the
/// transcript key. Shared by replay and recording so both count the same way.
#[derive(Debug, Default)]
pub struct ResponseCounter(parking_lot::Mutex<std::collections::HashMap<ContextPath, u32>>);

impl ResponseCounter {
    /// The index of the next request of `context`.
    pub fn next(&self, context: &ContextPath) -> u32 {
        let mut counts = self.0.lock();
        let slot = counts.entry(context.clone()).or_insert(0);
        let turn = *slot;
        *slot += 1;
        turn
    }

    /// Gives `context`'s last index back: the request that took it was not answered (it
    /// diverged from the recording), so the next one may be.
    pub fn give_back(&self, context: &ContextPath) {
        if let Some(slot) = self.0.lock().get_mut(context) {
            *slot = slot.saturating_sub(1);
        }
    }
}

/// Serializes a record as one line (with the newline).
pub fn to_line(record: &Record) -> String {
    let mut line = serde_json::to_string(record).unwrap_or_default();
    line.push('\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use wonopcode_agent_loop::{Message, RequestOptions};

    const HEADER: &str = r#"{"type":"header","format":"wonopcode-transcript","version":1,"model":{"id":"m","provider":"p","context_window":1000,"max_output":100}}"#;

    fn request(prompt: &str) -> ModelRequest {
        ModelRequest {
            context: ContextPath::root(),
            system: Some("sys".into()),
            messages: vec![Message::user(prompt)],
            tools: Vec::new(),
            options: RequestOptions::default(),
        }
    }

    #[test]
    fn a_transcript_cut_short_is_read_up_to_its_last_whole_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("responses.jsonl");
        let turn =
            |n: u32| format!(r#"{{"type":"turn","context":"0","turn":{n},"chunks":[]}}"#) + "\n";
        let whole = format!("{HEADER}\n{}{}", turn(0), turn(1));
        let last = whole.len() - turn(1).len();
        for cut in last..=whole.len() {
            std::fs::write(&path, &whole[..cut]).unwrap();
            let (read, torn) = Transcript::load_unfinished(&path).unwrap();
            let expected = if cut == whole.len() { 2 } else { 1 };
            assert_eq!(read.turns.len(), expected, "cut at {cut}");
            let torn_expected = (cut > last && cut < whole.len()).then_some(3);
            assert_eq!(torn, torn_expected, "cut at {cut}");
        }
    }

    #[test]
    fn header_must_come_first_and_match() {
        let turn = r#"{"type":"turn","context":"0","turn":0,"chunks":[]}"#;
        let err = Transcript::parse(turn, "t").unwrap_err().to_string();
        assert_eq!(err, "t:1: the first record must be the header");
        let bad = HEADER.replace("\"version\":1", "\"version\":9");
        assert!(
            Transcript::parse(&bad, "t")
                .unwrap_err()
                .to_string()
                .contains("version 9 is not supported")
        );
        assert!(
            Transcript::parse("", "t")
                .unwrap_err()
                .to_string()
                .contains("no header")
        );
    }

    #[test]
    fn duplicates_and_unknown_fields_name_the_line() {
        let turn = r#"{"type":"turn","context":"0","turn":0,"chunks":[]}"#;
        let text = format!("{HEADER}\n{turn}\n{turn}\n");
        assert_eq!(
            Transcript::parse(&text, "t").unwrap_err().to_string(),
            "t:3: duplicate record for context 0 turn 0"
        );
        let odd = r#"{"type":"turn","context":"0","turn":1,"chunks":[],"colour":"red"}"#;
        let text = format!("{HEADER}\n{odd}\n");
        assert!(
            Transcript::parse(&text, "t")
                .unwrap_err()
                .to_string()
                .starts_with("t:2: invalid transcript record: unknown field `colour`")
        );
    }

    #[test]
    fn fingerprints_say_what_differs() {
        let a = Fingerprint::of(&request("one"));
        assert_eq!(a.difference(&Fingerprint::of(&request("one"))), None);
        assert_eq!(
            a.difference(&Fingerprint::of(&request("two")))
                .unwrap()
                .to_string(),
            "the recording's prompt is \"one\", this run's is \"two\""
        );
        let mut unprompted = Fingerprint::of(&request("two"));
        unprompted.prompt = None;
        assert_eq!(
            a.difference(&unprompted).unwrap().to_string(),
            "message 0 (user) differs from the recording"
        );
        let mut longer = request("one");
        longer.messages.push(Message::text(Role::Assistant, "more"));
        assert_eq!(
            a.difference(&Fingerprint::of(&longer)).unwrap().to_string(),
            "the recording has 1 messages, the request has 2"
        );
        let mut other_system = request("one");
        other_system.system = None;
        assert_eq!(
            a.difference(&Fingerprint::of(&other_system))
                .unwrap()
                .to_string(),
            "the system prompt differs"
        );
    }
}
