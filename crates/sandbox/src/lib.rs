//! Kernel confinement of the processes wonopcode starts on a model's behalf (the `bash`
//! tool's commands, hooks, MCP stdio servers): a [`Sandbox`] turns a [`SandboxPolicy`] (a
//! [`SandboxMode`] and its grants) into what the platform's kernel enforces, and [`spawn`]
//! starts a command's process, confined or not.
//!
//! One policy, two backends. The policy, its protected names and hidden paths, and the
//! explanation of a denial are the same everywhere (this directory). Linux (`linux/`)
//! enforces them with Landlock filesystem and TCP rules, a seccomp filter for other
//! sockets, a user and mount namespace for read-only holes (`.git`) and a cap on the
//! process count, applied in the child before it execs, started without `fork`. macOS
//! (`macos/`) runs the command under `sandbox-exec` with a Seatbelt profile generated from
//! the same rules ([`seatbelt`], tested on every platform).
//!
//! The crate sits below every tool source that starts processes, so each one confines them
//! the same way. It needs `unsafe`: the `pre_exec` hook, the clone of [`spawn`], the raw
//! system calls in the child, and the kernel's process table ([`process_table`]).
#![allow(unsafe_code)]

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
compile_error!(
    "wonopcode's sandbox has backends for Linux and macOS only (docs/decisions.md, Windows)"
);

mod denial;
mod dir_index;
mod git_hooks;
mod hard_links;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "macos")]
mod macos;
mod mode;
mod policy;
mod process_spec;
pub mod process_table;
mod protected;
mod sandbox;
pub mod seatbelt;
pub mod test_skip;

#[cfg(target_os = "linux")]
pub use linux::{Confinement, Process, ProcessLimitKind, Support, spawn};
#[cfg(target_os = "macos")]
pub use macos::{Confinement, Process, ProcessLimitKind, Support, spawn};
pub use mode::SandboxMode;
pub use policy::{
    DEFAULT_MAX_PROCESSES, HIDDEN_IN_HOME, NetworkGrant, SERVER_CACHES, SandboxPolicy,
    hidden_candidates,
};
pub use process_spec::ProcessSpec;
pub use protected::{AUTO_RUN_IN_HOME, Absent, MovedAside, PROTECTED, protected_in};
pub use sandbox::Sandbox;

/// Why a sandbox could not be set up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SandboxError {
    /// The kernel cannot enforce the mode asked for.
    #[error("{0}")]
    Unsupported(String),
    /// Building the Landlock ruleset failed.
    #[error("sandbox: landlock: {0}")]
    Landlock(String),
    /// Building the seccomp filter failed.
    #[error("sandbox: seccomp: {0}")]
    Seccomp(String),
    /// A path of the policy could not be used.
    #[error("sandbox: {0}")]
    Io(String),
}
