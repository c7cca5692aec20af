//! The MCP handler: `tools/list` offers one tool per named loop, `tools/call` runs the loop
//! on the prompt in a session of its own, `logging/setLevel` sets what the connection is
//! told.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
#[allow(deprecated)] // MCP logging is deprecated by SEP-2577, still current in 2025-11-25.
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, LoggingLevel, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    SetLevelRequestParams, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};
use tracing::Instrument;
use wonopcode_agent_loop::LoopResult;
use wonopcode_contexts::{LoopSource, RESULT_DATA_KEY};
use wonopcode_protocol::{LoopStatus, SharedModel, SingleModel};
use wonopcode_registry::{Entry, InputSchema};
use wonopcode_session::{Session, SessionBuilder};
use wonopcode_tools::permission::Prompter;
use wonopcode_wasm_host::GuestPrompter;

use crate::arguments;
use crate::elicit::Elicitor;
use crate::notices::{self, SharedLevel};
use crate::sampling::ClientModel;

/// What one call asks to run: the loop, and the call's own choices.
#[derive(Debug, Clone)]
pub struct LoopCall {
    /// The loop's name.
    pub name: String,
    /// What runs.
    pub source: LoopSource,
    /// Where it works, when the caller chose.
    pub workspace: Option<PathBuf>,
    /// The model, when the caller chose.
    pub model: Option<String>,
    /// The request limit, when the caller chose.
    pub max_iterations: Option<u32>,
}

/// Makes the session a call runs in, with the server's settings (config, provider,
/// permissions) and the call's choices, or says in one line why the call cannot run there
/// (a workspace outside the server's). The server adds the renderer and, when the client can
/// answer, the prompters.
pub type SessionFactory = Arc<dyn Fn(&LoopCall) -> Result<SessionBuilder, String> + Send + Sync>;

/// While cancelling, how often the run is told again (it may not have started its turn).
const CANCEL_RETRY: Duration = Duration::from_millis(10);

/// The key of a guest's state whose value, a JSON list of MCP content blocks (text, image,
/// audio, resource, ...), is the tool result's content instead of the answer's text: how a
/// loop served over MCP returns an image or a file.
pub const RESULT_CONTENT_KEY: &str = "__result_content__";

/// One loop as a tool.
struct Offered {
    entry: Entry,
    tool: Tool,
    /// The registry's `input_schema`, compiled: arguments are checked against it and given
    /// to the loop as its prompt. `None`: the loop takes a prompt.
    input: Option<jsonschema::Validator>,
}

struct Shared {
    offered: Vec<Offered>,
    sessions: SessionFactory,
    /// Calls run on the calling client's model (`--provider mcp-client`).
    client_model: bool,
}

/// The server: the named loops it offers and how it makes sessions. Cheap to clone; each
/// connection gets its own logging level through [`LoopServer::connection`].
#[derive(Clone)]
pub struct LoopServer {
    shared: Arc<Shared>,
    level: SharedLevel,
}

impl LoopServer {
    /// Offers `loops` (the first of each name), running calls in sessions from `sessions`.
    /// An entry whose `input_schema` is not a valid JSON Schema is refused, named.
    pub fn new(loops: Vec<Entry>, sessions: SessionFactory) -> Result<Self, String> {
        let prompt_schema = Arc::new(arguments::schema());
        let mut offered = Vec::with_capacity(loops.len());
        for entry in loops {
            let description = entry.description.clone().unwrap_or_else(|| {
                format!("Runs the wonopcode loop `{}` on a prompt.", entry.name)
            });
            let (tool, input) = match &entry.input_schema {
                Some(InputSchema(schema)) => {
                    let validator = jsonschema::validator_for(&Value::Object(schema.clone()))
                        .map_err(|e| {
                            format!(
                                "the loop `{}`: its input_schema is not a valid JSON Schema: {e}",
                                entry.name
                            )
                        })?;
                    let tool = Tool::new(entry.name.clone(), description, Arc::new(schema.clone()));
                    (tool, Some(validator))
                }
                None => {
                    let stop = if description.ends_with('.') { "" } else { "." };
                    let tool = Tool::new(
                        entry.name.clone(),
                        format!(
                            "{description}{stop} Returns its final answer, its structured data when it gives some, and the run's usage."
                        ),
                        prompt_schema.clone(),
                    );
                    (tool, None)
                }
            };
            offered.push(Offered { entry, tool, input });
        }
        Ok(Self {
            shared: Arc::new(Shared {
                offered,
                sessions,
                client_model: false,
            }),
            level: default_level(),
        })
    }

