//! Files of the workspace that are hard links of files elsewhere: uv (its Linux default)
//! and pnpm link packages from their caches into `.venv` and `node_modules`, and Landlock
//! checks paths, not inodes, so a command appending to `.venv/…/x.py` would change the
//! file in `~/.cache/uv`, and every project that links it. Every regular file with more
//! than one link is mounted read-only in the command's namespace (`confine.rs`), like the
//! protected names: a write through it fails, and the cache keeps its content.
//!
//! A directory whose every file is such a link (a package's own directory, as the caches
//! lay them out) is mounted whole, so a `.venv` costs a mount per package, not per file.
//! Files are found by the walk that already reads every directory of the workspace
//! before its first command and after each one ([`crate::protected::Nested`]); a file is
//! looked at (`stat`) only when its name or inode is new since the last walk, so a
//! walk over an unchanged workspace makes no more system calls than before.
//!
//! Links made by another program between two commands are found by the walk after the
//! next one; a file of the workspace that is linked from elsewhere later, without a new
//! name or inode here, is not seen (`docs/security.md`).

use std::collections::{BTreeMap, HashMap};
use std::fs::DirEntry;
use std::os::unix::fs::{DirEntryExt, MetadataExt};
use std::path::{Path, PathBuf};

/// The most mounts the covers may take; past it, the directories holding linked files are
/// mounted instead of the files (more read-only, never less).
const MOST_COVERS: usize = 2_000;

/// What the walks found: each regular file's inode and whether it is linked elsewhere.
#[derive(Debug, Default)]
pub(crate) struct LinkedFiles {
    files: HashMap<PathBuf, (u64, bool)>,
    covers: Vec<PathBuf>,
}

/// One walk's view, built directory by directory and then made into covers.
#[derive(Debug, Default)]
pub(crate) struct LinkScan {
    files: HashMap<PathBuf, (u64, bool)>,
    /// Each directory walked: its regular files, the linked ones, its subdirectories.
    dirs: BTreeMap<PathBuf, DirCount>,
    /// Where the walk started (the workspace): never mounted whole.
    tops: Vec<PathBuf>,
}

#[derive(Debug, Default)]
struct DirCount {
    files: usize,
    linked: Vec<PathBuf>,
    subdirs: Vec<PathBuf>,
}

impl LinkedFiles {
    /// The paths to mount read-only: whole directories of linked files, and the linked
    /// files of the other directories.
    pub(crate) fn covers(&self) -> &[PathBuf] {
        &self.covers
    }

    /// Takes `scan`, a new walk's view, in place of the last one.
    pub(crate) fn take(&mut self, scan: LinkScan) {
        self.covers = scan.covers();
        self.files = scan.files;
    }

    /// Whether the file at `path` with inode `ino` is a link of a file elsewhere: known
    /// from the last walk when its inode is the same, else looked at.
    fn linked(&self, path: &Path, ino: u64) -> Option<bool> {
        match self.files.get(path) {
            Some((known, linked)) if *known == ino => Some(*linked),
            _ => path
                .symlink_metadata()
                .ok()
                .filter(std::fs::Metadata::is_file)
                .map(|meta| meta.nlink() > 1),
        }
    }
}

impl LinkScan {
    /// Notes the directory `dir`, a subdirectory of `parent` (`None`: a top of the walk).
    pub(crate) fn directory(&mut self, dir: &Path, parent: Option<&Path>) {
        self.dirs.entry(dir.to_path_buf()).or_default();
        if parent.is_none() {
            self.tops.push(dir.to_path_buf());
        }
        if let Some(parent) = parent {
            self.dirs
                .entry(parent.to_path_buf())
                .or_default()
                .subdirs
                .push(dir.to_path_buf());
        }
    }

    /// Notes `entry`, a regular file of `dir`, as `known` knows it or as it is now.
    pub(crate) fn file(&mut self, known: &LinkedFiles, dir: &Path, entry: &DirEntry) {
        let path = entry.path();
        let Some(linked) = known.linked(&path, entry.ino()) else {
            return;
        };
        let count = self.dirs.entry(dir.to_path_buf()).or_default();
        count.files += 1;
        if linked {
            count.linked.push(path.clone());
        }
        self.files.insert(path, (entry.ino(), linked));
    }

