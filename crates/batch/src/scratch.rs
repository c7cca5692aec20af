//! A task's scratch workspace and what the task changed in it. A task never works in the
//! tree it names: a directory is copied, a repository is cloned and checked out, so tasks
//! running at once cannot step on each other and a re-run starts from the same files. What
//! the task changed is a patch `git apply` takes: against the source directory for a copy,
//! against the checked-out commit for a clone.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use similar::TextDiff;
use tokio::process::Command;
use wonopcode_os::own_processes;

use crate::BatchError;
use crate::task::{GitSource, Task};

/// The longest a `git` command of the set-up may take (a clone of a large repository).
pub const GIT_TIMEOUT: Duration = Duration::from_secs(600);

/// Where a task's files come from.
#[derive(Debug, Clone)]
pub enum Origin {
    /// An empty directory.
    Empty,
    /// A copy of this directory.
    Directory(PathBuf),
    /// A clone of this repository.
    Git(GitSource),
}

impl Origin {
    /// The origin a task names.
    pub fn of(task: &Task) -> Self {
        match (&task.workspace, &task.git) {
            (Some(dir), _) => Self::Directory(dir.clone()),
            (None, Some(git)) => Self::Git(git.clone()),
            (None, None) => Self::Empty,
        }
    }

    /// Makes `scratch` a fresh copy of the origin (anything there before is removed).
    pub async fn prepare(&self, scratch: &Path) -> Result<(), BatchError> {
        let io = |what: String| move |source| BatchError::Io { what, source };
        if scratch.exists() {
            tokio::fs::remove_dir_all(scratch)
                .await
                .map_err(io(format!("cannot clear {}", scratch.display())))?;
        }
        match self {
            Self::Empty => tokio::fs::create_dir_all(scratch)
                .await
                .map_err(io(format!("cannot create {}", scratch.display()))),
            Self::Directory(source) => {
                if !source.is_dir() {
                    return Err(BatchError::Setup(format!(
                        "the workspace {} is not a directory",
                        source.display()
                    )));
                }
                let (from, to) = (source.clone(), scratch.to_path_buf());
                tokio::task::spawn_blocking(move || copy_tree(&from, &to))
                    .await
                    .map_err(|e| BatchError::Setup(format!("the copy stopped: {e}")))?
                    .map_err(io(format!(
                        "cannot copy {} to {}",
                        source.display(),
                        scratch.display()
                    )))
            }
            Self::Git(git) => {
                let target = scratch.display().to_string();
                git_run(
                    None,
                    &["clone", "--quiet", "--no-checkout", "--", &git.url, &target],
                )
                .await?;
                let reference = git.reference.as_deref().unwrap_or("HEAD");
                git_run(
                    Some(scratch),
                    &["checkout", "--quiet", "--detach", reference, "--"],
                )
                .await
                .map(drop)
            }
        }
    }

    /// What the task changed in `scratch`, as a patch (empty: nothing).
    pub async fn changes(&self, scratch: &Path) -> Result<Changes, BatchError> {
        match self {
            Self::Git(_) => {
                git_run(Some(scratch), &["add", "--all"]).await?;
                let patch =
                    git_run(Some(scratch), &["diff", "--cached", "--binary", "HEAD"]).await?;
                let names =
                    git_run(Some(scratch), &["diff", "--cached", "--name-only", "HEAD"]).await?;
                Ok(Changes {
                    files: names.lines().map(str::to_owned).collect(),
                    patch,
                })
            }
            Self::Directory(_) | Self::Empty => {
                let before = match self {
                    Self::Directory(dir) => Some(dir.clone()),
                    _ => None,
                };
                let after = scratch.to_path_buf();
                tokio::task::spawn_blocking(move || diff_trees(before.as_deref(), &after))
                    .await
                    .map_err(|e| BatchError::Setup(format!("the diff stopped: {e}")))?
                    .map_err(|source| BatchError::Io {
                        what: format!("cannot compare {}", scratch.display()),
                        source,
                    })
            }
        }
    }
}

/// What a task changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// The files added, changed or removed, relative to the workspace, sorted.
    pub files: Vec<String>,
    /// A patch of them in git's format.
    pub patch: String,
}

