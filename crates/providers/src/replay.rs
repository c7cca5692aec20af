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
        }
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
        Ok(Box::pin(futures::stream::iter(record.chunks.clone())))
    }
}
