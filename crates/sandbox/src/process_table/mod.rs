//! The machine's process table, as far as wonopcode needs it to find every process a
//! command left (`wonopcode_tools`' call processes): each process's parent, state, start and
//! environment, and whether orphans come back to wonopcode (a child subreaper). Linux reads
//! `/proc`; macOS asks the kernel (`libproc`, `sysctl`), which takes `unsafe` calls, so the
//! table lives here, in the one crate that may make them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as platform;
#[cfg(target_os = "macos")]
mod macos;
mod procargs;
#[cfg(target_os = "macos")]
use macos as platform;

/// Whether wonopcode is a child subreaper, so that every process a command leaves is below
/// it (Linux; never on macOS).
static SUBREAPER: AtomicBool = AtomicBool::new(false);

/// A process as the table describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessStat {
    /// Its parent's id.
    pub parent: i32,
    /// Whether it has ended and waits to be reaped.
    pub zombie: bool,
    /// When it started, in the platform's own unit (clock ticks after boot on Linux,
    /// microseconds since the epoch on macOS): only compared with another start.
    pub start: u64,
}

/// Makes wonopcode a child subreaper where the platform has them (Linux); `Err` says why
/// not there. On macOS, where orphans go to `launchd`, `Ok` and nothing changes.
pub fn become_subreaper() -> Result<(), String> {
    let became = platform::become_subreaper()?;
    SUBREAPER.store(became, Ordering::Relaxed);
    Ok(())
}

/// Whether wonopcode is a child subreaper.
pub fn is_subreaper() -> bool {
    SUBREAPER.load(Ordering::Relaxed)
}

/// The processes a command may have left: the whole table when `whole`, else (where
/// wonopcode is a subreaper and the kernel lists children) only wonopcode's subtree.
pub fn snapshot(whole: bool) -> HashMap<i32, ProcessStat> {
    platform::snapshot(whole)
}

/// One process's entry; `None` when it is gone (or cannot be read).
pub fn read_stat(pid: i32) -> Option<ProcessStat> {
    platform::read_stat(pid)
}

/// The process's environment, each variable ended by a NUL (empty when unreadable).
pub fn environ(pid: i32) -> Vec<u8> {
    platform::environ(pid)
}
