//! The workspace's directories as the last walk read them, so that the walk before a
//! workspace's first command and after each one ([`crate::protected::Nested`]) reads only
//! the directories whose change time moved. A name made, removed or renamed in a directory
//! changes the directory's `ctime`, which a process cannot set back (`utimes` moves it
//! forward too), so a directory whose device, inode and change time are as they were holds
//! the names it held. Every directory is still looked at (one `lstat`), since a change below
//! a directory does not reach it.
//!
//! A directory that had changed less than [`SETTLE`] before the walk that read it is read
//! again by the next walk: a second change in the same clock tick leaves the change time
//! as the first one set it, and file systems keep it to a tick (some to a second or two).
//!
//! What a read keeps of a directory: its subdirectories, the protected names in it (below
//! the top), and its regular files' inodes with whether each is linked from elsewhere
//! ([`crate::hard_links`]); a file whose inode the directory's last read knew is not looked
//! at again.

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::fs::Metadata;
use std::os::unix::fs::{DirEntryExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::hard_links::{self, Tally};
use crate::protected::PROTECTED;

/// How long after its last change a directory's read is trusted.
const SETTLE: Duration = Duration::from_secs(2);

/// The directories of one workspace as the walks read them, and the hard-link covers they
/// make (see the module's documentation).
#[derive(Debug)]
pub(crate) struct DirIndex {
    dirs: HashMap<PathBuf, DirRead>,
    covers: Vec<PathBuf>,
    settle: Duration,
}

/// What tells one directory from what it was: a directory swapped for another has another
/// inode, a changed one another change time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    ctime: i64,
    ctime_nsec: i64,
}

/// One directory as it was read.
#[derive(Debug)]
struct DirRead {
    stamp: Stamp,
    /// Whether it had changed [`SETTLE`] or more before the walk: only then is this read
    /// used again.
    settled: bool,
    subdirs: Vec<PathBuf>,
    /// The protected names in it (none at the workspace's top, whose own rules cover them).
    protected: Vec<PathBuf>,
    /// Its regular files' inodes, sorted, each with whether it is linked from elsewhere.
    files: Vec<(u64, bool)>,
    /// The paths of its files linked from elsewhere.
    linked: Vec<PathBuf>,
}

/// How one directory is listed.
struct Listing<'a> {
    /// Whether it is the workspace itself.
    top: bool,
    /// What `write` grants name: left out.
    granted: &'a [PathBuf],
    /// The directory's last read: the files whose inodes it knew are not looked at again.
    earlier: Option<&'a DirRead>,
}

/// What one walk did: the directories it looked at and the ones of those it read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct WalkCount {
    /// Directories looked at (`lstat`).
    pub(crate) looked_at: usize,
    /// Directories read (their entries listed), the rest taken from the last walk.
    pub(crate) read: usize,
}

impl Default for DirIndex {
    fn default() -> Self {
        Self {
            dirs: HashMap::new(),
            covers: Vec::new(),
            settle: SETTLE,
        }
    }
}

impl DirIndex {
    /// The paths to mount read-only for the files hard-linked from elsewhere, as the last
    /// walk found them ([`hard_links::covers`]).
    pub(crate) fn covers(&self) -> &[PathBuf] {
        &self.covers
    }

    /// Walks `workspace` without following links or entering a protected name or what
    /// `granted` names, reading only the directories that changed since the last walk, and
    /// says which protected names lie below its top.
    pub(crate) fn walk(
        &mut self,
        workspace: &Path,
        granted: &[PathBuf],
    ) -> (Vec<PathBuf>, WalkCount) {
        let settled_before = SystemTime::now()
            .checked_sub(self.settle)
            .unwrap_or(SystemTime::UNIX_EPOCH);
        let mut before = std::mem::take(&mut self.dirs);
        let mut count = WalkCount::default();
        let mut found = Vec::new();
        // Each directory walked with the number of its parent in `order`.
        let mut order: Vec<(PathBuf, Option<usize>)> = Vec::new();
        // A bind mount of a directory inside itself is walked once.
        let mut seen: HashSet<(u64, u64)> = HashSet::new();
        let mut next: Vec<(PathBuf, Option<usize>)> = vec![(workspace.to_path_buf(), None)];
        while let Some((dir, parent)) = next.pop() {
            let Ok(meta) = dir.symlink_metadata() else {
                continue;
            };
            if !meta.is_dir() || !seen.insert((meta.dev(), meta.ino())) {
                continue;
            }
            count.looked_at += 1;
            let stamp = Stamp::of(&meta);
            let read = match before.remove(&dir) {
                Some(read) if read.settled && read.stamp == stamp => read,
                earlier => {
                    let listing = Listing {
                        top: parent.is_none(),
                        granted,
                        earlier: earlier.as_ref(),
                    };
                    let settled = stamp.before(settled_before);
                    let Some(read) = DirRead::of(&dir, stamp, settled, &listing) else {
                        continue;
                    };
                    count.read += 1;
                    read
                }
            };
            let id = order.len();
            found.extend(read.protected.iter().cloned());
            next.extend(read.subdirs.iter().map(|sub| (sub.clone(), Some(id))));
            order.push((dir.clone(), parent));
            self.dirs.insert(dir, read);
        }
        // Unchanged directories, none gone: the covers are as they were.
        if count.read > 0 || !before.is_empty() {
            let tallies: Vec<Tally<'_>> = order
                .iter()
                .map(|(path, parent)| {
                    let read = self.dirs.get(path);
                    Tally {
                        path,
                        parent: *parent,
                        files: read.map_or(0, |r| r.files.len()),
                        linked: read.map_or(&[][..], |r| &r.linked),
                    }
                })
                .collect();
            self.covers = hard_links::covers(&tallies);
        }
        (found, count)
    }
}

