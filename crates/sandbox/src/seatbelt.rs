//! The macOS backend's policy: a Seatbelt profile (Apple's sandbox profile language, run
//! with `/usr/bin/sandbox-exec -p PROFILE`, as Codex runs its commands) generated from the
//! same resolved rules Linux turns into Landlock, seccomp and mount namespaces. Generating
//! it is plain text work, so it is compiled and tested on every platform (golden profiles,
//! and a check that the text parses as the profile language with only operations and
//! filters it has, in `tests/seatbelt.rs`); only running it needs a Mac.
//!
//! The profile starts from `(deny default)` and allows, in order: starting and signalling
//! processes of the same sandbox, what programs need of the system to run at all (sysctls,
//! user preferences, the directory service for user names, POSIX semaphores, terminals),
//! reading everything but the hidden paths, writing the writable roots but not their
//! read-only or hidden paths, and the network the policy grants. Exceptions are written as
//! `require-not` filters inside the one allow rule, never as later deny rules, so nothing
//! depends on how Seatbelt orders rules.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::{NetworkGrant, SandboxError, SandboxMode, SandboxPolicy};

/// Where `sandbox-exec` is: a fixed path, never looked up on a `PATH` a workspace could
/// put its own first in.
pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// What a profile enforces: a policy resolved for one workspace (canonical paths).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SeatbeltRules {
    /// Where writes are allowed (the workspace, granted roots, temp dirs).
    pub writable: Vec<PathBuf>,
    /// Inside those, what stays read-only (`.git` and the other protected names, the
    /// user's settings).
    pub read_only: Vec<PathBuf>,
    /// What is neither read nor written (credentials, keys).
    pub hidden: Vec<PathBuf>,
    /// The network it may reach.
    pub network: SeatbeltNetwork,
}

/// The network a profile allows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum SeatbeltNetwork {
    /// None: no socket reaches a network (nor a UNIX socket by path).
    #[default]
    None,
    /// Outgoing TCP to these ports, on any host (Seatbelt's remote filter takes `*` or
    /// `localhost` as its host, so the host part of a grant is not checked, as on Linux).
    Ports(Vec<u16>),
    /// Any.
    Any,
}

impl SeatbeltRules {
    /// `policy` resolved for `workspace` (canonical) as Linux resolves it: its writable
    /// roots and `temp` (`read-only`'s private temp dir), the hidden paths under `home`,
    /// and read-only inside them the protected names at the roots' tops (whether or not
    /// they exist yet: a Seatbelt rule needs nothing to mount over), those `nested` deeper
    /// in the workspace, and the user's settings where a root holds the home.
    pub fn of(
        policy: &SandboxPolicy,
        workspace: &Path,
        home: Option<&Path>,
        temp: Option<&Path>,
        nested: &[PathBuf],
    ) -> Self {
        if policy.mode == SandboxMode::FullAccess {
            return Self {
                network: SeatbeltNetwork::Any,
                ..Self::default()
            };
        }
        let mut writable = policy.writable_roots(workspace);
        writable.extend(temp.and_then(|t| t.canonicalize().ok()));
        writable.sort();
        writable.dedup();
        let mut read_only = crate::protected::tops(workspace, policy, home);
        if policy.mode == SandboxMode::WorkspaceWrite {
            read_only.extend(nested.iter().cloned());
        }
        read_only.extend(crate::protected::user_settings(
            home, &writable, policy, workspace,
        ));
        read_only.sort();
        read_only.dedup();
        let network = if policy.network_unrestricted() {
            SeatbeltNetwork::Any
        } else if policy.network.is_empty() {
            SeatbeltNetwork::None
        } else {
            SeatbeltNetwork::Ports(
                policy
                    .network
                    .iter()
                    .filter_map(|grant| match grant {
                        NetworkGrant::Port { port, .. } => Some(*port),
                        NetworkGrant::Any => None,
                    })
                    .collect(),
            )
        };
        Self {
            writable,
            read_only,
            hidden: policy.hidden(home),
            network,
        }
    }
}

