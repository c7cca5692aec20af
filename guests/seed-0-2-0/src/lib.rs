//! Test guest built against the seed's own `wonopcode:agent-loop@0.2.0` text
//! (`wit/fixtures/v0.2.0`): it must keep loading and running on the 0.2.1 host. It streams one
//! turn, runs the tools the model asks for, and answers with the model's text.

wit_bindgen::generate!({ path: "../../wit/fixtures/v0.2.0", world: "agent-loop-world", generate_all });

use wonopcode::agent_loop::providers::{
    self, Message, MessageRole, StreamChunk, StreamOptions, ToolCall, ToolResult,
};
use wonopcode::agent_loop::types::{LoopCapabilities, LoopError};
use wonopcode::agent_loop::{storage, tools};

struct SeedLoop;

impl exports::wonopcode::agent_loop::agent_loop::Guest for SeedLoop {
    fn run_prompt(input: String) -> Result<String, LoopError> {
        storage::add_message(&Message {
            role: MessageRole::User,
            content: input,
            tool_calls: None,
            tool_results: None,
        });
        let options = StreamOptions {
            max_tokens: None,
            temperature: None,
            thinking_budget: None,
        };
        loop {
            let handle = providers::stream_prompt(
                &storage::get_messages(),
                &tools::get_enabled_tools(),
                options,
            )
            .map_err(LoopError::ProviderError)?;
            let mut text = String::new();
            let mut calls: Vec<ToolCall> = Vec::new();
            while let Some(chunk) = providers::read_stream_chunk(handle) {
                match chunk {
                    StreamChunk::TextDelta(t) => text.push_str(&t),
                    StreamChunk::ToolCallStart(s) => calls.push(ToolCall {
                        id: s.id,
                        name: s.name,
                        arguments: String::new(),
                    }),
                    StreamChunk::ToolCallDelta(d) => {
                        if let Some(c) = calls.iter_mut().find(|c| c.id == d.id) {
                            c.arguments.push_str(&d.arguments_delta);
                        }
                    }
                    StreamChunk::Error(e) => return Err(LoopError::ProviderError(e)),
                    StreamChunk::Done => break,
                    _ => {}
                }
            }
            let tool_calls = (!calls.is_empty()).then(|| calls.clone());
            storage::add_message(&Message {
                role: MessageRole::Assistant,
                content: text.clone(),
                tool_calls,
                tool_results: None,
            });
            if calls.is_empty() {
                return Ok(text);
            }
            let requests: Vec<tools::ToolExecutionRequest> = calls
                .iter()
                .map(|c| tools::ToolExecutionRequest {
                    id: c.id.clone(),
                    name: c.name.clone(),
                    arguments: c.arguments.clone(),
                })
                .collect();
            let results = tools::execute_tools_parallel(&requests)
                .into_iter()
                .map(|r| ToolResult {
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
        "seed-0.2.0".to_owned()
    }
    fn get_capabilities() -> LoopCapabilities {
        LoopCapabilities {
            streaming: true,
            extended_thinking: false,
            parallel_tools: true,
            tool_observation: false,
            max_context: 0,
            auto_compaction: false,
            supports_sub_contexts: false,
            supports_custom_tools: false,
        }
    }
}

impl exports::wonopcode::agent_loop::custom_tool_handler::Guest for SeedLoop {
    fn handle_tool_call(tool_id: String, _arguments: String) -> Result<String, String> {
        Err(format!("no custom tool {tool_id}"))
    }
}

export!(SeedLoop);
