//! `Wire`: what one wire API decides about its requests — where they go, their body, the
//! headers of its own, how a key is sent, how the answer is framed and decoded, what signs
//! a request when no key does. Each API's module implements it (`anthropic::MessagesWire`,
//! `openai::ChatWire`, ...); the HTTP module only carries requests, whatever the API.

use std::sync::Arc;

use reqwest::header::HeaderMap;
use wonopcode_protocol::attachment::AttachmentLimits;
use wonopcode_protocol::{ModelInfo, ModelRequest};

use super::decoder::Decoder;
use super::{Frames, HttpSettings, Signer};
use crate::prompt_cache::PromptCache;

/// The header an API's own keys go in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NativeKey {
    /// `Authorization: Bearer KEY` (OpenAI's APIs, the clouds' tokens).
    Bearer,
    /// The key as it is, in a header of the API's own (`x-api-key`, `x-goog-api-key`).
    Header(&'static str),
}

/// One wire API. See the module documentation.
pub(crate) trait Wire: Send + Sync {
    /// The URL requests for `model` are posted to, below `base` (no trailing `/`).
    fn endpoint(&self, base: &str, model: &str) -> String;

    /// The request's JSON, with the cache markers `cache` asks for where the API takes
    /// them.
    fn body(
        &self,
        model: &ModelInfo,
        request: &ModelRequest,
        cache: PromptCache,
    ) -> serde_json::Result<Vec<u8>>;

    /// The largest image and document the API takes, and whether it takes documents:
    /// checked before a request is sent, so a refusal is one line naming the limit.
    fn attachment_limits(&self) -> AttachmentLimits;

    /// A fresh decoder of one answer's events.
    fn decoder(&self) -> Box<dyn Decoder>;

    /// A fresh reader of one answer's frames, for an API that does not answer in
    /// server-sent events.
    fn frames(&self) -> Option<Box<dyn Frames>> {
        None
    }

    /// The media type asked for.
    fn accept(&self) -> &'static str {
        "text/event-stream"
    }

    /// Headers every request carries besides the key (an API version).
    fn own_headers(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    /// Where the API's own keys go.
    fn native_key(&self) -> NativeKey {
        NativeKey::Bearer
    }

    /// What signs each request when no key was given and no gateway signs (a cloud's
    /// credentials).
    fn signer(&self, _settings: &HttpSettings) -> Option<Arc<dyn Signer>> {
        None
    }

    /// The error's type, when the API names it in a header of a refusal.
    fn error_type(&self, _headers: &HeaderMap) -> Option<String> {
        None
    }

    /// A refusal's body with the type [`Wire::error_type`] named.
    fn typed_error(&self, body: String, _kind: &str) -> String {
        body
    }
}