    /// Calls run on the calling client's model, through MCP sampling, instead of a provider
    /// of the server's own.
    pub fn with_client_model(mut self) -> Self {
        if let Some(shared) = Arc::get_mut(&mut self.shared) {
            shared.client_model = true;
        }
        self
    }

    /// The handler for a new connection: the same loops, its own logging level.
    pub fn connection(&self) -> Self {
        Self {
            shared: self.shared.clone(),
            level: default_level(),
        }
    }

    /// The names offered, in order.
    pub fn tool_names(&self) -> impl Iterator<Item = &str> {
        self.shared.offered.iter().map(|o| o.entry.name.as_str())
    }

    async fn run(
        &self,
        offered: &Offered,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let entry = &offered.entry;
        let mut call = LoopCall {
            name: entry.name.clone(),
            source: entry.location.clone(),
            workspace: None,
            model: None,
            max_iterations: None,
        };
        let prompt = match &offered.input {
            Some(validator) => {
                let arguments = Value::Object(request.arguments.clone().unwrap_or_default());
                let problems: Vec<String> = validator
                    .iter_errors(&arguments)
                    .map(|e| format!("{}: {e}", e.instance_path()))
                    .collect();
                if !problems.is_empty() {
                    let message = format!("invalid arguments: {}", problems.join("; "));
                    return CallToolResult::error(vec![ContentBlock::text(message)]);
                }
                json!({"tool": entry.name, "arguments": arguments}).to_string()
            }
            None => match arguments::parse(request.arguments.as_ref()) {
                Ok(args) => {
                    call.workspace = args.workspace;
                    call.model = args.model;
                    call.max_iterations = args.max_iterations;
                    args.prompt
                }
                Err(message) => return CallToolResult::error(vec![ContentBlock::text(message)]),
            },
        };
        let builder = match (self.shared.sessions)(&call) {
            Ok(builder) => builder,
            Err(message) => return CallToolResult::error(vec![ContentBlock::text(message)]),
        };
        let (notices, sender) = notices::start(
            context.peer.clone(),
            context.meta.get_progress_token(),
            self.level.clone(),
        );
        let mut builder = builder.renderer(Box::new(notices));
        if self.shared.client_model {
            let model: SharedModel = Arc::new(ClientModel::new(context.peer.clone()));
            builder = builder.model(model.clone(), Arc::new(SingleModel(model)));
        }
        let can_elicit = context
            .peer
            .peer_info()
            .is_some_and(|info| info.capabilities.elicitation.is_some());
        if can_elicit {
            let elicitor = Arc::new(Elicitor::new(context.peer.clone()));
            builder = builder
                .prompters(
                    elicitor.clone() as Arc<dyn Prompter>,
                    elicitor.clone() as Arc<dyn GuestPrompter>,
                )
                .elicitor(elicitor);
        }
        let result = match builder.build().await {
            Ok(mut session) => run_prompt(&mut session, &prompt, &context).await,
            Err(e) => Err(e.to_string()),
        };
        // The session (and its renderer) is gone: every notice is sent before the answer.
        sender.finish().await;
        match result {
            Ok(ended) => answer(ended),
            Err(message) => CallToolResult::error(vec![ContentBlock::text(message)]),
        }
    }
}

#[allow(deprecated)]
fn default_level() -> SharedLevel {
    Arc::new(Mutex::new(LoggingLevel::Info))
}

