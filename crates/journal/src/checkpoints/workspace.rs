//! The workspace's files as last looked at — each one's size, times, inode and mode, and
//! its content kept as an object — so what a command changed is found by looking again:
//! only in the directories the kernel says something changed in (`watch`), or, without
//! watches, everywhere by sizes and times; a file's content is read only when those differ.
//!
//! What is looked at: every regular file the workspace's ignore files (`.gitignore`,
//! `.ignore`, `.git/info/exclude`, the global excludes) leave in, hidden ones included;
//! never `.git` itself, the runs' own directory or the run's hidden paths (credentials).
//! Links, empty directories and files larger than [`LARGEST_KEPT`] are not tracked.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use ignore::WalkBuilder;

use super::objects::Objects;
use super::watch::{Dirty, Watch};

/// A file larger than this is not kept, nor what a command does to it.
pub(crate) const LARGEST_KEPT: u64 = 8 << 20;
/// A workspace with more files than this (as its ignore files leave it) is not tracked:
/// the first look, which keeps every file, would cost more than any command.
const MOST_FILES: usize = 100_000;
/// Nor one whose files hold more bytes than this.
const MOST_BYTES: u64 = 1 << 30;

/// `name` in `dir` (`""`: the workspace itself).
pub(crate) fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}

/// What is left of `path` below `dir`; `None` when it is not below it.
fn below<'a>(path: &'a str, dir: &str) -> Option<&'a str> {
    if dir.is_empty() {
        return Some(path);
    }
    path.strip_prefix(dir)?.strip_prefix('/')
}

/// What a file's metadata was when last looked at: when it differs, its content is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: (i64, i64),
    changed: (i64, i64),
    inode: u64,
    mode: u32,
}

impl Stamp {
    fn of(meta: &Metadata) -> Self {
        Self {
            len: meta.len(),
            modified: (meta.mtime(), meta.mtime_nsec()),
            changed: (meta.ctime(), meta.ctime_nsec()),
            inode: meta.ino(),
            mode: meta.mode(),
        }
    }
}

/// A file as last looked at: its stamp, and its content's object (`None`: not kept).
#[derive(Debug, Clone)]
struct Seen {
    stamp: Stamp,
    content: Option<String>,
}

/// A file's content (an object's name) and its permission bits.
pub(crate) type Kept = (String, u32);

impl Seen {
    /// The bytes kept of it.
    fn kept_len(&self) -> u64 {
        if self.content.is_some() {
            self.stamp.len
        } else {
            0
        }
    }

    fn kept(&self) -> Option<Kept> {
        self.content
            .clone()
            .map(|content| (content, self.stamp.mode & 0o7777))
    }
}

/// One file a command changed: what it was and what it is (`None`: no file).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct FileChange {
    pub path: String,
    pub before: Option<Kept>,
    pub after: Option<Kept>,
}

/// The files of one workspace as last looked at.
pub(crate) struct WorkspaceFiles {
    root: PathBuf,
    /// Never looked at (canonical).
    left_out: Vec<PathBuf>,
    files: BTreeMap<String, Seen>,
    /// The bytes of the files kept (the sum of their lengths).
    bytes: u64,
    dirs: BTreeSet<String>,
    watch: Option<Watch>,
}

impl WorkspaceFiles {
    /// Looks at every file under `root` (canonical) but `left_out`, keeping each one's
    /// content in `objects`. Why not, when the workspace is too large to track.
    pub fn look(root: &Path, left_out: Vec<PathBuf>, objects: &Objects) -> Result<Self, String> {
        let mut files = Self {
            root: root.to_path_buf(),
            left_out,
            files: BTreeMap::new(),
            bytes: 0,
            dirs: BTreeSet::new(),
            watch: Watch::new(),
        };
        let (found, found_dirs) = files.walk("", None, MOST_FILES);
        if found.len() > MOST_FILES {
            return Err(format!(
                "more than {MOST_FILES} files outside its ignore files"
            ));
        }
        let bytes: u64 = found
            .values()
            .map(Metadata::len)
            .filter(|len| *len <= LARGEST_KEPT)
            .sum();
        if bytes > MOST_BYTES {
            return Err(format!(
                "{} MiB (more than {} MiB) outside its ignore files",
                bytes >> 20,
                MOST_BYTES >> 20
            ));
        }
        files.compare("", true, found, found_dirs, objects, &mut Vec::new());
        Ok(files)
    }

