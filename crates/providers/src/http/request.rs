//! One request's task: the rate limiter, the attempts and their retries, the stream read
//! in slices and decoded into chunks, a refused cache marker dropped and the request sent
//! again, and the one line a failure is told in.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use eventsource_stream::Eventsource;
use futures::StreamExt;
use reqwest::header::{CONTENT_TYPE, HeaderMap};
use tokio::sync::mpsc;
use wonopcode_protocol::{ModelRequest, StreamChunk};

use super::decoder::Decoder;
use super::failure::{Failure, RequestSite};
use super::rate_limit::RateLimiter;
use super::wire::Wire;
use crate::prompt_cache::PromptCache;

use super::{Frame, Frames, HttpSettings, Signer, body, failure, retry, wire_log};

/// One request, owned by its task.
pub(super) struct Request {
    pub(super) client: reqwest::Client,
    pub(super) endpoint: String,
    pub(super) headers: HeaderMap,
    pub(super) signer: Option<Arc<dyn Signer>>,
    pub(super) body: Bytes,
    /// What `body` asks to cache.
    pub(super) cache: PromptCache,
    /// The model's flag: set when a server refuses the cache markers.
    pub(super) cache_refused: Arc<AtomicBool>,
    /// What `body` was made of, to make it again without cache markers.
    pub(super) request: ModelRequest,
    pub(super) settings: HttpSettings,
    pub(super) limiter: Arc<RateLimiter>,
    /// The API: each attempt's decoder, its framing, its errors' types.
    pub(super) wire: Arc<dyn Wire>,
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
pub(super) fn is_content(chunk: &StreamChunk) -> bool {
    !matches!(chunk, StreamChunk::Usage { .. } | StreamChunk::Retry { .. })
}

impl Request {
    pub(super) async fn run(mut self, tx: mpsc::Sender<StreamChunk>) {
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
            credentials: self.signer.as_ref().map(|signer| signer.described()),
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
            request = match signer.sign(request, &self.endpoint, &self.body).await {
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
        if let Some(frames) = self.wire.frames() {
            return self.read_frames(frames, response, tx).await;
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
    /// Reads an answer in binary frames (Bedrock's event stream), each event decoded as
    /// the wire's.
    async fn read_frames(
        &self,
        mut reader: Box<dyn Frames>,
        response: reqwest::Response,
        tx: &mpsc::Sender<StreamChunk>,
    ) -> Attempt {
        let idle = self.settings.idle_timeout;
        let mut body = response.bytes_stream();
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
                Ok(None) if reader.has_partial() => Err(Failure::transient(format!(
                    "{}: the stream broke off inside a frame",
                    self.settings.model.provider
                ))),
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
                        tracing::debug!(event = kind, "ignoring an event of an unknown type");
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
pub(super) fn slices(
    read: Result<bytes::Bytes, reqwest::Error>,
) -> Vec<Result<bytes::Bytes, reqwest::Error>> {
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
pub(super) fn describe(error: &reqwest::Error, url: &str) -> String {
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
pub(super) fn root_cause(error: &dyn std::error::Error) -> String {
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
pub(super) fn human(duration: Duration) -> String {
    if duration < Duration::from_secs(1) {
        format!("{} ms", duration.as_millis())
    } else {
        format!("{} s", duration.as_secs())
    }
}

pub(super) fn ms(duration: Duration) -> u64 {
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
