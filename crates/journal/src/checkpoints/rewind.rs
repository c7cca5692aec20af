//! A rewind worked out from a run's changes — what each file goes back to, which files
//! someone else changed since (conflicts, left alone unless forced), which another
//! context's later changes build on (refused) — and applied: nothing is written outside
//! the workspace, nor from an object whose content does not match its name.

use std::path::{Component, Path, PathBuf};

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
            if current_hash(&workspace.join(path)) != last.after {
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
            let target = inside(workspace, path)?;
            match content {
                Some(hash) => {
                    let bytes = objects.get(hash)?;
                    if let Some(parent) = target.parent() {
                        std::fs::create_dir_all(parent)
                            .map_err(|e| JournalError::io(parent, &e))?;
                    }
                    replace(&target, &bytes, *mode).map_err(|e| JournalError::io(&target, &e))?;
                }
                None => match std::fs::remove_file(&target) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(JournalError::io(&target, &e)),
                },
            }
            done.push(path.clone());
        }
        Ok(done)
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

/// `path` under `workspace`, when the directory it is in (as far as it exists) resolves
/// inside the workspace: no link leads a restore out of it.
fn inside(workspace: &Path, path: &str) -> Result<PathBuf, JournalError> {
    let target = workspace.join(path);
    let refused = |why: &str| JournalError::io(&target, &std::io::Error::other(why.to_owned()));
    if !plainly_inside(path) {
        return Err(refused("not a path inside the workspace"));
    }
    let root = workspace
        .canonicalize()
        .map_err(|e| JournalError::io(workspace, &e))?;
    let mut existing = target.parent().map(Path::to_path_buf);
    while let Some(dir) = existing {
        if let Ok(real) = dir.canonicalize() {
            if !real.starts_with(&root) {
                return Err(refused("its directory leads out of the workspace"));
            }
            break;
        }
        existing = dir.parent().map(Path::to_path_buf);
    }
    if target
        .symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink())
    {
        return Err(refused("it is a link"));
    }
    Ok(target)
}

/// Whether a change of `context` is in `of` (it, or one of its children).
fn in_context(context: &str, of: &str) -> bool {
    context == of
        || context
            .strip_prefix(of)
            .is_some_and(|rest| rest.starts_with('.'))
}

/// The hash of the file at `path` now; `None` when there is none.
fn current_hash(path: &Path) -> Option<String> {
    std::fs::read(path).ok().map(|bytes| content_name(&bytes))
}

/// Puts `bytes` at `target` as a new file renamed over the old one, never written into the
/// old one's inode: a file hard-linked from elsewhere (a package cache) keeps its content
/// there. The new file gets `mode`, else the old one's, else `0644`.
fn replace(target: &Path, bytes: &[u8], mode: Option<u32>) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let mode = mode
        .or_else(|| {
            target
                .symlink_metadata()
                .ok()
                .map(|m| m.permissions().mode())
        })
        .unwrap_or(0o644)
        & 0o7777;
    let name = target.file_name().unwrap_or_default().to_string_lossy();
    let partial = target.with_file_name(format!(".{name}.wonopcode-rewind-{}", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&partial)
        .and_then(|mut file| {
            file.write_all(bytes)?;
            file.set_permissions(std::fs::Permissions::from_mode(mode))
        })
        .and_then(|()| std::fs::rename(&partial, target));
    if written.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    written
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
