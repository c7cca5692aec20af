//! `ReplayProvider`: answers model requests from a recorded transcript, offline and
//! deterministically, checking each request against the recording.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use wonopcode_protocol::model_source::listing_of;
use wonopcode_protocol::{
    ChunkStream, ContextPath, LanguageModel, ModelError, ModelInfo, ModelRequest, ModelSource,
    ProviderListing, SharedModel,
};

use crate::divergence::{Difference, message_diff, render};
use crate::transcript::{
    ContextMatch, Fingerprint, Fingerprinter, ResponseCounter, ResponseRecord, Transcript,
    TranscriptError,
};

/// The recording every view of one replay shares.
struct Recording {
    source: PathBuf,
    /// Every model the turns came from, the header's first, then in file order.
    models: Vec<ModelInfo>,
    turns: HashMap<(ContextPath, u32), ResponseRecord>,
    /// Hand-written records for every context of a module or role ([`ContextMatch`]).
    matched: HashMap<(ContextMatch, u32), ResponseRecord>,
    /// What each context matches, as it began ([`LanguageModel::context_began`]): its role
    /// (when it has one), then its module, the order a record is looked for in.
    began: parking_lot::Mutex<HashMap<ContextPath, Vec<ContextMatch>>>,
    responses_made: ResponseCounter,
    /// Fingerprints the requests as they come, hashing what each added.
    prints: Fingerprinter,
}

impl Recording {
    /// The record for response `turn` of `context`: its own, else its role's, else its
    /// module's.
    fn record(&self, context: &ContextPath, turn: u32) -> Option<&ResponseRecord> {
        if let Some(own) = self.turns.get(&(context.clone(), turn)) {
            return Some(own);
        }
        if self.matched.is_empty() {
            return None;
        }
        let began = self.began.lock();
        began
            .get(context)?
            .iter()
            .find_map(|m| self.matched.get(&(m.clone(), turn)))
    }

    /// What `context` could have been answered by, for a message: its module and role when
    /// records match either.
    fn matches_of(&self, context: &ContextPath) -> String {
        let began = self.began.lock();
        match began.get(context) {
            Some(matches) if !self.matched.is_empty() => {
                let counted: Vec<String> = matches
                    .iter()
                    .map(|m| {
                        let records = self.matched.keys().filter(|(k, _)| k == m).count();
                        format!("{m} ({records} records)")
                    })
                    .collect();
                format!("; it is {}", counted.join(", "))
            }
            _ => String::new(),
        }
    }

    /// What differs between `request` and the fingerprint recorded for response `turn` of
    /// its context, or `None`. The request's hash comes from the fingerprinter; only a
    /// request that differs is fingerprinted whole, beside the recorded messages put
    /// together from the records its record continues.
    fn difference(
        &self,
        request: &ModelRequest,
        turn: u32,
        recorded: &Fingerprint,
    ) -> Option<Difference> {
        if self.prints.of(request).hash == recorded.hash {
            return None;
        }
        let mut whole = recorded.clone();
        whole.messages = self.recorded_messages(&request.context, turn)?;
        whole.kept = 0;
        whole.difference(&Fingerprint::of(request))
    }

    /// Every message hash of response `turn`'s request in `context`, put together from the
    /// records whose messages it kept (`None` when the records do not hold them).
    fn recorded_messages(&self, context: &ContextPath, turn: u32) -> Option<Vec<String>> {
        let mut chain = Vec::new();
        let mut index = turn;
        loop {
            let print = self
                .turns
                .get(&(context.clone(), index))?
                .request
                .as_deref()?;
            chain.push(print);
            if print.kept == 0 {
                break;
            }
            index = index.checked_sub(1)?;
        }
        let mut messages: Vec<String> = Vec::new();
        for print in chain.iter().rev() {
            if messages.len() < print.kept {
                return None;
            }
            messages.truncate(print.kept);
            messages.extend(print.messages.iter().cloned());
        }
        Some(messages)
    }

    /// The header's model: the one a turn without its own `model` came from.
    fn header(&self) -> &ModelInfo {
        &self.models[0]
    }

    /// Message `index` of response `turn`'s request in `context`, as recorded: in the
    /// messages that request added, or, when it came earlier, in an earlier request's.
    fn message(&self, context: &ContextPath, turn: u32, index: usize) -> Option<&str> {
        for turn in (0..=turn).rev() {
            let added = self
                .turns
                .get(&(context.clone(), turn))?
                .request
                .as_ref()?
                .added
                .as_ref()?;
            if let Some(message) = added.get(index) {
                return Some(message);
            }
            if index >= added.from {
                return None;
            }
        }
        None
    }
}

