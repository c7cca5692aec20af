//! What this machine's kernel can enforce, found out once per process: the Landlock ABI,
//! seccomp, unprivileged user namespaces (for read-only `.git`), and how the number of a
//! command's processes can be capped.

use std::path::PathBuf;
use std::sync::OnceLock;

use super::namespace;
use super::process_limit;

/// The kernel features the sandbox uses, as found on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Support {
    /// The Landlock ABI version; `None` when the kernel has no Landlock (or it is disabled).
    pub landlock_abi: Option<i32>,
    /// Whether seccomp filters can be installed.
    pub seccomp: bool,
    /// Whether an unprivileged process can make a user and mount namespace of its own.
    pub user_namespaces: bool,
    /// How a command's process count is capped.
    pub process_limit: ProcessLimitKind,
}

/// How the number of a sandboxed command's processes is capped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessLimitKind {
    /// A `pids` cgroup of its own under this directory.
    Cgroup(PathBuf),
    /// `RLIMIT_NPROC`, counted inside the command's own user namespace.
    Rlimit,
    /// Nothing can cap it here.
    None,
}

/// The lowest Landlock ABI the sandbox enforces with (filesystem rules since ABI 1; `refer`,
/// which stops hard links out of the sandbox, since ABI 2).
pub const MIN_LANDLOCK_ABI: i32 = 2;
/// The Landlock ABI that filters TCP `bind` and `connect` by port.
pub const NETWORK_LANDLOCK_ABI: i32 = 4;
/// The Landlock ABI that scopes signals and abstract UNIX sockets to the sandbox.
pub const SCOPE_LANDLOCK_ABI: i32 = 6;

impl Support {
    /// This machine's support, probed on first use.
    pub fn detect() -> &'static Support {
        static SUPPORT: OnceLock<Support> = OnceLock::new();
        SUPPORT.get_or_init(|| {
            let user_namespaces = namespace::available();
            Support {
                landlock_abi: landlock_abi(),
                seccomp: seccomp_available(),
                user_namespaces,
                process_limit: process_limit::detect(user_namespaces),
            }
        })
    }

    /// Whether the confining modes can be enforced here (filesystem and network rules).
    pub fn enforces(&self) -> bool {
        self.landlock() && self.seccomp
    }

    /// Whether the filesystem rules can be enforced.
    pub fn landlock(&self) -> bool {
        self.landlock_abi.is_some_and(|abi| abi >= MIN_LANDLOCK_ABI)
    }

    /// Whether TCP ports can be granted one by one.
    pub fn network_ports(&self) -> bool {
        self.landlock_abi
            .is_some_and(|abi| abi >= NETWORK_LANDLOCK_ABI)
    }

    /// What `wonopcode sandbox check` prints: one line per feature, then one per mode.
    pub fn report(&self) -> Vec<String> {
        let mut lines = Vec::new();
        lines.push(match self.landlock_abi {
            Some(abi) => {
                let mut what = vec!["filesystem"];
                if abi >= NETWORK_LANDLOCK_ABI {
                    what.push("TCP bind/connect by port");
                }
                if abi >= SCOPE_LANDLOCK_ABI {
                    what.push("signal and abstract-socket scoping");
                }
                format!("landlock: ABI {abi} ({})", what.join(", "))
            }
            None => "landlock: not available (the kernel lacks it, or it is disabled)".to_owned(),
        });
        lines.push(format!(
            "seccomp: {}",
            if self.seccomp {
                "available (sockets other than AF_UNIX are denied without a network grant)"
            } else {
                "not available"
            }
        ));
        lines.push(format!(
            "user namespaces: {}",
            if self.user_namespaces {
                "available (.git and hidden paths inside writable ones are mounted read-only)"
            } else {
                "not available (.git inside the workspace stays writable)"
            }
        ));
        lines.push(format!(
            "process limit: {}",
            match &self.process_limit {
                ProcessLimitKind::Cgroup(dir) =>
                    format!("a pids cgroup per command under {}", dir.display()),
                ProcessLimitKind::Rlimit =>
                    "RLIMIT_NPROC in the command's user namespace".to_owned(),
                ProcessLimitKind::None =>
                    "none (neither a writable pids cgroup nor a user namespace)".to_owned(),
            }
        ));
        for mode in crate::SandboxMode::ALL {
            let verdict = match mode {
                crate::SandboxMode::FullAccess => "no confinement".to_owned(),
                _ if self.landlock() && self.seccomp => "enforced".to_owned(),
                _ => "cannot be enforced here (runs refuse it; --sandbox full-access runs unconfined)"
                    .to_owned(),
            };
            lines.push(format!("{mode}: {verdict}"));
        }
        lines.push(format!(
            "network grants: {}",
            if self.network_ports() {
                "enforced by TCP port; the host part is not checked by the kernel"
            } else {
                "a grant opens every TCP port (this kernel's Landlock cannot filter ports)"
            }
        ));
        lines
    }
}

/// The running kernel's Landlock ABI version.
fn landlock_abi() -> Option<i32> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute pointer, size 0 and the VERSION flag, the call only
    // returns the ABI version (or an error); it reads and writes no memory.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0_usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    i32::try_from(version).ok().filter(|v| *v > 0)
}

/// Whether the kernel has seccomp filters.
fn seccomp_available() -> bool {
    // SAFETY: PR_GET_SECCOMP takes no pointer; it returns the calling thread's mode or fails
    // with EINVAL on a kernel without seccomp.
    unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) >= 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_names_every_mode() {
        let report = Support::detect().report();
        for mode in crate::SandboxMode::ALL {
            assert!(
                report
                    .iter()
                    .any(|line| line.starts_with(&format!("{mode}: "))),
                "{report:?}"
            );
        }
    }
}
