//! `HttpModel`: a `LanguageModel` that streams from a real provider over HTTP. One request
//! runs on its own task: it sends, retries what failed before anything was shown (with a
//! `Retry` notice per wait), reads server-sent events under the idle timeout, and hands the
//! decoded chunks over a bounded channel. Dropping the stream aborts the task.

pub mod decoder;
pub mod failure;
mod path;
pub mod rate_limit;
pub mod retry;
mod wire;
pub mod wire_log;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use eventsource_stream::Eventsource;
use futures::StreamExt;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use tokio::sync::mpsc;
use tracing::Instrument;
use wonopcode_protocol::attachment;
use wonopcode_protocol::{
    ChunkStream, LanguageModel, ModelError, ModelInfo, ModelRequest, StreamChunk,
};

use crate::bedrock::{auth::AwsAuth, frames::Frame, frames::FrameReader};
use crate::openai::MaxTokensField;
use crate::prompt_cache::PromptCache;
use crate::vertex::GoogleAuth;
use decoder::Decoder;
use failure::{Failure, RequestSite};
pub(crate) use path::path_segment;
use rate_limit::{RateLimiter, RateLimits};
use retry::RetryPolicy;
pub(crate) use wire::{Framing, NativeKey, Wire};

/// Which wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// Anthropic Messages (`POST {base}/messages`).
    Anthropic,
    /// OpenAI-compatible Chat Completions (`POST {base}/chat/completions`).
    OpenAi(MaxTokensField),
    /// OpenAI's Responses API (`POST {base}/responses`).
    Responses,
    /// Gemini (`POST {base}/models/{model}:streamGenerateContent?alt=sse`, or
    /// `{base}/tunedModels/…` for a tuned model).
    Gemini,
    /// Claude on Amazon Bedrock (`POST {base}/model/{model}/invoke-with-response-stream`).
    Bedrock,
    /// Claude on Google Vertex AI (`POST {base}/{model}:streamRawPredict`).
    Vertex,
}

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
    signer: Option<Signer>,
    client: reqwest::Client,
    limiter: Arc<RateLimiter>,
    /// Set once the server refused a request for its cache markers: later ones go without.
    cache_refused: Arc<AtomicBool>,
}

/// What proves each request of a cloud's Claude, when no fixed header does: read on the
/// first request and refreshed as they expire, so it is added per attempt.
#[derive(Debug, Clone)]
pub(crate) enum Signer {
    /// SigV4 with AWS credentials (Bedrock).
    Aws(Arc<AwsAuth>),
    /// A Google access token (Vertex).
    Google(Arc<GoogleAuth>),
}

impl Signer {
    /// The signer `settings` need: none when a key was given or a gateway signs, else the
    /// wire's.
    fn of(settings: &HttpSettings, wire: &dyn Wire) -> Option<Self> {
        if settings.api_key.is_some() || settings.unsigned {
            return None;
        }
        wire.signer(settings)
    }

    /// Adds the signature or token to a POST of `body` to `url`.
    async fn apply(
        &self,
        request: reqwest::RequestBuilder,
        url: &str,
        body: &[u8],
    ) -> Result<reqwest::RequestBuilder, Failure> {
        match self {
            Signer::Aws(aws) => {
                let signed = aws
                    .sign(url, &[("content-type", "application/json")], body)
                    .await?;
                Ok(signed.into_iter().fold(request, |request, (name, value)| {
                    request.header(name, value)
                }))
            }
            Signer::Google(google) => Ok(request.bearer_auth(google.token().await?)),
        }
    }

