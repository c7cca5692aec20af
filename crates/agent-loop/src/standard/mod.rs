//! `StandardLoop`: the native loop. A short driver over the steps of a `Run` (stream,
//! store, check for repetition, run the tool round, repeat until the model answers), which
//! hold every rule of a run: the WebAssembly host drives the same steps for guests.

use async_trait::async_trait;

use wonopcode_protocol::LoopError;
use wonopcode_protocol::message::Message;

use crate::agent::{AgentLoop, LoopCapabilities, LoopContext};
use crate::run::{Next, Run};

/// The built-in loop: fast, no WebAssembly.
#[derive(Debug, Default, Clone, Copy)]
pub struct StandardLoop;

impl StandardLoop {
    /// A standard loop.
    pub fn new() -> Self {
        Self
    }
}

#[async_trait]
impl AgentLoop for StandardLoop {
    async fn run_prompt(
        &self,
        ctx: &mut LoopContext<'_>,
        user_input: &str,
    ) -> Result<String, LoopError> {
        let mut run = Run::take_from(ctx);
        run.close_interrupted_calls();
        run.push_message(Message::user(user_input));
        let outcome = drive(&mut run).await;
        run.give_back(ctx);
        outcome
    }

    fn name(&self) -> &'static str {
        "standard"
    }

    fn capabilities(&self) -> LoopCapabilities {
        LoopCapabilities {
            streaming: true,
            extended_thinking: true,
            parallel_tools: true,
            tool_observation: true,
            max_context: 0,
            auto_compaction: true,
            ..LoopCapabilities::default()
        }
    }

    async fn resume(
        &self,
        ctx: &mut LoopContext<'_>,
        answers: Vec<(String, String, bool)>,
    ) -> Result<String, LoopError> {
        let mut run = Run::take_from(ctx);
        let outcome = match run.resume_pending(&answers, None).await {
            Ok(Next::Continue) => drive(&mut run).await,
            Ok(Next::Stop(outcome)) => outcome,
            Err(e) => Err(e),
        };
        run.give_back(ctx);
        outcome
    }
}

/// The native loop: respond, store, stop at an answer, otherwise run the tool round.
async fn drive(run: &mut Run) -> Result<String, LoopError> {
    loop {
        let response = run.respond().await?;
        if response.calls.is_empty() {
            return Ok(response.text);
        }
        let round = run.tool_round(&response.calls, Vec::new(), None).await;
        if let Next::Stop(outcome) = round.next {
            return outcome;
        }
    }
}

#[cfg(test)]
mod tests;
