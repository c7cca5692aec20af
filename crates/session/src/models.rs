//! Which model a session talks to: a recorded transcript (`--replay`), a real provider
//! chosen from the caller's choice, the config file and the keys in the environment, or the
//! one after the other (`--replay-mode prefix`); any of them recorded to a transcript on
//! request (`--record`). With it, the models guests may
//! switch to (the transcript's, or the catalog's other providers).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use wonopcode_protocol::{ContextPath, ModelSource, SharedModel};
use wonopcode_providers::{
    CatalogSource, Choice, EnvReader, HttpModel, ModelCatalog, OpenAiWire, PrefixReplay,
    PrefixSource, RecordingModel, RecordingSource, ReplayProvider, ReplaySource, Transcript,
};

use crate::config::Config;
use crate::error::SessionError;

/// What the caller chose (flags, in the binary); unset fields fall back to the config file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelChoice {
    /// Replay this transcript instead of calling a provider.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay: Option<PathBuf>,
    /// Wait this long between replayed chunks (to watch a replay stream).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay_pace: Option<Duration>,
    /// What happens where the recording cannot answer.
    pub replay_mode: ReplayMode,
    /// A provider of the catalog (`anthropic`, `openai`, `ollama`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// A model of that provider.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The base URL of an OpenAI-compatible server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Which OpenAI API to speak (`--wire`), over the provider's own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wire: Option<OpenAiWire>,
    /// Record every response to this transcript.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record: Option<PathBuf>,
}

/// What a replay does at a request the recording cannot answer (past its end, or diverged).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplayMode {
    /// The run fails there, saying what differed.
    #[default]
    Strict,
    /// That context goes on with a live model (the chosen provider, else the recorded one).
    Prefix,
}

/// The session's model and the models its guests may switch to; on a resume, the
/// interrupted run's responses (`resume`, its journal's `responses.jsonl`) served first, and
/// recorded with the rest.
pub async fn open(
    choice: &ModelChoice,
    config: &Config,
    resume: Option<&EarlierResponses>,
) -> Result<(SharedModel, Arc<dyn ModelSource>), SessionError> {
    let (model, models): (SharedModel, Arc<dyn ModelSource>) = match &choice.replay {
        Some(path) => {
            let mut replay = ReplayProvider::from_file(path)
                .map_err(|e| SessionError::Transcript(e.to_string()))?;
            if let Some(pace) = choice.replay_pace {
                replay = replay.paced(pace);
            }
            let replay = Arc::new(replay);
            match choice.replay_mode {
                ReplayMode::Strict => (replay.clone(), Arc::new(ReplaySource(replay))),
                ReplayMode::Prefix => {
                    // Live with the recorded model unless another one is chosen.
                    let recorded = replay.models()[0].clone();
                    let live_choice = ModelChoice {
                        provider: choice.provider.clone().or(Some(recorded.provider)),
                        model: choice.model.clone().or(Some(recorded.id)),
                        ..choice.clone()
                    };
                    let (live, live_models) = provider(&live_choice, config).await?;
                    let first = PrefixReplay::new(replay.clone(), live);
                    let models = PrefixSource::new(&first, ReplaySource(replay), live_models);
                    (Arc::new(first), Arc::new(models))
                }
            }
        }
        None => provider(choice, config).await?,
    };
    let (model, models) = match resume {
        Some(journal) => resumed(journal, model, models)?,
        None => (model, models),
    };
    match &choice.record {
        Some(out) => {
            let recorder = Arc::new(RecordingModel::create(model, out).map_err(|e| {
                SessionError::Transcript(format!("cannot create transcript {}: {e}", out.display()))
            })?);
            let models = RecordingSource::new(models, recorder.clone());
            Ok((recorder, Arc::new(models)))
        }
        None => Ok((model, models)),
    }
}

/// Where an earlier run's responses are served from, before a run's own model.
#[derive(Debug, Clone)]
pub struct EarlierResponses {
    /// Its journal's `responses.jsonl`.
    pub path: PathBuf,
    /// For a fork, `(context, response)`: that context's responses from this one on are not
    /// served (they are asked of the model).
    pub cut: Option<(ContextPath, u32)>,
}

/// `model` and `models` with an earlier run's responses served first: per context, as far
/// as they go (up to the cut of a fork) and as long as the requests match. Its last record,
/// when the run stopped while writing it, is left out (that response is asked again).
pub(crate) fn resumed(
    earlier: &EarlierResponses,
    model: SharedModel,
    models: Arc<dyn ModelSource>,
) -> Result<(SharedModel, Arc<dyn ModelSource>), SessionError> {
    let journal = &earlier.path;
    let (mut transcript, torn) = Transcript::load_unfinished(journal)
        .map_err(|e| SessionError::Transcript(e.to_string()))?;
    if let Some(line) = torn {
        tracing::warn!(file = %journal.display(), line, "the journal's last response was cut short: it is asked again");
    }
    if let Some((context, from)) = &earlier.cut {
        transcript
            .turns
            .retain(|t| t.context != *context || t.index < *from);
    }
    let replay = Arc::new(ReplayProvider::new(transcript, journal));
    let first = PrefixReplay::new(replay.clone(), model);
    let models = PrefixSource::new(&first, ReplaySource(replay), models);
    Ok((Arc::new(first), Arc::new(models)))
}

/// The model catalog: the built-in providers with the config file's entries laid over them.
pub fn catalog(config: &Config) -> Result<ModelCatalog, SessionError> {
    ModelCatalog::builtin()
        .and_then(|c| c.with_overrides(&config.providers))
        .map_err(|e| SessionError::Config(e.to_string()))
}

/// The environment variables the providers' keys are read from, which commands never see.
pub fn key_variables(config: &Config) -> Result<Vec<String>, SessionError> {
    Ok(catalog(config)?
        .key_variables()
        .map(str::to_owned)
        .collect())
}

/// A real provider from the catalog (with the config's overrides), and the catalog's others.
async fn provider(
    choice: &ModelChoice,
    config: &Config,
) -> Result<(SharedModel, Arc<dyn ModelSource>), SessionError> {
    let catalog = catalog(config)?;
    // A model in the config belongs to the config's provider; with another provider
    // chosen, that provider's default applies.
    let model = choice
        .model
        .as_deref()
        .or(match (&choice.provider, &config.provider) {
            (Some(chosen), Some(own)) if chosen != own => None,
            _ => config.model.as_deref(),
        });
    let env: EnvReader = Arc::new(|name: &str| std::env::var(name).ok());
    let wanted = Choice {
        // A bare base URL means an OpenAI-compatible server, unless Claude Code's switch to
        // a cloud is set: then it is that cloud's gateway.
        provider: choice
            .provider
            .as_deref()
            .or(config.provider.as_deref())
            .or(catalog.switched_to(&*env))
            .or(choice.base_url.as_ref().map(|_| "openai-compatible")),
        model,
        base_url: choice.base_url.as_deref(),
        wire: choice.wire,
    };
    let settings = catalog
        .resolve(wanted, &*env)
        .await
        .map_err(|e| SessionError::Choice(e.to_string()))?;
    let first: SharedModel =
        Arc::new(HttpModel::new(settings).map_err(|e| SessionError::Choice(e.to_string()))?);
    let models = CatalogSource::new(catalog, env, first.clone(), choice.base_url.clone())
        .with_wire(choice.wire);
    Ok((first, Arc::new(models)))
}
