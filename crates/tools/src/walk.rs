//! Gitignore-aware directory walking shared by `list`, `glob` and `grep` (ripgrep's `ignore`).

use std::path::{Path, PathBuf};

use ignore::WalkBuilder;

/// Files and directories under `start`, honouring `.gitignore`, `.ignore` and hidden-file
/// rules, sorted by path, at most `limit` of them (the flag says whether more existed).
pub(crate) fn walk(
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
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        out.push((entry.into_path(), is_dir));
    }
    (out, more)
}
