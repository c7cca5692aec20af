//! `glob`: files whose workspace-relative path matches a glob pattern.

use std::path::Path;

use crate::glob_pattern::{GlobOptions, GlobPattern};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use wonopcode_agent_loop::{ToolEnv, ToolError, ToolOutput, TypedTool, parameters_of};
use wonopcode_protocol::{ToolCategory, ToolKind, ToolSpec};

use crate::spec::spec;
use crate::walk::{Denied, walk};
use crate::workspace::{display, resolve_for, rule_subject};

const LIMIT: usize = 1000;

/// Finds files by glob.
pub struct GlobTool(ToolSpec);

impl Default for GlobTool {
    fn default() -> Self {
        Self(spec(
            "glob",
            "Find files whose path (relative to the search directory) matches a glob such as **/*.rs. Ignored and hidden files are skipped.",
            ToolKind::ReadOnly,
            ToolCategory::FileSystem,
            parameters_of::<GlobArgs>(),
        ))
    }
}

/// A `glob` call's arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GlobArgs {
    // The glob, matched against paths relative to the search directory (`**/*.rs`).
    #[schemars(length(min = 1))]
    pattern: String,
    // The directory searched.
    #[schemars(extend("default" = "."))]
    path: Option<String>,
}

#[async_trait]
impl TypedTool for GlobTool {
    type Args = GlobArgs;

    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    fn permission_subject(&self, args: &GlobArgs, root: &Path) -> Option<String> {
        Some(rule_subject(root, args.path.as_deref().unwrap_or(".")))
    }

    async fn run(&self, a: GlobArgs, env: &ToolEnv) -> Result<ToolOutput, ToolError> {
        let options = GlobOptions {
            literal_separator: true,
            ..GlobOptions::default()
        };
        let matcher = GlobPattern::new(&a.pattern, options)
            .map_err(|e| ToolError::InvalidArguments(format!("bad glob `{}`: {e}", a.pattern)))?;
        let start = resolve_for(env, a.path.as_deref().unwrap_or("."))?;
        let root = env.workspace_root.clone();
        let denied = Denied::of(env, "glob");
        let found = tokio::task::spawn_blocking(move || {
            let (entries, _) = walk(&root, &start, None, usize::MAX, denied);
            let mut hits = Vec::new();
            for (path, is_dir) in entries {
                if is_dir {
                    continue;
                }
                let rel = path.strip_prefix(&start).unwrap_or(&path);
                if matcher.is_match(rel) {
                    hits.push(display(&root, &path));
                }
            }
            hits
        })
        .await
        .map_err(|e| ToolError::Failed(format!("glob failed: {e}")))?;
        let mut out = found
            .iter()
            .take(LIMIT)
            .map(|p| format!("{p}\n"))
            .collect::<String>();
        if found.len() > LIMIT {
            out.push_str(&format!(
                "[{} more matches not shown]\n",
                found.len() - LIMIT
            ));
        }
        if found.is_empty() {
            out.push_str("no files match\n");
        }
        Ok(ToolOutput::text(out))
    }
}
