//! `RecordingModel`: wraps any model and appends every request and its streamed answer to a
//! transcript, in the format `ReplayProvider` reads. Each record is written (and fsync'd)
//! when its stream ends, so an interrupted run keeps every finished response.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use parking_lot::Mutex;

use async_trait::async_trait;
use futures::StreamExt;
use wonopcode_os::durable;
use wonopcode_protocol::{
    ChunkStream, ContextPath, LanguageModel, ModelError, ModelInfo, ModelRequest, ModelSource,
    ProviderListing, SharedModel, StreamChunk,
};

use crate::divergence::AddedMessages;
use crate::transcript::{
    FORMAT, Fingerprinter, Record, RecordedError, ResponseCounter, ResponseRecord, VERSION, to_line,
};

/// The transcript file and turn numbering every recorded model of a run shares.
struct Sink {
    out: Arc<Mutex<File>>,
    responses_made: ResponseCounter,
    /// The header's model: a turn answered by another model names its own.
    header: ModelInfo,
    /// Fingerprints each context's requests, hashing and recording only what each adds.
    prints: Fingerprinter,
}

/// Records a model's answers.
pub struct RecordingModel {
    inner: Arc<dyn LanguageModel>,
    sink: Arc<Sink>,
}

impl RecordingModel {
    /// Creates (or truncates) `path` and writes the header. A new recording is the owner's
    /// alone (`0600`): it holds every prompt and tool output.
    pub fn create(inner: Arc<dyn LanguageModel>, path: &Path) -> std::io::Result<Self> {
        let mut file = std::os::unix::fs::OpenOptionsExt::mode(
            std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true),
            0o600,
        )
        .open(path)?;
        let header = Record::Header {
            format: FORMAT.to_owned(),
            version: VERSION,
            model: inner.info().clone(),
        };
        // Taken to disk by the first response's fsync, which writes the whole file.
        file.write_all(to_line(&header).as_bytes())?;
        Ok(Self {
            sink: Arc::new(Sink {
                out: Arc::new(Mutex::new(file)),
                responses_made: ResponseCounter::default(),
                header: inner.info().clone(),
                prints: Fingerprinter::default(),
            }),
            inner,
        })
    }

    /// Records `other` into the same transcript, numbering its turns with this model's (a
    /// guest switched models mid-run).
    pub fn sharing(&self, other: Arc<dyn LanguageModel>) -> Self {
        Self {
            inner: other,
            sink: self.sink.clone(),
        }
    }
}

/// A `ModelSource` whose models all record into one transcript.
pub struct RecordingSource {
    inner: Arc<dyn ModelSource>,
    first: Arc<RecordingModel>,
}

impl RecordingSource {
    /// Records every model `inner` opens alongside `first`, the run's own recorder.
    pub fn new(inner: Arc<dyn ModelSource>, first: Arc<RecordingModel>) -> Self {
        Self { inner, first }
    }
}

#[async_trait]
impl ModelSource for RecordingSource {
    fn providers(&self) -> Vec<ProviderListing> {
        self.inner.providers()
    }

    async fn open(&self, provider: &str, model: Option<&str>) -> Result<SharedModel, ModelError> {
        let opened = self.inner.open(provider, model).await?;
        if std::ptr::addr_eq(Arc::as_ptr(&opened), Arc::as_ptr(&self.first.inner)) {
            return Ok(self.first.clone());
        }
        Ok(Arc::new(self.first.sharing(opened)))
    }
}

fn write_record(out: &Mutex<File>, record: ResponseRecord) {
    let line = to_line(&Record::Response(record));
    let mut file = out.lock();
    // On disk before the run goes on: a run journal's responses outlive a crash.
    if let Err(e) = file
        .write_all(line.as_bytes())
        .and_then(|()| durable::sync_data(&file))
    {
        tracing::warn!(error = %e, "cannot write the transcript");
    }
}

#[async_trait]
impl LanguageModel for RecordingModel {
    fn info(&self) -> &ModelInfo {
        self.inner.info()
    }

    /// The response is numbered (a recording continues a conversation's numbering).
    fn skip_response(&self, context: &ContextPath) {
        self.sink.responses_made.next(context);
        self.inner.skip_response(context);
    }

    fn context_began(&self, context: &ContextPath, module: &str, role: Option<&str>) {
        self.inner.context_began(context, module, role);
    }

