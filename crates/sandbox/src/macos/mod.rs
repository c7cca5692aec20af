//! The macOS backend: each confined command runs under `/usr/bin/sandbox-exec` with a
//! Seatbelt profile generated from the run's policy (`crate::seatbelt`), as Codex runs its
//! commands. What Linux does with namespaces and Landlock is one profile here; what macOS
//! cannot do (a cap on a command's processes) is said by `wonopcode sandbox check`.
//!
//! Nothing here can be run on the Linux machines wonopcode is tested on: the profile is
//! tested there (`tests/seatbelt.rs`), and this code is compiled for both macOS targets in
//! CI (`scripts/check-macos.sh`).

mod confine;
mod spawn;
mod support;

pub(crate) use confine::Backend;
pub use confine::Confinement;
pub use spawn::{Process, spawn};
pub use support::{ProcessLimitKind, Support};
