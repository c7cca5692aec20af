//! What runs later, outside the sandbox, when the person goes on working: the names in a
//! workspace whose contents make something run the next time a tool starts there
//! ([`PROTECTED`]: `.git` with its hooks and `core.fsmonitor`, Claude Code's, Codex's and
//! wonopcode's settings, the hook managers' directories and files, direnv's `.envrc`, an
//! editor's `.vscode`), the directory git's `core.hooksPath` names ([`crate::git_hooks`]),
//! and, where a writable root holds the home directory, the shell's start-up files and the
//! other places that run at a login ([`AUTO_RUN_IN_HOME`]). They are kept from what a model
//! drives three ways, unless a `write` grant names them:
//!
//! - where one exists at the workspace's top, commands get it read-only (a read-only mount
//!   of the whole directory, `confine.rs`);
//! - where one does not, a command that makes it finds it moved aside when it ends
//!   ([`Absent`]): Landlock cannot keep one name out of a writable directory, and a mount
//!   needs something to mount over;
//! - below the top, the same two rules hold for every subdirectory ([`Nested`]): the ones
//!   a walk found are mounted read-only, and after each command a walk moves aside the new
//!   ones it made;
//! - file tools writing inside one, anywhere in the workspace, need the person at the
//!   terminal, as a command the sandbox stopped does ([`crate::Sandbox::guards_write`]).
//!
//! Below the top, "made by the command" is told by the name's change time (`ctime`), which a
//! process cannot set back: one that appeared since the last walk and changed before the
//! command started was made by the person (in their own terminal) and is kept, and
//! protected from then on. The walk after each command looks at every directory of the
//! workspace except the protected ones themselves, and reads those whose change time moved
//! ([`crate::dir_index`], `benches/sandbox.rs`).

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::dir_index::DirIndex;
use crate::{SandboxMode, SandboxPolicy};

/// The protected names (see the module's documentation), at any depth of a workspace: what
/// each holds runs later, unconfined.
pub const PROTECTED: &[&str] = &[
    // git: hooks, `core.fsmonitor`, `core.hooksPath`, filters, aliases.
    ".git",
    // Agents' settings: hooks, MCP servers, agents.
    ".claude",
    ".wonopcode",
    ".codex",
    ".mcp.json",
    // Hook managers: husky's and plain hook directories (`core.hooksPath` names them),
    // lefthook's and pre-commit's configs, whose commands the installed hooks run.
    ".husky",
    ".githooks",
    ".lefthook",
    "lefthook.yml",
    ".lefthook.yml",
    "lefthook-local.yml",
    ".lefthook-local.yml",
    ".pre-commit-config.yaml",
    // direnv runs `.envrc` on `cd`; an editor runs `.vscode/tasks.json`'s `folderOpen`
    // tasks and the shells its settings name.
    ".envrc",
    ".vscode",
];

/// Under the home directory, what a shell, git or a desktop session runs or reads as code
/// at its next start: kept like [`PROTECTED`] where a writable root holds the home (the
/// home as the workspace, or under `/tmp`).
pub const AUTO_RUN_IN_HOME: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".kshrc",
    ".mkshrc",
    ".cshrc",
    ".tcshrc",
    ".login",
    ".inputrc",
    ".config/fish",
    ".gitconfig",
    ".config/git",
    ".config/autostart",
    ".config/systemd",
    ".config/environment.d",
    ".pam_environment",
    ".xprofile",
    ".xinitrc",
    ".xsession",
    // On `PATH` before the system's directories in the usual start-up files: a program
    // planted here would stand in for `git` or `ls`.
    "bin",
    ".local/bin",
];

/// The user's own settings that make something run or widen what runs — wonopcode's config
/// (MCP servers, permission rules), Claude Code's and Codex's settings, hooks and agents —
/// relative to the home directory. Commands never reach them but where a writable root
/// holds the home (a home under `/tmp`): there they are kept read-only, as the workspace's
/// protected names are ([`user_settings`]).
const USER_SETTINGS_IN_HOME: &[&str] = &[".claude", ".codex", ".wonopcode", ".config/wonopcode"];