    async fn stream(&self, request: ModelRequest) -> Result<ChunkStream, ModelError> {
        let index = self.sink.responses_made.next(&request.context);
        let info = self.inner.info();
        let own_model = !info.same_model(&self.sink.header);
        let mut print = self.sink.prints.of(&request);
        print.added = Some(AddedMessages::of(&request.messages, print.kept));
        let mut record = ResponseRecord {
            matching: None,
            context: request.context.clone(),
            index,
            model: own_model.then(|| info.clone()),
            request: Some(Box::new(print)),
            chunks: Vec::new(),
            error: None,
        };
        let inner = match self.inner.stream(request).await {
            Ok(s) => s,
            Err(e) => {
                let (status, message) = match &e {
                    ModelError::Provider { status, message } => (*status, message.clone()),
                    other => (None, other.to_string()),
                };
                record.error = Some(RecordedError { status, message });
                write_record(&self.sink.out, record);
                return Err(e);
            }
        };
        let out = Arc::clone(&self.sink.out);
        let recorder = Recorder {
            record: Some(record),
            out,
        };
        Ok(Box::pin(futures::stream::unfold(
            (inner, recorder),
            |(mut inner, mut recorder)| async move {
                let chunk: StreamChunk = inner.next().await?;
                recorder.push(chunk.clone());
                Some((chunk, (inner, recorder)))
            },
        )))
    }
}

/// Collects a stream's chunks and writes the record when the stream is dropped (ended,
/// failed or abandoned).
struct Recorder {
    record: Option<ResponseRecord>,
    out: Arc<Mutex<File>>,
}

