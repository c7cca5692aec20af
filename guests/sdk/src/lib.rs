//! The Rust guest SDK of wonopcode: write an agent loop as a WebAssembly component.
//!
//! A guest *is the brain*: it decides which model to ask, which tools to offer and run, and
//! when it is done. The host is *the hands*: providers, tools, permissions, storage, events
//! and limits. Implement [`Loop`], export it with [`export_loop!`], and build with
//! `cargo build --release --target wasm32-wasip2`; the result is a component that
//! `wonopcode --agent-loop=path.wasm` runs.
//!
//! # Re-entrancy
//!
//! The component model traps if the host calls into an instance that is already inside a host
//! call. So a guest's *own* custom tools are dispatched inside the guest ([`CustomTools`]),
//! never through the host while the guest waits on it. The `custom-tool-handler` export exists
//! for calls the host starts itself (another context, the CLI, validation).

#![deny(missing_docs)]

#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "resumable-agent-loop-world",
        pub_export_macro: true,
        export_macro_name: "export_bindings",
        default_bindings_module: "wonopcode_guest_sdk::bindings",
        generate_all,
    });
}

mod agent;
mod custom_tools;
mod json_answer;
mod spawn;
mod tiers;
mod turn;

pub use agent::Agent;
pub use bindings::wonopcode::agent_loop::context::{
    ChildState, ContextGeneration, ContextGrants, ContextModule, ContextResult, ContextStatus,
    SpawnRequest,
};
pub use bindings::wonopcode::agent_loop::providers::{
    Message, MessageRole, StreamOptions, ToolCall, ToolResult,
};
pub use bindings::wonopcode::agent_loop::storage::Attachment;
pub use bindings::wonopcode::agent_loop::tools::{ToolExecutionRequest, ToolExecutionResult};
pub use bindings::wonopcode::agent_loop::types::{LoopCapabilities, LoopError};
pub use bindings::wonopcode::agent_loop::{
    config, context, custom_tools as custom_tools_host, providers, storage, system, tools, ui,
};
pub use custom_tools::{CustomTool, CustomTools};
pub use json_answer::{json_object, resume_for_json, run_for_json};
pub use spawn::{
    Child, Grants, RESULT_DATA_KEY, Spawn, describe, prompt_attachments, set_result_data,
    spawn_all, spawn_request, spent, status_text,
};
pub use tiers::{Route, Tier};
pub use turn::{Turn, run_turn, stream_history, stream_turn};

/// Generation options that leave the output limit, temperature and thinking budget to the
/// host's configuration: what a loop passes when it has no preference.
pub const HOST_OPTIONS: StreamOptions = StreamOptions {
    max_tokens: None,
    temperature: None,
    thinking_budget: None,
};

/// An agent loop: a value with state, registered once with [`export_loop!`]. The methods
/// mirror the WIT `agent-loop` export; the host calls one at a time (an instance is never
/// re-entered), so each gets the loop itself.
pub trait Loop: 'static {
    /// Runs one prompt and returns the final answer.
    fn run_prompt(&mut self, input: String) -> Result<String, LoopError>;

    /// Called once per instance, before its first prompt: register custom tools here.
    fn on_start(&mut self) -> Result<(), LoopError> {
        Ok(())
    }

    /// Called when a prompt completed.
    fn on_complete(&mut self, _result: String) -> Result<(), LoopError> {
        Ok(())
    }

    /// Called when a prompt was cancelled.
    fn on_cancel(&mut self) -> Result<(), LoopError> {
        Ok(())
    }

    /// The loop's name.
    fn name(&self) -> String;

    /// What the loop supports.
    fn capabilities(&self) -> LoopCapabilities {
        standard_capabilities()
    }

    /// Continues a suspended run from the history as it stands (the host stored the answers
    /// to the calls it waited on). Loops built on [`Agent`] resume with [`Agent::resume`].
    fn resume(&mut self) -> Result<String, LoopError> {
        Err(LoopError::Internal(format!(
            "the loop `{}` cannot continue a suspended run",
            self.name()
        )))
    }

    /// Handles a call of one of this loop's custom tools that the host started.
    fn handle_tool_call(&mut self, tool_id: String, _arguments: String) -> Result<String, String> {
        Err(format!("this loop has no custom tool `{tool_id}`"))
    }
}

/// What a loop built on [`Agent`] supports; loops that spawn or register tools say so on top:
/// `LoopCapabilities { supports_sub_contexts: true, ..standard_capabilities() }`.
pub fn standard_capabilities() -> LoopCapabilities {
    LoopCapabilities {
        streaming: true,
        extended_thinking: true,
        parallel_tools: true,
        tool_observation: true,
        max_context: 0,
        auto_compaction: false,
        supports_sub_contexts: false,
        supports_custom_tools: false,
    }
}

