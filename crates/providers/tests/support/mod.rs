//! A loopback HTTP server that answers each connection with the next scripted reply
//! (full bodies, pieces, cuts, silence), and a collector that folds a model's chunks into
//! what the loop would assemble.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use wonopcode_protocol::{
    ContextPath, LanguageModel, Message, ModelInfo, ModelRequest, RequestOptions, StopReason,
    StreamChunk, Usage,
};
use wonopcode_providers::http::retry::RetryPolicy;
use wonopcode_providers::openai::MaxTokensField;
use wonopcode_providers::{Api, HttpModel, HttpSettings};

/// One scripted answer.
#[derive(Clone)]
pub enum Reply {
    /// A status, extra headers, a content type and a body sent in these pieces.
    Pieces {
        status: u16,
        content_type: String,
        headers: Vec<(String, String)>,
        pieces: Vec<Vec<u8>>,
        delay: Duration,
    },
    /// An event stream whose first `bytes` bytes are sent, then the connection is reset.
    ResetAfter { body: Vec<u8>, bytes: usize },
    /// The head of an event stream, then silence for a long time.
    Silent,
}

impl Reply {
    /// An event stream body in one piece.
    pub fn sse(body: impl Into<Vec<u8>>) -> Self {
        Self::status(200, "text/event-stream", body)
    }

    /// Any status, content type and body.
    pub fn status(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Self::Pieces {
            status,
            content_type: content_type.to_owned(),
            headers: Vec::new(),
            pieces: vec![body.into()],
            delay: Duration::ZERO,
        }
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        if let Self::Pieces { headers, .. } = &mut self {
            headers.push((name.to_owned(), value.to_owned()));
        }
        self
    }
}

/// The running server.
pub struct Server {
    pub base_url: String,
    /// Bodies of the requests received, in order.
    pub requests: Arc<Mutex<Vec<String>>>,
    /// Their request lines and headers, as sent.
    pub heads: Arc<Mutex<Vec<String>>>,
}

/// Starts a server answering connections with `replies` in order (then 500s).
pub async fn serve(replies: Vec<Reply>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let queue = Arc::new(Mutex::new(VecDeque::from(replies)));
    let requests = Arc::new(Mutex::new(Vec::new()));
    let heads = Arc::new(Mutex::new(Vec::new()));
    let seen = requests.clone();
    let seen_heads = heads.clone();
    tokio::spawn(async move {
        loop {
            let Ok((socket, _)) = listener.accept().await else {
                return;
            };
            let reply = queue.lock().unwrap().pop_front();
            let seen = seen.clone();
            let seen_heads = seen_heads.clone();
            tokio::spawn(async move {
                let _ = answer(socket, reply, seen, seen_heads).await;
            });
        }
    });
    Server {
        base_url: format!("http://{addr}/v1"),
        requests,
        heads,
    }
}

/// One request's head (request line and headers) and body.
async fn read_request(socket: &mut TcpStream) -> std::io::Result<(String, String)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            return Ok((String::new(), String::new()));
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Ok((
        String::from_utf8_lossy(&buf[..head_end]).into_owned(),
        String::from_utf8_lossy(&buf[head_end..]).into_owned(),
    ))
}

fn head(status: u16, content_type: &str, headers: &[(String, String)]) -> Vec<u8> {
    let mut text = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ntransfer-encoding: chunked\r\nconnection: close\r\n"
    );
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    text.push_str("\r\n");
    text.into_bytes()
}

fn chunk(piece: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", piece.len()).into_bytes();
    out.extend_from_slice(piece);
    out.extend_from_slice(b"\r\n");
    out
}

async fn answer(
    mut socket: TcpStream,
    reply: Option<Reply>,
    seen: Arc<Mutex<Vec<String>>>,
    seen_heads: Arc<Mutex<Vec<String>>>,
) -> std::io::Result<()> {
    let (request_head, body) = read_request(&mut socket).await?;
    seen.lock().unwrap().push(body);
    seen_heads.lock().unwrap().push(request_head);
    let reply = reply.unwrap_or_else(|| Reply::status(500, "text/plain", "no more replies"));
    match reply {
        Reply::Pieces {
            status,
            content_type,
            headers,
            pieces,
            delay,
        } => {
            socket
                .write_all(&head(status, &content_type, &headers))
                .await?;
            for piece in pieces.iter().filter(|p| !p.is_empty()) {
                socket.write_all(&chunk(piece)).await?;
                socket.flush().await?;
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
            }
            socket.write_all(b"0\r\n\r\n").await?;
            socket.shutdown().await?;
        }
        Reply::ResetAfter { body, bytes } => {
            socket
                .write_all(&head(200, "text/event-stream", &[]))
                .await?;
            socket
                .write_all(&chunk(&body[..bytes.min(body.len())]))
                .await?;
            socket.flush().await?;
            tokio::time::sleep(Duration::from_millis(20)).await;
            // Linger zero: closing sends a reset, as a dropped connection does. (Deprecated
            // because a non-zero linger blocks on drop; zero does not.)
            #[allow(deprecated)]
            socket.set_linger(Some(Duration::ZERO))?;
            drop(socket);
        }
        Reply::Silent => {
            socket
                .write_all(&head(200, "text/event-stream", &[]))
                .await?;
            socket.flush().await?;
            tokio::time::sleep(Duration::from_secs(60)).await;
        }
    }
    Ok(())
}

