//! `ModelSource`: the providers and models a run may switch between. A guest's
//! `list-providers` / `set-provider` / `set-model` and a child context's
//! `preferred-provider` / `preferred-model` go through it, so a guest sees the same set of
//! providers the command line could have chosen (live), or the models a transcript recorded
//! (replay).

use async_trait::async_trait;

use crate::model::{ModelError, SharedModel};
use crate::usage::ModelInfo;

/// One provider as a guest's `list-providers` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderListing {
    /// Provider id (`anthropic`, `openrouter`, a config file's own id).
    pub id: String,
    /// Model ids known for it (any other id may still work on an OpenAI-compatible server).
    pub models: Vec<String>,
    /// Whether requests may offer tools.
    pub supports_tools: bool,
    /// Whether it streams thinking.
    pub supports_thinking: bool,
}

/// Where a loop gets a model other than the one its run started with.
#[async_trait]
pub trait ModelSource: Send + Sync {
    /// The providers a model can be opened from, sorted by id.
    fn providers(&self) -> Vec<ProviderListing>;

    /// Opens `model` of `provider` (its default model when `None`); an unknown provider or
    /// model, or a missing key, is an error that says which.
    async fn open(&self, provider: &str, model: Option<&str>) -> Result<SharedModel, ModelError>;
}

/// A source of exactly one model: what a context can switch to when the host has no source
/// (an embedder that gives only its own model).
pub struct SingleModel(pub SharedModel);

/// The listing of one model's provider.
pub fn listing_of(info: &ModelInfo) -> ProviderListing {
    ProviderListing {
        id: info.provider.clone(),
        models: vec![info.id.clone()],
        supports_tools: info.capabilities.tools,
        supports_thinking: info.capabilities.thinking,
    }
}

#[async_trait]
impl ModelSource for SingleModel {
    fn providers(&self) -> Vec<ProviderListing> {
        vec![listing_of(self.0.info())]
    }

    async fn open(&self, provider: &str, model: Option<&str>) -> Result<SharedModel, ModelError> {
        let info = self.0.info();
        if provider != info.provider {
            return Err(ModelError::Other(format!(
                "unknown provider `{provider}`; available: {}",
                info.provider
            )));
        }
        match model {
            Some(m) if m != info.id => Err(ModelError::Other(format!(
                "unknown model `{m}` of provider `{provider}`; available: {}",
                info.id
            ))),
            _ => Ok(self.0.clone()),
        }
    }
}