/// Replays a transcript. Each context's requests are numbered from 0 in the order they are
/// made; request `n` of context `c` gets the record keyed `(c, n)`, and must go to the model
/// that answered it when it was recorded.
pub struct ReplayProvider {
    recording: Arc<Recording>,
    /// The model this view stands for (the header's, or one a guest switched to).
    model: ModelInfo,
    pace: Option<std::time::Duration>,
}

impl ReplayProvider {
    /// Loads a transcript file.
    pub fn from_file(path: &Path) -> Result<Self, TranscriptError> {
        Ok(Self::new(Transcript::load(path)?, path))
    }

    /// Replays an already parsed transcript; `source` names it in messages.
    pub fn new(transcript: Transcript, source: &Path) -> Self {
        let mut models = vec![transcript.model.clone()];
        for info in transcript.turns.iter().filter_map(|t| t.model.as_ref()) {
            if !models.iter().any(|m| m.same_model(info)) {
                models.push(info.clone());
            }
        }
        let mut turns = HashMap::new();
        let mut matched = HashMap::new();
        for record in transcript.turns {
            match record.matching.clone() {
                Some(matching) => matched.insert((matching, record.index), record),
                None => turns.insert((record.context.clone(), record.index), record),
            };
        }
        Self {
            recording: Arc::new(Recording {
                source: source.to_path_buf(),
                models,
                turns,
                matched,
                began: parking_lot::Mutex::default(),
                responses_made: ResponseCounter::default(),
                prints: Fingerprinter::default(),
            }),
            model: transcript.model,
            pace: None,
        }
    }

    /// Streams each chunk `pace` after the previous one, as a model would, so a replayed
    /// run shows streaming, concurrency and timing (`--replay-pace`); the chunks are the same.
    pub fn paced(mut self, pace: std::time::Duration) -> Self {
        self.pace = Some(pace).filter(|p| !p.is_zero());
        self
    }

    /// Every model the transcript recorded answers from: the header's first.
    pub fn models(&self) -> &[ModelInfo] {
        &self.recording.models
    }

    /// The same replay standing for another recorded model: the turns and their numbering
    /// are shared.
    fn as_model(&self, model: ModelInfo) -> Self {
        Self {
            recording: self.recording.clone(),
            model,
            pace: self.pace,
        }
    }
}

#[async_trait]
impl LanguageModel for ReplayProvider {
    fn info(&self) -> &ModelInfo {
        &self.model
    }

    fn skip_response(&self, context: &ContextPath) {
        self.recording.responses_made.next(context);
    }

    fn context_began(&self, context: &ContextPath, module: &str, role: Option<&str>) {
        let mut matches: Vec<ContextMatch> = role
            .map(|r| ContextMatch::Role(r.to_owned()))
            .into_iter()
            .collect();
        matches.push(ContextMatch::Module(module.to_owned()));
        self.recording.began.lock().insert(context.clone(), matches);
    }

    async fn stream(&self, request: ModelRequest) -> Result<ChunkStream, ModelError> {
        let recording = &self.recording;
        let turn = recording.responses_made.next(&request.context);
        let Some(record) = recording.record(&request.context, turn) else {
            let recorded = recording
                .turns
                .keys()
                .filter(|(c, _)| *c == request.context)
                .count();
            return Err(ModelError::Replay(format!(
                "transcript {} has no record for context {} turn {turn} (it has {recorded} for that context{}): the run asked the model more than was recorded",
                recording.source.display(),
                request.context,
                recording.matches_of(&request.context)
            )));
        };
        let answered = record.model.as_ref().unwrap_or(recording.header());
        if !answered.same_model(&self.model) {
            return Err(ModelError::Replay(format!(
                "transcript divergence at context {}, response {turn} of {}: recorded from {}/{}, the run asked {}/{}",
                request.context,
                recording.source.display(),
                answered.provider,
                answered.id,
                self.model.provider,
                self.model.id
            )));
        }
        if let Some(recorded) = &record.request
            && let Some(difference) = recording.difference(&request, turn, recorded)
        {
            // Not answered: the next request (a prompt typed again) may be this turn's.
            recording.responses_made.give_back(&request.context);
            let mut said = format!(
                "transcript divergence at context {}, response {turn} of {}: {difference}",
                request.context,
                recording.source.display()
            );
            if let Difference::Message { index, role } = &difference {
                if let (Some(was), Some(now)) = (
                    recording.message(&request.context, turn, *index),
                    request.messages.get(*index),
                ) {
                    said.push('\n');
                    said.push_str(&message_diff(was, &render(now)));
                }
                if role == "tool" {
                    said.push_str(TOOL_OUTPUT_CHANGED);
                }
            }
            return Err(ModelError::Replay(said));
        }
        if let Some(error) = &record.error {
            return Err(ModelError::Provider {
                status: error.status,
                message: error.message.clone(),
            });
        }
        let chunks = futures::stream::iter(record.chunks.clone());
        Ok(match self.pace {
            None => Box::pin(chunks),
            Some(pace) => Box::pin(futures::StreamExt::then(chunks, move |chunk| async move {
                tokio::time::sleep(pace).await;
                chunk
            })),
        })
    }
}

