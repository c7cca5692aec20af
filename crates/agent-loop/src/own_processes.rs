//! The long-lived child processes wonopcode itself starts for its own use (MCP servers), so
//! that the cleanup at the end of a `bash` call, which kills every process the call left
//! behind (wonopcode adopts orphans as a child subreaper), never takes one of them for a
//! leftover. Process-wide, as the subreaper is.

use std::collections::HashSet;
use std::sync::Mutex;

static OWN: Mutex<Option<HashSet<u32>>> = Mutex::new(None);

/// Marks `pid` as a process of wonopcode's own, until [`release`].
pub fn register(pid: u32) {
    if let Ok(mut own) = OWN.lock() {
        own.get_or_insert_with(HashSet::new).insert(pid);
    }
}

/// Forgets `pid` (the process ended).
pub fn release(pid: u32) {
    if let Ok(mut own) = OWN.lock()
        && let Some(set) = own.as_mut()
    {
        set.remove(&pid);
    }
}

/// Whether `pid` is one of wonopcode's own processes.
pub fn contains(pid: u32) -> bool {
    OWN.lock()
        .map(|own| own.as_ref().is_some_and(|set| set.contains(&pid)))
        .unwrap_or(false)
}
