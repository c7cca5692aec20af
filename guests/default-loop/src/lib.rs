//! The default guest loop: the native StandardLoop's algorithm, written against the
//! `wonopcode:agent-loop` world. Stream a turn; store it; if the model asked for tools, check
//! for a doom loop, run them in parallel through the host (which applies permissions,
//! validation and truncation, and shows them), store the results, and go again. Tool failures
//! go back to the model (fail-open). The host enforces the iteration limit and counts usage;
//! compaction runs in the host through `storage.compact-if-needed`.

use wonopcode_guest_sdk::{
    DoomLoop, Loop, LoopError, StreamOptions, ToolResult, execute_on_host, export_loop, storage,
    stream_history, system, tool_message, tools, ui, user_message,
};

/// Identical consecutive calls that stop the run (seed 001).
const DOOM_LOOP_THRESHOLD: usize = 3;

struct DefaultLoop;

impl Loop for DefaultLoop {
    fn name() -> String {
        "default".to_owned()
    }

    fn run_prompt(input: String) -> Result<String, LoopError> {
        storage::add_message(&user_message(input));
        let mut doom = DoomLoop::default();
        let options = StreamOptions {
            max_tokens: None,
            temperature: None,
            thinking_budget: None,
        };
        loop {
            if system::is_cancelled() {
                return Err(LoopError::Cancelled);
            }
            storage::compact_if_needed().map_err(LoopError::Internal)?;
            let enabled = tools::get_enabled_tools();
            let turn = stream_history(&enabled, &options).map_err(LoopError::ProviderError)?;
            storage::add_streamed_message(turn.handle).map_err(LoopError::Internal)?;
            if let Some(error) = turn.error {
                return Err(if system::is_cancelled() {
                    LoopError::Cancelled
                } else {
                    LoopError::ProviderError(error)
                });
            }
            if turn.tool_calls.is_empty() {
                return Ok(turn.text);
            }
            if let Some((name, count)) = doom.observe(&turn.tool_calls, DOOM_LOOP_THRESHOLD) {
                let reason =
                    format!("`{name}` was called {count} times in a row with the same arguments");
                let answers = turn
                    .tool_calls
                    .iter()
                    .map(|c| ToolResult {
                        call_id: c.id.clone(),
                        content: format!("not run: {reason}"),
                        is_error: true,
                    })
                    .collect();
                storage::add_message(&tool_message(answers));
                ui::show_message(ui::MessageLevel::Error, &format!("doom loop: {reason}"));
                return Err(LoopError::DoomLoop(reason));
            }
            let results = execute_on_host(&turn.tool_calls);
            storage::add_message(&tool_message(results));
            if system::is_cancelled() {
                return Err(LoopError::Cancelled);
            }
        }
    }
}

export_loop!(DefaultLoop);