    /// The credentials named when the server refuses them.
    fn described(&self) -> String {
        match self {
            Signer::Aws(aws) => aws.described(),
            Signer::Google(_) => "the Google Application Default Credentials".to_owned(),
        }
    }
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
    /// A client for these settings; no request is made yet.
    pub fn new(settings: HttpSettings) -> Result<Self, HttpModelError> {
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
        let wire: Arc<dyn Wire> = settings.api.wire().into();
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
            signer: Signer::of(&settings, wire.as_ref()),
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

/// One request, owned by its task.
struct Request {
    client: reqwest::Client,
    endpoint: String,
    headers: HeaderMap,
    signer: Option<Signer>,
    body: Bytes,
    /// What `body` asks to cache.
    cache: PromptCache,
    /// The model's flag: set when a server refuses the cache markers.
    cache_refused: Arc<AtomicBool>,
    /// What `body` was made of, to make it again without cache markers.
    request: ModelRequest,
    settings: HttpSettings,
    limiter: Arc<RateLimiter>,
    /// The API: each attempt's decoder, its framing, its errors' types.
    wire: Arc<dyn Wire>,
}

/// How an attempt ended.
enum Attempt {
    /// The stream finished (or nobody listens any more).
    Finished,
    /// The server refused the request's cache markers (HTTP 400 naming them).
    CacheRefused(String),
    /// It failed; `shown` says whether content had already gone out.
    Failed { failure: Failure, shown: bool },
}

/// True for chunks the user sees: once one went out, a failure is no longer retried.
fn is_content(chunk: &StreamChunk) -> bool {
    !matches!(chunk, StreamChunk::Usage { .. } | StreamChunk::Retry { .. })
}

impl Request {
    async fn run(mut self, tx: mpsc::Sender<StreamChunk>) {
        let mut attempt = 1;
        // About four bytes of JSON a token: what the limiter draws from the token rate.
        let tokens = self.body.len() as u64 / 4;
        loop {
            self.limiter.acquire(tokens).await;
            let started = Instant::now();
            let outcome = self.attempt(&tx).await;
            let (failure, shown) = match outcome {
                Attempt::Finished => {
                    tracing::debug!(
                        attempt,
                        latency_ms = ms(started.elapsed()),
                        "stream finished"
                    );
                    return;
                }
                Attempt::CacheRefused(said) => {
                    // Once per model: later requests are made without.
                    if !self.cache_refused.swap(true, Ordering::Relaxed) {
                        tracing::warn!(
                            provider = %self.settings.model.provider,
                            "{} refused prompt caching ({said}); requests go on without it",
                            self.settings.model.provider
                        );
                    }
                    self.cache = PromptCache::Off;
                    self.body = body(
                        self.wire.as_ref(),
                        &self.settings.model,
                        &self.request,
                        PromptCache::Off,
                    );
                    continue;
                }
                Attempt::Failed { failure, shown } => (failure, shown),
            };
            tracing::debug!(attempt, latency_ms = ms(started.elapsed()), error = %failure.message, "attempt failed");
            let retry = (failure.retryable && !shown)
                .then(|| {
                    let retry = &self.settings.retry;
                    retry.delay(attempt + 1, failure.retry_after, failure.rate_limited)
                })
                .flatten();
            if let Some(delay) = retry {
                attempt += 1;
                let notice = StreamChunk::Retry {
                    attempt,
                    delay_ms: ms(delay),
                    reason: failure.message,
                };
                if tx.send(notice).await.is_err() {
                    return;
                }
                if failure.rate_limited {
                    // Every request to this provider waits, in the limiter, not only this one.
                    self.limiter.pause(delay);
                } else {
                    tokio::time::sleep(delay).await;
                }
                continue;
            }
            let chunk = if failure.overflow && !shown {
                StreamChunk::ContextOverflow {
                    message: failure.message,
                }
            } else if shown {
                StreamChunk::Error {
                    message: format!(
                        "the response broke off after it had started: {}",
                        failure.message
                    ),
                }
            } else if attempt > 1 {
                StreamChunk::Error {
                    message: format!("{} (after {attempt} attempts)", failure.message),
                }
            } else {
                StreamChunk::Error {
                    message: failure.message,
                }
            };
            let _ = tx.send(chunk).await;
            return;
        }
    }

    /// Why a local server could not be reached, and what to do about it.
    fn not_running(&self, error: &reqwest::Error) -> String {
        let model = &self.settings.model;
        let start = self
            .settings
            .local_server
            .as_ref()
            .and_then(|s| s.start_command.as_deref())
            .map_or_else(String::new, |c| format!("start it with `{c}`, or "));
        format!(
            "cannot connect to the {} server at {} for model `{}` ({}): is it running? {start}give its address with --base-url",
            model.provider,
            self.settings.base_url,
            model.id,
            root_cause(error)
        )
    }

    fn site(&self) -> RequestSite<'_> {
        RequestSite {
            provider: &self.settings.model.provider,
            model: &self.settings.model.id,
            url: &self.endpoint,
            key_env: self.settings.key_env.as_deref(),
            credentials: self.signer.as_ref().map(Signer::described),
        }
    }

    async fn attempt(&self, tx: &mpsc::Sender<StreamChunk>) -> Attempt {
        let idle = self.settings.idle_timeout;
        let failed = |failure| Attempt::Failed {
            failure,
            shown: false,
        };
        let mut request = self
            .client
            .post(&self.endpoint)
            .headers(self.headers.clone())
            .body(self.body.clone());
        wire_log::request(&self.endpoint, &self.headers, &self.body);
        if let Some(signer) = &self.signer {
            request = match signer.apply(request, &self.endpoint, &self.body).await {
                Ok(signed) => signed,
                Err(failure) => return failed(failure),
            };
        }
        let send = request.send();
        let response = match tokio::time::timeout(idle, send).await {
            Err(_) => {
                return failed(Failure::transient(format!(
                    "{} did not answer within {}",
                    self.endpoint,
                    human(idle)
                )));
            }
            Ok(Err(e)) if e.is_connect() && self.settings.local_server.is_some() => {
                return failed(Failure::fatal(self.not_running(&e)));
            }
            Ok(Err(e)) => return failed(Failure::transient(describe(&e, &self.endpoint))),
            Ok(Ok(response)) => response,
        };
        let status = response.status().as_u16();
        self.limiter.observe(response.headers());
        if !response.status().is_success() {
            let retry_after = retry::server_delay(response.headers());
            let kind = self.wire.error_type(response.headers());
            let mut body = read_text(response, idle).await;
            wire_log::refusal(status, &body);
            if let Some(kind) = kind {
                body = self.wire.typed_error(body, &kind);
            }
            let retry_after = retry_after.or_else(|| retry::body_delay(&body));
            let names_caching = body.contains("cache_control") || body.contains("prompt_cache_key");
            if status == 400 && self.cache != PromptCache::Off && names_caching {
                return Attempt::CacheRefused(failure::provider_message(&body));
            }
            return failed(failure::from_status(
                status,
                &body,
                retry_after,
                &self.site(),
            ));
        }
        if let Some(wrong) = self.not_a_stream(&response) {
            let body = read_text(response, idle).await;
            wire_log::refusal(status, &body);
            return failed(self.explain_non_stream(status, &wrong, &body));
        }
        if self.wire.framing() == Framing::AwsEventStream {
            return self.read_frames(response, tx).await;
        }
        self.read_events(response, tx).await
    }

    /// The content type of a success that is not an event stream, when it is not.
    fn not_a_stream(&self, response: &reqwest::Response) -> Option<String> {
        let kind = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        // Servers that send no content type (or a generic one) are given the benefit of the
        // doubt; the events decide.
        let stream = kind.is_empty()
            || kind.contains("event-stream")
            || kind.contains("vnd.amazon.eventstream")
            || kind.contains("octet-stream")
            || kind.starts_with("text/plain");
        (!stream).then_some(kind)
    }

    fn explain_non_stream(&self, status: u16, kind: &str, body: &str) -> Failure {
        if kind.contains("json") {
            // An error object with HTTP 200 (some proxies), or a server ignoring `stream`.
            let said = failure::provider_message(body);
            let mut f = Failure::fatal(format!(
                "{} answered HTTP {status} with JSON instead of an event stream: {said}",
                self.settings.model.provider
            ));
            f.overflow = failure::is_overflow(&said);
            return f;
        }
        let what = if failure::looks_like_html(body) || kind.contains("html") {
            "an HTML page".to_owned()
        } else {
            format!("`{kind}`")
        };
        Failure::fatal(format!(
            "{} answered HTTP {status} with {what}, not an event stream; check --base-url",
            self.endpoint
        ))
    }

    async fn read_events(
        &self,
        response: reqwest::Response,
        tx: &mpsc::Sender<StreamChunk>,
    ) -> Attempt {
        let idle = self.settings.idle_timeout;
        // A last blank line closes an event the server did not terminate (the stream's
        // final `data:` line without its empty line).
        //
        // The SSE framing copies its buffer's remainder after each line, so a large network
        // read costs time quadratic in its size; handing it over in small zero-copy slices
        // keeps that buffer short.
        let end = futures::stream::iter([Ok(bytes::Bytes::from_static(b"\n\n"))]);
        let bytes = response
            .bytes_stream()
            .flat_map(|read| futures::stream::iter(slices(read)))
            .chain(end);
        let mut events = bytes.eventsource();
        let mut decoder = self.wire.decoder();
        let mut out = Vec::new();
        let mut shown = false;
        loop {
            let event = match tokio::time::timeout(idle, events.next()).await {
                Err(_) => Err(Failure::transient(format!(
                    "no data from the model for {}",
                    human(idle)
                ))),
                Ok(None) => break,
                Ok(Some(Err(e))) => Err(Failure::transient(format!(
                    "the connection broke: {}",
                    chain(&e)
                ))),
                Ok(Some(Ok(event))) => {
                    wire_log::event(&event.event, &event.data);
                    decoder.event(&event.event, &event.data, &mut out)
                }
            };
            if !forward(&mut out, tx, &mut shown).await {
                return Attempt::Finished;
            }
            if let Err(failure) = event {
                return Attempt::Failed { failure, shown };
            }
            if decoder.is_done() {
                break;
            }
        }
        finish(decoder.as_mut(), &mut out, tx, shown).await
    }
}

impl Request {
    /// Reads Bedrock's event-stream frames, each `chunk` an Anthropic event.
    async fn read_frames(
        &self,
        response: reqwest::Response,
        tx: &mpsc::Sender<StreamChunk>,
    ) -> Attempt {
        let idle = self.settings.idle_timeout;
        let mut body = response.bytes_stream();
        let mut reader = FrameReader::default();
        let mut frames = Vec::new();
        let mut decoder = self.wire.decoder();
        let mut out = Vec::new();
        let mut shown = false;
        loop {
            let read = match tokio::time::timeout(idle, body.next()).await {
                Err(_) => Err(Failure::transient(format!(
                    "no data from the model for {}",
                    human(idle)
                ))),
                Ok(None) if reader.has_partial() => Err(Failure::transient(
                    "bedrock: the stream broke off inside a frame",
                )),
                Ok(None) => break,
                Ok(Some(Err(e))) => Err(Failure::transient(format!(
                    "the connection broke: {}",
                    chain(&e)
                ))),
                Ok(Some(Ok(bytes))) => reader.push(&bytes, &mut frames),
            };
            let mut failed = read.err();
            for frame in frames.drain(..) {
                let event = match frame {
                    Frame::Event(json) => {
                        wire_log::event("", &json);
                        decoder.event("", &json, &mut out)
                    }
                    Frame::Other(kind) => {
                        tracing::debug!(event = kind, "ignoring an unknown Bedrock event");
                        Ok(())
                    }
                    Frame::Failed(failure) => Err(failure),
                };
                if let Err(failure) = event {
                    failed.get_or_insert(failure);
                    break;
                }
            }
            if !forward(&mut out, tx, &mut shown).await {
                return Attempt::Finished;
            }
            if let Some(failure) = failed {
                return Attempt::Failed { failure, shown };
            }
            if decoder.is_done() {
                break;
            }
        }
        finish(decoder.as_mut(), &mut out, tx, shown).await
    }
}

/// Largest piece of a network read handed to the SSE framing at once.
const SLICE: usize = 1024;

/// A network read cut into `SLICE`-byte pieces (an error passes through whole).
fn slices(read: Result<bytes::Bytes, reqwest::Error>) -> Vec<Result<bytes::Bytes, reqwest::Error>> {
    match read {
        Ok(bytes) if bytes.len() > SLICE => (0..bytes.len())
            .step_by(SLICE)
            .map(|at| Ok(bytes.slice(at..(at + SLICE).min(bytes.len()))))
            .collect(),
        other => vec![other],
    }
}

/// Ends a stream read to its end: what the decoder still holds goes out, and a stream that
/// stopped before the model finished fails.
async fn finish(
    decoder: &mut dyn Decoder,
    out: &mut Vec<StreamChunk>,
    tx: &mpsc::Sender<StreamChunk>,
    mut shown: bool,
) -> Attempt {
    let end = decoder.finish(out);
    if !forward(out, tx, &mut shown).await {
        return Attempt::Finished;
    }
    match end {
        Ok(()) => Attempt::Finished,
        Err(failure) => Attempt::Failed { failure, shown },
    }
}

/// Sends the decoded chunks on; `false` when nobody listens any more.
async fn forward(
    out: &mut Vec<StreamChunk>,
    tx: &mpsc::Sender<StreamChunk>,
    shown: &mut bool,
) -> bool {
    for chunk in out.drain(..) {
        *shown |= is_content(&chunk);
        if tx.send(chunk).await.is_err() {
            return false;
        }
    }
    true
}

/// An error body, read under the idle timeout and cut at 64 KiB.
async fn read_text(response: reqwest::Response, idle: Duration) -> String {
    let read = async {
        let mut text = Vec::new();
        let mut body = response.bytes_stream();
        while let Some(Ok(piece)) = body.next().await {
            text.extend_from_slice(&piece);
            if text.len() > 64 * 1024 {
                break;
            }
        }
        String::from_utf8_lossy(&text).into_owned()
    };
    tokio::time::timeout(idle, read).await.unwrap_or_default()
}

/// One line for a transport error: what failed, then its causes.
fn describe(error: &reqwest::Error, url: &str) -> String {
    let what = if error.is_connect() {
        "cannot connect to"
    } else if error.is_timeout() {
        "timed out reaching"
    } else {
        "request failed to"
    };
    // reqwest's own message repeats the URL (`error sending request for url (…)`): its
    // causes say what went wrong.
    let why = match std::error::Error::source(error) {
        Some(cause) => chain(cause),
        None => error.to_string(),
    };
    format!("{what} {url}: {why}")
}

/// The innermost cause of an error (`Connection refused (os error 111)`).
fn root_cause(error: &dyn std::error::Error) -> String {
    let mut cause = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

/// An error and its sources, joined by `: `, without repeats.
pub(crate) fn chain(error: &dyn std::error::Error) -> String {
    let mut parts: Vec<String> = vec![error.to_string()];
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = cause.source();
    }
    parts.join(": ")
}

/// `300 ms` below a second, `12 s` from there.
fn human(duration: Duration) -> String {
    if duration < Duration::from_secs(1) {
        format!("{} ms", duration.as_millis())
    } else {
        format!("{} s", duration.as_secs())
    }
}

fn ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_refused_connection_names_the_address_once_and_why() {
        // A port nothing listens on: bound, then let go.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1/messages", listener.local_addr().unwrap());
        drop(listener);
        let error = reqwest::Client::new().get(&url).send().await.unwrap_err();
        let said = describe(&error, &url);
        assert_eq!(said.matches(&url).count(), 1, "{said}");
        assert!(
            said.starts_with(&format!("cannot connect to {url}: ")),
            "{said}"
        );
        assert!(said.contains("refused"), "{said}");
    }
}
