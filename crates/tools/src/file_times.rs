//! What each context last saw of each file (the seed's `file_time`): the file's size,
//! modification time and inode when the model last read or wrote it in that context. `edit`,
//! `write` and `apply_patch` refuse a file that has changed on disk since — a sibling
//! context's edit, a command, the person in their editor — and tell the model to read it
//! again, so a change made on what the model remembers never overwrites one it has not
//! seen (Claude Code refuses the same way). A file the context never read is not held to
//! anything.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use parking_lot::Mutex;
use wonopcode_agent_loop::ToolError;
use wonopcode_protocol::ContextPath;

/// A file as it stood on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
    inode: u64,
}

impl Stamp {
    /// `path` as it stands now; `None` when it is not there.
    async fn of(path: &Path) -> Option<Self> {
        let meta = tokio::fs::metadata(path).await.ok()?;
        Some(Self {
            len: meta.len(),
            modified: meta.modified().ok(),
            inode: inode(&meta),
        })
    }
}

#[cfg(unix)]
fn inode(meta: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(meta)
}

#[cfg(not(unix))]
fn inode(_meta: &std::fs::Metadata) -> u64 {
    0
}

/// The files each context has seen, shared by the file tools of one session.
#[derive(Debug, Default)]
pub struct FileTimes {
    seen: Mutex<HashMap<(ContextPath, PathBuf), Stamp>>,
}

impl FileTimes {
    /// Records that `context` has seen `path` as it is now (it read it, or wrote it).
    pub(crate) async fn saw(&self, context: &ContextPath, path: &Path) {
        let key = (context.clone(), path.to_path_buf());
        match Stamp::of(path).await {
            Some(stamp) => {
                self.seen.lock().insert(key, stamp);
            }
            None => {
                self.seen.lock().remove(&key);
            }
        }
    }

    /// Refuses a change to `path` (`rel` as the model named it) when it has changed on
    /// disk since `context` last saw it.
    pub(crate) async fn check(
        &self,
        context: &ContextPath,
        path: &Path,
        rel: &str,
    ) -> Result<(), ToolError> {
        let key = (context.clone(), path.to_path_buf());
        let Some(seen) = self.seen.lock().get(&key).copied() else {
            return Ok(());
        };
        if Stamp::of(path).await == Some(seen) {
            return Ok(());
        }
        Err(ToolError::Failed(format!(
            "`{rel}` has changed on disk since you last read it (another context, a command or a person changed it): read it again, then make your change on what it holds now"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_file_changed_since_it_was_seen_is_refused_until_seen_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        std::fs::write(&path, "one\n").unwrap();
        let times = FileTimes::default();
        let (root, child) = (ContextPath::root(), ContextPath::root().child(1));
        // Never seen: nothing to hold it to.
        times.check(&root, &path, "a.txt").await.unwrap();
        times.saw(&root, &path).await;
        times.check(&root, &path, "a.txt").await.unwrap();
        // Changed by someone else (same length: the time and inode still tell).
        std::thread::sleep(std::time::Duration::from_millis(10));
        std::fs::write(&path, "two\n").unwrap();
        let refused = times.check(&root, &path, "a.txt").await.unwrap_err();
        assert!(refused.to_string().contains("read it again"), "{refused}");
        // Another context that never read it is not held to the root's reading.
        times.check(&child, &path, "a.txt").await.unwrap();
        // Read again, it may change it.
        times.saw(&root, &path).await;
        times.check(&root, &path, "a.txt").await.unwrap();
        // Replaced by another file (a rename over it) is a change too.
        let other = dir.path().join("b.txt");
        std::fs::write(&other, "two\n").unwrap();
        std::fs::rename(&other, &path).unwrap();
        assert!(times.check(&root, &path, "a.txt").await.is_err());
    }
}