impl Recorder {
    fn push(&mut self, chunk: StreamChunk) {
        if let Some(r) = &mut self.record {
            r.chunks.push(chunk);
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        if let Some(record) = self.record.take() {
            write_record(&self.out, record);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::ReplayProvider;
    use wonopcode_protocol::{ContextPath, Message, RequestOptions, StopReason, Usage};

    fn request(prompt: &str) -> ModelRequest {
        ModelRequest {
            context: ContextPath::root(),
            system: None,
            messages: vec![Message::user(prompt)].into(),
            tools: Vec::new(),
            options: RequestOptions::default(),
        }
    }

    #[tokio::test]
    async fn a_recording_replays_and_checks_requests() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("source.jsonl");
        std::fs::write(
            &source,
            concat!(
                r#"{"type":"header","format":"wonopcode-transcript","version":1,"model":{"id":"m","provider":"p","context_window":1000,"max_output":100}}"#, "\n",
                r#"{"type":"turn","context":"0","turn":0,"chunks":[{"type":"text_delta","text":"hi"},{"type":"usage","usage":{"input_tokens":5,"output_tokens":1}},{"type":"done","stop_reason":"end_turn"}]}"#, "\n",
                r#"{"type":"turn","context":"0","turn":1,"error":{"status":429,"message":"slow down"}}"#, "\n",
            ),
        )
        .unwrap();
        let recorded = dir.path().join("recorded.jsonl");
        let replay: Arc<dyn LanguageModel> = Arc::new(ReplayProvider::from_file(&source).unwrap());
        let recorder = RecordingModel::create(replay, &recorded).unwrap();
        let chunks: Vec<StreamChunk> = recorder
            .stream(request("hello"))
            .await
            .unwrap()
            .collect()
            .await;
        assert_eq!(chunks.len(), 3);
        let err = recorder.stream(request("again")).await.err().unwrap();
        assert_eq!(
            err,
            ModelError::Provider {
                status: Some(429),
                message: "slow down".into()
            }
        );
        drop(recorder);

        let again = ReplayProvider::from_file(&recorded).unwrap();
        let chunks: Vec<StreamChunk> = again
            .stream(request("hello"))
            .await
            .unwrap()
            .collect()
            .await;
        assert_eq!(
            chunks[1],
            StreamChunk::Usage {
                usage: Usage {
                    input_tokens: 5,
                    output_tokens: 1,
                    ..Usage::default()
                }
            }
        );
        assert_eq!(
            chunks[2],
            StreamChunk::Done {
                stop_reason: StopReason::EndTurn
            }
        );
        let diverged = again
            .stream(request("not again"))
            .await
            .err()
            .unwrap()
            .to_string();
        assert!(
            diverged.contains("transcript divergence at context 0, response 1 of"),
            "{diverged}"
        );
        assert!(
            diverged.contains(r#"the recording's prompt is "again", this run's is "not again""#),
            "{diverged}"
        );
    }

    #[tokio::test]
    async fn a_diverged_message_is_shown_beside_the_recording() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("source.jsonl");
        let done = r#"{"type":"done","stop_reason":"end_turn"}"#;
        std::fs::write(
            &source,
            format!(
                "{}\n{}\n{}\n",
                r#"{"type":"header","format":"wonopcode-transcript","version":1,"model":{"id":"m","provider":"p","context_window":1000,"max_output":100}}"#,
                format_args!(r#"{{"type":"turn","context":"0","turn":0,"chunks":[{done}]}}"#),
                format_args!(r#"{{"type":"turn","context":"0","turn":1,"chunks":[{done}]}}"#),
            ),
        )
        .unwrap();
        let with_result = |output: &str| {
            let mut asked = request("count the lines");
            std::sync::Arc::make_mut(&mut asked.messages).push(Message {
                role: wonopcode_protocol::Role::Assistant,
                parts: vec![wonopcode_protocol::Part::ToolCall {
                    id: "c1".into(),
                    name: "read".into(),
                    arguments: "{}".into(),
                }]
                .into(),
            });
            std::sync::Arc::make_mut(&mut asked.messages).push(Message {
                role: wonopcode_protocol::Role::Tool,
                parts: vec![wonopcode_protocol::Part::ToolResult {
                    call_id: "c1".into(),
                    content: output.into(),
                    is_error: false,
                }]
                .into(),
            });
            asked
        };
        let recorded = dir.path().join("recorded.jsonl");
        let replay: Arc<dyn LanguageModel> = Arc::new(ReplayProvider::from_file(&source).unwrap());
        let recorder = RecordingModel::create(replay, &recorded).unwrap();
        for asked in [request("count the lines"), with_result("one\ntwo\nthree")] {
            let _: Vec<StreamChunk> = recorder.stream(asked).await.unwrap().collect().await;
        }
        drop(recorder);

        let again = ReplayProvider::from_file(&recorded).unwrap();
        let _ = again.stream(request("count the lines")).await.unwrap();
        let diverged = again
            .stream(with_result("one\n2\nthree"))
            .await
            .err()
            .unwrap()
            .to_string();
        let mut lines = diverged.lines();
        let first = lines.next().unwrap_or_default();
        assert!(
            first.starts_with("transcript divergence at context 0, response 1 of ")
                && first.ends_with(": message 2 (tool) differs from the recording"),
            "{diverged}"
        );
        assert!(diverged.contains("- recorded two"), "{diverged}");
        assert!(diverged.contains("+ this run 2"), "{diverged}");
        assert!(diverged.contains("result c1: one"), "{diverged}");
        assert!(
            diverged.ends_with(
                "record it again from a copy without fingerprints: docs/replay.md, \"Recording\"."
            ),
            "{diverged}"
        );
    }

    #[tokio::test]
    async fn models_a_guest_switches_to_record_into_the_same_transcript() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("source.jsonl");
        std::fs::write(
            &source,
            concat!(
                r#"{"type":"header","format":"wonopcode-transcript","version":1,"model":{"id":"m","provider":"p","context_window":1000,"max_output":100}}"#, "\n",
                r#"{"type":"turn","context":"0","turn":0,"chunks":[{"type":"text_delta","text":"a"},{"type":"done","stop_reason":"end_turn"}]}"#, "\n",
                r#"{"type":"turn","context":"0","turn":1,"model":{"id":"big","provider":"q","context_window":9000,"max_output":900},"chunks":[{"type":"text_delta","text":"b"},{"type":"done","stop_reason":"end_turn"}]}"#, "\n",
            ),
        )
        .unwrap();
        let replay = Arc::new(ReplayProvider::from_file(&source).unwrap());
        let recorded = dir.path().join("recorded.jsonl");
        let first = Arc::new(RecordingModel::create(replay.clone(), &recorded).unwrap());
        let models = RecordingSource::new(Arc::new(crate::ReplaySource(replay)), first.clone());
        let same = models.open("p", None).await.unwrap();
        assert!(std::ptr::addr_eq(Arc::as_ptr(&same), Arc::as_ptr(&first)));
        let _: Vec<StreamChunk> = same.stream(request("one")).await.unwrap().collect().await;
        let big = models.open("q", Some("big")).await.unwrap();
        let _: Vec<StreamChunk> = big.stream(request("two")).await.unwrap().collect().await;
        drop((same, big, first, models));

        let text = std::fs::read_to_string(&recorded).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(!lines[1].contains(r#""model""#), "{text}");
        assert!(
            lines[2].contains(r#""turn":1,"model":{"id":"big","provider":"q""#),
            "{text}"
        );
    }
}