    /// The paths to mount read-only, at most [`MOST_COVERS`] of them.
    fn covers(&self) -> Vec<PathBuf> {
        // Children sort after their parents: walked backwards, each is settled first.
        let mut whole: HashMap<&Path, bool> = HashMap::new();
        let mut any: HashMap<&Path, bool> = HashMap::new();
        for (dir, count) in self.dirs.iter().rev() {
            let subdirs_whole = count
                .subdirs
                .iter()
                .all(|s| whole.get(s.as_path()).copied().unwrap_or(false));
            let holds = !count.linked.is_empty()
                || count
                    .subdirs
                    .iter()
                    .any(|s| any.get(s.as_path()).copied().unwrap_or(false));
            // A directory with nothing linked is not one to mount; an empty one does not
            // keep its parent from being whole.
            let is_whole = subdirs_whole && count.linked.len() == count.files;
            whole.insert(dir, is_whole);
            any.insert(dir, holds);
        }
        let mut covers = Vec::new();
        let mut files = Vec::new();
        for (dir, count) in &self.dirs {
            let held = covers.iter().any(|c: &PathBuf| dir.starts_with(c));
            if held || !any.get(dir.as_path()).copied().unwrap_or(false) {
                continue;
            }
            if whole.get(dir.as_path()).copied().unwrap_or(false) && !self.tops.contains(dir) {
                covers.push(dir.clone());
            } else {
                files.extend(count.linked.iter().cloned());
            }
        }
        let files: Vec<PathBuf> = files
            .into_iter()
            .filter(|f| !covers.iter().any(|c| f.starts_with(c)))
            .collect();
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
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Walks `root` into a scan, as `Nested`'s walk does.
    fn walk(root: &Path, known: &LinkedFiles) -> LinkScan {
        let mut scan = LinkScan::default();
        let mut dirs = vec![(root.to_path_buf(), None::<PathBuf>)];
        while let Some((dir, parent)) = dirs.pop() {
            scan.directory(&dir, parent.as_deref());
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let kind = entry.file_type().unwrap();
                if kind.is_dir() {
                    dirs.push((entry.path(), Some(dir.clone())));
                } else if kind.is_file() {
                    scan.file(known, &dir, &entry);
                }
            }
        }
        scan
    }

    #[test]
    fn a_package_directory_is_covered_whole_and_a_mixed_one_file_by_file() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let (cache, ws) = (base.join("cache"), base.join("ws"));
        let site = ws.join(".venv/lib/site-packages");
        std::fs::create_dir_all(cache.join("pkg/sub")).unwrap();
        std::fs::create_dir_all(site.join("pkg/sub")).unwrap();
        std::fs::create_dir_all(site.join("pkg.dist-info")).unwrap();
        for name in ["pkg/a.py", "pkg/sub/b.py", "METADATA"] {
            std::fs::write(cache.join(name), "x").unwrap();
        }
        std::fs::hard_link(cache.join("pkg/a.py"), site.join("pkg/a.py")).unwrap();
        std::fs::hard_link(cache.join("pkg/sub/b.py"), site.join("pkg/sub/b.py")).unwrap();
        std::fs::hard_link(cache.join("METADATA"), site.join("pkg.dist-info/METADATA")).unwrap();
        std::fs::write(site.join("pkg.dist-info/RECORD"), "own").unwrap();
        std::fs::write(site.join("own.pth"), "own").unwrap();
        let mut known = LinkedFiles::default();
        known.take(walk(&ws, &known));
        assert_eq!(
            known.covers(),
            [site.join("pkg"), site.join("pkg.dist-info/METADATA")]
        );
        // A file replaced by a copy of its own (a new inode) is looked at again.
        std::fs::remove_file(site.join("pkg/a.py")).unwrap();
        std::fs::write(site.join("pkg/a.py"), "copy").unwrap();
        known.take(walk(&ws, &known));
        assert_eq!(
            known.covers(),
            [site.join("pkg/sub"), site.join("pkg.dist-info/METADATA")]
        );
    }
}
