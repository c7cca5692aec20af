//! `providers`: the host's models and streaming. `stream-prompt` and `stream-history` open
//! a response through the run's own step (`wonopcode_agent_loop::response`), and
//! `read-stream-chunk` reads it one chunk at a time through the same step the native loop
//! drains: the idle timeout, the cancellation token, the one retry after a context
//! overflow, pricing and the report are the run's, so items, usage and the stored message
//! are the same whichever loop runs. The stream is read inline, on the guest's own task: a
//! second task and channel here would only copy every chunk across threads once more (see
//! docs/decisions.md). What this module adds is the guest's side: which of its tools a
//! request may offer, its handles, and the WIT shapes (`host/shapes.rs`).

use std::sync::Arc;

use wasmtime::component::HasData;
use wonopcode_agent_loop::assemble::StreamFailure;
use wonopcode_agent_loop::response::{Ask, ResponseStream};
use wonopcode_protocol::StreamChunk as Chunk;
use wonopcode_protocol::call::{Call, calls_in};
use wonopcode_protocol::model_source::listing_of;
use wonopcode_protocol::{Message, Part, RequestOptions, Role, ToolSchema};

use crate::bindings::providers::{
    self as wit, CollectedTurn, Host, ModelDetails, ProviderInfo, StreamChunk, StreamHandle,
    StreamOptions, UsageDetails,
};
use crate::host::shapes::{collected, details, message_from_wit, message_to_wit, wit_chunk};
use crate::host::storage::store_streamed;
use crate::state::{ContextTools, HostState, Place, Responses, RunSlot};
use wonopcode_contexts::budget::open_model;

/// What `providers` sees of a store: the run (its model, history and steps), the
/// context's model and streams, the tools a request may offer, and the guest's place (the
/// models it may switch to, the budgets it draws on).
pub(crate) struct ProvidersView<'a> {
    run: &'a mut RunSlot,
    responses: &'a mut Responses,
    tools: &'a ContextTools,
    place: &'a Place,
}

impl<'a> ProvidersView<'a> {
    pub(crate) fn of(state: &'a mut HostState) -> Self {
        Self {
            run: &mut state.run,
            responses: &mut state.responses,
            tools: &state.tools,
            place: &state.place,
        }
    }
}

/// Links `providers` on [`ProvidersView`].
pub(crate) struct ProvidersData;

impl HasData for ProvidersData {
    type Data<'a> = ProvidersView<'a>;
}

/// A response the guest asked for, and how far it has come: a tool round needs it stored
/// (the results answer its calls) and runs once.
pub(crate) struct OpenStream {
    /// The response itself: the run's step ([`ResponseStream`]) reads, ends and stores it.
    pub(crate) response: ResponseStream,
    stage: ResponseStage,
}

/// How far a finished response has come. Once stored, the stream keeps only its usage: the
/// response lives in the history, the request's connection is dropped.
#[derive(Debug)]
enum ResponseStage {
    Streamed,
    /// In the history, with the parts stored there (shared with the history's message):
    /// the calls a tool round answers. A failed response is stored without its calls.
    Stored {
        parts: Arc<[Part]>,
    },
    RoundRun,
}

impl OpenStream {
    /// Says why the response cannot be stored now (`None`: it can): still streaming, or
    /// stored already.
    pub(crate) fn not_storable(&self, handle: StreamHandle) -> Option<String> {
        if !matches!(self.stage, ResponseStage::Streamed) {
            return Some(format!("turn {handle} is already in the history"));
        }
        (!self.response.is_finished())
            .then(|| format!("stream {handle} is still open: read it to the end first"))
    }

    /// Notes that the response is in the history with these parts.
    pub(crate) fn mark_stored(&mut self, parts: Arc<[Part]>) {
        self.stage = ResponseStage::Stored { parts };
    }

