//! The Landlock ruleset of a sandboxed command: read everywhere but the hidden paths, write
//! only in the writable roots (and the few devices every program writes to), TCP only to the
//! granted ports, and no signals or abstract sockets beyond the sandbox.
//!
//! Landlock rules only add rights beneath a path. A path is hidden by granting its parent
//! directory the right to list (and, in a writable root, to create and remove entries), and
//! every sibling on the way down its full rights, one rule each. In a writable root that
//! leaves the directories on the way unable to take new files (one made there could be
//! created but not written), so where the command's namespace covers the hidden paths
//! inside writable roots with a mount (`namespace.rs`), those roots are granted whole.

use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath,
    PathFd, Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, Scope,
};

use super::support::{NETWORK_LANDLOCK_ABI, SCOPE_LANDLOCK_ABI};
use crate::SandboxError;

/// Devices every program may read and write: output thrown away, zeros, randomness. Not
/// `/dev/tty`: a command has no terminal (it leads a session of its own).
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// What the ruleset is built from.
pub(crate) struct Layout<'a> {
    /// The kernel's Landlock ABI.
    pub abi: i32,
    /// Roots the command may write beneath.
    pub writable: &'a [PathBuf],
    /// Paths it may not read (nor write).
    pub hidden: &'a [PathBuf],
    /// Whether every process's namespace covers the hidden paths inside writable roots.
    pub covered: bool,
    /// TCP ports it may connect to; `None`: every port (no network rules).
    pub ports: Option<&'a [u16]>,
}

/// Builds the ruleset; the child only has to call `restrict_self` on it.
pub(crate) fn ruleset(layout: &Layout<'_>) -> Result<RulesetCreated, SandboxError> {
    let abi = ABI::from(layout.abi);
    let failed = |e: landlock::RulesetError| SandboxError::Landlock(e.to_string());
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))
        .map_err(failed)?;
    if layout.ports.is_some() && layout.abi >= NETWORK_LANDLOCK_ABI {
        ruleset = ruleset
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
            .map_err(failed)?;
    }
    if layout.abi >= SCOPE_LANDLOCK_ABI {
        ruleset = ruleset
            .scope(Scope::AbstractUnixSocket | Scope::Signal)
            .map_err(failed)?;
    }
    let mut created = ruleset.create().map_err(failed)?;
    let mut rules = Vec::new();
    grant_except(
        Path::new("/"),
        layout.hidden,
        AccessFs::from_read(abi),
        &mut rules,
    );
    // Covered, the hidden paths inside writable roots need no exception in them.
    let uncovered: Vec<PathBuf> = layout
        .hidden
        .iter()
        .filter(|h| !layout.covered || !layout.writable.iter().any(|w| h.starts_with(w)))
        .cloned()
        .collect();
    for root in layout.writable {
        grant_except(root, &uncovered, AccessFs::from_all(abi), &mut rules);
    }
    for device in DEVICES {
        rules.push((
            PathBuf::from(device),
            AccessFs::ReadFile | AccessFs::WriteFile,
        ));
    }
    for (path, access) in rules {
        let Ok(fd) = PathFd::new(&path) else {
            continue; // gone since it was listed, or a device this machine lacks
        };
        let access = if path.is_dir() {
            access
        } else {
            access & AccessFs::from_file(abi)
        };
        created = created
            .add_rule(PathBeneath::new(fd, access))
            .map_err(failed)?;
    }
    for port in layout.ports.unwrap_or_default() {
        created = created
            .add_rule(NetPort::new(*port, AccessNet::ConnectTcp))
            .map_err(failed)?;
    }
    Ok(created)
}

/// Rules giving `access` beneath `root`, except beneath the hidden paths.
fn grant_except(
    root: &Path,
    hidden: &[PathBuf],
    access: BitFlags<AccessFs>,
    rules: &mut Vec<(PathBuf, BitFlags<AccessFs>)>,
) {
    if hidden.iter().any(|h| root.starts_with(h)) {
        return;
    }
    if !hidden.iter().any(|h| h.starts_with(root)) {
        rules.push((root.to_path_buf(), access));
        return;
    }
    // An ancestor of a hidden path: its entries may be listed, created and removed (as the
    // access allows), but its files are reached one entry at a time below.
    let file_rights = AccessFs::ReadFile
        | AccessFs::WriteFile
        | AccessFs::Execute
        | AccessFs::Truncate
        | AccessFs::IoctlDev;
    rules.push((root.to_path_buf(), access & !file_rights));
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_symlink()) {
            // A rule follows a link to its target: a link into or above a hidden path would
            // open it. Others get their target's rule.
            let Ok(target) = path.canonicalize() else {
                continue;
            };
            if hidden
                .iter()
                .any(|h| target.starts_with(h) || h.starts_with(&target))
            {
                continue;
            }
            rules.push((target, access));
            continue;
        }
        grant_except(&path, hidden, access, rules);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hidden_path_gets_no_rule_and_its_siblings_do() {
        let home = tempfile::tempdir().unwrap();
        let home = home.path().canonicalize().unwrap();
        for dir in [".ssh", "src", ".config/gcloud", ".config/git"] {
            std::fs::create_dir_all(home.join(dir)).unwrap();
        }
        std::os::unix::fs::symlink(home.join(".ssh"), home.join("keys")).unwrap();
        std::os::unix::fs::symlink(home.join("src"), home.join("code")).unwrap();
        let hidden = [home.join(".ssh"), home.join(".config/gcloud")];
        let mut rules = Vec::new();
        let read = AccessFs::from_read(ABI::V7);
        grant_except(&home, &hidden, read, &mut rules);
        let ruled: Vec<&PathBuf> = rules.iter().map(|(p, _)| p).collect();
        assert!(
            !ruled.iter().any(|p| p.starts_with(home.join(".ssh"))),
            "{ruled:?}"
        );
        assert!(
            !ruled
                .iter()
                .any(|p| p.starts_with(home.join(".config/gcloud")))
        );
        assert!(ruled.contains(&&home.join("src")));
        assert!(ruled.contains(&&home.join(".config/git")));
        // The ancestors may only be listed.
        let of = |path: PathBuf| rules.iter().find(|(p, _)| *p == path).map(|(_, a)| *a);
        assert_eq!(of(home.clone()), Some(BitFlags::from(AccessFs::ReadDir)));
        assert_eq!(
            of(home.join(".config")),
            Some(BitFlags::from(AccessFs::ReadDir))
        );
        assert_eq!(of(home.join("src")), Some(read));
    }
}
