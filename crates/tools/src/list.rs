//! `list`: the files and directories under a path, gitignore-aware.

use std::path::Path;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use wonopcode_agent_loop::{Tool, ToolEnv, ToolError, ToolOutput};
use wonopcode_protocol::{ToolCategory, ToolKind, ToolSpec};

use crate::spec::{args, spec};
use crate::walk::{Denied, walk};
use crate::workspace::{display, resolve_for, rule_subject};

const LIMIT: usize = 1000;

/// Lists a directory tree.
pub struct ListTool(ToolSpec);

impl Default for ListTool {
    fn default() -> Self {
        Self(spec(
            "list",
            "List files and directories under a path of the workspace (default: the root), skipping ignored and hidden files. Directories end with /.",
            ToolKind::ReadOnly,
            ToolCategory::FileSystem,
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "default": "."},
                    "depth": {"type": "integer", "minimum": 1, "maximum": 10, "default": 2}
                },
                "additionalProperties": false
            }),
        ))
    }
}

#[derive(Deserialize)]
struct Args {
    path: Option<String>,
    depth: Option<usize>,
}

#[async_trait]
impl Tool for ListTool {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    fn permission_subject(&self, arguments: &serde_json::Value, root: &Path) -> Option<String> {
        Some(rule_subject(
            root,
            arguments["path"].as_str().unwrap_or("."),
        ))
    }

    async fn run(
        &self,
        arguments: serde_json::Value,
        env: &ToolEnv,
    ) -> Result<ToolOutput, ToolError> {
        let a: Args = args(arguments)?;
        let given = a.path.unwrap_or_else(|| ".".to_owned());
        let start = resolve_for(env, &given)?;
        if !start.is_dir() {
            return Err(ToolError::Failed(format!("`{given}` is not a directory")));
        }
        let root = env.workspace_root.clone();
        let depth = a.depth.unwrap_or(2);
        let walk_root = root.clone();
        let denied = Denied::of(env, "list");
        let (entries, more) = tokio::task::spawn_blocking(move || {
            walk(&walk_root, &start, Some(depth), LIMIT, denied)
        })
        .await
        .map_err(|e| ToolError::Failed(format!("listing failed: {e}")))?;
        let mut out = String::new();
        for (path, is_dir) in entries {
            out.push_str(&display(&root, &path));
            if is_dir {
                out.push('/');
            }
            out.push('\n');
        }
        if more {
            out.push_str(&format!("[stopped after {LIMIT} entries]\n"));
        }
        if out.is_empty() {
            out.push_str("(empty)\n");
        }
        Ok(ToolOutput::text(out))
    }
}