    /// Why the workspace has grown too large to track (a command made it so), if it has.
    pub fn too_large(&self) -> Option<String> {
        if self.files.len() > MOST_FILES {
            return Some(format!(
                "more than {MOST_FILES} files outside its ignore files"
            ));
        }
        (self.bytes > MOST_BYTES).then(|| {
            format!(
                "{} MiB (more than {} MiB) outside its ignore files",
                self.bytes >> 20,
                MOST_BYTES >> 20
            )
        })
    }

    /// Keeps `seen` as what `path` is; what it was.
    fn insert(&mut self, path: String, seen: Seen) -> Option<Seen> {
        self.bytes += seen.kept_len();
        let before = self.files.insert(path, seen);
        self.bytes -= before.as_ref().map_or(0, Seen::kept_len);
        before
    }

    /// Forgets `path` (gone); what it was.
    fn remove(&mut self, path: &str) -> Option<Seen> {
        let before = self.files.remove(path);
        self.bytes -= before.as_ref().map_or(0, Seen::kept_len);
        before
    }

    /// Looks again where something may have changed since the last look; what did.
    pub fn refresh(&mut self, objects: &Objects) -> Vec<FileChange> {
        let mut changes = Vec::new();
        match self.watch.as_mut().map_or(Dirty::Everything, Watch::dirty) {
            Dirty::Everything => self.rescan("", true, objects, &mut changes),
            Dirty::Dirs { changed, moved_in } => {
                // Looked at whole by its parent's look, as a directory never seen.
                for dir in moved_in {
                    self.dirs.remove(&dir);
                }
                for dir in changed {
                    self.rescan(&dir, false, objects, &mut changes);
                }
            }
        }
        changes
    }

    /// Looks at `dir` again: at its files, and at the directories in it that are new (whole);
    /// all of it when `whole`.
    fn rescan(&mut self, dir: &str, whole: bool, objects: &Objects, changes: &mut Vec<FileChange>) {
        let (found, found_dirs) = self.walk(dir, (!whole).then_some(1), usize::MAX);
        self.compare(dir, whole, found, found_dirs, objects, changes);
    }

    /// Brings what was seen in `dir` (all of it when `whole`, else its own files and what
    /// is below a directory gone from it) up to what was `found`, adding to `changes`.
    fn compare(
        &mut self,
        dir: &str,
        whole: bool,
        found: HashMap<String, Metadata>,
        found_dirs: BTreeSet<String>,
        objects: &Objects,
        changes: &mut Vec<FileChange>,
    ) {
        let in_scope = |path: &str| {
            below(path, dir).is_some_and(|rest| {
                whole
                    || rest
                        .split_once('/')
                        .is_none_or(|(sub, _)| !found_dirs.contains(&join(dir, sub)))
            })
        };
        let exists = dir.is_empty() || self.root.join(dir).is_dir();
        let gone_dirs: Vec<String> = self
            .dirs
            .iter()
            .filter(|d| (!exists && d.as_str() == dir) || (in_scope(d) && !found_dirs.contains(*d)))
            .cloned()
            .collect();
        for gone in gone_dirs {
            self.dirs.remove(&gone);
            if let Some(watch) = &mut self.watch {
                watch.forget(&gone);
            }
        }
        // Directories first: a change made while the files are read is then seen next time.
        let mut new_dirs = Vec::new();
        for d in std::iter::once(dir.to_owned())
            .filter(|_| exists)
            .chain(found_dirs.iter().cloned())
        {
            if self.dirs.insert(d.clone()) {
                if let Some(watch) = &mut self.watch {
                    watch.add(&self.root, &d);
                }
                if !whole && d != dir {
                    new_dirs.push(d);
                }
            }
        }
        let gone_files: Vec<String> = self
            .files
            .range::<str, _>((std::ops::Bound::Included(dir), std::ops::Bound::Unbounded))
            .map(|(path, _)| path)
            .take_while(|path| dir.is_empty() || path.starts_with(dir))
            .filter(|path| in_scope(path) && !found.contains_key(*path))
            .cloned()
            .collect();
        for path in gone_files {
            if let Some(seen) = self.remove(&path) {
                push_change(changes, path, Some(&seen), None);
            }
        }
        for (path, meta) in found {
            let stamp = Stamp::of(&meta);
            let before = self.files.get(&path);
            if before.is_some_and(|seen| seen.stamp == stamp) {
                continue;
            }
            let Some(content) = self.keep(&path, &meta, objects) else {
                continue;
            };
            let now = Seen { stamp, content };
            let before = self.insert(path.clone(), now.clone());
            push_change(changes, path, before.as_ref(), Some(&now));
        }
        for d in new_dirs {
            self.rescan(&d, true, objects, changes);
        }
    }