/// Exports a [`Loop`] as the component's `agent-loop`, `custom-tool-handler` and
/// `resumable`: `export_loop!(MyLoop)` for a loop that is `Default`, or
/// `export_loop!(MyLoop = MyLoop::new())`. The value is made at the instance's first call and
/// lives as long as the instance (a trap drops both; the next prompt starts a fresh one).
#[macro_export]
macro_rules! export_loop {
    ($ty:ty) => {
        $crate::export_loop!($ty = <$ty as ::core::default::Default>::default());
    };
    ($ty:ty = $make:expr) => {
        const _: () = {
            ::std::thread_local! {
                static LOOP: ::core::cell::RefCell<::core::option::Option<$ty>> =
                    const { ::core::cell::RefCell::new(::core::option::Option::None) };
            }
            /// Runs `f` on the loop, made at the first call.
            fn with<R>(f: impl FnOnce(&mut $ty) -> R) -> R {
                LOOP.with(|cell| f(cell.borrow_mut().get_or_insert_with(|| $make)))
            }
            struct __WonopcodeExport;
            impl $crate::bindings::exports::wonopcode::agent_loop::agent_loop::Guest
                for __WonopcodeExport
            {
                fn run_prompt(input: String) -> Result<String, $crate::LoopError> {
                    with(|l| $crate::Loop::run_prompt(l, input))
                }
                fn on_start() -> Result<(), $crate::LoopError> {
                    with(|l| $crate::Loop::on_start(l))
                }
                fn on_complete(result: String) -> Result<(), $crate::LoopError> {
                    with(|l| $crate::Loop::on_complete(l, result))
                }
                fn on_cancel() -> Result<(), $crate::LoopError> {
                    with(|l| $crate::Loop::on_cancel(l))
                }
                fn get_name() -> String {
                    with(|l| $crate::Loop::name(l))
                }
                fn get_capabilities() -> $crate::LoopCapabilities {
                    with(|l| $crate::Loop::capabilities(l))
                }
            }
            impl $crate::bindings::exports::wonopcode::agent_loop::resumable::Guest
                for __WonopcodeExport
            {
                fn resume() -> Result<String, $crate::LoopError> {
                    with(|l| $crate::Loop::resume(l))
                }
            }
            impl $crate::bindings::exports::wonopcode::agent_loop::custom_tool_handler::Guest
                for __WonopcodeExport
            {
                fn handle_tool_call(tool_id: String, arguments: String) -> Result<String, String> {
                    with(|l| $crate::Loop::handle_tool_call(l, tool_id, arguments))
                }
            }
            $crate::bindings::export_bindings!(__WonopcodeExport);
        };
    };
}

/// Runs calls through the host's tools (in parallel where safe) and returns their results,
/// failures included, ready for a tool message.
pub fn execute_on_host(calls: &[ToolCall]) -> Vec<ToolResult> {
    run_on_host(&calls.iter().cloned().map(host_request).collect::<Vec<_>>())
}

/// A tool call as a request to the host.
pub(crate) fn host_request(call: ToolCall) -> ToolExecutionRequest {
    ToolExecutionRequest {
        id: call.id,
        name: call.name,
        arguments: call.arguments,
    }
}

/// Runs requests through the host's tools and returns their results, ready for a tool message.
pub(crate) fn run_on_host(requests: &[ToolExecutionRequest]) -> Vec<ToolResult> {
    tools::execute_tools_parallel(requests)
        .into_iter()
        .map(|r| ToolResult {
            call_id: r.call_id,
            content: r.content,
            is_error: !r.success,
        })
        .collect()
}

/// Narrows this context's enabled tools to those of `names` it has: a specialist keeps to
/// its trade (a reviewer never writes) whatever its parent allowed it.
pub fn keep_only_tools(names: &[&str]) -> Result<Vec<String>, String> {
    let kept: Vec<String> = tools::get_enabled_tools()
        .into_iter()
        .filter(|t| names.contains(&t.as_str()))
        .collect();
    tools::set_enabled_tools(&kept)?;
    Ok(kept)
}

/// A user message with `text`.
pub fn user_message(text: impl Into<String>) -> Message {
    Message {
        role: MessageRole::User,
        content: text.into(),
        tool_calls: None,
        tool_results: None,
    }
}

/// A tool message answering calls.
pub fn tool_message(results: Vec<ToolResult>) -> Message {
    Message {
        role: MessageRole::Tool,
        content: String::new(),
        tool_calls: None,
        tool_results: Some(results),
    }
}