    /// The tool calls of a stored turn whose round has not run. `Err` says why the round
    /// cannot run.
    pub(crate) fn round_calls(&self, handle: StreamHandle) -> Result<Vec<Call>, String> {
        match &self.stage {
            ResponseStage::Stored { parts } => Ok(calls_in(parts)),
            ResponseStage::RoundRun => Err(format!("turn {handle} has had its tool round")),
            ResponseStage::Streamed if !self.response.is_finished() => Err(format!(
                "turn {handle} is still streaming: read it to the end first"
            )),
            ResponseStage::Streamed => Err(format!(
                "turn {handle} is not in the history: store it first (storage.add-streamed-message)"
            )),
        }
    }

    /// Notes that the turn's tool round has run (it runs once).
    pub(crate) fn mark_round_run(&mut self) {
        if matches!(self.stage, ResponseStage::Stored { .. }) {
            self.stage = ResponseStage::RoundRun;
        }
    }
}

/// How a chunk read for `run-turn` bears on the turn: `Ok(true)` it is done, `Err` it failed
/// (what `read-stream-chunk` would hand out as `done` and `error`).
fn ending(chunk: &Chunk) -> Option<Result<bool, String>> {
    match chunk {
        Chunk::Done { .. } => Some(Ok(true)),
        Chunk::Error { message } | Chunk::ContextOverflow { message } => Some(Err(message.clone())),
        _ => Some(Ok(false)),
    }
}

/// Keeps an ended response's text, when it said something, as what the guest's run shows
/// (its answer, unless the loop shows another).
fn note_shown(run: &mut RunSlot, response: &ResponseStream) {
    if response.is_streaming() {
        return;
    }
    if let Some(text) = response.text().filter(|t| !t.is_empty()) {
        run.shown = text;
    }
}

