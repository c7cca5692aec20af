//! Stand-ins for host tools, for a guest's tests (`wonopcode loops test`): a tool of the run
//! replaced by one that answers a fixed text (or error) and does nothing else. A stand-in
//! keeps the real tool's name, description, schema and kind, so the model and the guest see
//! the same tool, its calls' arguments are checked as the real tool's are, and the
//! permission gate treats it the same; only its effect is gone.

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use wonopcode_agent_loop::{Tool, ToolEnv, ToolError, ToolOutput, ToolRegistry};
use wonopcode_protocol::ToolSpec;

use crate::error::SessionError;

/// One tool stood in for, and what its calls answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StandIn {
    /// The host tool's name (`read`, `bash`, ...).
    pub tool: String,
    /// What every call of it answers.
    pub answer: StandInAnswer,
}

/// What a stand-in's calls answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StandInAnswer {
    /// This text, as a successful call's output.
    Text(String),
    /// This text, as a failed call's (the model sees an error).
    Error(String),
}

/// The tool that answers in another's place.
struct StandInTool {
    spec: ToolSpec,
    answer: StandInAnswer,
}

#[async_trait]
impl Tool for StandInTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(
        &self,
        _arguments: serde_json::Value,
        _env: &ToolEnv,
    ) -> Result<ToolOutput, ToolError> {
        Ok(match &self.answer {
            StandInAnswer::Text(text) => ToolOutput::text(text.clone()),
            StandInAnswer::Error(text) => ToolOutput::error(text.clone()),
        })
    }
}

/// Puts each stand-in in its tool's place. A stand-in for a tool the run lacks is refused,
/// naming it and the tools there are: a test that stands in for `raed` would otherwise
/// pass with nothing stood in for.
pub(crate) fn put(tools: &mut ToolRegistry, stand_ins: &[StandIn]) -> Result<(), SessionError> {
    for stand_in in stand_ins {
        let Some(real) = tools.get(&stand_in.tool) else {
            let mut names: Vec<String> = tools.names().map(str::to_owned).collect();
            names.sort();
            return Err(SessionError::Choice(format!(
                "a stand-in for `{}`: the run has no such tool (it has {})",
                stand_in.tool,
                names.join(", ")
            )));
        };
        let tool = StandInTool {
            spec: real.spec().clone(),
            answer: stand_in.answer.clone(),
        };
        tools.replace(Arc::new(tool)).map_err(|e| {
            SessionError::Choice(format!("a stand-in for `{}`: {e}", stand_in.tool))
        })?;
    }
    Ok(())
}
