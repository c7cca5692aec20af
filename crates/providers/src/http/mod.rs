//! `HttpModel`: a `LanguageModel` that streams from a real provider over HTTP. One request
//! runs on its own task: it sends, retries what failed before anything was shown (with a
//! `Retry` notice per wait), reads server-sent events under the idle timeout, and hands the
//! decoded chunks over a bounded channel. Dropping the stream aborts the task.

pub mod decoder;
pub mod failure;
mod framing;
mod path;
pub mod rate_limit;
mod request;
pub mod retry;
mod signer;
mod wire;
pub mod wire_log;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use tokio::sync::mpsc;
use tracing::Instrument;
use wonopcode_protocol::attachment;
use wonopcode_protocol::{ChunkStream, LanguageModel, ModelError, ModelInfo, ModelRequest};

pub use crate::api::Api;
use crate::prompt_cache::PromptCache;
pub(crate) use framing::{Frame, Frames};
pub(crate) use path::path_segment;
use rate_limit::{RateLimiter, RateLimits};
use request::Request;
pub(crate) use request::chain;
use retry::RetryPolicy;
pub(crate) use signer::Signer;
use signer::signer_for;
pub(crate) use wire::{NativeKey, Wire};

/// Everything an `HttpModel` needs: where, who, which model, and how patiently.
#[derive(Debug, Clone)]
pub struct HttpSettings {
    /// The wire format.
    pub api: Api,
    /// Base URL: OpenAI-compatible ones up to the version (`http://host/v1`); Anthropic's
    /// with or without `/v1`.
    pub base_url: String,
    /// The API key, when the server needs one. For Bedrock and Vertex, a bearer token that
    /// replaces their cloud credentials (a Bedrock API key, a token command's output).
    pub api_key: Option<String>,
    /// How the key is sent.
    pub auth: KeyAuth,
    /// An `api-version` query parameter for every request (Azure OpenAI's dated APIs).
    pub api_version: Option<String>,
    /// The environment variable the key came from, named in authentication errors.
    pub key_env: Option<String>,
    /// Bedrock: the AWS region requests are signed for.
    pub aws_region: Option<String>,
    /// Bedrock: the profile whose credentials sign requests (default: `AWS_PROFILE`, else
    /// the default chain).
    pub aws_profile: Option<String>,
    /// Bedrock and Vertex: requests go with neither a signature nor a token, to a gateway
    /// that adds the cloud's credentials itself (Claude Code's `CLAUDE_CODE_SKIP_BEDROCK_AUTH`
    /// and `CLAUDE_CODE_SKIP_VERTEX_AUTH`).
    pub unsigned: bool,
    /// Headers sent with every request besides the API's own (a gateway's or proxy's): the
    /// config's `http_headers` and the lines of the provider's `headers_env` (Claude Code's
    /// `ANTHROPIC_CUSTOM_HEADERS`). One of the same name replaces the API's.
    pub extra_headers: Vec<(String, String)>,
    /// The model requests go to, with its window, output cap and prices.
    pub model: ModelInfo,
    /// Longest wait for a TCP/TLS connection.
    pub connect_timeout: Duration,
    /// Longest wait for the response head and between two chunks of the body.
    pub idle_timeout: Duration,
    /// Attempts and backoff.
    pub retry: RetryPolicy,
    /// The provider's request and token rates, when the config states them (the
    /// provider's headers teach the rest).
    pub rate_limit: RateLimits,
    /// Set for a server on the user's machine (Ollama, vLLM, llama.cpp): one that cannot be
    /// reached is not running, which no retry fixes, so the first refusal ends the request
    /// with how to start it.
    pub local_server: Option<LocalServer>,
    /// What requests ask the provider to cache (the config's `cache.ttl`): breakpoints on
    /// the Messages API (Anthropic, Bedrock, Vertex), a `prompt_cache_key` on the Responses
    /// API. A server that refuses it gets requests without, from its first refusal.
    pub prompt_cache: PromptCache,
}