/// The directories of [`USER_SETTINGS_IN_HOME`] under `home` and the variables that move
/// them (`XDG_CONFIG_HOME`, `CODEX_HOME`, `CLAUDE_CONFIG_DIR`), where they exist inside a
/// `writable` root and no `write` grant names them.
pub(crate) fn user_settings(
    home: Option<&Path>,
    writable: &[PathBuf],
    policy: &SandboxPolicy,
    workspace: &Path,
) -> Vec<PathBuf> {
    let mut candidates: Vec<PathBuf> = home
        .map(|home| USER_SETTINGS_IN_HOME.iter().map(|r| home.join(r)).collect())
        .unwrap_or_default();
    for (variable, below) in [
        ("XDG_CONFIG_HOME", "wonopcode"),
        ("CODEX_HOME", ""),
        ("CLAUDE_CONFIG_DIR", ""),
    ] {
        if let Some(base) = std::env::var_os(variable).map(PathBuf::from)
            && base.is_absolute()
        {
            candidates.push(base.join(below));
        }
    }
    let mut found: Vec<PathBuf> = candidates
        .into_iter()
        .filter_map(|p| p.canonicalize().ok())
        .filter(|p| writable.iter().any(|w| p.starts_with(w)))
        .filter(|p| !policy.granted_write(p, workspace))
        // A workspace there (the person's own settings, edited on purpose) stays writable.
        .filter(|p| !workspace.starts_with(p))
        .collect();
    found.sort();
    found.dedup();
    found
}

/// What is added to a made protected name when it is moved aside.
const ASIDE: &str = "wonopcode-blocked";

/// Every protected path that is not below the top of a workspace: [`at_tops`], the hooks
/// directory git's `core.hooksPath` names, and [`AUTO_RUN_IN_HOME`] under `home`, each
/// where it lies inside a root commands may write and no `write` grant names it. The ones
/// that exist are read-only to commands; one made during a command is moved aside.
pub(crate) fn tops(workspace: &Path, policy: &SandboxPolicy, home: Option<&Path>) -> Vec<PathBuf> {
    let mut tops = at_tops(workspace, policy);
    if policy.mode != SandboxMode::WorkspaceWrite {
        return tops;
    }
    let writable = policy.writable_roots(workspace);
    let mut elsewhere: Vec<PathBuf> = crate::git_hooks::hooks_dir(workspace)
        .into_iter()
        .chain(policy.read_only.iter().map(|p| crate::policy::real(p)))
        .chain(
            home.into_iter()
                .flat_map(|home| AUTO_RUN_IN_HOME.iter().map(|r| home.join(r))),
        )
        .collect();
    elsewhere.retain(|path| {
        writable.iter().any(|root| path.starts_with(root))
            && !policy.granted_write(path, workspace)
            // A workspace inside one (`~/bin` opened on purpose) stays the person's to edit.
            && !workspace.starts_with(path)
            && protected_in(path.strip_prefix(workspace).unwrap_or(Path::new(""))).is_none()
    });
    for path in elsewhere {
        if !tops.contains(&path) {
            tops.push(path);
        }
    }
    tops
}

/// The protected names at the top of each root commands may write under `policy` (the
/// workspace, the shared temp dirs: a `/tmp/.git` is found by git anywhere below `/tmp`),
/// other than those a `write` grant names. None unless commands may write.
pub(crate) fn at_tops(workspace: &Path, policy: &SandboxPolicy) -> Vec<PathBuf> {
    if policy.mode != SandboxMode::WorkspaceWrite {
        return Vec::new();
    }
    policy
        .writable_roots(workspace)
        .into_iter()
        .filter(|root| root == workspace || !policy.granted_write(root, workspace))
        .flat_map(|root| PROTECTED.iter().map(move |name| root.join(name)))
        .filter(|path| !policy.granted_write(path, workspace))
        .collect()
}

/// The protected name `relative` (a path inside a workspace) passes through, if any.
pub fn protected_in(relative: &Path) -> Option<&'static str> {
    relative.components().find_map(|c| match c {
        Component::Normal(name) => PROTECTED.iter().copied().find(|p| name == OsStr::new(p)),
        _ => None,
    })
}

/// The protected names missing from the top of a workspace and of the other writable roots
/// when a command started, and not granted: one that exists when the command ends was made
/// during it.
#[derive(Debug, Clone, Default)]
pub struct Absent {
    paths: Vec<PathBuf>,
    workspace: PathBuf,
    /// The workspace's subdirectories, and when the command was prepared.
    below: Option<(Arc<Nested>, SystemTime)>,
}

