//! Language-model providers of wonopcode: `HttpModel`, which streams from the Anthropic
//! Messages API or any OpenAI-compatible Chat Completions server; the preset catalog that
//! picks one from flags, config and the environment; `ReplayProvider`, which answers from a
//! recorded transcript (the offline default); and `RecordingModel`, which writes that same
//! format from any model; `PrefixReplay`, a recording served as far as it goes and a live
//! model after it. The transcript format is in `transcript` and `docs/replay.md`.

pub mod anthropic;
mod api;
mod arguments;
pub mod bedrock;
pub mod catalog;
pub mod divergence;
pub mod gemini;
pub mod http;
pub mod openai;
pub mod prefix;
pub mod prompt_cache;
pub mod record;
pub mod replay;
pub mod responses;
pub mod signature;
pub mod source;
pub mod transcript;
pub mod vertex;
mod wires;

pub use api::Api;
pub use catalog::{CatalogError, Choice, ModelCatalog, OpenAiWire, ProviderEntry};
pub use http::rate_limit::{RateLimiter, RateLimits};
pub use http::{HttpModel, HttpModelError, HttpSettings, KeyAuth, LocalServer};
pub use prefix::{PrefixReplay, PrefixSource};
pub use record::{RecordingModel, RecordingSource};
pub use replay::{ReplayProvider, ReplaySource};
pub use source::{CatalogSource, EnvReader};
pub use transcript::{Fingerprint, Transcript, TranscriptError};