impl ProvidersView<'_> {
    /// Ends a stream the guest closed (the run's step: its items, price, usage, report).
    fn finish_stream(
        &mut self,
        handle: StreamHandle,
        failure: StreamFailure,
    ) -> wasmtime::Result<()> {
        let Some(stream) = self.responses.streams.get_mut(&handle) else {
            return Ok(());
        };
        self.run
            .get_mut()?
            .end_response(&mut stream.response, Some(failure));
        note_shown(self.run, &stream.response);
        Ok(())
    }

    /// The messages of a request: the host's own history when the guest passes it back
    /// unchanged (so thinking signatures survive), else the guest's messages. A leading system
    /// message becomes the system prompt.
    fn request_messages(
        &self,
        messages: Vec<wit::Message>,
    ) -> wasmtime::Result<Option<(Option<String>, Vec<Message>)>> {
        let run = self.run.get()?;
        let unchanged = messages.len() == run.messages.len()
            && run
                .messages
                .iter()
                .zip(&messages)
                .all(|(m, w)| message_to_wit(m) == *w);
        if unchanged {
            return Ok(None);
        }
        let config_system = run.services.config.system_prompt.clone();
        let mut converted: Vec<Message> = messages.into_iter().map(message_from_wit).collect();
        if converted.first().is_some_and(|m| m.role == Role::System) {
            let system = converted.remove(0).text_content();
            return Ok(Some((Some(system), converted)));
        }
        Ok(Some((config_system, converted)))
    }

    /// Starts a model stream of the run's history (`own` = `None`: the run may compact it
    /// and ask again once, should it not fit) or of the guest's own messages, after
    /// checking that every tool offered is enabled in this context; the run's step does the
    /// rest ([`wonopcode_agent_loop::Run::open_response`]).
    async fn open_stream(
        &mut self,
        own: Option<(Option<String>, Vec<Message>)>,
        tools: &[String],
        options: StreamOptions,
    ) -> wasmtime::Result<Result<StreamHandle, String>> {
        let schemas = match self.offered_schemas(tools)? {
            Ok(schemas) => schemas,
            Err(e) => return Ok(Err(e)),
        };
        let run = self.run.get_mut()?;
        let options = RequestOptions {
            max_tokens: options.max_tokens,
            temperature: options.temperature,
            thinking_budget: options.thinking_budget,
        };
        let ask = match own {
            None => Ask::History {
                tools: schemas,
                options,
            },
            Some((system, messages)) => {
                Ask::Request(run.request_of(system, messages.into(), schemas, &options))
            }
        };
        let response = match run.open_response(ask).await {
            Ok(response) => response,
            Err(e) => return Ok(Err(e.to_string())),
        };
        let handle = self.responses.next_stream;
        self.responses.next_stream += 1;
        self.responses.streams.insert(
            handle,
            OpenStream {
                response,
                stage: ResponseStage::Streamed,
            },
        );
        Ok(Ok(handle))
    }

    /// Reads a stream's next chunk through the run's step and gives the guest's view of it:
    /// `see` maps a chunk (`None`: the guest does not see it, read on), `failed` an error
    /// message. `None` once the stream is over.
    async fn read_next<T>(
        &mut self,
        handle: StreamHandle,
        see: impl Fn(&Chunk) -> Option<T>,
        failed: impl Fn(String) -> T,
    ) -> wasmtime::Result<Option<T>> {
        let Some(stream) = self.responses.streams.get_mut(&handle) else {
            return Ok(Some(failed(format!("unknown stream handle {handle}"))));
        };
        let run = self.run.get_mut()?;
        let was_streaming = stream.response.is_streaming();
        let read = run.read_response(&mut stream.response, see, failed).await;
        if was_streaming {
            note_shown(self.run, &stream.response);
        }
        Ok(read)
    }

    /// Makes `model` of `provider` this context's model, for this run and the next ones.
    async fn switch_model(
        &mut self,
        provider: &str,
        model: Option<&str>,
    ) -> wasmtime::Result<Result<(), String>> {
        let current = self.run.services()?.provider.clone();
        let budgets = self
            .place
            .frame
            .as_ref()
            .map(|f| f.lineage.budgets.clone())
            .unwrap_or_default();
        let source = self.place.host_config.models.clone();
        match open_model(source.as_deref(), &current, &budgets, provider, model).await {
            Ok(opened) => {
                if let Some(run) = self.run.run.as_mut() {
                    std::sync::Arc::make_mut(&mut run.services).provider = opened.clone();
                }
                self.responses.model = Some(opened);
                Ok(Ok(()))
            }
            Err(e) => Ok(Err(e)),
        }
    }

    /// The schemas of the tools a request offers: enabled host tools and enabled custom tools.
    fn offered_schemas(
        &self,
        tools: &[String],
    ) -> wasmtime::Result<Result<Vec<ToolSchema>, String>> {
        let env = self.run.services()?;
        let mut schemas = Vec::with_capacity(tools.len());
        for name in tools {
            if let Some(tool) = env
                .tools
                .get(name)
                .filter(|_| self.tools.host_enabled(name))
            {
                let spec = tool.spec();
                schemas.push(ToolSchema {
                    name: spec.name.clone(),
                    description: spec.description.clone(),
                    parameters: spec.parameters.clone(),
                });
            } else if let Some(custom) = self
                .tools
                .custom
                .get(name)
                .filter(|_| self.tools.custom_enabled.contains(name))
            {
                schemas.push(ToolSchema {
                    name: name.clone(),
                    description: custom.description.clone(),
                    parameters: custom.parameters.clone(),
                });
            } else {
                return Ok(Err(format!("tool `{name}` is not enabled in this context")));
            }
        }
        Ok(Ok(schemas))
    }
}

