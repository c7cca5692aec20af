//! OpenTelemetry: a run's context tree as spans, exported over OTLP/HTTP (`--otlp-endpoint`,
//! or the standard `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`).
//!
//! The spans are built from the event stream, which names every event's context: a span
//! `invoke_agent NAME` per turn of the root and per child context (its parent the span of
//! the context that spawned it, so parallel children are siblings), `chat MODEL` per model
//! response (from `response.completed`, which says how long it took), and `execute_tool
//! TOOL` per tool call, with the GenAI semantic conventions' attributes (`gen_ai.operation.name`,
//! `gen_ai.agent.name`, `gen_ai.request.model`, `gen_ai.provider.name`,
//! `gen_ai.usage.input_tokens` / `output_tokens`, `gen_ai.tool.name`, `gen_ai.tool.call.id`)
//! plus `wonopcode.cost_usd` and `wonopcode.context`. `docs/telemetry.md` lists them.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use opentelemetry::trace::{Span as _, SpanKind, Status, TraceContextExt, Tracer as _};
use opentelemetry::{Context, KeyValue, trace::TracerProvider as _};
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use parking_lot::Mutex;
use wonopcode_protocol::event::{Event, EventKind, ItemDetails, ItemStatus, ToolCallItem};
use wonopcode_protocol::{ContextPath, Usage};

use crate::error::SessionError;

/// The environment variables that turn export on without the flag.
const ENDPOINT_VARIABLES: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
];

/// The longest an export may take (at exit, the last batch).
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// The process's span exporter. Start it before the async runtime (its HTTP client runs on
/// its own thread) and shut it down after, so the last spans are sent.
pub struct Telemetry {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
}

impl Telemetry {
    /// The exporter for `endpoint` (the OTLP base URL; `/v1/traces` is added), else the
    /// standard environment variables' endpoint; `None` when neither is set.
    pub fn start(endpoint: Option<&str>) -> Result<Option<Self>, SessionError> {
        let from_environment = ENDPOINT_VARIABLES
            .iter()
            .any(|v| std::env::var_os(v).is_some_and(|e| !e.is_empty()));
        if endpoint.is_none() && !from_environment {
            return Ok(None);
        }
        // The exporter's reqwest 0.13 is built without a TLS provider of its own: ring, as
        // for MCP's client.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_timeout(EXPORT_TIMEOUT);
        if let Some(url) = endpoint {
            let url = url.trim_end_matches('/');
            let traces = if url.ends_with("/v1/traces") {
                url.to_owned()
            } else {
                format!("{url}/v1/traces")
            };
            exporter = exporter.with_endpoint(traces);
        }
        let exporter = exporter
            .build()
            .map_err(|e| SessionError::Choice(format!("--otlp-endpoint: {e}")))?;
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(Resource::builder().with_service_name("wonopcode").build())
            .build();
        let tracer = provider.tracer("wonopcode");
        Ok(Some(Self { provider, tracer }))
    }

    /// A recorder for one session's events (each session's context paths are its own).
    pub fn recorder(&self) -> SpanRecorder {
        SpanRecorder {
            tracer: self.tracer.clone(),
            state: Mutex::new(Spans::default()),
        }
    }

    /// Sends what is left and stops; says why when it could not.
    pub fn shutdown(&self) -> Result<(), String> {
        self.provider.shutdown().map_err(|e| e.to_string())
    }
}

/// Turns one session's events into spans.
pub struct SpanRecorder {
    tracer: SdkTracer,
    state: Mutex<Spans>,
}

/// The spans open in a session.
#[derive(Default)]
struct Spans {
    /// The root's loop and the session, from `session.started`.
    agent: String,
    session_id: String,
    /// Each running context's span (the root's: its turn's).
    contexts: HashMap<ContextPath, Context>,
    /// Each running tool call's span, by context and item id.
    tools: HashMap<(ContextPath, String), Context>,
}

/// The context path of `path`'s parent (none for the root).
fn parent_of(path: &ContextPath) -> Option<ContextPath> {
    path.as_str()
        .rsplit_once('.')
        .and_then(|(parent, _)| ContextPath::parse(parent))
}

/// The usage attributes of a span.
fn usage_attributes(usage: &Usage) -> Vec<KeyValue> {
    let input = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens;
    let mut attributes = vec![
        KeyValue::new("gen_ai.usage.input_tokens", input as i64),
        KeyValue::new("gen_ai.usage.output_tokens", usage.output_tokens as i64),
    ];
    if usage.cache_read_tokens > 0 {
        attributes.push(KeyValue::new(
            "gen_ai.usage.cache_read.input_tokens",
            usage.cache_read_tokens as i64,
        ));
    }
    if usage.cache_write_tokens > 0 {
        attributes.push(KeyValue::new(
            "gen_ai.usage.cache_creation.input_tokens",
            usage.cache_write_tokens as i64,
        ));
    }
    if let Some(ratio) = usage.cache_hit_ratio() {
        attributes.push(KeyValue::new("wonopcode.cache_hit_ratio", ratio));
    }
    if let Some(cost) = usage.cost_micro_cents {
        attributes.push(KeyValue::new("wonopcode.cost_usd", cost as f64 / 1e8));
    }
    attributes
}

/// Ends the span of `context` with `attributes`, marking it failed when `error` is set.
fn end(context: &Context, attributes: Vec<KeyValue>, error: Option<&str>) {
    let span = context.span();
    span.set_attributes(attributes);
    if let Some(error) = error {
        span.set_attribute(KeyValue::new("error.type", "wonopcode.error"));
        span.set_status(Status::error(error.to_owned()));
    }
    span.end();
}

