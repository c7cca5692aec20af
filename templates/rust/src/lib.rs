//! {{name}}: a wonopcode agent loop. It streams a model turn from the stored history, runs
//! the tools the model asks for on the host, and repeats until the model answers.
//!
//! Build: `cargo build --release --target wasm32-wasip2`
//! Check: `wonopcode --validate-module --agent-loop target/wasm32-wasip2/release/{{crate}}.wasm`

wit_bindgen::generate!({ path: "wit", world: "agent-loop-world" });

use exports::wonopcode::agent_loop::{agent_loop, custom_tool_handler};
use wonopcode::agent_loop::providers::{self, Message, MessageRole, StreamChunk, StreamOptions};
use wonopcode::agent_loop::types::{LoopCapabilities, LoopError};
use wonopcode::agent_loop::{storage, system, tools};

/// Model turns one prompt may take.
const MAX_ROUNDS: usize = 20;

struct Guest;

/// One streamed turn: the text and the tool calls (id, name, arguments).
struct Turn {
    handle: u64,
    text: String,
    calls: Vec<(String, String, String)>,
    error: Option<String>,
}

fn stream_turn() -> Result<Turn, LoopError> {
    let options = StreamOptions {
        max_tokens: None,
        temperature: None,
        thinking_budget: None,
    };
    let handle = providers::stream_history(&tools::get_enabled_tools(), options)
        .map_err(LoopError::ProviderError)?;
    let mut turn = Turn {
        handle,
        text: String::new(),
        calls: Vec::new(),
        error: None,
    };
    while let Some(chunk) = providers::read_stream_chunk(handle) {
        match chunk {
            StreamChunk::TextDelta(text) => turn.text.push_str(&text),
            StreamChunk::ToolCallStart(start) => turn.calls.push((start.id, start.name, String::new())),
            StreamChunk::ToolCallDelta(delta) => {
                if let Some(call) = turn.calls.iter_mut().rev().find(|c| c.0 == delta.id) {
                    call.2.push_str(&delta.arguments_delta);
                }
            }
            StreamChunk::Error(error) => turn.error = Some(error),
            _ => {}
        }
    }
    Ok(turn)
}

impl agent_loop::Guest for Guest {
    fn run_prompt(input: String) -> Result<String, LoopError> {
        storage::add_message(&Message {
            role: MessageRole::User,
            content: input,
            tool_calls: None,
            tool_results: None,
        });
        for _ in 0..MAX_ROUNDS {
            if system::is_cancelled() {
                return Err(LoopError::Cancelled);
            }
            storage::compact_if_needed().map_err(LoopError::Internal)?;
            let turn = stream_turn()?;
            storage::add_streamed_message(turn.handle).map_err(LoopError::Internal)?;
            if let Some(error) = turn.error {
                return Err(LoopError::ProviderError(error));
            }
            if turn.calls.is_empty() {
                return Ok(turn.text);
            }
            let requests: Vec<tools::ToolExecutionRequest> = turn
                .calls
                .into_iter()
                .map(|(id, name, arguments)| tools::ToolExecutionRequest { id, name, arguments })
                .collect();
            let results = tools::execute_tools_parallel(&requests)
                .into_iter()
                .map(|r| providers::ToolResult {
                    call_id: r.call_id,
                    content: r.content,
                    is_error: !r.success,
                })
                .collect();
            storage::add_message(&Message {
                role: MessageRole::Tool,
                content: String::new(),
                tool_calls: None,
                tool_results: Some(results),
            });
        }
        Err(LoopError::Internal(format!("no answer after {MAX_ROUNDS} rounds")))
    }

    fn on_start() -> Result<(), LoopError> {
        Ok(())
    }

    fn on_complete(_result: String) -> Result<(), LoopError> {
        Ok(())
    }

    fn on_cancel() -> Result<(), LoopError> {
        Ok(())
    }

    fn get_name() -> String {
        "{{name}}".to_owned()
    }

    fn get_capabilities() -> LoopCapabilities {
        LoopCapabilities {
            streaming: true,
            extended_thinking: false,
            parallel_tools: true,
            tool_observation: true,
            max_context: 0,
            auto_compaction: true,
            supports_sub_contexts: false,
            supports_custom_tools: false,
        }
    }
}

impl custom_tool_handler::Guest for Guest {
    fn handle_tool_call(tool_id: String, _arguments: String) -> Result<String, String> {
        Err(format!("{{name}} has no custom tool `{tool_id}`"))
    }
}

export!(Guest);
