//! A rewind worked out from a run's changes — what each file goes back to, which files
//! someone else changed since (conflicts, left alone unless forced), which another
//! context's later changes build on (refused) — and applied: nothing is written outside
//! the workspace, nor from an object whose content does not match its name.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use wonopcode_os::beneath::{self, Dir};

use super::Change;
use super::objects::{Objects, content_name};
use crate::JournalError;
use crate::runs::RunDir;

/// What one file goes back to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restore {
    /// The file, relative to the workspace.
    pub path: String,
    /// Its content (an object's hash; `None`: no file).
    pub content: Option<String>,
    /// Its permission bits, when the change recorded them (a command's).
    pub mode: Option<u32>,
}

/// What taking back a run's changes does to the workspace.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Rewind {
    /// Each file, and what it goes back to.
    pub restore: Vec<Restore>,
    /// Files changed since the run last changed them (by someone else), left alone
    /// unless forced.
    pub conflicts: Vec<String>,
    /// Files the changes kept overlap (another context changed them after the ones taken
    /// back), refused.
    pub overlaps: Vec<String>,
    /// Paths that are not plainly inside the workspace (a journal someone else changed),
    /// never written.
    pub refused: Vec<String>,
}

impl Rewind {
    /// The rewind of the changes made under prompt `from` and after (only those of
    /// `contexts` and their children, when some are given), against the workspace as it is
    /// now.
    pub fn of(changes: &[Change], from: usize, contexts: &[&str], workspace: &Path) -> Self {
        let taken = |c: &Change| {
            c.prompt >= from
                && (contexts.is_empty() || contexts.iter().any(|ctx| in_context(&c.context, ctx)))
        };
        let mut rewind = Rewind::default();
        let mut paths: Vec<&str> = Vec::new();
        for change in changes.iter().filter(|c| taken(c)) {
            if !paths.contains(&change.path.as_str()) {
                paths.push(&change.path);
            }
        }
        for path in paths {
            if !plainly_inside(path) {
                rewind.refused.push(path.to_owned());
                continue;
            }
            let of_path: Vec<&Change> = changes.iter().filter(|c| c.path == path).collect();
            let Some(first) = of_path.iter().position(|c| taken(c)) else {
                continue;
            };
            // A change kept (another context's) after one taken back: both cannot hold.
            if of_path[first..].iter().any(|c| !taken(c)) {
                rewind.overlaps.push(path.to_owned());
                continue;
            }
            let last = of_path[of_path.len() - 1];
            if current_hash(workspace, path) != last.after {
                rewind.conflicts.push(path.to_owned());
            }
            rewind.restore.push(Restore {
                path: path.to_owned(),
                content: of_path[first].before.clone(),
                mode: of_path[first].before_mode,
            });
        }
        rewind
    }

    /// What a rewind applied without `force` did, a line a file: `restored PATH`, `removed
    /// PATH`, or `left alone PATH: changed since by someone else`.
    pub fn done_lines(&self) -> Vec<String> {
        self.restore
            .iter()
            .map(|r| {
                let path = &r.path;
                match (self.conflicts.contains(path), &r.content) {
                    (true, _) => format!("left alone {path}: changed since by someone else"),
                    (false, Some(_)) => format!("restored {path}"),
                    (false, None) => format!("removed {path}"),
                }
            })
            .collect()
    }

    /// Puts each file back (a conflict's too, when `force`); the files changed. A file
    /// whose directory leads out of the workspace (a link), or whose kept content does not
    /// match its hash, is an error and stops the rewind there.
    pub fn apply(
        &self,
        run: &RunDir,
        workspace: &Path,
        force: bool,
    ) -> Result<Vec<String>, JournalError> {
        let objects = Objects::at(run.path().join("checkpoints/objects"));
        let root = workspace
            .canonicalize()
            .map_err(|e| JournalError::io(workspace, &e))?;
        let mut done = Vec::new();
        for Restore {
            path,
            content,
            mode,
        } in &self.restore
        {
            if self.conflicts.contains(path) && !force {
                continue;
            }
            let (target, dir, name) = inside(&root, path)?;
            let failed = |e: std::io::Error| JournalError::io(&target, &e);
            match content {
                Some(hash) => {
                    let bytes = objects.get(hash)?;
                    Dir::make(&root, &dir)
                        .and_then(|d| d.replace(&name, &bytes, *mode))
                        .map_err(failed)?;
                }
                None => {
                    match Dir::open(&root, &dir).and_then(|d| d.remove(&name)) {
                        Ok(()) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(e) => return Err(failed(e)),
                    }
                    remove_emptied(&root, &dir);
                }
            }
            done.push(path.clone());
        }
        Ok(done)
    }
}

/// Removes `dir` and the directories above it that removing a file left empty, up to (not
/// including) `root`: the directories a turn made for the files it created go with them.
/// One that holds anything stays (the kernel refuses to remove it), and the walk stops
/// there. Checkpoints record files, not directories, so an empty directory the person had
/// made before the turn put a file in it goes too: it held nothing.
fn remove_emptied(root: &Path, dir: &Path) {
    let mut current = dir;
    while current != root {
        let (Some(parent), Some(name)) = (current.parent(), current.file_name()) else {
            return;
        };
        if Dir::open(root, parent)
            .and_then(|d| d.remove_empty_dir(name))
            .is_err()
        {
            return;
        }
        current = parent;
    }
}