/// Starts the loop and runs `prompt`; a cancelled request cancels the run (and its tree).
async fn run_prompt(
    session: &mut Session,
    prompt: &str,
    context: &RequestContext<RoleServer>,
) -> Result<Ended, String> {
    session
        .start()
        .await
        .map_err(|e| format!("the loop failed to start: {e}"))?;
    let canceller = session.canceller();
    let cancelled = context.ct.clone();
    let watch = tokio::spawn(async move {
        cancelled.cancelled().await;
        // The turn may not have begun: told again until it takes the cancellation.
        while !canceller.cancel() {
            tokio::time::sleep(CANCEL_RETRY).await;
        }
    });
    let result = session.prompt(prompt).await;
    watch.abort();
    if let Some(failure) = session.failure() {
        return Err(failure);
    }
    Ok(Ended {
        data: session.state_json(RESULT_DATA_KEY),
        content: session.state_json(RESULT_CONTENT_KEY),
        result,
    })
}

/// How a run ended, and what its loop left for the caller.
struct Ended {
    result: LoopResult,
    /// `__result_data__`.
    data: Option<Value>,
    /// `__result_content__`.
    content: Option<Value>,
}

/// The tool result of a run: its answer as text (or the content blocks its loop left), and
/// as structured content the status, answer, the loop's data, the usage and the number of
/// model requests.
fn answer(ended: Ended) -> CallToolResult {
    let Ended {
        result,
        data,
        content,
    } = ended;
    let status = serde_json::to_value(result.status).unwrap_or_default();
    let mut structured = json!({
        "status": status,
        "usage": result.usage,
        "iterations": result.iterations,
    });
    if let Some(response) = &result.response {
        structured["answer"] = json!(response);
    }
    if let Some(data) = data {
        structured["data"] = data;
    }
    if let Some(error) = &result.error {
        structured["error"] = json!(error);
    }
    let text = match result.status {
        LoopStatus::Complete => result.response.clone().unwrap_or_default(),
        LoopStatus::Suspended => format!(
            "the run stopped waiting for approval ({}); the server's permissions must allow it, or the client must support elicitation",
            result.error.as_deref().unwrap_or("a tool call")
        ),
        _ => result
            .error
            .clone()
            .unwrap_or_else(|| format!("the run ended {status}")),
    };
    let mut blocks = vec![ContentBlock::text(text)];
    if let Some(content) = content {
        match serde_json::from_value::<Vec<ContentBlock>>(content) {
            Ok(given) if result.status == LoopStatus::Complete => blocks = given,
            Ok(_) => {}
            Err(e) => blocks.push(ContentBlock::text(format!(
                "(the loop's {RESULT_CONTENT_KEY} is not a list of MCP content blocks: {e})"
            ))),
        }
    }
    let mut tool_result = if result.status == LoopStatus::Complete {
        CallToolResult::success(blocks)
    } else {
        CallToolResult::error(blocks)
    };
    tool_result.structured_content = Some(structured);
    tool_result
}

impl ServerHandler for LoopServer {
    #[allow(deprecated)]
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_logging()
                .build(),
        )
        .with_server_info(Implementation::new("wonopcode", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "Each tool is a wonopcode agent loop: give it a task as `prompt`; it works in the server's workspace (or `workspace`) with its own tools and returns its final answer.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.shared.offered.iter().map(|o| o.tool.clone()).collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(offered) = self
            .shared
            .offered
            .iter()
            .find(|o| o.entry.name == request.name.as_ref())
        else {
            return Err(ErrorData::invalid_params(
                format!("unknown tool `{}`", request.name),
                None,
            ));
        };
        let span = tracing::info_span!("mcp_call", tool = %offered.entry.name);
        Ok(self
            .run(offered, request, context)
            .instrument(span)
            .await
            .into())
    }

    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        *self.level.lock() = request.level;
        Ok(())
    }
}