    /// Keeps the content of `path` as an object: `Some(None)` when it is not kept (too
    /// large, unreadable, no longer a regular file), `None` when it is gone again.
    fn keep(&self, path: &str, meta: &Metadata, objects: &Objects) -> Option<Option<String>> {
        if meta.len() > LARGEST_KEPT {
            return Some(None);
        }
        match read_regular(&self.root, path) {
            Ok(None) => Some(None),
            Ok(Some(bytes)) => Some(
                objects
                    .put(&bytes)
                    .inspect_err(|e| tracing::warn!(error = %e, path, "cannot keep a file's content for the checkpoints"))
                    .ok(),
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(_) => Some(None),
        }
    }

    /// The files and directories under `dir`, `depth` levels down (all: `None`), as the
    /// ignore files leave them; the walk stops at one file more than `most`.
    fn walk(
        &self,
        dir: &str,
        depth: Option<usize>,
        most: usize,
    ) -> (HashMap<String, Metadata>, BTreeSet<String>) {
        let (mut files, mut dirs) = (HashMap::new(), BTreeSet::new());
        let start = self.root.join(dir);
        if !start.is_dir() {
            return (files, dirs);
        }
        let mut builder = WalkBuilder::new(&start);
        let left_out = self.left_out.clone();
        builder
            .hidden(false)
            .require_git(false)
            .max_depth(depth)
            .filter_entry(move |entry| {
                entry.file_name() != ".git" && !left_out.iter().any(|p| entry.path().starts_with(p))
            });
        for entry in builder.build().flatten() {
            if files.len() > most {
                break;
            }
            if entry.depth() == 0 {
                continue;
            }
            let (Some(kind), Some(rel)) = (
                entry.file_type(),
                entry
                    .path()
                    .strip_prefix(&self.root)
                    .ok()
                    .and_then(Path::to_str),
            ) else {
                continue;
            };
            if kind.is_dir() {
                dirs.insert(rel.to_owned());
            } else if kind.is_file()
                && let Ok(meta) = entry.metadata()
            {
                files.insert(rel.to_owned(), meta);
            }
        }
        (files, dirs)
    }
}

/// The bytes of the regular file at `path` (relative) under the canonical `root`, when it
/// is one of at most [`LARGEST_KEPT`] bytes: opened beneath the root without following a
/// link anywhere on the way or waiting on a pipe, so a file or a directory swapped for a
/// link, a FIFO or a device since it was walked is never read through (`Ok(None)`).
fn read_regular(root: &Path, path: &str) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    use wonopcode_os::beneath::{Access, open};
    let file = match open(root, &root.join(path), Access::Read) {
        Ok(file) => file,
        // A link where a file or a directory was.
        Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)) => {
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    if !file.metadata()?.is_file() {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    file.take(LARGEST_KEPT + 1).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= LARGEST_KEPT).then_some(bytes))
}

