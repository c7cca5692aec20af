//! `list`: the files and directories under a path, gitignore-aware.

use std::path::Path;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use wonopcode_agent_loop::{ToolEnv, ToolError, ToolOutput, TypedTool, parameters_of};
use wonopcode_protocol::{ToolCategory, ToolKind, ToolSpec};

use crate::spec::spec;
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
            parameters_of::<ListArgs>(),
        ))
    }
}

/// A `list` call's arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    // The directory listed.
    #[schemars(extend("default" = "."))]
    path: Option<String>,
    // How many levels down.
    #[schemars(range(min = 1, max = 10), extend("default" = 2))]
    depth: Option<usize>,
}

#[async_trait]
impl TypedTool for ListTool {
    type Args = ListArgs;

    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    fn permission_subject(&self, args: &ListArgs, root: &Path) -> Option<String> {
        Some(rule_subject(root, args.path.as_deref().unwrap_or(".")))
    }

    async fn run(&self, a: ListArgs, env: &ToolEnv) -> Result<ToolOutput, ToolError> {
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