impl Absent {
    /// Those of `workspace` (canonical) under `policy`, and `nested`, the workspace's index
    /// of the ones below its top; none unless the policy lets commands write the workspace.
    pub(crate) fn of(workspace: &Path, policy: &SandboxPolicy, nested: Arc<Nested>) -> Self {
        if policy.mode != SandboxMode::WorkspaceWrite {
            return Self::default();
        }
        let paths = nested
            .tops
            .iter()
            .filter(|path| path.symlink_metadata().is_err())
            .cloned()
            .collect();
        Self {
            paths,
            workspace: workspace.to_path_buf(),
            below: Some((nested, SystemTime::now())),
        }
    }

    /// Moves aside each one that exists now (renamed beside itself, nothing deleted), and
    /// the ones made below the top (a walk, [`Nested::sweep`]), and says what was moved
    /// where.
    pub fn move_aside_made(&self) -> Vec<MovedAside> {
        let mut moved: Vec<MovedAside> = self
            .paths
            .iter()
            .filter(|path| path.symlink_metadata().is_ok())
            .map(|path| move_aside(path, &self.workspace))
            .collect();
        if let Some((nested, started)) = &self.below {
            moved.extend(nested.sweep(*started));
        }
        moved
    }
}

/// The protected names in a workspace's subdirectories that were not made by a command,
/// as the last walk found them: mounted read-only for every command, so that a command can
/// change none of them; a new one a command made is moved aside after it.
#[derive(Debug)]
pub(crate) struct Nested {
    workspace: PathBuf,
    /// Paths a `write` grant names: neither walked nor checked.
    granted: Vec<PathBuf>,
    /// The protected paths not below the workspace's top ([`tops`]), worked out once.
    pub(crate) tops: Vec<PathBuf>,
    /// `None` until the first command's walk.
    known: parking_lot::Mutex<Option<BTreeSet<PathBuf>>>,
    /// The workspace's directories as the last walk read them, and the files hard-linked
    /// from elsewhere it found.
    index: parking_lot::Mutex<DirIndex>,
}

/// How much earlier than a command's start a name may have changed and still count as
/// made during it: file systems keep change times coarser than the clock.
const CLOCK_SLACK: Duration = Duration::from_secs(1);

impl Nested {
    /// The index of `workspace` (canonical) under `policy`, `home` (canonical) holding the
    /// user's start-up files.
    pub(crate) fn new(workspace: &Path, policy: &SandboxPolicy, home: Option<&Path>) -> Self {
        Self {
            workspace: workspace.to_path_buf(),
            granted: policy.write_grants(workspace),
            tops: tops(workspace, policy, home),
            known: parking_lot::Mutex::new(None),
            index: parking_lot::Mutex::new(DirIndex::default()),
        }
    }

    /// The files (and directories of them) hard-linked from elsewhere, to mount read-only
    /// ([`crate::hard_links`]); the first call walks the workspace.
    pub(crate) fn linked(&self) -> Vec<PathBuf> {
        drop(self.existing());
        self.index.lock().covers().to_vec()
    }

    /// The protected names below the top that exist now, as far as the walks know; the
    /// first call walks the workspace.
    pub(crate) fn existing(&self) -> Vec<PathBuf> {
        let mut known = self.known.lock();
        known
            .get_or_insert_with(|| self.walk().into_iter().collect())
            .iter()
            .cloned()
            .collect()
    }

    /// The protected path of [`Self::tops`] that holds `path` (canonical), if any.
    pub(crate) fn top_holding(&self, path: &Path) -> Option<&Path> {
        self.tops
            .iter()
            .find(|top| path.starts_with(top))
            .map(PathBuf::as_path)
    }

    /// After a command prepared at `started`: walks the workspace, moves aside each
    /// protected name below the top that is new since the last walk and changed after
    /// `started` (less [`CLOCK_SLACK`]), and remembers the rest, which the person made.
    fn sweep(&self, started: SystemTime) -> Vec<MovedAside> {
        let mut known = self.known.lock();
        let found = self.walk();
        let mut moved = Vec::new();
        let mut kept = BTreeSet::new();
        let since = started.checked_sub(CLOCK_SLACK).unwrap_or(started);
        for path in found {
            let is_known = known.as_ref().is_some_and(|k| k.contains(&path));
            if !is_known && changed_since(&path, since) {
                moved.push(move_aside(&path, &self.workspace));
            } else {
                kept.insert(path);
            }
        }
        *known = Some(kept);
        moved
    }

