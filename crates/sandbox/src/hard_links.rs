//! Files of the workspace that are hard links of files elsewhere: uv (its Linux default)
//! and pnpm link packages from their caches into `.venv` and `node_modules`, and Landlock
//! checks paths, not inodes, so a command appending to `.venv/…/x.py` would change the
//! file in `~/.cache/uv`, and every project that links it. Every regular file with more
//! than one link is mounted read-only in the command's namespace (`confine.rs`), like the
//! protected names: a write through it fails, and the cache keeps its content.
//!
//! A directory whose files are nine in ten such links or more, counted with its
//! subdirectories' (a `.venv` or a `node_modules` a cache filled: the links, and the few
//! files the package manager wrote itself), is mounted whole, so a `.venv` costs one mount,
//! not one per package or per file; a link among the workspace's own files is mounted by
//! itself.
//! Files are found by the walk that already looks at every directory of the workspace
//! before its first command and after each one ([`crate::dir_index`]): a directory whose
//! change time has not moved is not read again, and a file is looked at (`stat`) only when
//! its directory's last read did not know its inode, so a walk over an unchanged workspace
//! costs one `lstat` a directory.
//!
//! Links made by another program between two commands are found by the walk after the
//! next one; a file of the workspace that is linked from elsewhere later, keeping its inode
//! and its directory unchanged, is not seen (`docs/security.md`).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The most mounts the covers may take; past it, the directories holding linked files are
/// mounted instead of the files (more read-only, never less).
const MOST_COVERS: usize = 2_000;

/// One directory of a walk as the covers count it. Directories are numbered in the order
/// the walk met them, so a parent's number is below its children's.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tally<'a> {
    pub(crate) path: &'a Path,
    /// The parent's number; `None`: where the walk started (the workspace), never mounted
    /// whole.
    pub(crate) parent: Option<usize>,
    /// Its regular files.
    pub(crate) files: usize,
    /// Those of its files linked from elsewhere.
    pub(crate) linked: &'a [PathBuf],
}

/// Whether the regular file `path` (not followed) is linked from elsewhere; `None` when it
/// is gone or no longer a regular file.
pub(crate) fn is_linked(path: &Path) -> Option<bool> {
    match path.symlink_metadata() {
        Ok(meta) if meta.is_file() => Some(meta.nlink() > 1),
        _ => None,
    }
}

/// The paths to mount read-only for the linked files of `dirs`, a walk's directories: whole
/// directories of links, and the linked files of the others; at most [`MOST_COVERS`].
pub(crate) fn covers(dirs: &[Tally<'_>]) -> Vec<PathBuf> {
    // Each directory's files and linked files, its subdirectories' included: children are
    // numbered after their parents, so walked backwards each is settled first.
    let mut totals: Vec<(usize, usize)> = dirs.iter().map(|d| (d.files, d.linked.len())).collect();
    for (i, dir) in dirs.iter().enumerate().rev() {
        if let Some(parent) = dir.parent
            && parent < i
        {
            let (files, linked) = totals[i];
            totals[parent].0 += files;
            totals[parent].1 += linked;
        }
    }
    // Mostly links: a package manager's tree (a `.venv`, a `node_modules`), its own few
    // files (`RECORD`, a `.pth`, a lock) kept read-only with the links.
    let whole = |i: usize| {
        let (files, linked) = totals[i];
        linked > 0 && linked * 10 >= files * 9 && dirs[i].parent.is_some()
    };
    let mut held = vec![false; dirs.len()];
    let mut covers = Vec::new();
    let mut files = Vec::new();
    for (i, dir) in dirs.iter().enumerate() {
        let parent_held = dir
            .parent
            .is_some_and(|p| held.get(p).copied().unwrap_or(false));
        if parent_held || totals[i].1 == 0 {
            held[i] = parent_held;
            continue;
        }
        if whole(i) {
            covers.push(dir.path.to_path_buf());
            held[i] = true;
        } else {
            files.extend(dir.linked.iter().cloned());
        }
    }
    if covers.len() + files.len() > MOST_COVERS {
        let mut parents: Vec<PathBuf> = files
            .iter()
            .filter_map(|f| f.parent().map(Path::to_path_buf))
            .collect();
        parents.sort();
        parents.dedup();
        covers.extend(parents);
    } else {
        covers.extend(files);
    }
    covers.sort();
    covers.dedup();
    covers
}

#[cfg(test)]
mod tests {
    use crate::dir_index::DirIndex;

    #[test]
    fn a_tree_of_links_is_covered_whole_and_a_link_among_own_files_by_itself() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let (cache, ws) = (base.join("cache"), base.join("ws"));
        let site = ws.join(".venv/lib/site-packages");
        std::fs::create_dir_all(&cache).unwrap();
        std::fs::create_dir_all(site.join("pkg")).unwrap();
        std::fs::create_dir_all(ws.join("src")).unwrap();
        for n in 0..20 {
            std::fs::write(cache.join(format!("a{n}.py")), "x").unwrap();
            std::fs::hard_link(
                cache.join(format!("a{n}.py")),
                site.join(format!("pkg/a{n}.py")),
            )
            .unwrap();
        }
        // The package manager's own files beside the links.
        std::fs::write(site.join("RECORD"), "own").unwrap();
        std::fs::write(site.join("own.pth"), "own").unwrap();
        for n in 0..5 {
            std::fs::write(ws.join(format!("src/f{n}.rs")), "own").unwrap();
        }
        std::fs::write(cache.join("linked.rs"), "x").unwrap();
        std::fs::hard_link(cache.join("linked.rs"), ws.join("src/linked.rs")).unwrap();
        let mut index = DirIndex::default();
        index.walk(&ws, &[]);
        assert_eq!(index.covers(), [ws.join(".venv"), ws.join("src/linked.rs")]);
        // Files replaced by copies of their own (new inodes) are looked at again: with
        // fewer than nine in ten linked, each link is covered by itself.
        for n in 0..3 {
            // Made beside it, then renamed over it: the old inode still exists when the new
            // one is made, so the new one's number differs.
            let (path, copy) = (site.join(format!("pkg/a{n}.py")), site.join("copy"));
            std::fs::write(&copy, "copy").unwrap();
            std::fs::rename(&copy, &path).unwrap();
        }
        index.walk(&ws, &[]);
        let covers = index.covers();
        assert_eq!(covers.len(), 18, "{covers:?}");
        assert!(!covers.contains(&ws.join(".venv")));
        assert!(covers.contains(&site.join("pkg/a3.py")));
        assert!(!covers.contains(&site.join("pkg/a0.py")));
    }
}