impl SpanRecorder {
    /// Opens or ends the spans `event` starts or ends.
    pub fn record(&self, event: &Event) {
        let mut spans = self.state.lock();
        let path = &event.context;
        match &event.kind {
            EventKind::SessionStarted {
                session_id,
                loop_name,
                ..
            } => {
                spans.agent.clone_from(loop_name);
                spans.session_id.clone_from(session_id);
            }
            EventKind::TurnStarted if path.depth() == 0 => {
                let agent = spans.agent.clone();
                let session = spans.session_id.clone();
                let span = self.agent_span(&Context::new(), &agent, path, &session, None);
                spans.contexts.insert(path.clone(), span);
            }
            EventKind::TurnCompleted { usage, .. } if path.depth() == 0 => {
                if let Some(span) = spans.contexts.remove(path) {
                    end(&span, usage_attributes(usage), None);
                }
            }
            EventKind::TurnFailed { usage, error, .. } if path.depth() == 0 => {
                if let Some(span) = spans.contexts.remove(path) {
                    end(&span, usage_attributes(usage), Some(error));
                }
            }
            EventKind::ContextStarted { module, task, .. } => {
                let parent = parent_of(path)
                    .and_then(|p| spans.contexts.get(&p).cloned())
                    .unwrap_or_default();
                let session = spans.session_id.clone();
                let span = self.agent_span(&parent, module, path, &session, Some(task));
                spans.contexts.insert(path.clone(), span);
            }
            EventKind::ContextCompleted {
                usage,
                status,
                error,
                ..
            } => {
                if let Some(span) = spans.contexts.remove(path) {
                    let mut attributes = usage_attributes(usage);
                    attributes.push(KeyValue::new(
                        "wonopcode.status",
                        serde_json::to_value(status)
                            .ok()
                            .and_then(|v| v.as_str().map(str::to_owned))
                            .unwrap_or_default(),
                    ));
                    end(&span, attributes, error.as_deref());
                }
            }
            EventKind::ResponseCompleted {
                provider,
                model,
                usage,
                duration_ms,
                first_chunk_ms,
                error,
                ..
            } => {
                let parent = spans.contexts.get(path).cloned().unwrap_or_default();
                let now = SystemTime::now();
                let started = now - Duration::from_millis(*duration_ms);
                let mut attributes = vec![
                    KeyValue::new("gen_ai.operation.name", "chat"),
                    KeyValue::new("gen_ai.request.model", model.clone()),
                    KeyValue::new("gen_ai.provider.name", provider.clone()),
                    KeyValue::new("wonopcode.context", path.to_string()),
                ];
                attributes.extend(usage_attributes(usage));
                if let Some(ms) = first_chunk_ms {
                    let ms = i64::try_from(*ms).unwrap_or(i64::MAX);
                    attributes.push(KeyValue::new("wonopcode.first_chunk_ms", ms));
                }
                let mut span = self
                    .tracer
                    .span_builder(format!("chat {model}"))
                    .with_kind(SpanKind::Client)
                    .with_start_time(started)
                    .with_attributes(attributes)
                    .start_with_context(&self.tracer, &parent);
                if let Some(error) = error {
                    span.set_attribute(KeyValue::new("error.type", "wonopcode.error"));
                    span.set_status(Status::error(error.clone()));
                }
                span.end_with_timestamp(now);
            }
            EventKind::ItemStarted { item } => {
                if let ItemDetails::ToolCall(call) | ItemDetails::McpToolCall(call) = &item.details
                {
                    let parent = spans.contexts.get(path).cloned().unwrap_or_default();
                    let span = self.tool_span(&parent, call, path);
                    spans.tools.insert((path.clone(), item.id.clone()), span);
                }
            }
            EventKind::ItemCompleted { item } => {
                if let ItemDetails::ToolCall(call) | ItemDetails::McpToolCall(call) = &item.details
                    && let Some(span) = spans.tools.remove(&(path.clone(), item.id.clone()))
                {
                    let failed = matches!(call.status, ItemStatus::Failed | ItemStatus::Declined);
                    let error = failed.then(|| call.output.clone().unwrap_or_default());
                    end(&span, Vec::new(), error.as_deref());
                }
            }
            _ => {}
        }
    }

    /// An `invoke_agent` span under `parent`.
    fn agent_span(
        &self,
        parent: &Context,
        agent: &str,
        path: &ContextPath,
        session: &str,
        task: Option<&str>,
    ) -> Context {
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "invoke_agent"),
            KeyValue::new("gen_ai.agent.name", agent.to_owned()),
            KeyValue::new("gen_ai.conversation.id", session.to_owned()),
            KeyValue::new("wonopcode.context", path.to_string()),
        ];
        if let Some(task) = task {
            let short: String = task.chars().take(200).collect();
            attributes.push(KeyValue::new("wonopcode.task", short));
        }
        let span = self
            .tracer
            .span_builder(format!("invoke_agent {agent}"))
            .with_kind(SpanKind::Internal)
            .with_attributes(attributes)
            .start_with_context(&self.tracer, parent);
        parent.with_span(span)
    }

    /// An `execute_tool` span under `parent`.
    fn tool_span(&self, parent: &Context, call: &ToolCallItem, path: &ContextPath) -> Context {
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "execute_tool"),
            KeyValue::new("gen_ai.tool.name", call.name.clone()),
            KeyValue::new("gen_ai.tool.call.id", call.call_id.clone()),
            KeyValue::new("wonopcode.context", path.to_string()),
        ];
        if let Some(server) = &call.server {
            attributes.push(KeyValue::new("wonopcode.mcp_server", server.clone()));
        }
        let span = self
            .tracer
            .span_builder(format!("execute_tool {}", call.name))
            .with_kind(SpanKind::Internal)
            .with_attributes(attributes)
            .start_with_context(&self.tracer, parent);
        parent.with_span(span)
    }
}