/// Runs `git ARGS` (in `dir`) under [`GIT_TIMEOUT`]; its stdout, or what it said on failure.
async fn git_run(dir: Option<&Path>, args: &[&str]) -> Result<String, BatchError> {
    let mut command = Command::new("git");
    if let Some(dir) = dir {
        command.arg("-C").arg(dir);
    }
    command
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let shown = format!("git {}", args.join(" "));
    let starting = own_processes::starting();
    let child = command
        .spawn()
        .map_err(|e| BatchError::Setup(format!("cannot run `{shown}`: {e} (is git installed?)")))?;
    // Not a leftover of another task's `bash` call that ends while git runs.
    let _own = child.id().map(own_processes::Own::new);
    drop(starting);
    let output = tokio::time::timeout(GIT_TIMEOUT, child.wait_with_output())
        .await
        .map_err(|_| {
            BatchError::Setup(format!(
                "`{shown}` did not finish within {}",
                humantime::format_duration(GIT_TIMEOUT)
            ))
        })?
        .map_err(|e| BatchError::Setup(format!("`{shown}` failed: {e}")))?;
    if !output.status.success() {
        let said = String::from_utf8_lossy(&output.stderr);
        let said = said
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        return Err(BatchError::Setup(format!(
            "`{shown}` failed: {}",
            said.trim()
        )));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Copies the tree at `from` to `to`: files with their permissions, directories, and
/// symbolic links as links (never followed); anything else (sockets, fifos) is left out.
pub fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path())?, &target)?;
        }
    }
    Ok(())
}

