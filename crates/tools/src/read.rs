//! `read`: a text file's lines, numbered, optionally a line range.

use std::path::Path;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use wonopcode_agent_loop::{
    Tool, ToolCategory, ToolEnv, ToolError, ToolKind, ToolOutput, ToolSpec,
};

use crate::spec::{args, spec};
use crate::workspace::{describe, display, resolve, rule_subject};

/// Lines returned when no range is given.
const DEFAULT_LINES: usize = 2000;

/// Reads a file.
pub struct ReadTool(ToolSpec);

impl Default for ReadTool {
    fn default() -> Self {
        Self(spec(
            "read",
            "Read a text file of the workspace. Returns numbered lines; give start_line and end_line (1-based, inclusive) to read a range.",
            ToolKind::ReadOnly,
            ToolCategory::FileSystem,
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path, relative to the workspace root"},
                    "start_line": {"type": "integer", "minimum": 1},
                    "end_line": {"type": "integer", "minimum": 1}
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        ))
    }
}

#[derive(Deserialize)]
struct Args {
    path: String,
    start_line: Option<usize>,
    end_line: Option<usize>,
}

#[async_trait]
impl Tool for ReadTool {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    fn permission_subject(&self, arguments: &serde_json::Value, root: &Path) -> Option<String> {
        arguments["path"].as_str().map(|p| rule_subject(root, p))
    }

    async fn run(
        &self,
        arguments: serde_json::Value,
        env: &ToolEnv,
    ) -> Result<ToolOutput, ToolError> {
        let a: Args = args(arguments)?;
        let path = resolve(&env.workspace_root, &a.path)?;
        let bytes = tokio::fs::read(&path).await.map_err(|e| {
            ToolError::Failed(format!("cannot read `{}`: {}", a.path, describe(&e)))
        })?;
        if bytes.contains(&0) {
            return Err(ToolError::Failed(format!("`{}` is a binary file", a.path)));
        }
        let text = String::from_utf8_lossy(&bytes);
        let start = a.start_line.unwrap_or(1);
        let end = a.end_line.unwrap_or(start + DEFAULT_LINES - 1);
        if end < start {
            return Err(ToolError::InvalidArguments(format!(
                "end_line {end} is before start_line {start}"
            )));
        }
        let total = text.lines().count();
        let mut out = String::new();
        for (i, line) in text
            .lines()
            .enumerate()
            .skip(start - 1)
            .take(end - start + 1)
        {
            out.push_str(&format!("{:>6}\t{line}\n", i + 1));
        }
        if out.is_empty() && total > 0 {
            return Err(ToolError::InvalidArguments(format!(
                "start_line {start} is past the end of `{}` ({total} lines)",
                display(&env.workspace_root, &path)
            )));
        }
        if end < total {
            out.push_str(&format!(
                "[{} more lines; read from start_line {}]\n",
                total - end,
                end + 1
            ));
        }
        Ok(ToolOutput::text(out))
    }
}
