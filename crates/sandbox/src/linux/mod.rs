//! The Linux backend: Landlock (filesystem, TCP ports), seccomp (other sockets), user and
//! mount namespaces (read-only holes, covered secrets), cgroups or `RLIMIT_NPROC` (the
//! process cap), and a `fork`-free spawn that applies them in the child.

mod confine;
mod filesystem;
mod namespace;
mod network;
mod process_limit;
mod spawn;
mod support;

pub(crate) use confine::Backend;
pub use confine::Confinement;
pub use spawn::{Process, spawn};
pub use support::{ProcessLimitKind, Support};