    /// Every protected name in the workspace's subdirectories (not its top), without
    /// following links, entering a protected name, or entering what a grant names; the
    /// files hard-linked from elsewhere are taken on the way. Only the directories that
    /// changed since the last walk are read ([`DirIndex`]).
    fn walk(&self) -> Vec<PathBuf> {
        let started = std::time::Instant::now();
        let (found, count) = self.index.lock().walk(&self.workspace, &self.granted);
        tracing::debug!(
            looked_at = count.looked_at,
            read = count.read,
            protected = found.len(),
            latency_us = started.elapsed().as_micros() as u64,
            "walked the workspace's directories"
        );
        found
    }
}

/// Whether `path` (not followed) changed at or after `since` (to the second); `false`
/// when it is gone.
fn changed_since(path: &Path, since: SystemTime) -> bool {
    let Ok(meta) = path.symlink_metadata() else {
        return false;
    };
    let since = since
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    meta.ctime() >= since
}

/// A protected name a command made, and where it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MovedAside {
    /// The path the command made.
    pub made: PathBuf,
    /// The same path as the workspace names it (`.git`, `sub/.git`; absolute outside it).
    pub shown: String,
    /// Where it was moved; `Err` with the reason when it could not be.
    pub now: Result<PathBuf, String>,
}

impl std::fmt::Display for MovedAside {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let place = if Path::new(&self.shown).is_absolute() {
            ""
        } else {
            " in the workspace"
        };
        write!(
            f,
            "`{}` was made{place}, which commands may not do (what it holds would run later, outside the sandbox: the next time git, a shell, an editor, Claude Code or wonopcode starts here; a `write` grant naming it allows it): ",
            self.shown
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

/// Renames `path` (in `workspace`, or another writable root) to the first free `NAME.wonopcode-blocked[-N]` beside it.
fn move_aside(path: &Path, workspace: &Path) -> MovedAside {
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
        shown: path
            .strip_prefix(workspace)
            .unwrap_or(path)
            .display()
            .to_string(),
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
        let policy = SandboxPolicy::default();
        let nested = Arc::new(Nested::new(&ws, &policy, None));
        let absent = Absent::of(&ws, &policy, nested);
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

    #[test]
    fn below_the_top_what_a_command_made_is_moved_aside_and_what_the_person_made_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        for d in ["sub/vendor/.git", "deep/a/b", "granted", "later"] {
            std::fs::create_dir_all(ws.join(d)).unwrap();
        }
        std::fs::create_dir(ws.join(".git")).unwrap();
        let policy = SandboxPolicy {
            write: vec![ws.join("granted")],
            ..SandboxPolicy::default()
        };
        let nested = Nested::new(&ws, &policy, None);
        assert_eq!(nested.existing(), [ws.join("sub/vendor/.git")]);

        // What a command that has just started made, at any depth.
        std::fs::create_dir(ws.join("sub/.git")).unwrap();
        std::fs::write(ws.join("sub/.git/config"), "[core]\nfsmonitor = evil").unwrap();
        std::fs::write(ws.join("deep/a/b/.mcp.json"), "{}").unwrap();
        std::os::unix::fs::symlink("/etc", ws.join("deep/a/.claude")).unwrap();
        std::fs::create_dir(ws.join("granted/.git")).unwrap();
        let mut moved: Vec<PathBuf> = nested
            .sweep(SystemTime::now())
            .into_iter()
            .map(|m| m.now.unwrap())
            .collect();
        moved.sort();
        assert_eq!(
            moved,
            [
                ws.join("deep/a/.claude.wonopcode-blocked"),
                ws.join("deep/a/b/.mcp.json.wonopcode-blocked"),
                ws.join("sub/.git.wonopcode-blocked"),
            ]
        );
        assert!(ws.join("sub/vendor/.git").is_dir(), "was there before");
        assert!(ws.join("granted/.git").is_dir(), "a grant names it");
        assert!(ws.join("sub/.git.wonopcode-blocked/config").exists());

        // One that changed before the command started was made by the person: kept, and
        // read-only for the commands after.
        std::fs::create_dir(ws.join("later/.codex")).unwrap();
        let started = SystemTime::now() + Duration::from_secs(60);
        assert!(nested.sweep(started).is_empty());
        assert_eq!(
            nested.existing(),
            [ws.join("later/.codex"), ws.join("sub/vendor/.git")]
        );
    }
}