/// Takes back the changes the run in `run` made from prompt `from` (0-based) on — only
/// those of `contexts` and their children when some are given — in `workspace`: nothing
/// when some overlap
/// changes that stay (the rewind says which), nor when `dry_run`; a conflict's file only
/// when `force`. The rewind worked out, whatever was done.
pub fn rewind_run(
    run: &RunDir,
    workspace: &Path,
    from: usize,
    contexts: &[&str],
    force: bool,
    dry_run: bool,
) -> Result<Rewind, JournalError> {
    let rewind = Rewind::of(&super::changes(run)?, from, contexts, workspace);
    if !dry_run && rewind.overlaps.is_empty() {
        rewind.apply(run, workspace, force)?;
    }
    Ok(rewind)
}

/// Whether `path` is relative and names only plain components (no `..`, no root).
fn plainly_inside(path: &str) -> bool {
    !path.is_empty()
        && Path::new(path)
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
}

/// `path` under the canonical `root`, with its directory and its name, when it is plainly
/// inside. Its directory is then opened beneath the root ([`Dir`]): a link on the way, one
/// made after this check too, is refused, and the file is replaced or removed by its name
/// in that directory, never through a link.
fn inside(root: &Path, path: &str) -> Result<(PathBuf, PathBuf, OsString), JournalError> {
    let target = root.join(path);
    if !plainly_inside(path) {
        let refused = std::io::Error::other("not a path inside the workspace");
        return Err(JournalError::io(&target, &refused));
    }
    let dir = target.parent().unwrap_or(root).to_path_buf();
    let name = target.file_name().unwrap_or_default().to_owned();
    Ok((target, dir, name))
}

/// Whether a change of `context` is in `of` (it, or one of its children).
fn in_context(context: &str, of: &str) -> bool {
    context == of
        || context
            .strip_prefix(of)
            .is_some_and(|rest| rest.starts_with('.'))
}

/// The hash of the file at `path` in `workspace` now, read beneath it; `None` when there
/// is none (or a link is on the way).
fn current_hash(workspace: &Path, path: &str) -> Option<String> {
    use std::io::Read;
    let root = workspace.canonicalize().ok()?;
    let mut file = beneath::open(&root, &root.join(path), beneath::Access::Read).ok()?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    Some(content_name(&bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(
        prompt: usize,
        context: &str,
        path: &str,
        before: Option<&str>,
        after: Option<&str>,
    ) -> Change {
        let hash = |text: &str| content_name(text.as_bytes());
        Change {
            prompt,
            context: context.into(),
            path: path.into(),
            before: before.map(hash),
            after: after.map(hash),
            before_mode: None,
            after_mode: None,
        }
    }

    #[test]
    fn a_rewind_restores_the_first_before_refuses_overlaps_and_planted_paths() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join("a"), "a2").unwrap();
        std::fs::write(ws.path().join("b"), "b1").unwrap();
        std::fs::write(ws.path().join("c"), "by hand").unwrap();
        let changes = [
            change(0, "0", "a", Some("a0"), Some("a1")),
            change(1, "0.1", "a", Some("a1"), Some("a2")),
            change(1, "0.2", "b", None, Some("b1")),
            change(1, "0.1", "c", Some("c0"), Some("c1")),
            // Another context built on 0.1's work after it.
            change(1, "0.1", "d", None, Some("d1")),
            change(2, "0.3", "d", Some("d1"), Some("d2")),
            change(1, "0.1.1", "e", None, Some("e1")),
            change(1, "0.1", "../outside", None, Some("x")),
        ];
        // From prompt 1, context 0.1 and its children.
        let rewind = Rewind::of(&changes, 1, &["0.1"], ws.path());
        let restore = |path: &str, content: Option<String>| Restore {
            path: path.into(),
            content,
            mode: None,
        };
        assert_eq!(
            rewind.restore,
            [
                restore("a", changes[1].before.clone()),
                restore("c", changes[3].before.clone()),
                restore("e", None),
            ]
        );
        // `c` was changed by hand since, `e` is not there any more.
        assert_eq!(rewind.conflicts, ["c", "e"]);
        assert_eq!(
            rewind.done_lines(),
            [
                "restored a",
                "left alone c: changed since by someone else",
                "left alone e: changed since by someone else",
            ]
        );
        assert_eq!(rewind.overlaps, ["d"]);
        assert_eq!(rewind.refused, ["../outside"]);
        // The whole of prompt 1 on: `a` goes back to what prompt 1 found.
        let all = Rewind::of(&changes, 1, &[], ws.path());
        assert!(all.restore.contains(&restore("b", None)));
        assert!(all.overlaps.is_empty());
        // 0.1's and 0.3's together: 0.3 built on 0.1's `d`, and both go.
        let both = Rewind::of(&changes, 1, &["0.1", "0.3"], ws.path());
        assert!(both.overlaps.is_empty());
        assert!(both.restore.contains(&restore("d", None)));
        assert!(!both.restore.iter().any(|r| r.path == "b"));
        // `0.10` is not a child of `0.1`.
        assert!(!in_context("0.10", "0.1"));
        assert!(in_context("0.1.2", "0.1"));
    }
}