/// Said under a divergence in a tool's output: a tool of a newer wonopcode may answer
/// otherwise than the one that recorded (`read` numbered every line until it gave files as
/// they are), and the recording's answers still fit once recorded again.
const TOOL_OUTPUT_CHANGED: &str = "\nA tool answered otherwise than when this was recorded. If an earlier wonopcode recorded it, record it again from a copy without fingerprints: docs/replay.md, \"Recording\".";

/// The replay's `ModelSource`: the models the transcript recorded, and only those.
pub struct ReplaySource(pub Arc<ReplayProvider>);

#[async_trait]
impl ModelSource for ReplaySource {
    fn providers(&self) -> Vec<ProviderListing> {
        let mut list: Vec<ProviderListing> = Vec::new();
        for info in self.0.models() {
            match list.iter_mut().find(|l| l.id == info.provider) {
                Some(listing) => {
                    listing.models.push(info.id.clone());
                    listing.supports_thinking |= info.capabilities.thinking;
                }
                None => list.push(listing_of(info)),
            }
        }
        list.sort_by(|a, b| a.id.cmp(&b.id));
        list
    }

    async fn open(&self, provider: &str, model: Option<&str>) -> Result<SharedModel, ModelError> {
        let models = self.0.models();
        let found = models
            .iter()
            .find(|m| m.provider == provider && model.is_none_or(|id| id == m.id));
        match found {
            Some(info) if info.same_model(&self.0.model) => Ok(self.0.clone()),
            Some(info) => Ok(Arc::new(self.0.as_model(info.clone()))),
            None => Err(ModelError::Replay(format!(
                "transcript {} has no turns from provider `{provider}`{}; it has {}",
                self.0.recording.source.display(),
                model.map(|m| format!(" model `{m}`")).unwrap_or_default(),
                models
                    .iter()
                    .map(|m| format!("{}/{}", m.provider, m.id))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;
    use wonopcode_protocol::{Message, RequestOptions, StreamChunk};

    use super::*;

    const TRANSCRIPT: &str = r#"{"type":"header","format":"wonopcode-transcript","version":1,"model":{"id":"m","provider":"p","context_window":1000,"max_output":100}}
{"type":"turn","context":"0","turn":0,"chunks":[{"type":"text_delta","text":"a"},{"type":"text_delta","text":"b"},{"type":"done","stop_reason":"end_turn"}]}"#;

    fn request() -> ModelRequest {
        ModelRequest {
            context: ContextPath::root(),
            system: None,
            messages: vec![Message::user("hi")].into(),
            tools: Vec::new(),
            options: RequestOptions::default(),
        }
    }

    #[tokio::test]
    async fn a_paced_replay_streams_the_same_chunks_later() {
        let transcript = Transcript::parse(TRANSCRIPT, "t").unwrap();
        let plain = ReplayProvider::new(transcript.clone(), Path::new("t"));
        let paced = ReplayProvider::new(transcript, Path::new("t"))
            .paced(std::time::Duration::from_millis(20));
        let a: Vec<StreamChunk> = plain.stream(request()).await.unwrap().collect().await;
        let started = std::time::Instant::now();
        let b: Vec<StreamChunk> = paced.stream(request()).await.unwrap().collect().await;
        assert_eq!(a, b);
        assert_eq!(a.len(), 3);
        // Three chunks, each after a 20 ms pause: never sooner than that.
        assert!(started.elapsed() >= std::time::Duration::from_millis(60));
    }

    const SWITCHED: &str = r#"{"type":"header","format":"wonopcode-transcript","version":1,"model":{"id":"m","provider":"p","context_window":1000,"max_output":100}}
{"type":"turn","context":"0","turn":0,"chunks":[{"type":"text_delta","text":"a"},{"type":"done","stop_reason":"end_turn"}]}
{"type":"turn","context":"0","turn":1,"model":{"id":"big","provider":"q","context_window":9000,"max_output":900},"chunks":[{"type":"text_delta","text":"b"},{"type":"done","stop_reason":"end_turn"}]}"#;

    #[tokio::test]
    async fn a_switched_model_replays_only_where_it_was_recorded() {
        let transcript = Transcript::parse(SWITCHED, "t").unwrap();
        let source = ReplaySource(Arc::new(ReplayProvider::new(transcript, Path::new("t"))));
        let ids: Vec<(String, Vec<String>)> = source
            .providers()
            .into_iter()
            .map(|l| (l.id, l.models))
            .collect();
        assert_eq!(
            ids,
            vec![
                ("p".to_owned(), vec!["m".to_owned()]),
                ("q".to_owned(), vec!["big".to_owned()])
            ]
        );
        let big = source.open("q", Some("big")).await.unwrap();
        assert_eq!(big.info().context_window, 9000);
        // Turn 0 was answered by p/m: asking q/big for it is a divergence that names both.
        let e = big.stream(request()).await.err().unwrap().to_string();
        assert!(e.contains("recorded from p/m, the run asked q/big"), "{e}");
        // Turn 1 (the views share the numbering) was answered by q/big.
        let chunks: Vec<StreamChunk> = big.stream(request()).await.unwrap().collect().await;
        assert_eq!(
            chunks.first(),
            Some(&StreamChunk::TextDelta {
                text: "b".to_owned()
            })
        );
        let e = source
            .open("q", Some("small"))
            .await
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("no turns from provider `q` model `small`; it has p/m, q/big"),
            "{e}"
        );
    }

    const MATCHING: &str = r#"{"type":"header","format":"wonopcode-transcript","version":2,"model":{"id":"m","provider":"p","context_window":1000,"max_output":100}}
{"type":"turn","matching":{"module":"researcher"},"turn":0,"chunks":[{"type":"text_delta","text":"module"},{"type":"done","stop_reason":"end_turn"}]}
{"type":"turn","matching":{"role":"lead"},"turn":0,"chunks":[{"type":"text_delta","text":"role"},{"type":"done","stop_reason":"end_turn"}]}
{"type":"turn","context":"0.3","turn":0,"chunks":[{"type":"text_delta","text":"own"},{"type":"done","stop_reason":"end_turn"}]}"#;

    /// The text of the next response of `context`, or the error's.
    async fn answer(replay: &ReplayProvider, context: &str) -> String {
        let mut asked = request();
        asked.context = ContextPath::parse(context).unwrap();
        match replay.stream(asked).await {
            Ok(stream) => {
                stream
                    .filter_map(|c| async move {
                        match c {
                            StreamChunk::TextDelta { text } => Some(text),
                            _ => None,
                        }
                    })
                    .collect::<String>()
                    .await
            }
            Err(e) => e.to_string(),
        }
    }

    #[tokio::test]
    async fn a_context_is_answered_by_its_own_records_then_its_roles_then_its_modules() {
        let replay = ReplayProvider::new(Transcript::parse(MATCHING, "t").unwrap(), Path::new("t"));
        replay.context_began(&ContextPath::parse("0.1").unwrap(), "researcher", None);
        replay.context_began(
            &ContextPath::parse("0.2").unwrap(),
            "researcher",
            Some("lead"),
        );
        replay.context_began(
            &ContextPath::parse("0.3").unwrap(),
            "researcher",
            Some("lead"),
        );
        replay.context_began(&ContextPath::parse("0.4").unwrap(), "coder", None);
        assert_eq!(answer(&replay, "0.1").await, "module");
        assert_eq!(answer(&replay, "0.2").await, "role");
        assert_eq!(answer(&replay, "0.3").await, "own");
        // Each context counts its own responses: the script has one each.
        let past = answer(&replay, "0.1").await;
        assert!(past.contains("no record for context 0.1 turn 1"), "{past}");
        let none = answer(&replay, "0.4").await;
        assert!(none.contains("it is module coder (0 records)"), "{none}");
        // A context that never said what it runs gets only its own records.
        let unknown = answer(&replay, "0.5").await;
        assert!(
            unknown.contains("no record for context 0.5 turn 0"),
            "{unknown}"
        );
    }

    #[test]
    fn a_record_for_many_contexts_is_hand_written_and_named_once() {
        let header = MATCHING.lines().next().unwrap();
        let twice = format!(
            "{header}\n{}\n{}",
            MATCHING.lines().nth(1).unwrap(),
            MATCHING.lines().nth(1).unwrap()
        );
        let e = Transcript::parse(&twice, "t").unwrap_err().to_string();
        assert!(
            e.contains("duplicate record for module researcher turn 0"),
            "{e}"
        );
        let printed = format!(
            "{header}\n{}",
            r#"{"type":"turn","matching":{"role":"x"},"turn":0,"request":{"hash":"0","messages":[],"tools":[],"options":"0"},"chunks":[]}"#
        );
        let e = Transcript::parse(&printed, "t").unwrap_err().to_string();
        assert!(e.contains("has a fingerprint"), "{e}");
    }
}
