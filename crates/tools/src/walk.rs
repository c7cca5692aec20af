//! Gitignore-aware directory walking shared by `list`, `glob` and `grep` (ripgrep's `ignore`).
//! Every entry goes through the same guard as a path a model names: a symlink counts only
//! when its target is inside the workspace, and special files (FIFOs, sockets, devices) are
//! skipped, since reading one can block or never end.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ignore::WalkBuilder;
use wonopcode_agent_loop::ToolEnv;
use wonopcode_protocol::{PermissionRequest, PermissionStatus, SharedGate, ToolKind};

use crate::workspace::{display, hidden_by};

/// What a walking tool may not see: the run's hidden paths (credentials, as for every file
/// tool), and what the permission rules deny it — an entry is left out (and a directory not
/// entered) when reading it is denied, by a rule for `read` or for the walking tool itself,
/// matched against the entry's workspace-relative path as any path is.
#[derive(Clone)]
pub(crate) struct Denied {
    gate: Option<SharedGate>,
    hidden: Arc<[PathBuf]>,
    root: PathBuf,
    tool: &'static str,
}

impl Denied {
    /// The hidden paths and the rules of `env`'s run for `tool`.
    pub(crate) fn of(env: &ToolEnv, tool: &'static str) -> Self {
        Self {
            gate: env.gate.clone(),
            hidden: env.shared.hidden_paths.clone(),
            root: env.workspace_root.clone(),
            tool,
        }
    }

    /// Whether `path` is hidden, or a rule denies reading it.
    pub(crate) fn covers(&self, path: &Path) -> bool {
        if hidden_by(&self.hidden, path).is_some() {
            return true;
        }
        let Some(gate) = &self.gate else {
            return false;
        };
        let subject = display(&self.root, path);
        [self.tool, "read"].into_iter().any(|tool| {
            let request = PermissionRequest {
                tool: tool.to_owned(),
                kind: ToolKind::ReadOnly,
                subject: Some(subject.clone()),
                preview: None,
            };
            gate.status(&request) == PermissionStatus::Denied
        })
    }
}

/// Files and directories under `start` (inside the canonical workspace `root`), honouring
/// `.gitignore`, `.ignore` and hidden-file rules, sorted by path, at most `limit` of them
/// (the flag says whether more existed), without what `denied` covers. Each comes with
/// whether it is a directory.
pub(crate) fn walk(
    root: &Path,
    start: &Path,
    max_depth: Option<usize>,
    limit: usize,
    denied: Denied,
) -> (Vec<(PathBuf, bool)>, bool) {
    let mut out = Vec::new();
    let mut more = false;
    let mut builder = WalkBuilder::new(start);
    builder
        .max_depth(max_depth)
        .require_git(false)
        .sort_by_file_path(|a, b| a.cmp(b));
    let hidden = denied.hidden.clone();
    builder.filter_entry(move |entry| !denied.covers(entry.path()));
    let walker = builder.build();
    for entry in walker.flatten() {
        if entry.depth() == 0 {
            continue;
        }
        if out.len() == limit {
            more = true;
            break;
        }
        let Some(is_dir) = entry
            .file_type()
            .and_then(|t| kind(root, &hidden, entry.path(), t))
        else {
            continue;
        };
        out.push((entry.into_path(), is_dir));
    }
    (out, more)
}

/// Whether an entry is a directory (`Some(true)`), a regular file (`Some(false)`), or to be
/// skipped: a special file, or a symlink that is dangling or leads outside `root` or into
/// a `hidden` path.
fn kind(
    root: &Path,
    hidden: &[PathBuf],
    path: &Path,
    file_type: std::fs::FileType,
) -> Option<bool> {
    if file_type.is_dir() {
        return Some(true);
    }
    if file_type.is_file() {
        return Some(false);
    }
    if !file_type.is_symlink() {
        return None;
    }
    let target = path.canonicalize().ok()?;
    if !target.starts_with(root) || hidden_by(hidden, &target).is_some() {
        return None;
    }
    let meta = std::fs::metadata(&target).ok()?;
    if meta.is_dir() {
        Some(true)
    } else if meta.is_file() {
        Some(false)
    } else {
        None
    }
}
