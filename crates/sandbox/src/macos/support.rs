//! What macOS can enforce: Seatbelt, where `/usr/bin/sandbox-exec` is there.

use std::path::Path;
use std::sync::OnceLock;

use crate::seatbelt::SANDBOX_EXEC;

/// What this Mac offers the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Support {
    /// Whether `sandbox-exec` is there to run a profile.
    pub seatbelt: bool,
    /// How a command's process count is capped (never, on macOS).
    pub process_limit: ProcessLimitKind,
}

/// How the number of a sandboxed command's processes is capped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessLimitKind {
    /// Nothing can cap it here: macOS has no per-command limit (its `RLIMIT_NPROC` counts
    /// all of the user's processes).
    None,
}

impl Support {
    /// This machine's support, looked up on first use.
    pub fn detect() -> &'static Support {
        static SUPPORT: OnceLock<Support> = OnceLock::new();
        SUPPORT.get_or_init(|| Support {
            seatbelt: Path::new(SANDBOX_EXEC).is_file(),
            process_limit: ProcessLimitKind::None,
        })
    }

    /// Whether the confining modes can be enforced here.
    pub fn enforces(&self) -> bool {
        self.seatbelt
    }

    /// What `wonopcode sandbox check` prints: one line per feature, then one per mode.
    pub fn report(&self) -> Vec<String> {
        let mut lines = vec![
            format!(
                "seatbelt: {}",
                if self.seatbelt {
                    "available (each command runs under /usr/bin/sandbox-exec with a profile made from the policy)"
                } else {
                    "not available (/usr/bin/sandbox-exec is missing)"
                }
            ),
            "read-only holes: .git, the other protected names and your settings inside writable roots are read-only by profile rules, existing or not".to_owned(),
            "process limit: none (macOS has no per-command process cap; max_processes is not enforced)".to_owned(),
        ];
        for mode in crate::SandboxMode::ALL {
            let verdict = match mode {
                crate::SandboxMode::FullAccess => "no confinement".to_owned(),
                _ if self.seatbelt => "enforced".to_owned(),
                _ => "cannot be enforced here (runs refuse it; --sandbox full-access runs unconfined)"
                    .to_owned(),
            };
            lines.push(format!("{mode}: {verdict}"));
        }
        lines.push(
            "network grants: outgoing TCP by port (Seatbelt's rules name a port on any host, so the host part is not checked, as on Linux); without a grant no socket reaches a network, UNIX sockets by path included"
                .to_owned(),
        );
        lines
    }
}
