//! A guest built against WIT 0.2.11 (`wit/since_v0_2`), as guests were before 0.3: it starts
//! children with the 0.2 calls (`spawn-with-generation`, `spawn-parallel-with-grants`,
//! `start-with-attachments`, ...) that the 0.3 host serves by forwarding to its one
//! `spawn-request`. A child (the same guest) answers `echo: TASK data=CUSTOM-DATA depth=N`
//! without asking a model, so the tests need no transcript turns.
//!
//! Prompts at the root: `generation`, `bad-generation`, `parallel-grants`, `start`,
//! `attachments` (each answers one line per child), and `custom-tool` (registers a tool whose
//! `id` and `name` differ, as the seed's custom tools may).

wit_bindgen::generate!({ path: "../../wit/since_v0_2", world: "agent-loop-world", generate_all });

use exports::wonopcode::agent_loop::agent_loop::Guest;
use exports::wonopcode::agent_loop::custom_tool_handler::Guest as ToolGuest;
use wonopcode::agent_loop::context::{
    self, ContextGeneration, ContextGrants, ContextModule, ContextParams, ContextResult,
    ContextStatus,
};
use wonopcode::agent_loop::custom_tools::{self, CustomToolDefinition};
use wonopcode::agent_loop::storage::Attachment;
use wonopcode::agent_loop::tools;
use wonopcode::agent_loop::types::{LoopCapabilities, LoopError};

struct SpawnV02;

fn params(task: &str, data: &str) -> ContextParams {
    ContextParams {
        module: ContextModule::Same,
        task: task.to_owned(),
        allowed_tools: None,
        denied_tools: None,
        preferred_provider: None,
        preferred_model: None,
        max_iterations: None,
        max_tokens: None,
        timeout_ms: None,
        inherit_messages: false,
        custom_data: Some(data.to_owned()),
        system_prompt: None,
    }
}

fn generation(thinking: Option<&str>) -> ContextGeneration {
    ContextGeneration {
        thinking: thinking.map(str::to_owned),
        max_output_tokens: Some(500),
        temperature: Some(0.3),
    }
}

fn grants() -> ContextGrants {
    ContextGrants {
        sandbox: Some("read-only".to_owned()),
        write: Vec::new(),
        read: Vec::new(),
        network: Vec::new(),
        max_processes: None,
        max_cost_usd: Some(1.0),
    }
}

fn line(outcome: Result<ContextResult, String>) -> String {
    match outcome {
        Ok(r) => {
            let status = match r.status {
                ContextStatus::Completed => "completed".to_owned(),
                ContextStatus::Error(e) => format!("error: {e}"),
                _ => "other".to_owned(),
            };
            format!("{status}: {}", r.response)
        }
        Err(e) => format!("spawn failed: {e}"),
    }
}

impl Guest for SpawnV02 {
    fn run_prompt(input: String) -> Result<String, LoopError> {
        if let Some(me) = context::get_context_params() {
            let depth = context::get_context_depth();
            let data = me.custom_data.unwrap_or_default();
            return Ok(format!("echo: {} data={data} depth={depth}", me.task));
        }
        let answer = match input.as_str() {
            "generation" => line(context::spawn_with_generation(
                &params("g", "gen"),
                None,
                &generation(None),
            )),
            "bad-generation" => line(context::spawn_with_generation(
                &params("g", "gen"),
                Some(&grants()),
                &generation(Some("lots")),
            )),
            "parallel-grants" => context::spawn_parallel_with_grants(
                &[
                    (params("a", "one"), grants()),
                    (params("b", "two"), grants()),
                ],
                Some(1),
            )
            .into_iter()
            .map(line)
            .collect::<Vec<_>>()
            .join("\n"),
            "start" => {
                let child = context::start_with_grants(&params("s", "held"), &grants());
                match child {
                    Ok(child) => {
                        let first = line(child.wait());
                        let state = format!("{:?}", child.state());
                        format!("{first}\nid={} state={state}", child.id())
                    }
                    Err(e) => format!("start failed: {e}"),
                }
            }
            "attachments" => {
                let forged = Attachment {
                    media_type: "image/png".to_owned(),
                    data: b"not a png".to_vec(),
                    name: None,
                };
                line(context::spawn_with_attachments(
                    &params("x", "att"),
                    None,
                    None,
                    &[forged],
                ))
            }
            "custom-tool" => {
                // As the seed defines it: `id` the key, `name` the label.
                let registered = custom_tools::register_tool(&CustomToolDefinition {
                    id: "wc".to_owned(),
                    name: "Word count".to_owned(),
                    description: "Counts words.".to_owned(),
                    parameters_schema:
                        r#"{"type":"object","properties":{"text":{"type":"string"}}}"#.to_owned(),
                    enabled_by_default: true,
                });
                let label = tools::list_tools()
                    .into_iter()
                    .find(|t| t.id == "wc")
                    .map(|t| t.name);
                format!(
                    "{registered:?} ids={:?} label={label:?} enabled={}",
                    custom_tools::list_custom_tools(),
                    tools::is_tool_enabled("wc")
                )
            }
            other => format!("unknown prompt `{other}`"),
        };
        Ok(answer)
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
        "spawn-v0-2".to_owned()
    }

    fn get_capabilities() -> LoopCapabilities {
        LoopCapabilities {
            streaming: false,
            extended_thinking: false,
            parallel_tools: false,
            tool_observation: false,
            max_context: 0,
            auto_compaction: false,
            supports_sub_contexts: true,
            supports_custom_tools: false,
        }
    }
}

impl ToolGuest for SpawnV02 {
    fn handle_tool_call(tool_id: String, _arguments: String) -> Result<String, String> {
        Err(format!("no custom tool `{tool_id}`"))
    }
}

export!(SpawnV02);