impl Stamp {
    fn of(meta: &Metadata) -> Self {
        Self {
            dev: meta.dev(),
            ino: meta.ino(),
            ctime: meta.ctime(),
            ctime_nsec: meta.ctime_nsec(),
        }
    }

    /// Whether the change time is before `time`.
    fn before(&self, time: SystemTime) -> bool {
        let Ok(since_epoch) = time.duration_since(SystemTime::UNIX_EPOCH) else {
            return false;
        };
        let secs = i64::try_from(since_epoch.as_secs()).unwrap_or(i64::MAX);
        (self.ctime, self.ctime_nsec) < (secs, i64::from(since_epoch.subsec_nanos()))
    }
}

impl DirRead {
    /// Lists `dir`, looked at as `stamp` just before; `None` when it cannot be read.
    fn of(dir: &Path, stamp: Stamp, settled: bool, listing: &Listing<'_>) -> Option<Self> {
        let entries = std::fs::read_dir(dir).ok()?;
        let mut read = Self {
            stamp,
            settled,
            subdirs: Vec::new(),
            protected: Vec::new(),
            files: Vec::new(),
            linked: Vec::new(),
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let protected = PROTECTED.iter().any(|p| name == OsStr::new(p));
            if listing.top && protected {
                continue;
            }
            let path = entry.path();
            if listing.granted.iter().any(|g| path.starts_with(g)) {
                continue;
            }
            if protected {
                read.protected.push(path);
                continue;
            }
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => read.subdirs.push(path),
                Ok(kind) if kind.is_file() => {
                    let ino = entry.ino();
                    let known = listing.earlier.and_then(|e| {
                        e.files
                            .binary_search_by_key(&ino, |f| f.0)
                            .ok()
                            .map(|i| e.files[i].1)
                    });
                    let Some(linked) = known.or_else(|| hard_links::is_linked(&path)) else {
                        continue;
                    };
                    read.files.push((ino, linked));
                    if linked {
                        read.linked.push(path);
                    }
                }
                _ => {}
            }
        }
        read.files.sort_unstable_by_key(|f| f.0);
        Some(read)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An index that trusts a read at once, for tests that cannot wait [`SETTLE`].
    fn settling_at_once() -> DirIndex {
        DirIndex {
            settle: Duration::ZERO,
            ..DirIndex::default()
        }
    }

    /// Lets the file system's coarse clock pass the last change.
    fn tick() {
        std::thread::sleep(Duration::from_millis(30));
    }

    #[test]
    fn only_the_directories_that_changed_are_read_again() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().canonicalize().unwrap();
        for d in ["a/b", "c", "d/.git"] {
            std::fs::create_dir_all(ws.join(d)).unwrap();
        }
        std::fs::write(ws.join("a/b/f"), "x").unwrap();
        tick();
        let mut index = settling_at_once();
        let (found, count) = index.walk(&ws, &[]);
        assert_eq!(found, [ws.join("d/.git")]);
        assert_eq!((count.looked_at, count.read), (5, 5), "ws, a, a/b, c, d");
        tick();
        let (found, count) = index.walk(&ws, &[]);
        assert_eq!(found, [ws.join("d/.git")]);
        assert_eq!((count.looked_at, count.read), (5, 0));

        // A name made deep down: only its directory is read.
        std::fs::create_dir(ws.join("a/b/.claude")).unwrap();
        std::fs::write(ws.join("a/b/f"), "changed in place").unwrap();
        tick();
        let (mut found, count) = index.walk(&ws, &[]);
        found.sort();
        assert_eq!(found, [ws.join("a/b/.claude"), ws.join("d/.git")]);
        assert_eq!(count.read, 1);

        // A directory swapped for another (a new inode) is read, and one gone is dropped.
        std::fs::rename(ws.join("c"), ws.join("old-c")).unwrap();
        std::fs::create_dir_all(ws.join("c/.git")).unwrap();
        std::fs::remove_dir_all(ws.join("d")).unwrap();
        tick();
        let (mut found, count) = index.walk(&ws, &[]);
        found.sort();
        assert_eq!(found, [ws.join("a/b/.claude"), ws.join("c/.git")]);
        assert_eq!((count.looked_at, count.read), (5, 3), "ws, c, old-c");
    }

    #[test]
    fn a_directory_changed_just_before_its_read_is_read_again() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().canonicalize().unwrap();
        std::fs::create_dir(ws.join("sub")).unwrap();
        let mut index = DirIndex::default();
        assert_eq!(index.walk(&ws, &[]).1.read, 2);
        // Within the same tick as the read, the change time may not move: not trusted.
        assert_eq!(index.walk(&ws, &[]).1.read, 2);
    }

    #[test]
    fn a_link_to_a_directory_is_not_walked() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().canonicalize().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(outside.path().join(".git")).unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.join("elsewhere")).unwrap();
        let (found, count) = settling_at_once().walk(&ws, &[]);
        assert!(found.is_empty(), "{found:?}");
        assert_eq!(count.looked_at, 1);
    }
}
