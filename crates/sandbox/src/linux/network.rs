//! The seccomp filter of a sandboxed command: without a network grant, no socket at all
//! (and no io_uring, which can open sockets past the filter); with port grants, TCP
//! sockets (Landlock then checks the port of every `connect`), and UDP only when a grant
//! names a host that must be looked up.
//!
//! `AF_UNIX` sockets are refused too: Landlock does not check `connect` to a socket file,
//! so a command could otherwise reach any daemon of the user's (tmux, the session bus,
//! ssh-agent, docker) and have it act unconfined. A connected pair (`socketpair`), which
//! reaches nothing outside, stays allowed.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};

use crate::SandboxError;

/// What the filter lets through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sockets {
    /// None.
    None,
    /// TCP over IPv4 and IPv6; UDP too when `datagrams` (name lookups).
    Tcp {
        /// Whether UDP sockets are allowed.
        datagrams: bool,
    },
}

/// The compiled filter.
pub(crate) fn filter(sockets: Sockets) -> Result<BpfProgram, SandboxError> {
    let failed = |e: seccompiler::BackendError| SandboxError::Seccomp(e.to_string());
    let condition = |arg: u8, op: SeccompCmpOp, value: u64| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value).map_err(failed)
    };
    let rule = |conditions: Vec<SeccompCondition>| SeccompRule::new(conditions).map_err(failed);
    let unix = libc::AF_UNIX as u64;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    let socket_rules = match sockets {
        // No condition: every `socket` call is refused.
        Sockets::None => Vec::new(),
        Sockets::Tcp { datagrams } => {
            let mut denied = vec![rule(vec![
                condition(0, SeccompCmpOp::Ne, libc::AF_INET as u64)?,
                condition(0, SeccompCmpOp::Ne, libc::AF_INET6 as u64)?,
            ])?];
            let mut kinds = vec![
                libc::SOCK_RAW,
                libc::SOCK_RDM,
                libc::SOCK_SEQPACKET,
                10, // SOCK_PACKET (obsolete, still accepted by the kernel)
            ];
            if !datagrams {
                kinds.push(libc::SOCK_DGRAM);
            }
            for family in [libc::AF_INET, libc::AF_INET6] {
                for kind in &kinds {
                    denied.push(rule(vec![
                        condition(0, SeccompCmpOp::Eq, family as u64)?,
                        condition(1, SeccompCmpOp::MaskedEq(0xf), *kind as u64)?,
                    ])?);
                }
            }
            denied
        }
    };
    rules.insert(libc::SYS_socket, socket_rules);
    rules.insert(
        libc::SYS_socketpair,
        vec![rule(vec![condition(0, SeccompCmpOp::Ne, unix)?])?],
    );
    for call in [
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ] {
        rules.insert(call, Vec::new());
    }
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|e: seccompiler::BackendError| SandboxError::Seccomp(e.to_string()))?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(failed)?;
    filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| SandboxError::Seccomp(e.to_string()))
}
