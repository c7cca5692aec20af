//! `ReplayProvider`: answers model requests from a recorded transcript, offline and
//! deterministically, checking each request against the recording.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use wonopcode_agent_loop::{
    ChunkStream, ContextPath, LanguageModel, ModelError, ModelInfo, ModelRequest,
};

use crate::transcript::{Fingerprint, Transcript, TranscriptError, TurnCounter, TurnRecord};

/// Replays a transcript. Each context's requests are numbered from 0 in the order they are
/// made; request `n` of context `c` gets the record keyed `(c, n)`.
pub struct ReplayProvider {
    source: PathBuf,
    model: ModelInfo,
    turns: HashMap<(ContextPath, u32), TurnRecord>,
    turns_made: TurnCounter,
    pace: Option<std::time::Duration>,
}

impl ReplayProvider {
    /// Loads a transcript file.
    pub fn from_file(path: &Path) -> Result<Self, TranscriptError> {
        Ok(Self::new(Transcript::load(path)?, path))
    }

    /// Replays an already parsed transcript; `source` names it in messages.
    pub fn new(transcript: Transcript, source: &Path) -> Self {
        let turns = transcript
            .turns
            .into_iter()
            .map(|t| ((t.context.clone(), t.turn), t))
            .collect();
        Self {
            source: source.to_path_buf(),
            model: transcript.model,
            turns,
            turns_made: TurnCounter::default(),
            pace: None,
        }
    }

    /// Streams each chunk `pace` after the previous one, as a model would, so a replayed
    /// run shows streaming, concurrency and timing (`--replay-pace`); the chunks are the same.
    pub fn paced(mut self, pace: std::time::Duration) -> Self {
        self.pace = Some(pace).filter(|p| !p.is_zero());
        self
    }
}

#[async_trait]
impl LanguageModel for ReplayProvider {
    fn info(&self) -> &ModelInfo {
        &self.model
    }

    async fn stream(&self, request: ModelRequest) -> Result<ChunkStream, ModelError> {
        let turn = self.turns_made.next(&request.context);
        let key = (request.context.clone(), turn);
        let Some(record) = self.turns.get(&key) else {
            let recorded = self
                .turns
                .keys()
                .filter(|(c, _)| *c == request.context)
                .count();
            return Err(ModelError::Replay(format!(
                "transcript {} has no record for context {} turn {turn} (it has {recorded} for that context): the run asked the model more than was recorded",
                self.source.display(),
                request.context
            )));
        };
        if let Some(recorded) = &record.request
            && let Some(diff) = recorded.difference(&Fingerprint::of(&request))
        {
            return Err(ModelError::Replay(format!(
                "transcript divergence at context {} turn {turn} of {}: {diff}",
                request.context,
                self.source.display()
            )));
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

#[cfg(test)]
mod tests {
    use futures::StreamExt;
    use wonopcode_agent_loop::{Message, RequestOptions, StreamChunk};

    use super::*;

    const TRANSCRIPT: &str = r#"{"type":"header","format":"wonopcode-transcript","version":1,"model":{"id":"m","provider":"p","context_window":1000,"max_output":100}}
{"type":"turn","context":"0","turn":0,"chunks":[{"type":"text_delta","text":"a"},{"type":"text_delta","text":"b"},{"type":"done","stop_reason":"end_turn"}]}"#;

    fn request() -> ModelRequest {
        ModelRequest {
            context: ContextPath::root(),
            system: None,
            messages: vec![Message::user("hi")],
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
}