/// How the key goes to the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeyAuth {
    /// The API's own header: `x-api-key` for Anthropic, `x-goog-api-key` for Gemini,
    /// `Authorization: Bearer` for OpenAI's APIs.
    #[default]
    Native,
    /// `Authorization: Bearer KEY`, whatever the API (an Entra ID token, a gateway's).
    Bearer,
    /// `api-key: KEY`, Azure OpenAI's header for its keys.
    ApiKeyHeader,
}

/// A model server the user runs themselves.
#[derive(Debug, Clone, Default)]
pub struct LocalServer {
    /// How to start it (`ollama serve`), when the catalog knows.
    pub start_command: Option<String>,
}

impl HttpSettings {
    /// Default timeouts: connect 10 s, idle 300 s.
    pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
    /// See `DEFAULT_CONNECT_TIMEOUT`.
    pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);
}

/// Errors building an `HttpModel`.
#[derive(Debug, thiserror::Error)]
pub enum HttpModelError {
    /// The base URL does not parse.
    #[error("invalid base URL `{url}`: {reason}")]
    BaseUrl {
        /// The URL given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The key holds characters no HTTP header can carry.
    #[error("the API key for {0} is not a valid header value (a stray newline?)")]
    Key(String),
    /// An extra header's name or value cannot be sent.
    #[error(
        "the header `{name}` for {provider} cannot be sent: {reason} (check http_headers and the headers variable)"
    )]
    Header {
        /// The provider.
        provider: String,
        /// The header's name as given.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The HTTP client could not be built (TLS set-up).
    #[error("cannot set up the HTTP client: {0}")]
    Client(String),
}

/// A model provider reached over HTTP.
pub struct HttpModel {
    settings: HttpSettings,
    wire: Arc<dyn Wire>,
    endpoint: String,
    headers: HeaderMap,
    signer: Option<Arc<dyn Signer>>,
    client: reqwest::Client,
    limiter: Arc<RateLimiter>,
    /// Set once the server refused a request for its cache markers: later ones go without.
    cache_refused: Arc<AtomicBool>,
}

/// One HTTP client per connect timeout for the whole process: every model, context and
/// batch task reuses its connections.
fn shared_client(connect_timeout: Duration) -> Result<reqwest::Client, HttpModelError> {
    static CLIENTS: LazyLock<parking_lot::Mutex<HashMap<Duration, reqwest::Client>>> =
        LazyLock::new(Default::default);
    let mut clients = CLIENTS.lock();
    if let Some(client) = clients.get(&connect_timeout) {
        return Ok(client.clone());
    }
    let client = reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .build()
        .map_err(|e| HttpModelError::Client(e.to_string()))?;
    clients.insert(connect_timeout, client.clone());
    Ok(client)
}

