//! Every process a `bash` call started, found and killed when the call ends, including those
//! that left its process group (`setsid`, a double fork, `nohup … &`).
//!
//! Three things make that possible on Linux:
//! - wonopcode is a *child subreaper* (`PR_SET_CHILD_SUBREAPER`): a process orphaned below it
//!   is re-parented to wonopcode, not to init, so it stays in wonopcode's tree;
//! - every call's command gets a marker in its environment (`WONOPCODE_CALL_ID`), inherited
//!   by everything it starts unless the environment is cleared;
//! - when the call ends, `/proc` is read (first only wonopcode's own subtree, since
//!   everything a call leaves is in it; the whole table once something is found, and where
//!   the kernel does not list children). The call's root and its descendants, every
//!   process carrying the call's marker (only those started since the call's root can), and
//!   every process adopted by wonopcode since the call began (that is not another running
//!   call's, nor one of wonopcode's own children such as an MCP server, a hook or git,
//!   `wonopcode_os::own_processes`) are stopped, killed and, when adopted, reaped.
//!   Children are started and recorded under a lock the cleanup takes while it looks, so a
//!   shell or server started but not yet recorded is never taken for a leftover.
//!
//! On macOS there is no subreaper: a process that leaves the call's group is found by its
//! marker, read from the kernel's process list (`libproc` and `sysctl(KERN_PROCARGS2)`),
//! and orphans go to `launchd`, so nothing is adopted and nothing needs reaping.
//!
//! A process that clears its environment *and* leaves while another call runs at the same
//! time may be counted to whichever of the two calls ends first; both are killed either way.
//! The process table is the platform's (`wonopcode_sandbox::process_table`); the rest is
//! written once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use parking_lot::Mutex;
use wonopcode_os::own_processes;
use wonopcode_sandbox::process_table::{self as proc_table, ProcessStat as Stat};

/// The environment variable that marks a call's processes.
pub const MARKER_VARIABLE: &str = "WONOPCODE_CALL_ID";

/// Running calls: root process id → marker, so that one call's end leaves another's alone.
static RUNNING: Mutex<Option<HashMap<i32, String>>> = Mutex::new(None);

/// The processes of one running `bash` call. Dropping it kills them all.
pub struct CallProcesses {
    root: i32,
    marker: String,
    /// When the root started, in clock ticks after boot: an adopted process older than this
    /// belongs to something else.
    root_start: u64,
    /// Whether [`Self::kill_all`] ran (dropping then has nothing left to do).
    ended: bool,
}

