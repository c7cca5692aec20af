//! The transcript format: JSONL, one header line, then one record per model request keyed by
//! (context path, turn index), holding the chunks the model streamed (or the error that
//! refused the request) and a fingerprint of the request that produced them. `--replay`
//! reads it; `--record` writes it. Documented in `docs/replay.md`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use wonopcode_protocol::{ContextPath, Message, ModelInfo, ModelRequest, Part, Role, StreamChunk};

use crate::divergence::{AddedMessages, Difference};

/// The `format` value of the header.
pub const FORMAT: &str = "wonopcode-transcript";
/// The version this build writes (2: a record lists only the messages after the ones it
/// `kept` from its context's previous record). Version 1 files are read too.
pub const VERSION: u32 = 2;

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
    /// Context that made the request (the root when `matching` is set: unused then).
    #[serde(default = "ContextPath::root")]
    pub context: ContextPath,
    /// A hand-written record for every context of this module or role (`loops test`), in
    /// place of one context's: it answers response `turn` of each context it matches that
    /// has no records of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matching: Option<ContextMatch>,
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

/// Which contexts a hand-written record answers: those running `module` (a loop's or an
/// agent's name), or started with `role` as their `custom-data`. A role is more particular
/// than a module, so a context with records for both gets its role's.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub enum ContextMatch {
    /// Every context running this loop or agent.
    Module(String),
    /// Every context whose parent gave it this `custom-data`.
    Role(String),
}

impl std::fmt::Display for ContextMatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Module(m) => write!(f, "module {m}"),
            Self::Role(r) => write!(f, "role {r}"),
        }
    }
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
    /// How many of the request's messages are those of its context's previous record (the
    /// request continued that conversation): `messages` then lists only the ones after them,
    /// so a long session's records stay the size of what each response added. 0 in files
    /// of version 1.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub kept: usize,
    /// `role:hash` of each message (after the `kept` ones).
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

fn is_zero(n: &usize) -> bool {
    *n == 0
}

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

/// A message as a fingerprint lists it: `role:hash`.
fn message_hash(message: &Message) -> String {
    format!("{}:{}", role_name(message.role), json_hash(message))
}

/// The hash of the generation options and the tools' parameters. A schema's keys are
/// hashed in sorted order whatever order it was built in, so a fingerprint does not depend
/// on whether serde_json keeps insertion order (a dependency's `preserve_order` turns that
/// on for the whole build) and recordings made either way match.
fn options_hash(request: &ModelRequest) -> String {
    json_hash(&(
        &request.options,
        request
            .tools
            .iter()
            .map(|t| sorted_keys(&t.parameters))
            .collect::<Vec<_>>(),
    ))
}

/// `value` with every object's keys in sorted order.
pub fn sorted_keys(value: &serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::Object(map) => {
            let mut entries: Vec<(&String, &serde_json::Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            serde_json::Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k.clone(), sorted_keys(v)))
                    .collect(),
            )
        }
        serde_json::Value::Array(items) => {
            serde_json::Value::Array(items.iter().map(sorted_keys).collect())
        }
        other => other.clone(),
    }
}

/// JSON text of a value that always serializes (strings and lists of them).
fn json_text<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

