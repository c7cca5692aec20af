//! A cap on how many processes one sandboxed command may have at once, so a fork bomb ends
//! in `fork: Resource temporarily unavailable` instead of taking the machine. A `pids`
//! cgroup of the command's own where one can be made (it also holds root, whom
//! `RLIMIT_NPROC` does not), else `RLIMIT_NPROC` set inside the command's user namespace,
//! where it counts only the command's own processes.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::support::ProcessLimitKind;

/// How this machine can cap a command's processes.
pub(crate) fn detect(user_namespaces: bool) -> ProcessLimitKind {
    if let Some(dir) = pids_cgroup().filter(|dir| writable(dir)) {
        remove_stale(&dir);
        return ProcessLimitKind::Cgroup(dir);
    }
    // SAFETY: geteuid cannot fail and touches no memory.
    let root = unsafe { libc::geteuid() } == 0;
    if user_namespaces && !root {
        ProcessLimitKind::Rlimit
    } else {
        ProcessLimitKind::None
    }
}

/// The directory of this process's `pids` cgroup: a cgroup v1 `pids` hierarchy, or the
/// cgroup v2 root when it delegates `pids` (a v2 cgroup below the root that holds processes
/// cannot have children with controllers).
fn pids_cgroup() -> Option<PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let membership = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    for line in mountinfo.lines() {
        let (before, after) = line.split_once(" - ")?;
        let mount_point = before.split_whitespace().nth(4)?;
        let mut after = after.split_whitespace();
        let fstype = after.next()?;
        let options = after.nth(1).unwrap_or("");
        if fstype == "cgroup" && options.split(',').any(|o| o == "pids") {
            let path = membership.lines().find_map(|l| {
                let mut parts = l.splitn(3, ':');
                let _id = parts.next()?;
                let controllers = parts.next()?;
                let path = parts.next()?;
                controllers.split(',').any(|c| c == "pids").then_some(path)
            })?;
            return Some(Path::new(mount_point).join(path.trim_start_matches('/')));
        }
        if fstype == "cgroup2" {
            let at_root = membership.lines().any(|l| l == "0::/");
            let delegated =
                std::fs::read_to_string(Path::new(mount_point).join("cgroup.subtree_control"))
                    .is_ok_and(|c| c.split_whitespace().any(|c| c == "pids"));
            if at_root && delegated {
                return Some(PathBuf::from(mount_point));
            }
        }
    }
    None
}

fn writable(dir: &Path) -> bool {
    let probe = dir.join(format!("wonopcode-probe-{}", std::process::id()));
    std::fs::create_dir(&probe).is_ok() && std::fs::remove_dir(&probe).is_ok()
}

