//! `RecordingModel`: wraps any model and appends every request and its streamed answer to a
//! transcript, in the format `ReplayProvider` reads. Each record is written (and flushed)
//! when its stream ends, so an interrupted run keeps every finished turn.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::StreamExt;
use wonopcode_agent_loop::{
    ChunkStream, LanguageModel, ModelError, ModelInfo, ModelRequest, StreamChunk,
};

use crate::transcript::{
    FORMAT, Fingerprint, Record, RecordedError, TurnCounter, TurnRecord, VERSION, to_line,
};

/// Records a model's answers.
pub struct RecordingModel {
    inner: Arc<dyn LanguageModel>,
    out: Arc<Mutex<File>>,
    turns_made: TurnCounter,
}

impl RecordingModel {
    /// Creates (or truncates) `path` and writes the header.
    pub fn create(inner: Arc<dyn LanguageModel>, path: &Path) -> std::io::Result<Self> {
        let mut file = File::create(path)?;
        let header = Record::Header {
            format: FORMAT.to_owned(),
            version: VERSION,
            model: inner.info().clone(),
        };
        file.write_all(to_line(&header).as_bytes())?;
        file.sync_data()?;
        Ok(Self {
            inner,
            out: Arc::new(Mutex::new(file)),
            turns_made: TurnCounter::default(),
        })
    }
}

fn write_record(out: &Mutex<File>, record: TurnRecord) {
    let line = to_line(&Record::Turn(record));
    match out.lock() {
        Ok(mut file) => {
            if let Err(e) = file.write_all(line.as_bytes()).and_then(|()| file.flush()) {
                tracing::warn!(error = %e, "cannot write the transcript");
            }
        }
        Err(_) => tracing::warn!("cannot write the transcript: writer poisoned"),
    }
}

#[async_trait]
impl LanguageModel for RecordingModel {
    fn info(&self) -> &ModelInfo {
        self.inner.info()
    }

    async fn stream(&self, request: ModelRequest) -> Result<ChunkStream, ModelError> {
        let turn = self.turns_made.next(&request.context);
        let mut record = TurnRecord {
            context: request.context.clone(),
            turn,
            request: Some(Fingerprint::of(&request)),
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
                write_record(&self.out, record);
                return Err(e);
            }
        };
        let out = Arc::clone(&self.out);
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
    record: Option<TurnRecord>,
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
    use wonopcode_agent_loop::{ContextPath, Message, RequestOptions, StopReason, Usage};

    fn request(prompt: &str) -> ModelRequest {
        ModelRequest {
            context: ContextPath::root(),
            system: None,
            messages: vec![Message::user(prompt)],
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
            diverged.contains("transcript divergence at context 0 turn 1"),
            "{diverged}"
        );
        assert!(diverged.contains("message 0 (user) differs"), "{diverged}");
    }
}
