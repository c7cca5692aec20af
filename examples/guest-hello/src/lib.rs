//! An example orchestrator guest. It registers its own tool, `word_count`, which it runs
//! itself (in-guest dispatch: the host never calls back into a guest that is waiting on it),
//! lets the host run every other tool with the user's permissions, and stops after a fixed
//! number of rounds of its own choosing.

use wonopcode_guest_sdk::{
    CustomTool, CustomTools, Loop, LoopError, StreamOptions, ToolResult, execute_on_host,
    export_loop, storage, stream_history, system, tool_message, tools, ui, user_message,
};

/// Rounds of tool use this loop allows itself before it insists on an answer.
const MAX_ROUNDS: usize = 8;

/// `word_count`'s arguments: their JSON Schema is derived, the doc comment its description.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct WordCount {
    /// The text whose words are counted.
    text: String,
}

/// The loop's state lives in the loop: its tools, registered once per instance.
#[derive(Default)]
struct Hello {
    tools: CustomTools,
}

impl Loop for Hello {
    fn name(&self) -> String {
        "hello".to_owned()
    }

    fn on_start(&mut self) -> Result<(), LoopError> {
        let word_count = CustomTool::typed(
            "word_count",
            "Count the words of a text.",
            |args: WordCount| Ok(args.text.split_whitespace().count().to_string()),
        );
        self.tools
            .register(word_count)
            .map_err(LoopError::ToolError)
    }

    /// Calls the host starts itself (validation, another context) reach the same tools.
    fn handle_tool_call(&mut self, tool_id: String, arguments: String) -> Result<String, String> {
        self.tools.dispatch(&tool_id, &arguments)
    }

    fn run_prompt(&mut self, input: String) -> Result<String, LoopError> {
        storage::add_message(&user_message(input));
        let options = StreamOptions {
            max_tokens: None,
            temperature: None,
            thinking_budget: None,
        };
        for _ in 0..MAX_ROUNDS {
            if system::is_cancelled() {
                return Err(LoopError::Cancelled);
            }
            let turn = stream_history(&tools::get_enabled_tools(), &options)
                .map_err(LoopError::ProviderError)?;
            storage::add_streamed_message(turn.handle).map_err(LoopError::Internal)?;
            if let Some(error) = turn.error {
                return Err(LoopError::ProviderError(error));
            }
            if turn.tool_calls.is_empty() {
                return Ok(turn.text);
            }
            // Our own tools run here; the host runs the rest.
            let (own, host): (Vec<_>, Vec<_>) = turn
                .tool_calls
                .into_iter()
                .partition(|c| self.tools.contains(&c.name));
            let mut results: Vec<ToolResult> = own
                .iter()
                .map(|call| {
                    ui::tool_start(&call.id, &call.name);
                    let outcome = self.tools.dispatch(&call.name, &call.arguments);
                    let (content, is_error) = match outcome {
                        Ok(out) => (out, false),
                        Err(e) => (e, true),
                    };
                    ui::tool_result(&call.id, &content, is_error);
                    ToolResult {
                        call_id: call.id.clone(),
                        content,
                        is_error,
                    }
                })
                .collect();
            results.extend(execute_on_host(&host));
            storage::add_message(&tool_message(results));
        }
        Err(LoopError::Internal(format!(
            "no answer after {MAX_ROUNDS} rounds of tools"
        )))
    }
}

export_loop!(Hello);