impl HttpModel {
    /// A client for these settings speaking `wire`; no request is made yet. `HttpModel::new`
    /// (in `wires`) picks the wire of `settings.api`.
    pub(crate) fn with_wire(
        settings: HttpSettings,
        wire: Arc<dyn Wire>,
    ) -> Result<Self, HttpModelError> {
        let base = settings.base_url.trim_end_matches('/');
        let parsed = reqwest::Url::parse(base).map_err(|e| HttpModelError::BaseUrl {
            url: settings.base_url.clone(),
            reason: e.to_string(),
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(HttpModelError::BaseUrl {
                url: settings.base_url.clone(),
                reason: "the scheme must be http or https".to_owned(),
            });
        }
        let endpoint = wire.endpoint(base, &settings.model.id);
        let endpoint = match &settings.api_version {
            Some(version) => {
                let mut url =
                    reqwest::Url::parse(&endpoint).map_err(|e| HttpModelError::BaseUrl {
                        url: settings.base_url.clone(),
                        reason: e.to_string(),
                    })?;
                url.query_pairs_mut().append_pair("api-version", version);
                url.to_string()
            }
            None => endpoint,
        };
        let headers = headers(&settings, wire.as_ref())?;
        let client = shared_client(settings.connect_timeout)?;
        let limiter =
            RateLimiter::shared(&endpoint, settings.api_key.as_deref(), settings.rate_limit);
        Ok(Self {
            signer: signer_for(&settings, wire.as_ref()),
            wire,
            settings,
            endpoint,
            headers,
            client,
            limiter,
            cache_refused: Arc::default(),
        })
    }

    /// The URL requests are posted to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// What this model's requests ask to cache now.
    fn prompt_cache(&self) -> PromptCache {
        if self.cache_refused.load(Ordering::Relaxed) {
            PromptCache::Off
        } else {
            self.settings.prompt_cache
        }
    }
}

/// The request's JSON body, with the cache markers `cache` asks for where the API takes
/// them. Serializing these bodies cannot fail: every map in them has string keys, and every
/// value is plain data.
fn body(wire: &dyn Wire, model: &ModelInfo, request: &ModelRequest, cache: PromptCache) -> Bytes {
    Bytes::from(wire.body(model, request, cache).unwrap_or_default())
}

fn headers(settings: &HttpSettings, wire: &dyn Wire) -> Result<HeaderMap, HttpModelError> {
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(
        reqwest::header::ACCEPT,
        HeaderValue::from_static(wire.accept()),
    );
    for (name, value) in wire.own_headers() {
        headers.insert(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    }
    if let Some(key) = &settings.api_key {
        let (name, value) = key_header(settings, wire.native_key(), key)?;
        headers.insert(name, value);
    }
    for (name, value) in &settings.extra_headers {
        let invalid = |reason: &str| HttpModelError::Header {
            provider: settings.model.provider.clone(),
            name: name.clone(),
            reason: reason.to_owned(),
        };
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| invalid("not a valid header name"))?;
        let mut value = HeaderValue::from_str(value)
            .map_err(|_| invalid("its value is not valid text for a header"))?;
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    Ok(headers)
}

/// The header carrying `key`, as the provider's `auth` and API want it.
fn key_header(
    settings: &HttpSettings,
    native: NativeKey,
    key: &str,
) -> Result<(HeaderName, HeaderValue), HttpModelError> {
    let (name, text) = match (settings.auth, native) {
        (KeyAuth::Native, NativeKey::Header(name)) => {
            (HeaderName::from_static(name), key.to_owned())
        }
        (KeyAuth::Native | KeyAuth::Bearer, _) => {
            (reqwest::header::AUTHORIZATION, format!("Bearer {key}"))
        }
        (KeyAuth::ApiKeyHeader, _) => (HeaderName::from_static("api-key"), key.to_owned()),
    };
    let mut value = HeaderValue::from_str(&text)
        .map_err(|_| HttpModelError::Key(settings.model.provider.clone()))?;
    value.set_sensitive(true);
    Ok((name, value))
}

/// Aborts the request task when the stream is dropped (cancellation, or the loop is done).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[async_trait]
impl LanguageModel for HttpModel {
    fn info(&self) -> &ModelInfo {
        &self.settings.model
    }

    async fn stream(&self, request: ModelRequest) -> Result<ChunkStream, ModelError> {
        let limits = self.wire.attachment_limits();
        if let Some(refusal) = attachment::refusal(&self.settings.model, limits, &request.messages)
        {
            return Err(ModelError::Unsupported(refusal));
        }
        let (tx, mut rx) = mpsc::channel(256);
        let span = tracing::info_span!(
            "provider_request",
            context = %request.context,
            provider = %self.settings.model.provider,
            model = %self.settings.model.id,
        );
        let cache = self.prompt_cache();
        let job = Request {
            client: self.client.clone(),
            endpoint: self.endpoint.clone(),
            headers: self.headers.clone(),
            signer: self.signer.clone(),
            body: body(self.wire.as_ref(), &self.settings.model, &request, cache),
            cache,
            cache_refused: self.cache_refused.clone(),
            request,
            settings: self.settings.clone(),
            limiter: self.limiter.clone(),
            wire: self.wire.clone(),
        };
        let task = tokio::spawn(job.run(tx).instrument(span));
        let guard = AbortOnDrop(task);
        Ok(Box::pin(futures::stream::poll_fn(move |cx| {
            // The stream owns the guard: dropping the stream aborts the request task.
            let _keep = &guard;
            rx.poll_recv(cx)
        })))
    }
}
