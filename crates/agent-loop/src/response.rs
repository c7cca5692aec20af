//! One response, from its request to the history: the step both loops take. The native loop
//! drains a [`ResponseStream`] in one go; the WebAssembly host keeps it in the guest's store
//! and hands its chunks to the guest one `read-stream-chunk` at a time. Every rule of the
//! step is here, once: the request's checks, the cancellation and idle-timeout select, the
//! one retry after the provider says the history does not fit, pricing, what a response
//! that failed before any usage counts (nothing), the `response.completed` report, and how
//! a response is stored (a failed one keeps what it said, marked incomplete).

use std::time::Instant;

use futures::{FutureExt, StreamExt};

use wonopcode_protocol::call::calls_in;
use wonopcode_protocol::event::{EventKind, Item, ItemDetails};
use wonopcode_protocol::message::{Message, Part, pending_tool_calls};
use wonopcode_protocol::model::{
    ChunkStream, ModelRequest, RequestOptions, SharedModel, StreamChunk, ToolSchema,
};
use wonopcode_protocol::status::LoopError;
use wonopcode_protocol::usage::Usage;

use crate::assemble::{
    AssembledResponse, ResponseAssembler, StreamFailure, price, report_response, start_stream,
};
use crate::run::{Response, Run};
use crate::tool_registry::ToolRegistry;

/// What a response asks the model: the run's own history (which the step may compact and
/// ask again once, should the provider say it does not fit), or messages a loop keeps
/// itself.
pub enum Ask {
    /// The run's history with these tools and options.
    History {
        /// The tools offered.
        tools: Vec<ToolSchema>,
        /// Overrides of the run's generation options.
        options: RequestOptions,
    },
    /// A request a loop built of its own messages (never retried: the run cannot compact
    /// what it does not hold).
    Request(ModelRequest),
}

/// One response in flight, then finished: its chunks, their assembly, and what the step
/// needs to end it (the model whose prices count, when it was asked, how to ask again).
pub struct ResponseStream {
    chunks: ChunkStream,
    /// Present while the response streams.
    assembler: Option<ResponseAssembler>,
    /// The finished response, until it is stored.
    finished: Option<AssembledResponse>,
    /// Its usage, kept once the response is stored.
    usage: Usage,
    model: SharedModel,
    opened: Instant,
    /// From the request to the stream's first chunk, once it came (time to first token).
    first_chunk: Option<std::time::Duration>,
    /// How to ask again after compacting (the run's own history, not yet retried).
    retry: Option<Offered>,
    /// Why the request was refused before anything streamed, as the typed error a run ends
    /// with (a budget stop, a cancel); its message is the stream's one error chunk.
    refused: Option<LoopError>,
}

/// What a response of the run's history offered, to offer it again after compacting: the
/// tools' names (their schemas are looked up again, not copied for a retry that rarely
/// comes) and the schemas of the tools the run does not hold (a guest's own).
struct Offered {
    names: Vec<String>,
    own: Vec<ToolSchema>,
    options: RequestOptions,
}

impl Offered {
    fn of(tools: &[ToolSchema], options: RequestOptions, held: &ToolRegistry) -> Self {
        Self {
            names: tools.iter().map(|t| t.name.clone()).collect(),
            own: tools
                .iter()
                .filter(|t| held.get(&t.name).is_none())
                .cloned()
                .collect(),
            options,
        }
    }

    /// The schemas offered, in the order they were.
    fn tools(&self, held: &ToolRegistry) -> Vec<ToolSchema> {
        self.names
            .iter()
            .filter_map(|name| {
                held.schema(name)
                    .or_else(|| self.own.iter().find(|t| &t.name == name).cloned())
            })
            .collect()
    }
}