impl Fingerprint {
    /// Fingerprints a request, hashing every message (see [`Fingerprinter`] for a context's
    /// requests one after another).
    pub fn of(request: &ModelRequest) -> Self {
        // The day and the working tree a request was made in are not what it must match.
        let system = request
            .system
            .as_deref()
            .map(|s| short_hash(wonopcode_protocol::environment::without(s).as_bytes()));
        let messages: Vec<String> = request.messages.iter().map(message_hash).collect();
        let tools: Vec<String> = request.tools.iter().map(|t| t.name.clone()).collect();
        let options = options_hash(request);
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
            kept: 0,
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

/// Fingerprints each context's requests in turn, hashing only what a request added to the
/// one before it: a request of a long session costs what its response added, not a hash of
/// the whole history. It keeps, per context, the messages it hashed (holding them, so one
/// edited in place through `Arc::make_mut` is always a new one) and the SHA-256 state of the
/// fingerprint's JSON up to the last message, and gives the same hash as
/// [`Fingerprint::of`].
#[derive(Debug, Default)]
pub struct Fingerprinter(parking_lot::Mutex<HashMap<ContextPath, Known>>);

/// What a context's previous request was, as far as its fingerprint goes.
#[derive(Debug, Clone)]
struct Known {
    system: Option<String>,
    messages: Vec<(Role, Arc<[Part]>)>,
    /// The index of the last user message, for the prompt.
    last_user: Option<usize>,
    /// SHA-256 of `[SYSTEM,[HASH,HASH,...` (the JSON of [`Fingerprint::of`]'s hash, up to
    /// the last message).
    state: Sha256,
}

impl Fingerprinter {
    /// The fingerprint of `request`, with `kept` set to the messages it shares with its
    /// context's previous request (all of them, when it continues it; else 0) and `messages`
    /// listing only the rest.
    pub fn of(&self, request: &ModelRequest) -> Fingerprint {
        // The day and the working tree a request was made in are not what it must match.
        let system = request
            .system
            .as_deref()
            .map(|s| short_hash(wonopcode_protocol::environment::without(s).as_bytes()));
        let mut contexts = self.0.lock();
        let continued = contexts.remove(&request.context).filter(|known| {
            known.system == system
                && known.messages.len() <= request.messages.len()
                && known
                    .messages
                    .iter()
                    .zip(request.messages.iter())
                    .all(|((role, parts), m)| *role == m.role && Arc::ptr_eq(parts, &m.parts))
        });
        let mut known = continued.unwrap_or_else(|| {
            let mut state = Sha256::new();
            state.update(format!("[{},[", json_text(&system)).as_bytes());
            Known {
                system: system.clone(),
                messages: Vec::new(),
                last_user: None,
                state,
            }
        });
        let kept = known.messages.len();
        let mut added = Vec::with_capacity(request.messages.len() - kept);
        for (index, message) in request.messages.iter().enumerate().skip(kept) {
            let hash = message_hash(message);
            if index > 0 {
                known.state.update(b",");
            }
            known.state.update(json_text(&hash).as_bytes());
            known.messages.push((message.role, message.parts.clone()));
            if message.role == Role::User {
                known.last_user = Some(index);
            }
            added.push(hash);
        }
        let tools: Vec<String> = request.tools.iter().map(|t| t.name.clone()).collect();
        let options = options_hash(request);
        let mut state = known.state.clone();
        state.update(format!("],{},{}]", json_text(&tools), json_text(&options)).as_bytes());
        let hash = hex::encode(&state.finalize()[..8]);
        let prompt = known
            .last_user
            .and_then(|i| request.messages.get(i))
            .map(|m| m.text_content().chars().take(PROMPT_CHARS).collect());
        contexts.insert(request.context.clone(), known);
        Fingerprint {
            hash,
            system,
            kept,
            messages: added,
            tools,
            options,
            prompt,
            added: None,
        }
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
        // Per context: the last record's index and how many messages its request had.
        let mut last: HashMap<ContextPath, (u32, usize)> = HashMap::new();
        let mut seen_matching = std::collections::HashSet::new();
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
                    if !(1..=VERSION).contains(&version) {
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
                    if let Some(matching) = &turn.matching {
                        if turn.request.is_some() {
                            return Err(invalid(
                                line,
                                format!(
                                    "the record for {matching} has a fingerprint: a record for many contexts is hand-written"
                                ),
                            ));
                        }
                        if !seen_matching.insert((matching.clone(), turn.index)) {
                            return Err(invalid(
                                line,
                                format!("duplicate record for {matching} turn {}", turn.index),
                            ));
                        }
                        turns.push(turn);
                        continue;
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
                    if let Some(print) = &turn.request {
                        let before = last.get(&turn.context).copied();
                        let continues = before.is_some_and(|(index, count)| {
                            index + 1 == turn.index && print.kept <= count
                        });
                        if print.kept > 0 && !continues {
                            return Err(invalid(
                                line,
                                format!(
                                    "the record keeps {} messages of context {}'s previous record, which is not the one before it or has fewer",
                                    print.kept, turn.context
                                ),
                            ));
                        }
                        last.insert(
                            turn.context.clone(),
                            (turn.index, print.kept + print.messages.len()),
                        );
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
    use wonopcode_protocol::RequestOptions;

    const HEADER: &str = r#"{"type":"header","format":"wonopcode-transcript","version":1,"model":{"id":"m","provider":"p","context_window":1000,"max_output":100}}"#;

    fn request(prompt: &str) -> ModelRequest {
        ModelRequest {
            context: ContextPath::root(),
            system: Some("sys".into()),
            messages: vec![Message::user(prompt)].into(),
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
        std::sync::Arc::make_mut(&mut longer.messages).push(Message::text(Role::Assistant, "more"));
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

    /// The fingerprinter gives the hash a whole fingerprint gives, hashing only what each
    /// request added, and starts again when the history is not a continuation.
    #[test]
    fn the_fingerprinter_hashes_what_each_request_adds() {
        let prints = Fingerprinter::default();
        let mut request = request("hello");
        let first = prints.of(&request);
        assert_eq!((first.kept, first.messages.len()), (0, 1));
        assert_eq!(first.hash, Fingerprint::of(&request).hash);
        for i in 0..5 {
            std::sync::Arc::make_mut(&mut request.messages)
                .push(Message::text(Role::Assistant, format!("answer {i}")));
            std::sync::Arc::make_mut(&mut request.messages)
                .push(Message::user(format!("again {i}")));
            let next = prints.of(&request);
            let whole = Fingerprint::of(&request);
            assert_eq!(next.hash, whole.hash, "after {i}");
            assert_eq!(next.kept, 1 + 2 * i);
            assert_eq!(next.messages, whole.messages[next.kept..]);
            assert_eq!(next.prompt, whole.prompt);
        }
        // A history changed in place (compaction) is a new one: hashed whole.
        std::sync::Arc::make_mut(&mut request.messages)[1] =
            Message::text(Role::Assistant, "summary");
        let changed = prints.of(&request);
        assert_eq!(
            (changed.kept, changed.hash.clone()),
            (0, Fingerprint::of(&request).hash)
        );
        // Another system prompt, or other tools, change the hash as a whole fingerprint does.
        request.system = Some("other".into());
        assert_eq!(prints.of(&request).hash, Fingerprint::of(&request).hash);
        request.system = None;
        assert_eq!(prints.of(&request).hash, Fingerprint::of(&request).hash);
    }

    #[test]
    fn a_record_that_keeps_messages_it_cannot_is_refused() {
        let record = |index: u32, kept: usize| {
            format!(
                r#"{{"type":"turn","context":"0","turn":{index},"request":{{"hash":"h","kept":{kept},"messages":["user:a"],"tools":[],"options":"o"}},"chunks":[]}}"#
            )
        };
        let good = format!("{HEADER}\n{}\n{}\n", record(0, 0), record(1, 1));
        assert!(Transcript::parse(&good, "t").is_ok());
        for bad in [
            format!("{HEADER}\n{}\n", record(0, 1)),
            format!("{HEADER}\n{}\n{}\n", record(0, 0), record(1, 2)),
            format!("{HEADER}\n{}\n{}\n", record(0, 0), record(2, 1)),
        ] {
            let error = Transcript::parse(&bad, "t").err().map(|e| e.to_string());
            assert!(
                error.as_deref().is_some_and(|e| e.contains("keeps")),
                "{error:?}"
            );
        }
    }
}
