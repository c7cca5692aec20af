//! The standard agentic loop, for guests that do not need their own: stream a turn from the
//! stored history, store it, stop when the model asks for no tools, otherwise run the calls
//! (the guest's own custom tools in the guest, the rest on the host) and go again. Tool
//! failures go back to the model (fail-open). The host holds the rules of the run: it checks
//! every stored turn for a doom loop (asking the user where someone can answer), enforces the
//! iteration limit, suspends the run on a call that waits for an answer, counts usage and
//! shows everything streamed; when it ends the run, the call that learns it fails and this
//! loop stops.
//!
//! The embedded default loop is exactly `Agent::default().run(input)`; specialists set a few
//! fields (their custom tools, a round limit of their own).

use crate::bindings::wonopcode::agent_loop::{storage, system, tools};
use crate::{
    CustomTools, HOST_OPTIONS, LoopError, StreamOptions, ToolExecutionRequest, ToolResult,
    host_request, run_on_host, run_turn, tool_message, user_message,
};

/// How the loop runs.
pub struct Agent<'a> {
    /// The guest's own tools, dispatched in the guest; calls of other tools go to the host.
    pub custom: Option<&'a CustomTools>,
    /// Model turns this loop allows itself (the host's `--max-iterations` applies anyway).
    pub max_rounds: Option<usize>,
    /// The enabled tools offered to the model, when not all of them: an orchestrator keeps
    /// `write` enabled for the children it spawns without offering it to its own model.
    pub offered: Option<&'a [&'a str]>,
    /// Generation options of every request.
    pub options: StreamOptions,
}

impl Default for Agent<'_> {
    fn default() -> Self {
        Self {
            custom: None,
            max_rounds: None,
            offered: None,
            options: HOST_OPTIONS,
        }
    }
}

impl Agent<'_> {
    /// The loop of a specialist: this context's enabled tools narrowed to those of `tools` it
    /// has (a reviewer never writes, whatever its parent allowed it), at most `max_rounds`
    /// model turns.
    pub fn specialist(tools: &[&str], max_rounds: usize) -> Result<Self, LoopError> {
        crate::keep_only_tools(tools).map_err(LoopError::Internal)?;
        Ok(Self {
            max_rounds: Some(max_rounds),
            ..Self::default()
        })
    }

    /// Runs `input` to the model's answer.
    pub fn run(&self, input: String) -> Result<String, LoopError> {
        storage::add_message(&user_message(input));
        self.go_on()
    }

    /// Continues a suspended run to the model's answer: the host has stored the answers to
    /// the calls it waited on.
    pub fn resume(&self) -> Result<String, LoopError> {
        self.go_on()
    }

    /// The loop, from the history as it stands.
    fn go_on(&self) -> Result<String, LoopError> {
        let mut rounds = 0usize;
        // Only this guest changes its enabled set, and only in its own code: the set is read
        // once, and again after the guest's custom tools ran.
        let mut offered: Option<Vec<String>> = None;
        loop {
            if self.max_rounds.is_some_and(|max| rounds >= max) {
                return Err(stopped(LoopError::Internal(format!(
                    "no answer after {rounds} rounds of tool use"
                ))));
            }
            rounds += 1;
            let enabled = offered.get_or_insert_with(|| self.offered_tools());
            // The host refuses a turn of a cancelled run, so cancellation is asked about only
            // when a turn fails: one host call per turn fewer than checking every time.
            let turn = run_turn(enabled, &self.options)
                .map_err(|e| stopped(LoopError::ProviderError(e)))?;
            if let Some(error) = turn.error {
                return Err(stopped(LoopError::ProviderError(error)));
            }
            if turn.tool_calls.is_empty() {
                return Ok(turn.text);
            }
            let custom = self
                .custom
                .filter(|c| turn.tool_calls.iter().any(|call| c.contains(&call.name)));
            match custom {
                // Only host tools: the host runs the round and stores its results.
                None => {
                    tools::run_tool_round(turn.handle).map_err(LoopError::ToolError)?;
                }
                Some(custom) => {
                    let results = execute_mixed(custom, turn.tool_calls);
                    storage::add_message(&tool_message(results));
                    offered = None;
                }
            }
        }
    }

    /// The enabled tools this loop offers its model.
    fn offered_tools(&self) -> Vec<String> {
        let mut enabled = tools::get_enabled_tools();
        if let Some(offered) = self.offered {
            enabled.retain(|t| offered.contains(&t.as_str()));
        }
        enabled
    }
}

/// `error`, or `cancelled` when the run was cancelled (which is why a turn failed).
fn stopped(error: LoopError) -> LoopError {
    if system::is_cancelled() {
        LoopError::Cancelled
    } else {
        error
    }
}

/// Runs a turn's calls when some are the guest's own: those here, in call order, the rest on
/// the host in parallel; the results come back in the order of the calls.
fn execute_mixed(custom: &CustomTools, calls: Vec<crate::ToolCall>) -> Vec<ToolResult> {
    let on_host: Vec<ToolExecutionRequest> = calls
        .iter()
        .filter(|c| !custom.contains(&c.name))
        .cloned()
        .map(host_request)
        .collect();
    let mut host_results = run_on_host(&on_host).into_iter();
    calls
        .iter()
        .map(|call| {
            if custom.contains(&call.name) {
                let (content, is_error) = custom.run_shown(call);
                ToolResult {
                    call_id: call.id.clone(),
                    content,
                    is_error,
                }
            } else {
                host_results.next().unwrap_or_else(|| ToolResult {
                    call_id: call.id.clone(),
                    content: "the host returned no result".to_owned(),
                    is_error: true,
                })
            }
        })
        .collect()
}