impl CallProcesses {
    /// A fresh marker for the next call's environment. Also makes wonopcode a subreaper (once;
    /// harmless to repeat).
    pub fn next_marker() -> String {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        become_subreaper();
        format!(
            "{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        )
    }

    /// Starts tracking the call whose command is `root` and whose environment has `marker`.
    pub fn track(root: u32, marker: String) -> Self {
        let root = i32::try_from(root).unwrap_or(i32::MAX);
        // Unknown (the root already ended): no adopted process counts as the call's, only
        // marked ones and descendants.
        let root_start = proc_table::read_stat(root).map_or(u64::MAX, |s| s.start);
        RUNNING
            .lock()
            .get_or_insert_with(HashMap::new)
            .insert(root, marker.clone());
        Self {
            root,
            marker,
            root_start,
            ended: false,
        }
    }

    /// Kills the call's process group and every process found to belong to the call, and
    /// reaps those wonopcode adopted. Repeats while new ones appear (a fork loop), a few times.
    pub fn kill_all(&mut self) {
        self.ended = true;
        let _ = killpg(Pid::from_raw(self.root), Signal::SIGKILL);
        // Whether the last look at the process table saw a process wonopcode adopted during the call
        // (live or a zombie): only then is there something to reap.
        let mut adopted = true;
        // The first look reads only wonopcode's subtree; once something of the call is found
        // (a command that left processes, a fork bomb), every later look reads the whole table,
        // which does not depend on reading parent links while they change.
        for look in 0..8 {
            // No child of wonopcode's is started (and not yet recorded) while the table is
            // read and the kills are sent.
            let sweeping = own_processes::sweeping();
            let found;
            (found, adopted) = self.find(look > 0);
            if found.is_empty() {
                break;
            }
            // Stop first, so that a process that forks cannot outrun the kills.
            for pid in &found {
                let _ = kill(Pid::from_raw(*pid), Signal::SIGSTOP);
            }
            for pid in &found {
                let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
            }
            drop(sweeping);
            self.reap_adopted();
        }
        if adopted {
            self.reap_adopted();
        }
    }

    /// Whether `pid`, as the process table describes it, was adopted by wonopcode (`me`) during this
    /// call and is nobody else's.
    fn adopted(&self, me: i32, pid: i32, stat: &Stat, running: &HashMap<i32, String>) -> bool {
        stat.parent == me
            && pid != self.root
            && stat.start >= self.root_start
            && !running.contains_key(&pid)
            && !own_processes::contains(pid.unsigned_abs())
    }

    /// The call's live processes but its root (the root is the caller's to reap), and
    /// whether any process (live or a zombie) was adopted during the call.
    ///
    /// Only processes started since the call's root can carry its fresh marker, so only
    /// their environments are read (when the root's start is unknown, every one is).
    fn find(&self, whole: bool) -> (Vec<i32>, bool) {
        let me = i32::try_from(std::process::id()).unwrap_or(0);
        let table = proc_table::snapshot(whole);
        let running = running_calls();
        let others: Vec<&String> = running
            .iter()
            .filter(|(root, _)| **root != self.root)
            .map(|(_, marker)| marker)
            .collect();
        let marked_since = match self.root_start {
            u64::MAX => 0,
            start => start,
        };
        let adopted = table
            .iter()
            .any(|(pid, stat)| self.adopted(me, *pid, stat, &running));
        let mut found: Vec<i32> = table
            .iter()
            .filter(|(pid, stat)| {
                **pid != me && !stat.zombie && stat.start >= marked_since && {
                    let environ = proc_table::environ(**pid);
                    has_marker(&environ, &self.marker)
                        || (self.adopted(me, **pid, stat, &running)
                            && !others.iter().any(|m| has_marker(&environ, m)))
                }
            })
            .map(|(pid, _)| *pid)
            .collect();
        found.push(self.root);
        // Everything below what was found belongs to the call too.
        let mut at = 0;
        while at < found.len() {
            let parent = found[at];
            found.extend(
                table
                    .iter()
                    .filter(|(pid, stat)| stat.parent == parent && !found.contains(pid))
                    .map(|(pid, _)| *pid)
                    .collect::<Vec<_>>(),
            );
            at += 1;
        }
        found.retain(|pid| *pid != self.root && table.get(pid).is_some_and(|s| !s.zombie));
        (found, adopted)
    }

    /// Waits for the processes wonopcode adopted during this call and that have ended, so
    /// that none is left a zombie. Never waits for its root or another call's (their
    /// spawners wait for them), nor for a process older than the call.
    fn reap_adopted(&self) {
        use nix::sys::wait::{WaitPidFlag, waitpid};
        let me = i32::try_from(std::process::id()).unwrap_or(0);
        for _ in 0..20 {
            // Held until the waits are done: a call's root started meanwhile, ended and
            // not yet waited for by its spawner, would look adopted.
            let sweeping = own_processes::sweeping();
            let running = running_calls();
            let adopted: Vec<i32> = proc_table::snapshot(true)
                .into_iter()
                .filter(|(pid, stat)| self.adopted(me, *pid, stat, &running))
                .map(|(pid, _)| pid)
                .collect();
            let still_alive = adopted
                .into_iter()
                .filter(|pid| {
                    matches!(
                        waitpid(Pid::from_raw(*pid), Some(WaitPidFlag::WNOHANG)),
                        Ok(nix::sys::wait::WaitStatus::StillAlive)
                    )
                })
                .count();
            if still_alive == 0 {
                break;
            }
            drop(sweeping);
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}

impl Drop for CallProcesses {
    fn drop(&mut self) {
        if !self.ended {
            self.kill_all();
        }
        if let Some(running) = RUNNING.lock().as_mut() {
            running.remove(&self.root);
        }
    }
}

fn running_calls() -> HashMap<i32, String> {
    RUNNING.lock().clone().unwrap_or_default()
}

fn become_subreaper() {
    static DONE: std::sync::Once = std::sync::Once::new();
    DONE.call_once(|| {
        if let Err(e) = proc_table::become_subreaper() {
            tracing::warn!("cannot become a child subreaper: {e}; a command's detached processes may outlive it");
        }
    });
}

/// Whether `environ` (the variables, each ended by a NUL) marks the call `marker`.
fn has_marker(environ: &[u8], marker: &str) -> bool {
    let wanted = format!("{MARKER_VARIABLE}={marker}");
    environ.split(|b| *b == 0).any(|v| v == wanted.as_bytes())
}
