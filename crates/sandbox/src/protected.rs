//! The names in a workspace whose contents make something run the next time a tool starts
//! there: `.git` (its hooks, `core.fsmonitor`), `.claude` (Claude Code's and wonopcode's
//! hooks and agents), `.wonopcode`, `.codex`, `.mcp.json`. They are kept from what a model
//! drives three ways, unless a `write` grant names them:
//!
//! - where one exists at the workspace's top, commands get it read-only (a read-only mount
//!   of the whole directory, `confine.rs`);
//! - where one does not, a command that makes it finds it moved aside when it ends
//!   ([`Absent`]): Landlock cannot keep one name out of a writable directory, and a mount
//!   needs something to mount over;
//! - file tools writing inside one, anywhere in the workspace, need the person at the
//!   terminal, as a command the sandbox stopped does ([`crate::Sandbox::guards_write`]).
//!
//! Below the workspace's top, commands are not checked: that would take a walk of the whole
//! tree after every command (90 ms for 5,800 directories here); a `.git` planted there takes
//! effect only for a person who runs git inside that directory.

use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

use crate::{SandboxMode, SandboxPolicy};

/// The protected names (see the module's documentation).
pub const PROTECTED: &[&str] = &[".git", ".claude", ".wonopcode", ".codex", ".mcp.json"];

/// What is added to a made protected name when it is moved aside.
const ASIDE: &str = "wonopcode-blocked";

/// The protected name `relative` (a path inside a workspace) passes through, if any.
pub fn protected_in(relative: &Path) -> Option<&'static str> {
    relative.components().find_map(|c| match c {
        Component::Normal(name) => PROTECTED.iter().copied().find(|p| name == OsStr::new(p)),
        _ => None,
    })
}

/// The protected names missing from a workspace's top when a command started, and not
/// granted: one that exists when the command ends was made during it.
#[derive(Debug, Clone, Default)]
pub struct Absent {
    paths: Vec<PathBuf>,
}

impl Absent {
    /// Those of `workspace` (canonical) under `policy`; none unless the policy lets commands
    /// write the workspace.
    pub(crate) fn of(workspace: &Path, policy: &SandboxPolicy) -> Self {
        if policy.mode != SandboxMode::WorkspaceWrite {
            return Self::default();
        }
        let paths = PROTECTED
            .iter()
            .map(|name| workspace.join(name))
            .filter(|path| path.symlink_metadata().is_err())
            .filter(|path| !policy.granted_write(path, workspace))
            .collect();
        Self { paths }
    }

    /// Moves aside each one that exists now (renamed beside itself, nothing deleted), and
    /// says what was moved where.
    pub fn move_aside_made(&self) -> Vec<MovedAside> {
        self.paths
            .iter()
            .filter(|path| path.symlink_metadata().is_ok())
            .map(|path| move_aside(path))
            .collect()
    }
}

/// A protected name a command made, and where it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MovedAside {
    /// The path the command made.
    pub made: PathBuf,
    /// Where it was moved; `Err` with the reason when it could not be.
    pub now: Result<PathBuf, String>,
}

impl std::fmt::Display for MovedAside {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = self.made.file_name().unwrap_or_default().to_string_lossy();
        write!(
            f,
            "`{name}` was made in the workspace, which commands may not do (what it holds would run the next time git, Claude Code or wonopcode starts here; a `write` grant naming it allows it): "
        )?;
        match &self.now {
            Ok(now) => write!(
                f,
                "moved aside to `{}`",
                now.file_name().unwrap_or_default().to_string_lossy()
            ),
            Err(reason) => write!(f, "it could not be moved aside ({reason}); remove it"),
        }
    }
}

/// Renames `path` to the first free `NAME.wonopcode-blocked[-N]` beside it.
fn move_aside(path: &Path) -> MovedAside {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let now = (1..=100)
        .map(|n| match n {
            1 => path.with_file_name(format!("{name}.{ASIDE}")),
            n => path.with_file_name(format!("{name}.{ASIDE}-{n}")),
        })
        .find(|aside| aside.symlink_metadata().is_err())
        .ok_or_else(|| "a hundred earlier ones are in the way".to_owned())
        .and_then(|aside| {
            std::fs::rename(path, &aside)
                .map(|()| aside)
                .map_err(|e| e.to_string())
        });
    MovedAside {
        made: path.to_path_buf(),
        now,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_through_a_protected_name_is_found_at_any_depth() {
        assert_eq!(protected_in(Path::new(".git/config")), Some(".git"));
        assert_eq!(
            protected_in(Path::new("sub/.claude/settings.json")),
            Some(".claude")
        );
        assert_eq!(protected_in(Path::new(".mcp.json")), Some(".mcp.json"));
        assert_eq!(protected_in(Path::new(".gitignore")), None);
        assert_eq!(protected_in(Path::new("src/git/.github/x")), None);
    }

    #[test]
    fn what_a_command_made_is_moved_aside_and_what_was_there_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        std::fs::create_dir(ws.join(".claude")).unwrap();
        std::fs::write(ws.join(".git.wonopcode-blocked"), "an earlier one").unwrap();
        let absent = Absent::of(&ws, &SandboxPolicy::default());
        std::fs::create_dir(ws.join(".git")).unwrap();
        std::fs::write(ws.join(".git/config"), "[core]\nfsmonitor = evil").unwrap();
        std::os::unix::fs::symlink("/etc", ws.join(".codex")).unwrap();
        std::fs::write(ws.join(".claude/settings.json"), "{}").unwrap();
        let moved = absent.move_aside_made();
        let names: Vec<_> = moved
            .iter()
            .map(|m| m.now.as_ref().unwrap().file_name().unwrap().to_owned())
            .collect();
        assert_eq!(
            names,
            [".git.wonopcode-blocked-2", ".codex.wonopcode-blocked"]
        );
        assert!(ws.join(".git.wonopcode-blocked-2/config").exists());
        assert!(
            ws.join(".claude/settings.json").exists(),
            "was there before"
        );
        assert!(!ws.join(".git").exists() && !ws.join(".codex").exists());
        assert!(
            moved[0]
                .to_string()
                .contains("moved aside to `.git.wonopcode-blocked-2`")
        );
    }
}
