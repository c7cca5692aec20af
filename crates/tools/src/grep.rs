//! `grep`: regex search over the workspace's files (ripgrep's `grep` crates), gitignore-aware.

use std::path::Path;

use crate::glob_pattern::{GlobOptions, GlobPattern};
use async_trait::async_trait;
use grep_regex::RegexMatcherBuilder;
use grep_searcher::sinks::UTF8;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use schemars::JsonSchema;
use serde::Deserialize;
use wonopcode_agent_loop::{ToolEnv, ToolError, ToolOutput, TypedTool, parameters_of};
use wonopcode_protocol::{ToolCategory, ToolKind, ToolSpec};

use crate::spec::spec;
use crate::walk::{Denied, walk};
use crate::workspace::{display, resolve_for, rule_subject};

const LIMIT: usize = 500;

/// Searches file contents.
pub struct GrepTool(ToolSpec);

impl Default for GrepTool {
    fn default() -> Self {
        Self(spec(
            "grep",
            "Search file contents with a regular expression. Returns path:line:text for each matching line. Optionally restrict to files matching a glob.",
            ToolKind::ReadOnly,
            ToolCategory::FileSystem,
            parameters_of::<GrepArgs>(),
        ))
    }
}

/// A `grep` call's arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrepArgs {
    // The regular expression (Rust's `regex` syntax).
    #[schemars(length(min = 1))]
    pattern: String,
    // The directory searched.
    #[schemars(extend("default" = "."))]
    path: Option<String>,
    // Only files whose path matches this glob (`*.rs`).
    glob: Option<String>,
    // Match letters of either case.
    #[serde(default)]
    #[schemars(extend("default" = false))]
    case_insensitive: bool,
}

#[async_trait]
impl TypedTool for GrepTool {
    type Args = GrepArgs;

    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    fn permission_subject(&self, args: &GrepArgs, root: &Path) -> Option<String> {
        Some(rule_subject(root, args.path.as_deref().unwrap_or(".")))
    }

    async fn run(&self, a: GrepArgs, env: &ToolEnv) -> Result<ToolOutput, ToolError> {
        let matcher = RegexMatcherBuilder::new()
            .case_insensitive(a.case_insensitive)
            .build(&a.pattern)
            .map_err(|e| ToolError::InvalidArguments(format!("bad regular expression: {e}")))?;
        let filter = match &a.glob {
            Some(g) => Some(
                GlobPattern::new(g, GlobOptions::default())
                    .map_err(|e| ToolError::InvalidArguments(format!("bad glob `{g}`: {e}")))?,
            ),
            None => None,
        };
        let start = resolve_for(env, a.path.as_deref().unwrap_or("."))?;
        let root = env.workspace_root.clone();
        let cancel = env.cancel.clone();
        let denied = Denied::of(env, "grep");
        let (lines, more) = tokio::task::spawn_blocking(move || {
            let mut searcher = SearcherBuilder::new()
                .binary_detection(BinaryDetection::quit(0))
                .line_number(true)
                .build();
            let files = if start.is_file() {
                let refused = denied.covers(&start);
                if refused {
                    Vec::new()
                } else {
                    vec![start.clone()]
                }
            } else {
                walk(&root, &start, None, usize::MAX, denied)
                    .0
                    .into_iter()
                    .filter(|(_, is_dir)| !is_dir)
                    .map(|(p, _)| p)
                    .collect()
            };
            let mut lines = Vec::new();
            let mut more = false;
            for file in files {
                if cancel.is_cancelled() {
                    break;
                }
                if let Some(filter) = &filter {
                    let name = file.file_name().map(std::path::Path::new);
                    let rel = file.strip_prefix(&root).unwrap_or(&file);
                    if !filter.is_match(rel) && !name.is_some_and(|n| filter.is_match(n)) {
                        continue;
                    }
                }
                let shown = display(&root, &file);
                // Unreadable files are skipped, as ripgrep does.
                let _ = searcher.search_path(
                    &matcher,
                    &file,
                    UTF8(|line_number, text| {
                        if lines.len() == LIMIT {
                            more = true;
                            return Ok(false);
                        }
                        lines.push(format!(
                            "{shown}:{line_number}:{}",
                            text.trim_end_matches(['\n', '\r'])
                        ));
                        Ok(true)
                    }),
                );
                if more {
                    break;
                }
            }
            (lines, more)
        })
        .await
        .map_err(|e| ToolError::Failed(format!("search failed: {e}")))?;
        let mut out = lines.join("\n");
        if lines.is_empty() {
            out.push_str("no matches");
        }
        out.push('\n');
        if more {
            out.push_str(&format!("[stopped after {LIMIT} matching lines]\n"));
        }
        Ok(ToolOutput::text(out))
    }
}