/// The profile of `rules`; `Err` when a path cannot be written in the profile language
/// (one holding a control character), which no run should be started without.
pub fn profile(rules: &SeatbeltRules) -> Result<String, SandboxError> {
    let mut out = String::from(BASE);
    out.push_str("\n; reads: everything but the hidden paths\n");
    out.push_str(&allowed("file-read*", &[], &rules.hidden)?);
    out.push_str("\n; writes: the writable roots, but not their read-only or hidden paths\n");
    if rules.writable.is_empty() {
        out.push_str("; (none)\n");
    } else {
        let except: Vec<PathBuf> = rules
            .read_only
            .iter()
            .chain(&rules.hidden)
            .cloned()
            .collect();
        out.push_str(&allowed("file-write*", &rules.writable, &except)?);
    }
    out.push_str("\n; network\n");
    match &rules.network {
        SeatbeltNetwork::None => out.push_str("; (none)\n"),
        SeatbeltNetwork::Any => {
            out.push_str("(allow network-outbound)\n(allow network-inbound)\n");
            out.push_str(NETWORK_SERVICES);
        }
        SeatbeltNetwork::Ports(ports) => {
            let mut ports = ports.clone();
            ports.sort_unstable();
            ports.dedup();
            out.push_str("(allow network-outbound");
            for port in ports {
                let _ = write!(out, "\n  (remote tcp \"*:{port}\")");
            }
            out.push_str(")\n");
            out.push_str(NETWORK_SERVICES);
        }
    }
    Ok(out)
}

/// `(allow OPERATION …)` for paths under `roots` (anywhere when none) and not under
/// `except`.
fn allowed(operation: &str, roots: &[PathBuf], except: &[PathBuf]) -> Result<String, SandboxError> {
    let mut filters = Vec::new();
    match roots {
        [] => {}
        [root] => filters.push(format!("(subpath {})", quoted(root)?)),
        roots => {
            // One level deeper when it sits in a `require-all` with the exceptions.
            let indent = if except.is_empty() { "    " } else { "      " };
            let mut any = String::from("(require-any");
            for root in roots {
                let _ = write!(any, "\n{indent}(subpath {})", quoted(root)?);
            }
            any.push(')');
            filters.push(any);
        }
    }
    for path in except {
        filters.push(format!("(require-not (subpath {}))", quoted(path)?));
    }
    Ok(match filters.len() {
        0 => format!("(allow {operation})\n"),
        1 => format!("(allow {operation}\n  {})\n", filters[0]),
        _ => format!(
            "(allow {operation}\n  (require-all\n    {}))\n",
            filters.join("\n    ")
        ),
    })
}

/// `path` as a string of the profile language: in double quotes, `\` and `"` escaped.
fn quoted(path: &Path) -> Result<String, SandboxError> {
    let text = path.to_str().ok_or_else(|| {
        SandboxError::Io(format!(
            "{}: a path that is not UTF-8 cannot be written in a Seatbelt profile",
            path.display()
        ))
    })?;
    if text.chars().any(char::is_control) {
        return Err(SandboxError::Io(format!(
            "{}: a path with a control character cannot be written in a Seatbelt profile",
            path.display()
        )));
    }
    Ok(format!(
        "\"{}\"",
        text.replace('\\', "\\\\").replace('"', "\\\"")
    ))
}

/// What every confined command may do besides files and the network.
const BASE: &str = r#"(version 1)
(deny default)

; processes: the command and what it starts, all under this profile
(allow process-exec)
(allow process-fork)
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))

; what programs ask of the system to run at all
(allow sysctl-read)
(allow user-preference-read)
(allow mach-lookup
  (global-name "com.apple.system.opendirectoryd.libinfo"))
(allow ipc-posix-sem)
(allow pseudo-tty)
(allow file-ioctl
  (literal "/dev/ptmx")
  (regex #"^/dev/ttys[0-9]+$"))
(allow file-write-data
  (require-all
    (literal "/dev/null")
    (vnode-type CHARACTER-DEVICE)))
"#;

/// What reaching the network needs besides sockets: name resolution and TLS trust.
const NETWORK_SERVICES: &str = r#"(allow system-socket)
(allow mach-lookup
  (global-name "com.apple.SystemConfiguration.DNSConfiguration")
  (global-name "com.apple.SystemConfiguration.configd")
  (global-name "com.apple.SecurityServer")
  (global-name "com.apple.networkd")
  (global-name "com.apple.ocspd")
  (global-name "com.apple.trustd.agent"))
(allow network-outbound
  (literal "/private/var/run/mDNSResponder"))
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_and_backslashes_in_paths_are_escaped_and_control_characters_refused() {
        assert_eq!(
            quoted(Path::new(r#"/Users/me/a "b"\c"#)).unwrap(),
            r#""/Users/me/a \"b\"\\c""#
        );
        assert!(quoted(Path::new("/tmp/a\nb")).is_err());
    }
}
