//! The child processes wonopcode itself starts (MCP servers, hooks, key commands, git), so
//! that the cleanup at the end of a `bash` call, which kills every process the call left
//! behind (wonopcode adopts orphans as a child subreaper, and an orphan whose parent is
//! wonopcode looks just like a child wonopcode started), never takes one of them for a
//! leftover. Process-wide, as the subreaper is.
//!
//! A child is started and recorded under [`starting`], and the cleanup decides what to kill
//! under [`sweeping`]: so it never sees a child that is started but not yet recorded.

use std::collections::HashSet;

use parking_lot::{Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

static OWN: Mutex<Option<HashSet<u32>>> = Mutex::new(None);

/// Held (shared) while a child is started and recorded; held alone while a cleanup looks.
static STARTS: RwLock<()> = parking_lot::const_rwlock(());

/// Held while a child process is started and until it is recorded, as wonopcode's own
/// ([`Own::new`]) or as a `bash` call's root. Never held across an `.await`.
pub fn starting() -> RwLockReadGuard<'static, ()> {
    STARTS.read()
}

/// Held by a `bash` call's cleanup while it reads the process table and kills what it found:
/// no child is started meanwhile.
pub fn sweeping() -> RwLockWriteGuard<'static, ()> {
    STARTS.write()
}

/// A process id marked as wonopcode's own until dropped.
#[derive(Debug)]
pub struct Own(u32);

impl Own {
    /// Marks `pid` (just started, under [`starting`]) as wonopcode's own.
    pub fn new(pid: u32) -> Self {
        OWN.lock().get_or_insert_with(HashSet::new).insert(pid);
        Self(pid)
    }
}

impl Drop for Own {
    fn drop(&mut self) {
        if let Some(set) = OWN.lock().as_mut() {
            set.remove(&self.0);
        }
    }
}

/// wonopcode's own processes now: what a process exit ends, since it runs none of the
/// destructors that would (an MCP server still starting, a hook).
pub fn all() -> Vec<u32> {
    OWN.lock()
        .as_ref()
        .map(|set| set.iter().copied().collect())
        .unwrap_or_default()
}

/// Whether `pid` is one of wonopcode's own processes.
pub fn contains(pid: u32) -> bool {
    OWN.lock().as_ref().is_some_and(|set| set.contains(&pid))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_is_own_until_its_mark_is_dropped() {
        let own = Own::new(u32::MAX - 7);
        assert!(contains(u32::MAX - 7));
        assert!(all().contains(&(u32::MAX - 7)));
        drop(own);
        assert!(!contains(u32::MAX - 7));
    }
}
