//! Kernel confinement of the processes wonopcode starts on a model's behalf (the `bash`
//! tool's commands, hooks, MCP stdio servers): a [`Sandbox`] turns a [`SandboxPolicy`] (a
//! [`SandboxMode`] and its grants) into Landlock filesystem and TCP rules, a seccomp filter
//! for other sockets, a user and mount namespace for read-only holes (`.git`), and a cap on
//! the process count, all applied in the child before it execs. [`spawn`] starts a
//! command's process without `fork`, confined or not.
//!
//! The crate sits below every tool source that starts processes, so each one confines them
//! the same way. It needs `unsafe`: the `pre_exec` hook, the clone of [`spawn`], and the raw
//! system calls in the child.
#![allow(unsafe_code)]

mod confine;
mod denial;
mod filesystem;
mod mode;
mod namespace;
mod network;
mod policy;
mod process_limit;
mod protected;
mod spawn;
mod support;

pub use confine::{Confinement, Sandbox};
pub use mode::SandboxMode;
pub use policy::{
    DEFAULT_MAX_PROCESSES, HIDDEN_IN_HOME, NetworkGrant, SERVER_CACHES, SandboxPolicy,
    hidden_candidates,
};
pub use protected::{Absent, MovedAside, PROTECTED, protected_in};
pub use spawn::{Process, ProcessSpec, spawn};
pub use support::{ProcessLimitKind, Support};

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
