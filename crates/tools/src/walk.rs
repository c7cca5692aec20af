//! Gitignore-aware directory walking shared by `list`, `glob` and `grep` (ripgrep's `ignore`).
//! Every entry goes through the same guard as a path a model names: a symlink counts only
//! when its target is inside the workspace, and special files (FIFOs, sockets, devices) are
//! skipped, since reading one can block or never end.

use std::path::{Path, PathBuf};

use ignore::WalkBuilder;

/// Files and directories under `start` (inside the canonical workspace `root`), honouring
/// `.gitignore`, `.ignore` and hidden-file rules, sorted by path, at most `limit` of them
/// (the flag says whether more existed). Each comes with whether it is a directory.
pub(crate) fn walk(
    root: &Path,
    start: &Path,
    max_depth: Option<usize>,
    limit: usize,
) -> (Vec<(PathBuf, bool)>, bool) {
    let mut out = Vec::new();
    let mut more = false;
    let walker = WalkBuilder::new(start)
        .max_depth(max_depth)
        .require_git(false)
        .sort_by_file_path(|a, b| a.cmp(b))
        .build();
    for entry in walker.flatten() {
        if entry.depth() == 0 {
            continue;
        }
        if out.len() == limit {
            more = true;
            break;
        }
        let Some(is_dir) = entry.file_type().and_then(|t| kind(root, entry.path(), t)) else {
            continue;
        };
        out.push((entry.into_path(), is_dir));
    }
    (out, more)
}

/// Whether an entry is a directory (`Some(true)`), a regular file (`Some(false)`), or to be
/// skipped: a special file, or a symlink that is dangling or leads outside `root`.
fn kind(root: &Path, path: &Path, file_type: std::fs::FileType) -> Option<bool> {
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
    if !target.starts_with(root) {
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