/// The regular files under `root`, relative, sorted; `.git` directories are not walked.
fn files(root: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(relative) = pending.pop() {
        for entry in std::fs::read_dir(root.join(&relative))? {
            let entry = entry?;
            let kind = entry.file_type()?;
            let path = relative.join(entry.file_name());
            if kind.is_dir() && entry.file_name() != ".git" {
                pending.push(path);
            } else if kind.is_file() {
                found.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}

/// The patch from `before` (none: an empty tree) to `after`.
fn diff_trees(before: Option<&Path>, after: &Path) -> std::io::Result<Changes> {
    let old_files = match before {
        Some(dir) => files(dir)?,
        None => Vec::new(),
    };
    let new_files = files(after)?;
    let mut all: Vec<&PathBuf> = old_files.iter().chain(new_files.iter()).collect();
    all.sort();
    all.dedup();
    let read = |root: Option<&Path>, present: &[PathBuf], path: &PathBuf| match root
        .filter(|_| present.binary_search(path).is_ok())
    {
        Some(root) => std::fs::read(root.join(path)).map(Some),
        None => Ok(None),
    };
    let mut changes = Changes::default();
    for path in all {
        let old = read(before, &old_files, path)?;
        let new = read(Some(after), &new_files, path)?;
        if old == new {
            continue;
        }
        let name = path.to_string_lossy().replace('\\', "/");
        let executable = executable(&after.join(path));
        changes.patch.push_str(&file_patch(
            &name,
            old.as_deref(),
            new.as_deref(),
            executable,
        ));
        changes.files.push(name);
    }
    Ok(changes)
}

fn executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
}

/// One file's part of a git-format patch.
fn file_patch(name: &str, old: Option<&[u8]>, new: Option<&[u8]>, executable: bool) -> String {
    let mode = if executable { "100755" } else { "100644" };
    let mut out = format!("diff --git a/{name} b/{name}\n");
    let (from, to) = match (old, new) {
        (None, _) => {
            out.push_str(&format!("new file mode {mode}\n"));
            ("/dev/null".to_owned(), format!("b/{name}"))
        }
        (_, None) => {
            out.push_str("deleted file mode 100644\n");
            (format!("a/{name}"), "/dev/null".to_owned())
        }
        _ => (format!("a/{name}"), format!("b/{name}")),
    };
    match (as_text(old), as_text(new)) {
        (Some(old), Some(new)) => {
            out.push_str(&format!("--- {from}\n+++ {to}\n"));
            let diff = TextDiff::from_lines(old, new);
            for hunk in diff.unified_diff().context_radius(3).iter_hunks() {
                out.push_str(&hunk.to_string());
            }
        }
        _ => out.push_str(&format!("Binary files {from} and {to} differ\n")),
    }
    out
}

/// A file's bytes as text, or `None` for a binary file (a NUL, or not UTF-8); a missing file
/// is empty text.
fn as_text(bytes: Option<&[u8]>) -> Option<&str> {
    match bytes {
        None => Some(""),
        Some(b) if b.contains(&0) => None,
        Some(b) => std::str::from_utf8(b).ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, name: &str, text: &str) -> std::io::Result<()> {
        let path = root.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, text)
    }

    /// The patch of a copy's changes, applied by git to the original, gives the copy.
    #[tokio::test]
    async fn a_copy_s_patch_applies_to_its_source() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let source = dir.path().join("source");
        write(&source, "keep.txt", "same\n")?;
        write(&source, "edit.txt", "one\ntwo\nthree\n")?;
        write(&source, "gone/old.txt", "bye\n")?;
        write(&source, ".git/config", "ignored\n")?;
        let origin = Origin::Directory(source.clone());
        let scratch = dir.path().join("scratch");
        origin.prepare(&scratch).await?;
        assert_eq!(origin.changes(&scratch).await?, Changes::default());
        write(&scratch, "edit.txt", "one\n2\nthree\nfour")?;
        write(&scratch, "new/file.txt", "hello\n")?;
        std::fs::remove_file(scratch.join("gone/old.txt"))?;
        let changes = origin.changes(&scratch).await?;
        assert_eq!(changes.files, ["edit.txt", "gone/old.txt", "new/file.txt"]);

        let check = dir.path().join("check");
        copy_tree(&source, &check)?;
        std::fs::write(dir.path().join("changes.patch"), &changes.patch)?;
        let applied = std::process::Command::new("git")
            .arg("apply")
            .arg(dir.path().join("changes.patch"))
            .current_dir(&check)
            .output()?;
        assert!(
            applied.status.success(),
            "{}\n{}",
            changes.patch,
            String::from_utf8_lossy(&applied.stderr)
        );
        assert_eq!(
            std::fs::read_to_string(check.join("edit.txt"))?,
            "one\n2\nthree\nfour"
        );
        assert_eq!(
            std::fs::read_to_string(check.join("new/file.txt"))?,
            "hello\n"
        );
        assert!(!check.join("gone/old.txt").exists());
        Ok(())
    }

    #[tokio::test]
    async fn a_clone_is_checked_out_at_its_ref_and_diffed_against_it()
    -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(&repo)?;
        let git = |args: &[&str]| {
            std::process::Command::new("git")
                .args([
                    "-c",
                    "user.name=t",
                    "-c",
                    "user.email=t@t",
                    "-c",
                    "init.defaultBranch=main",
                ])
                .args(args)
                .current_dir(&repo)
                .output()
        };
        git(&["init", "-q"])?;
        write(&repo, "a.txt", "first\n")?;
        git(&["add", "."])?;
        git(&["commit", "-q", "-m", "one"])?;
        git(&["tag", "v1"])?;
        write(&repo, "a.txt", "second\n")?;
        git(&["commit", "-q", "-am", "two"])?;
        let origin = Origin::Git(GitSource {
            url: repo.display().to_string(),
            reference: Some("v1".to_owned()),
        });
        let scratch = dir.path().join("scratch");
        origin.prepare(&scratch).await?;
        assert_eq!(std::fs::read_to_string(scratch.join("a.txt"))?, "first\n");
        write(&scratch, "b.txt", "new\n")?;
        let changes = origin.changes(&scratch).await?;
        assert_eq!(changes.files, ["b.txt"]);
        assert!(changes.patch.contains("+new"), "{}", changes.patch);

        let missing = Origin::Git(GitSource {
            url: repo.display().to_string(),
            reference: Some("no-such-ref".to_owned()),
        });
        let error = missing
            .prepare(&dir.path().join("other"))
            .await
            .err()
            .map(|e| e.to_string());
        assert!(
            error
                .as_deref()
                .is_some_and(|e| e.contains("git checkout") && e.contains("no-such-ref")),
            "{error:?}"
        );
        Ok(())
    }
}
