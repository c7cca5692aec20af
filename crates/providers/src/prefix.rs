//! `--replay-mode prefix`: a recording served as far as it goes, then a live model. Each
//! context is answered from the transcript while it has a record that matches the request;
//! at its first request the recording cannot answer (past its end, or diverged), that
//! context goes live for good, and says so once. With `--record` the new transcript holds
//! both parts: a way to extend a recording, or to go on from a recorded point with a model.

use std::collections::HashSet;
use std::sync::Arc;

use async_trait::async_trait;
use parking_lot::Mutex;
use wonopcode_protocol::{
    ChunkStream, ContextPath, LanguageModel, ModelError, ModelInfo, ModelRequest, ModelSource,
    ProviderListing, SharedModel,
};

use crate::replay::{ReplayProvider, ReplaySource};

/// The contexts that went live, shared by every model of one run.
#[derive(Default)]
struct Live(Mutex<HashSet<ContextPath>>);

/// A recorded model, then a live one, per context.
pub struct PrefixReplay {
    recorded: SharedModel,
    live: SharedModel,
    gone_live: Arc<Live>,
}

impl PrefixReplay {
    /// Serves `recorded` (a replay), then `live`.
    pub fn new(recorded: Arc<ReplayProvider>, live: SharedModel) -> Self {
        Self {
            recorded,
            live,
            gone_live: Arc::default(),
        }
    }
}

#[async_trait]
impl LanguageModel for PrefixReplay {
    fn info(&self) -> &ModelInfo {
        self.live.info()
    }

    async fn stream(&self, request: ModelRequest) -> Result<ChunkStream, ModelError> {
        if !self.gone_live.0.lock().contains(&request.context) {
            match self.recorded.stream(request.clone()).await {
                Err(ModelError::Replay(why)) => {
                    let first = why.lines().next().unwrap_or_default();
                    tracing::info!(context = %request.context, reason = first, "the recording ends here: going live");
                    self.gone_live.0.lock().insert(request.context.clone());
                }
                answered => {
                    // A live model that numbers responses (a replay of its own) counts it.
                    self.live.skip_response(&request.context);
                    return answered;
                }
            }
        }
        self.live.stream(request).await
    }

    fn skip_response(&self, context: &ContextPath) {
        if !self.gone_live.0.lock().contains(context) {
            self.recorded.skip_response(context);
        }
        self.live.skip_response(context);
    }

    fn context_began(&self, context: &ContextPath, module: &str, role: Option<&str>) {
        self.recorded.context_began(context, module, role);
        self.live.context_began(context, module, role);
    }
}

/// The models guests may switch to under a prefix replay: the live source's, each served
/// from the recording first when the transcript has it.
pub struct PrefixSource {
    recorded: ReplaySource,
    live: Arc<dyn ModelSource>,
    gone_live: Arc<Live>,
}

impl PrefixSource {
    /// The source of `first`'s run: `recorded`'s models, then `live`'s.
    pub fn new(first: &PrefixReplay, recorded: ReplaySource, live: Arc<dyn ModelSource>) -> Self {
        Self {
            recorded,
            live,
            gone_live: first.gone_live.clone(),
        }
    }
}

#[async_trait]
impl ModelSource for PrefixSource {
    fn providers(&self) -> Vec<ProviderListing> {
        self.live.providers()
    }

    async fn open(&self, provider: &str, model: Option<&str>) -> Result<SharedModel, ModelError> {
        let live = self.live.open(provider, model).await?;
        // A model the recording never answered from is live from the start.
        let recorded = match self.recorded.open(provider, model).await {
            Ok(recorded) => recorded,
            Err(_) => return Ok(live),
        };
        Ok(Arc::new(PrefixReplay {
            recorded,
            live,
            gone_live: self.gone_live.clone(),
        }))
    }
}