/// A stored response: what the native loop acts on, what a guest is handed back.
pub struct Stored {
    /// The parts as stored in the history (shared with its message; empty when nothing
    /// was worth keeping).
    pub stored: std::sync::Arc<[Part]>,
    /// The parts as they streamed, moved out of the stream.
    pub parts: Vec<Part>,
    /// Set when the response failed. Storing does not end the run: the native loop ends
    /// it with this error; a guest may ask again.
    pub failure: Option<LoopError>,
}

impl Stored {
    /// Its text and the calls its tool round runs (what the native loop acts on; a guest
    /// reads the parts).
    pub fn response(&self) -> Response {
        let text = self
            .stored
            .iter()
            .filter_map(|part| match part {
                Part::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        Response {
            text,
            calls: calls_in(&self.stored),
        }
    }
}

impl ResponseStream {
    /// The usage so far (all of it once the response ended).
    pub fn usage(&self) -> Usage {
        match (&self.finished, &self.assembler) {
            (Some(turn), _) => turn.usage,
            (None, Some(assembler)) => *assembler.usage(),
            (None, None) => self.usage,
        }
    }

    /// True once the response has ended (and until it is stored).
    pub fn is_finished(&self) -> bool {
        self.finished.is_some()
    }

    /// True while chunks may still come.
    pub fn is_streaming(&self) -> bool {
        self.assembler.is_some()
    }

    /// The finished response's visible text.
    pub fn text(&self) -> Option<String> {
        self.finished.as_ref().map(AssembledResponse::text)
    }

    /// Drops the connection: no more chunks are read.
    pub fn close(&mut self) {
        self.chunks = Box::pin(futures::stream::empty());
    }
}

impl Run {
    /// Asks the model for a response: the request's checks ([`Run::begin_request`]; `Err`
    /// when no request may be made), then the request under the idle timeout and the
    /// cancellation token. A request the model refuses to start is a response that fails at
    /// its first chunk, so a reader learns of it where it learns of everything else; a
    /// budget stop also ends the run.
    pub async fn open_response(&mut self, ask: Ask) -> Result<ResponseStream, LoopError> {
        self.begin_request()?;
        let (request, retry) = match ask {
            Ask::History { tools, options } => {
                let offered = Offered::of(&tools, options.clone(), &self.services.tools);
                (self.request(tools, &options), Some(offered))
            }
            Ask::Request(request) => (request, None),
        };
        let opened = Instant::now();
        let (chunks, refused) = self.start(request).await;
        Ok(ResponseStream {
            chunks,
            assembler: Some(ResponseAssembler::new(self.services.events.clone())),
            finished: None,
            usage: Usage::default(),
            model: self.services.provider.clone(),
            opened,
            first_chunk: None,
            retry,
            refused,
        })
    }

    /// Starts a request: its chunks, or one error chunk and the typed refusal.
    async fn start(&mut self, request: ModelRequest) -> (ChunkStream, Option<LoopError>) {
        let span = tracing::debug_span!(
            "model_request",
            iteration = self.stats.iterations,
            messages = request.messages.len()
        );
        // Borrowed, not cloned: a token's clone takes its tree's lock.
        let s = &self.services;
        let started = tracing::Instrument::instrument(
            start_stream(
                &s.provider,
                request,
                &s.cancel,
                s.config.stream_idle_timeout,
            ),
            span,
        )
        .await;
        match started {
            Ok(chunks) => (chunks, None),
            Err(e) => {
                // A budget stop ends the run, whichever loop drives it.
                let e = match e {
                    LoopError::BudgetExceeded(_) => self.fail(e),
                    e => e,
                };
                let chunk = StreamChunk::Error {
                    message: e.detail(),
                };
                (Box::pin(futures::stream::iter([chunk])), Some(e))
            }
        }
    }

    /// Reads the response's next chunk into its assembly and gives the reader's view of
    /// it: `see` maps a chunk (`None`: the reader does not see it, read on), `failed` a
    /// failure's message. `None` once the response has ended. A context overflow of the
    /// run's own history compacts it and asks again, once, as if nothing had been said.
    pub async fn read_response<T>(
        &mut self,
        stream: &mut ResponseStream,
        see: impl Fn(&StreamChunk) -> Option<T>,
        failed: impl Fn(String) -> T,
    ) -> Option<T> {
        loop {
            let assembler = stream.assembler.as_mut()?;
            let s = &self.services;
            let (cancel, idle) = (&s.cancel, s.config.stream_idle_timeout);
            // A chunk already buffered is taken at once: arming a timer and a cancellation
            // waiter for every chunk costs more than the rest of this call.
            let ready = if cancel.is_cancelled() {
                Some(Err(StreamFailure::Cancelled))
            } else {
                stream.chunks.next().now_or_never().map(Ok)
            };
            let next = match ready {
                Some(next) => next,
                None => tokio::select! {
                    biased;
                    () = cancel.cancelled() => Err(StreamFailure::Cancelled),
                    next = tokio::time::timeout(idle, stream.chunks.next()) =>
                        next.map_err(|_| StreamFailure::Timeout(idle)),
                },
            };
            match next {
                Ok(Some(StreamChunk::ContextOverflow { message })) if stream.retry.is_some() => {
                    if self.ask_again(stream).await {
                        continue;
                    }
                    let chunk = StreamChunk::ContextOverflow { message };
                    let visible = see(&chunk);
                    if let Some(assembler) = stream.assembler.as_mut() {
                        assembler.apply(chunk);
                    }
                    self.end_response(stream, None);
                    return visible;
                }
                Ok(Some(chunk)) => {
                    stream
                        .first_chunk
                        .get_or_insert_with(|| stream.opened.elapsed());
                    let visible = see(&chunk);
                    if !assembler.apply(chunk) {
                        self.end_response(stream, None);
                    }
                    match visible {
                        Some(seen) => return Some(seen),
                        None => continue,
                    }
                }
                // A stream that ends without `done` ended all the same.
                Ok(None) => {
                    self.end_response(stream, None);
                    return None;
                }
                Err(failure) => {
                    let message = match &failure {
                        StreamFailure::Cancelled => "cancelled".to_owned(),
                        StreamFailure::Timeout(after) => {
                            format!("no data from the model for {} s", after.as_secs())
                        }
                        StreamFailure::Provider(m) | StreamFailure::ContextOverflow(m) => m.clone(),
                    };
                    self.end_response(stream, Some(failure));
                    return Some(failed(message));
                }
            }
        }
    }

    /// Reads the response to its end, seeing nothing of it.
    pub async fn drain_response(&mut self, stream: &mut ResponseStream) {
        while self
            .read_response(stream, |_| None::<()>, |_| ())
            .await
            .is_some()
        {}
    }

    /// The provider refused the history as too long: compacts it and asks again in the same
    /// stream, once. False when compaction changed nothing or no request may be made.
    async fn ask_again(&mut self, stream: &mut ResponseStream) -> bool {
        let Some(offered) = stream.retry.take() else {
            return false;
        };
        if !self.compact_now().await || self.begin_request().is_err() {
            return false;
        }
        let tools = offered.tools(&self.services.tools);
        let request = self.request(tools, &offered.options);
        let (chunks, refused) = self.start(request).await;
        stream.chunks = chunks;
        stream.refused = refused;
        stream.opened = Instant::now();
        stream.first_chunk = None;
        stream.assembler = Some(ResponseAssembler::new(self.services.events.clone()));
        true
    }

    /// Ends a response (`failure`: how it was cut short; the loop closed it, say): closes
    /// its items, prices its usage and adds it to the run, and reports it (unless the budget
    /// stopped it before it was sent). A response that
    /// failed before the provider reported any usage was not billed and is not counted:
    /// its cost is not a known $0.
    pub fn end_response(&mut self, stream: &mut ResponseStream, failure: Option<StreamFailure>) {
        let Some(mut assembler) = stream.assembler.take() else {
            return;
        };
        if let Some(f) = failure {
            assembler.fail(f);
        }
        let mut turn = assembler.finish();
        let unbilled = turn.failure.is_some() && turn.usage == Usage::default();
        if !unbilled {
            price(&stream.model, &mut turn.usage);
            self.stats.usage.add(&turn.usage);
        }
        tracing::debug!(
            iteration = self.stats.iterations,
            latency_ms = u64::try_from(stream.opened.elapsed().as_millis()).unwrap_or(u64::MAX),
            stop_reason = ?turn.stop_reason,
            "model request finished"
        );
        // A request the budget stopped was never sent: there is no response to report.
        let unsent = matches!(stream.refused, Some(LoopError::BudgetExceeded(_)));
        if !unsent {
            report_response(
                &self.services.events,
                stream.model.info(),
                &turn,
                stream.opened,
                stream.first_chunk,
            );
        }
        stream.close();
        stream.finished = Some(turn);
    }

    /// Stores a finished response in the history: what it said (a failed one without its
    /// half-streamed calls, marked incomplete; nothing when it said nothing) and, for a
    /// whole one, its calls checked for repetition (`Err`: the run stops there). `None`
    /// while the response still streams, and once it is stored.
    pub async fn store_response(
        &mut self,
        stream: &mut ResponseStream,
    ) -> Option<Result<Stored, LoopError>> {
        let turn = stream.finished.take()?;
        stream.usage = turn.usage;
        let failure = stream.refused.take().or_else(|| turn.error());
        let message = turn.message();
        let stored = message
            .as_ref()
            .map_or_else(|| std::sync::Arc::from([]), |m| m.parts.clone());
        if let Some(message) = message {
            self.push_message(message.clone());
            if failure.is_none()
                && let Err(e) = self.check_repetition(&message).await
            {
                return Some(Err(e));
            }
        }
        Some(Ok(Stored {
            stored,
            parts: turn.parts,
            failure,
        }))
    }

    /// Gets the history ready for the next response of a turn: nothing of a cancelled run
    /// is compacted or sent (`Err`), what the person sent into the turn is added
    /// (`crate::steering`), and a history past the threshold is compacted first.
    pub async fn ready_for_response(&mut self) -> Result<(), LoopError> {
        if self.services.cancel.is_cancelled() {
            return Err(LoopError::Cancelled);
        }
        self.take_steering();
        self.compact_if_needed().await;
        Ok(())
    }

    /// Adds the texts waiting in the steering inbox as one user message, announced as a
    /// `user_message` item. Not while a call of the last response waits for its result
    /// (nothing may come between a call and its result): they wait for the next request.
    fn take_steering(&mut self) {
        if self.steering().is_empty() || !pending_tool_calls(&self.messages).is_empty() {
            return;
        }
        let texts = self.steering().take();
        let text = texts.join("\n\n");
        let events = &self.services.events;
        events.emit(EventKind::ItemCompleted {
            item: Item {
                id: events.next_item_id(),
                details: ItemDetails::UserMessage { text: text.clone() },
            },
        });
        self.push_message(Message::user(text));
    }

    /// One response to the history with every tool of the run offered, stored: compaction
    /// first, then [`Run::open_response`], read to the end. A failed response ends the run.
    pub async fn respond(&mut self) -> Result<Response, LoopError> {
        self.ready_for_response().await?;
        let tools = self.services.tools.schemas();
        let ask = Ask::History {
            tools,
            options: RequestOptions::default(),
        };
        let mut stream = self.open_response(ask).await?;
        self.drain_response(&mut stream).await;
        let stored = self
            .store_response(&mut stream)
            .await
            .unwrap_or_else(|| Err(LoopError::Internal("a drained response is finished".into())))?;
        match stored.failure {
            Some(error) => Err(self.fail(error)),
            None => Ok(stored.response()),
        }
    }
}