/// Adds the change of `path` from `before` to `after` (`None`: no file), when there is one
/// and both sides were kept.
fn push_change(
    changes: &mut Vec<FileChange>,
    path: String,
    before: Option<&Seen>,
    after: Option<&Seen>,
) {
    let side = |seen: Option<&Seen>| match seen {
        None => Some(None),
        Some(seen) => seen.kept().map(Some),
    };
    let (Some(before), Some(after)) = (side(before), side(after)) else {
        tracing::debug!(path, "a change to a file too large to keep is not tracked");
        return;
    };
    if before != after {
        changes.push(FileChange {
            path,
            before,
            after,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn look(root: &Path) -> (WorkspaceFiles, Objects) {
        let objects = Objects::at(root.join("objects"));
        std::fs::create_dir_all(root.join("objects")).unwrap();
        let ws = root.join("ws");
        let files = WorkspaceFiles::look(&ws, vec![root.join("objects")], &objects).unwrap();
        (files, objects)
    }

    fn paths(changes: &[FileChange]) -> Vec<(&str, bool, bool)> {
        let mut paths: Vec<_> = changes
            .iter()
            .map(|c| (c.path.as_str(), c.before.is_some(), c.after.is_some()))
            .collect();
        paths.sort_unstable();
        paths
    }

    #[test]
    fn a_second_look_finds_files_added_changed_removed_moved_and_made_executable() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let ws = root.join("ws");
        for (path, text) in [
            ("a.txt", "a"),
            ("sub/b.txt", "b"),
            ("sub/deep/c.txt", "c"),
            ("old/d.txt", "d"),
            ("run.sh", "echo"),
            ("target/out.o", "built"),
            (".gitignore", "target/\n"),
            (".git/HEAD", "ref"),
        ] {
            std::fs::create_dir_all(ws.join(path).parent().unwrap()).unwrap();
            std::fs::write(ws.join(path), text).unwrap();
        }
        let (mut files, objects) = look(&root);
        assert!(files.files.contains_key(".gitignore"));
        assert!(
            !files
                .files
                .keys()
                .any(|p| p.starts_with("target") || p.starts_with(".git/"))
        );
        assert!(files.refresh(&objects).is_empty());

        std::fs::write(ws.join("a.txt"), "a2").unwrap();
        std::fs::remove_file(ws.join("sub/deep/c.txt")).unwrap();
        std::fs::write(ws.join("sub/deep/new.txt"), "n").unwrap();
        std::fs::rename(ws.join("old"), ws.join("new")).unwrap();
        std::fs::create_dir_all(ws.join("made/inner")).unwrap();
        std::fs::write(ws.join("made/inner/e.txt"), "e").unwrap();
        std::fs::write(ws.join("target/more.o"), "ignored").unwrap();
        std::fs::set_permissions(
            ws.join("run.sh"),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        let changes = files.refresh(&objects);
        assert_eq!(
            paths(&changes),
            [
                ("a.txt", true, true),
                ("made/inner/e.txt", false, true),
                ("new/d.txt", false, true),
                ("old/d.txt", true, false),
                ("run.sh", true, true),
                ("sub/deep/c.txt", true, false),
                ("sub/deep/new.txt", false, true),
            ]
        );
        let run = changes.iter().find(|c| c.path == "run.sh").unwrap();
        assert_eq!(
            run.before.as_ref().unwrap().0,
            run.after.as_ref().unwrap().0
        );
        assert_eq!(run.after.as_ref().unwrap().1, 0o755);
        let a = changes.iter().find(|c| c.path == "a.txt").unwrap();
        assert_eq!(objects.get(&a.before.as_ref().unwrap().0).unwrap(), b"a");
        // Nothing more to find; a directory removed takes its files with it.
        assert!(files.refresh(&objects).is_empty());
        std::fs::remove_dir_all(ws.join("made")).unwrap();
        assert_eq!(
            paths(&files.refresh(&objects)),
            [("made/inner/e.txt", true, false)]
        );
    }

    #[test]
    fn a_fifo_or_a_link_where_a_file_was_is_not_read_through() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = &tmp.path().canonicalize().unwrap();
        mkfifo(&dir.join("fifo"));
        // Opened without waiting for a writer, and not read.
        assert_eq!(read_regular(dir, "fifo").unwrap(), None);
        std::fs::write(dir.join("target"), "secret").unwrap();
        std::os::unix::fs::symlink(dir.join("target"), dir.join("link")).unwrap();
        assert_eq!(read_regular(dir, "link").unwrap(), None);
        // A directory swapped for a link since the walk: not read through either.
        std::fs::create_dir(dir.join("sub")).unwrap();
        std::os::unix::fs::symlink(dir, dir.join("sub/up")).unwrap();
        assert_eq!(read_regular(dir, "sub/up/target").unwrap(), None);
        assert_eq!(read_regular(dir, "target").unwrap().unwrap(), b"secret");
    }

    fn mkfifo(path: &Path) {
        let status = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(status.success());
    }

    #[test]
    fn without_watches_the_whole_workspace_is_compared() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let ws = root.join("ws");
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        std::fs::write(ws.join("sub/x"), "x").unwrap();
        let (mut files, objects) = look(&root);
        files.watch = None;
        std::fs::write(ws.join("sub/x"), "y").unwrap();
        std::fs::write(ws.join("z"), "z").unwrap();
        assert_eq!(
            paths(&files.refresh(&objects)),
            [("sub/x", true, true), ("z", false, true)]
        );
    }
}