/// Removes the empty cgroups of wonopcode processes that are gone.
fn remove_stale(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("wonopcode-")
            .and_then(|rest| rest.split('-').next())
        else {
            continue;
        };
        if !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

/// How many emptied cgroups a sandbox keeps: one for each command running at once, up to a
/// parallel round of tool calls.
const KEPT: usize = 16;

/// A sandbox's emptied cgroups, kept for its next commands: making one and removing it
/// costs about 0.1 ms a command, against a few microseconds to reuse it. Removed when the
/// sandbox is dropped (and, after a crash, by the next run's `remove_stale`).
#[derive(Debug, Default)]
pub(crate) struct CgroupPool {
    idle: parking_lot::Mutex<Vec<CommandCgroup>>,
}

impl CgroupPool {
    /// An empty cgroup under `parent` allowing `max` processes: a kept one, or a new one.
    pub(crate) fn take(self: &Arc<Self>, parent: &Path, max: u32) -> io::Result<PooledCgroup> {
        let kept = self.idle.lock().pop();
        let cgroup = match kept {
            Some(cgroup) => cgroup,
            None => CommandCgroup::new(parent, max)?,
        };
        Ok(PooledCgroup {
            cgroup: Some(cgroup),
            pool: Arc::clone(self),
        })
    }
}

/// A command's cgroup, given back to its pool when dropped if it could be emptied.
#[derive(Debug)]
pub(crate) struct PooledCgroup {
    /// `None` only while dropped.
    cgroup: Option<CommandCgroup>,
    pool: Arc<CgroupPool>,
}

impl std::ops::Deref for PooledCgroup {
    type Target = CommandCgroup;

    fn deref(&self) -> &CommandCgroup {
        // Taken only in `drop`.
        #[allow(clippy::expect_used)]
        self.cgroup.as_ref().expect("a pooled cgroup")
    }
}

impl Drop for PooledCgroup {
    fn drop(&mut self) {
        let Some(cgroup) = self.cgroup.take() else {
            return;
        };
        if cgroup.kill_all() {
            let mut idle = self.pool.idle.lock();
            if idle.len() < KEPT {
                idle.push(cgroup);
                return;
            }
        }
        // Removed outside the pool's lock: its removal may wait for the last processes.
        drop(cgroup);
    }
}

/// The `pids` cgroup of one command: created before the spawn, joined by the child before
/// exec, emptied and removed when dropped.
#[derive(Debug)]
pub(crate) struct CommandCgroup {
    dir: PathBuf,
    procs: OwnedFd,
}

impl CommandCgroup {
    /// A new cgroup under `parent` allowing `max` processes.
    pub(crate) fn new(parent: &Path, max: u32) -> io::Result<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = parent.join(format!("wonopcode-{}-{n}", std::process::id()));
        std::fs::create_dir(&dir)?;
        let made = (|| {
            std::fs::write(dir.join("pids.max"), max.to_string())?;
            let procs = std::fs::OpenOptions::new()
                .write(true)
                .open(dir.join("cgroup.procs"))?;
            Ok(OwnedFd::from(procs))
        })();
        match made {
            Ok(procs) => Ok(Self { dir, procs }),
            Err(e) => {
                let _ = std::fs::remove_dir(&dir);
                Err(e)
            }
        }
    }

    /// Moves the calling process into the cgroup. In the child, before exec.
    pub(crate) fn join(&self) -> io::Result<()> {
        // SAFETY: writes two bytes from a static buffer to an open descriptor.
        let written = unsafe { libc::write(self.procs.as_raw_fd(), b"0\n".as_ptr().cast(), 2) };
        if written == 2 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Kills every process still in the cgroup, until none is left (a fork bomb keeps
    /// forking while it is killed; the cap makes it converge). Whether it is empty now.
    pub(crate) fn kill_all(&self) -> bool {
        for _ in 0..200 {
            let Ok(listed) = std::fs::read_to_string(self.dir.join("cgroup.procs")) else {
                return false;
            };
            let pids: Vec<i32> = listed
                .lines()
                .filter_map(|l| l.trim().parse().ok())
                .collect();
            if pids.is_empty() {
                return true;
            }
            for pid in pids {
                // SAFETY: kill takes no pointer.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        false
    }
}

impl Drop for CommandCgroup {
    fn drop(&mut self) {
        self.kill_all();
        // The last killed processes may take a moment to be reaped.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        tracing::warn!(cgroup = %self.dir.display(), "could not remove a command's cgroup");
    }
}

/// Sets `RLIMIT_NPROC` of the calling process. In the child, before exec.
pub(crate) fn set_rlimit(max: u32) -> io::Result<()> {
    let limit = libc::rlimit {
        rlim_cur: libc::rlim_t::from(max),
        rlim_max: libc::rlim_t::from(max),
    };
    // SAFETY: `limit` lives for the call.
    if unsafe { libc::setrlimit(libc::RLIMIT_NPROC, &limit) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn an_emptied_cgroup_is_reused_and_removed_with_its_pool() {
        let Some(parent) = pids_cgroup().filter(|dir| writable(dir)) else {
            crate::test_skip::skipped("cgroups", "no writable pids cgroup here");
            return;
        };
        let pool = Arc::new(CgroupPool::default());
        let first = pool.take(&parent, 8).unwrap();
        let dir = first.dir.clone();
        drop(first);
        let second = pool.take(&parent, 8).unwrap();
        assert_eq!(second.dir, dir, "the emptied cgroup was not reused");
        // A process left in it is killed when the cgroup is given back.
        let mut left = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        std::fs::write(dir.join("cgroup.procs"), left.id().to_string()).unwrap();
        drop(second);
        let status = left.wait().unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(libc::SIGKILL)
        );
        assert!(dir.exists(), "kept for the next command");
        drop(pool);
        assert!(!dir.exists(), "left behind by its pool");
    }
}
