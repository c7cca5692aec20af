//! Which `Wire` each `Api` speaks, and the `HttpModel` built on it: the one place that
//! names every API's module, so the transport in `http` knows only the traits.

use std::sync::Arc;

use crate::anthropic::{Host, MessagesWire};
use crate::api::Api;
use crate::http::{HttpModel, HttpModelError, HttpSettings, Wire};

/// The wire `api` speaks.
fn wire(api: Api) -> Arc<dyn Wire> {
    match api {
        Api::Anthropic => Arc::new(MessagesWire(Host::ANTHROPIC)),
        Api::Bedrock => Arc::new(crate::bedrock::BedrockWire),
        Api::Vertex => Arc::new(crate::vertex::VertexWire),
        Api::OpenAi(field) => Arc::new(crate::openai::ChatWire(field)),
        Api::Responses => Arc::new(crate::responses::ResponsesWire),
        Api::Gemini => Arc::new(crate::gemini::GeminiWire),
    }
}

impl HttpModel {
    /// A client for these settings, speaking the wire of `settings.api`; no request is made
    /// yet.
    pub fn new(settings: HttpSettings) -> Result<Self, HttpModelError> {
        let wire = wire(settings.api);
        Self::with_wire(settings, wire)
    }
}
