//! `grep`: regex search over the workspace's files (ripgrep's `grep` crates), gitignore-aware.

use std::path::Path;

use crate::glob_pattern::{GlobOptions, GlobPattern};
use async_trait::async_trait;
use grep_regex::RegexMatcherBuilder;
use grep_searcher::sinks::UTF8;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use serde::Deserialize;
use serde_json::json;
use wonopcode_agent_loop::{Tool, ToolEnv, ToolError, ToolOutput};
use wonopcode_protocol::{ToolCategory, ToolKind, ToolSpec};

use crate::spec::{args, spec};
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
            json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "minLength": 1},
                    "path": {"type": "string", "default": "."},
                    "glob": {"type": "string"},
                    "case_insensitive": {"type": "boolean", "default": false}
                },
                "required": ["pattern"],
                "additionalProperties": false
            }),
        ))
    }
}

#[derive(Deserialize)]
struct Args {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    #[serde(default)]
    case_insensitive: bool,
}

#[async_trait]
impl Tool for GrepTool {
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