/// A chunks file (one event's JSON a line, as the Vercel AI SDK's test suites keep them)
/// framed the way those suites serve it: `data: {line}` and a blank line each, then `end`
/// (`data: [DONE]` for OpenAI's APIs; nothing for Gemini's).
pub fn chunks_sse(lines: &str, end: &str) -> String {
    let mut body: String = lines
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| format!("data: {l}\n\n"))
        .collect();
    body.push_str(end);
    body
}

/// A fixture file from `tests/fixtures` (see `SOURCES.md` there).
pub fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("fixture {}: {e}", path.display()))
}

/// Settings for a loopback model with fast retries.
pub fn settings(api: Api, base_url: &str) -> HttpSettings {
    HttpSettings {
        api,
        base_url: base_url.to_owned(),
        api_key: Some("test-key".to_owned()),
        auth: Default::default(),
        api_version: None,
        key_env: Some("TEST_API_KEY".to_owned()),
        aws_region: None,
        aws_profile: None,
        unsigned: false,
        extra_headers: Vec::new(),
        model: ModelInfo {
            id: "test-model".to_owned(),
            provider: "test".to_owned(),
            context_window: 100_000,
            max_output: 1024,
            pricing: None,
            capabilities: Default::default(),
        },
        connect_timeout: Duration::from_secs(2),
        idle_timeout: Duration::from_secs(5),
        retry: RetryPolicy {
            max_attempts: 5,
            initial_delay: Duration::from_millis(5),
            max_delay: Duration::from_millis(20),
            max_server_delay: Duration::from_secs(2),
        },
        rate_limit: Default::default(),
        local_server: None,
        prompt_cache: Default::default(),
    }
}

/// Chat Completions with `max_tokens`.
pub const OPENAI: Api = Api::OpenAi(MaxTokensField::MaxTokens);

/// What the loop would assemble from a stream.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Collected {
    pub text: String,
    pub thinking: String,
    pub signatures: Vec<String>,
    pub redacted: Vec<String>,
    /// (id, name, arguments) in start order.
    pub tools: Vec<(String, String, String)>,
    pub ended: Vec<String>,
    pub usage: Usage,
    pub done: Option<StopReason>,
    pub error: Option<String>,
    pub overflow: Option<String>,
    /// (attempt, reason) of each retry notice.
    pub retries: Vec<(u32, String)>,
}

/// A one-message request.
pub fn request() -> ModelRequest {
    ModelRequest {
        context: ContextPath::root(),
        system: Some("be brief".to_owned()),
        messages: vec![Message::user("hello")].into(),
        tools: Vec::new(),
        options: RequestOptions::default(),
    }
}

/// Streams `request()` from a model built with these settings and folds the chunks.
pub async fn collect(settings: HttpSettings) -> Collected {
    let model = HttpModel::new(settings).unwrap();
    collect_from(&model, request()).await
}

/// Streams one request from `model` and folds the chunks.
pub async fn collect_from(model: &HttpModel, request: ModelRequest) -> Collected {
    let mut stream = model.stream(request).await.unwrap();
    let mut out = Collected::default();
    while let Some(chunk) = stream.next().await {
        match chunk {
            StreamChunk::TextDelta { text } => out.text.push_str(&text),
            StreamChunk::ThinkingDelta { text } => out.thinking.push_str(&text),
            StreamChunk::ThinkingSignature { signature } => out.signatures.push(signature),
            StreamChunk::RedactedThinking { data } => out.redacted.push(data),
            StreamChunk::ToolCallStart { id, name } => out.tools.push((id, name, String::new())),
            StreamChunk::ToolCallDelta {
                id,
                arguments_delta,
            } => {
                let slot = out
                    .tools
                    .iter_mut()
                    .find(|t| t.0 == id)
                    .expect("delta of a started call");
                slot.2.push_str(&arguments_delta);
            }
            StreamChunk::ToolCallEnd { id } => out.ended.push(id),
            StreamChunk::Usage { usage } => out.usage.add(&usage),
            StreamChunk::Done { stop_reason } => out.done = Some(stop_reason),
            StreamChunk::Error { message } => out.error = Some(message),
            StreamChunk::ContextOverflow { message } => out.overflow = Some(message),
            StreamChunk::Retry {
                attempt, reason, ..
            } => out.retries.push((attempt, reason)),
        }
    }
    out
}

/// Serves `replies` and collects one request's stream.
pub async fn run(api: Api, replies: Vec<Reply>) -> (Collected, Server) {
    let server = serve(replies).await;
    let collected = collect(settings(api, &server.base_url)).await;
    (collected, server)
}