impl Host for ProvidersView<'_> {
    fn list_providers(&mut self) -> wasmtime::Result<Vec<ProviderInfo>> {
        let listings = match &self.place.host_config.models {
            Some(source) => source.providers(),
            None => vec![listing_of(self.run.services()?.provider.info())],
        };
        Ok(listings
            .into_iter()
            .map(|l| ProviderInfo {
                name: l.id.clone(),
                id: l.id,
                models: l.models,
                supports_streaming: true,
                supports_tools: l.supports_tools,
                supports_thinking: l.supports_thinking,
            })
            .collect())
    }

    fn get_current_provider(&mut self) -> wasmtime::Result<Option<String>> {
        Ok(Some(self.run.services()?.provider.info().provider.clone()))
    }

    fn get_current_model(&mut self) -> wasmtime::Result<Option<String>> {
        Ok(Some(self.run.services()?.provider.info().id.clone()))
    }

    async fn set_provider(&mut self, provider_id: String) -> wasmtime::Result<Result<(), String>> {
        self.switch_model(&provider_id, None).await
    }

    async fn set_model(&mut self, model_id: String) -> wasmtime::Result<Result<(), String>> {
        let provider = self.run.services()?.provider.info().provider.clone();
        self.switch_model(&provider, Some(&model_id)).await
    }

    async fn stream_prompt(
        &mut self,
        messages: Vec<wit::Message>,
        tools: Vec<String>,
        options: StreamOptions,
    ) -> wasmtime::Result<Result<StreamHandle, String>> {
        let own = self.request_messages(messages)?;
        self.open_stream(own, &tools, options).await
    }

    async fn stream_history(
        &mut self,
        tools: Vec<String>,
        options: StreamOptions,
    ) -> wasmtime::Result<Result<StreamHandle, String>> {
        self.open_stream(None, &tools, options).await
    }

    async fn read_stream_chunk(
        &mut self,
        handle: StreamHandle,
    ) -> wasmtime::Result<Option<StreamChunk>> {
        self.read_next(handle, wit_chunk, StreamChunk::Error).await
    }

    fn close_stream(&mut self, handle: StreamHandle) -> wasmtime::Result<()> {
        self.finish_stream(
            handle,
            StreamFailure::Provider("the loop closed the stream".to_owned()),
        )
    }

    fn get_stream_usage(&mut self, handle: StreamHandle) -> wasmtime::Result<Option<UsageDetails>> {
        Ok(self
            .responses
            .streams
            .get(&handle)
            .map(|s| details(&s.response.usage())))
    }

    fn get_run_usage(&mut self) -> wasmtime::Result<UsageDetails> {
        Ok(details(&self.run.get()?.stats.usage))
    }

    async fn run_turn(
        &mut self,
        tools: Vec<String>,
        options: StreamOptions,
    ) -> wasmtime::Result<Result<CollectedTurn, String>> {
        // A cancelled run: a loop learns it here.
        if let Err(e) = self.run.get_mut()?.ready_for_response().await {
            return Ok(Err(e.to_string()));
        }
        let handle = match self.stream_history(tools, options).await? {
            Ok(handle) => handle,
            Err(e) => return Ok(Err(e)),
        };
        // The chunks are not converted for the guest: only how the stream ended matters here.
        let mut error = None;
        while let Some(read) = self.read_next(handle, ending, Err).await? {
            match read {
                Ok(false) => {}
                Ok(true) => break,
                Err(message) => {
                    error = Some(message);
                    break;
                }
            }
        }
        // Once the turn is in the history, its assembled parts are the guest's to have:
        // moved, not copied.
        let parts = match store_streamed(self.run, self.responses, handle).await? {
            Ok(parts) => parts,
            Err(e) => return Ok(Err(e)),
        };
        Ok(Ok(collected(handle, parts, error)))
    }

    fn get_model_details(&mut self) -> wasmtime::Result<Option<ModelDetails>> {
        let info = self.run.services()?.provider.info();
        Ok(Some(ModelDetails {
            id: info.id.clone(),
            context_window: info.context_window,
            max_output: info.max_output,
            supports_thinking: info.capabilities.thinking,
        }))
    }
}
