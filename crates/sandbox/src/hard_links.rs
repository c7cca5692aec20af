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
//! Files are found by the walk that already reads every directory of the workspace
//! before its first command and after each one ([`crate::protected::Nested`]); a file is
//! looked at (`stat`) only when its inode is new since the last walk, so a walk over an
//! unchanged workspace makes no more system calls than before, and allocates nothing for a
//! file that is not a link.
//!
//! Links made by another program between two commands are found by the walk after the
//! next one; a file of the workspace that is linked from elsewhere later, keeping its inode
//! here, is not seen (`docs/security.md`).

use std::collections::HashMap;
use std::fs::DirEntry;
use std::os::unix::fs::{DirEntryExt, MetadataExt};
use std::path::{Path, PathBuf};

/// The most mounts the covers may take; past it, the directories holding linked files are
/// mounted instead of the files (more read-only, never less).
const MOST_COVERS: usize = 2_000;

/// What the walks found: each regular file's inode and whether it is linked elsewhere.
#[derive(Debug, Default)]
pub(crate) struct LinkedFiles {
    inodes: HashMap<u64, bool>,
    covers: Vec<PathBuf>,
}

/// One walk's view, built directory by directory and then made into covers. Directories
/// are numbered as the walk meets them, so a parent's number is below its children's.
#[derive(Debug, Default)]
pub(crate) struct LinkScan {
    inodes: HashMap<u64, bool>,
    dirs: Vec<DirCount>,
}

/// One directory of a walk, numbered by [`LinkScan::directory`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct DirId(usize);

#[derive(Debug)]
struct DirCount {
    path: PathBuf,
    /// `None`: where the walk started (the workspace), never mounted whole.
    parent: Option<usize>,
    files: usize,
    linked: Vec<PathBuf>,
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
        self.inodes = scan.inodes;
    }
}

impl LinkScan {
    /// Notes the directory `dir`, a subdirectory of `parent` (`None`: the top of the walk).
    pub(crate) fn directory(&mut self, dir: &Path, parent: Option<DirId>) -> DirId {
        self.dirs.push(DirCount {
            path: dir.to_path_buf(),
            parent: parent.map(|p| p.0),
            files: 0,
            linked: Vec::new(),
        });
        DirId(self.dirs.len() - 1)
    }

    /// Notes `entry`, a regular file of `dir`: linked or not as the last walk knew its
    /// inode, else as it is now (one `stat`). Nothing is allocated for a file that is not
    /// a link, so a walk over an unchanged workspace costs a hash lookup a file.
    pub(crate) fn file(&mut self, known: &LinkedFiles, dir: DirId, entry: &DirEntry) {
        let ino = entry.ino();
        let linked = match known.inodes.get(&ino) {
            Some(linked) => *linked,
            None => match entry.path().symlink_metadata() {
                Ok(meta) if meta.is_file() => meta.nlink() > 1,
                _ => return,
            },
        };
        self.inodes.insert(ino, linked);
        let Some(count) = self.dirs.get_mut(dir.0) else {
            return;
        };
        count.files += 1;
        if linked {
            count.linked.push(entry.path());
        }
    }

    /// The paths to mount read-only, at most [`MOST_COVERS`] of them.
    fn covers(&self) -> Vec<PathBuf> {
        // Each directory's files and linked files, its subdirectories' included: children
        // are numbered after their parents, so walked backwards each is settled first.
        let mut totals: Vec<(usize, usize)> = self
            .dirs
            .iter()
            .map(|d| (d.files, d.linked.len()))
            .collect();
        for (i, dir) in self.dirs.iter().enumerate().rev() {
            if let Some(parent) = dir.parent {
                let (files, linked) = totals[i];
                totals[parent].0 += files;
                totals[parent].1 += linked;
            }
        }
        // Mostly links: a package manager's tree (a `.venv`, a `node_modules`), its own few
        // files (`RECORD`, a `.pth`, a lock) kept read-only with the links.
        let whole = |i: usize| {
            let (files, linked) = totals[i];
            linked > 0 && linked * 10 >= files * 9 && self.dirs[i].parent.is_some()
        };
        let mut held = vec![false; self.dirs.len()];
        let mut covers = Vec::new();
        let mut files = Vec::new();
        for (i, dir) in self.dirs.iter().enumerate() {
            if dir.parent.is_some_and(|p| held[p]) || totals[i].1 == 0 {
                held[i] = dir.parent.is_some_and(|p| held[p]);
                continue;
            }
            if whole(i) {
                covers.push(dir.path.clone());
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
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Walks `root` into a scan, as `Nested`'s walk does.
    fn walk(root: &Path, known: &LinkedFiles) -> LinkScan {
        let mut scan = LinkScan::default();
        let mut dirs = vec![(root.to_path_buf(), None)];
        while let Some((dir, parent)) = dirs.pop() {
            let id = scan.directory(&dir, parent);
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let kind = entry.file_type().unwrap();
                if kind.is_dir() {
                    dirs.push((entry.path(), Some(id)));
                } else if kind.is_file() {
                    scan.file(known, id, &entry);
                }
            }
        }
        scan
    }

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
        let mut known = LinkedFiles::default();
        known.take(walk(&ws, &known));
        assert_eq!(known.covers(), [ws.join(".venv"), ws.join("src/linked.rs")]);
        // Files replaced by copies of their own (new inodes) are looked at again: with
        // fewer than nine in ten linked, each link is covered by itself.
        for n in 0..3 {
            // Made beside it, then renamed over it: the old inode still exists when the new
            // one is made, so the new one's number differs.
            let (path, copy) = (site.join(format!("pkg/a{n}.py")), site.join("copy"));
            std::fs::write(&copy, "copy").unwrap();
            std::fs::rename(&copy, &path).unwrap();
        }
        known.take(walk(&ws, &known));
        let covers = known.covers();
        assert_eq!(covers.len(), 18, "{covers:?}");
        assert!(!covers.contains(&ws.join(".venv")));
        assert!(covers.contains(&site.join("pkg/a3.py")));
        assert!(!covers.contains(&site.join("pkg/a0.py")));
    }
}
