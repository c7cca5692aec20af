//! Where git runs a repository's hooks from. `.git/hooks` is inside `.git`, which commands
//! get read-only; but `core.hooksPath` (husky's `.husky/_`, lefthook's, a plain
//! `.githooks`) moves them into the work tree, where a sandboxed command could append to
//! `pre-commit` and the person's next `git commit` would run it unconfined. git itself says
//! where: `git rev-parse --git-path hooks` honours `core.hooksPath` from every config file
//! and include, and expands `~`. Reading it runs nothing of the repository's (no hook, no
//! fsmonitor); it is bounded in time all the same.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long git may take to say.
const ANSWER_WITHIN: Duration = Duration::from_secs(3);

/// The hooks directory of the repository `workspace` is in, absolute, when git names one
/// outside the repository's `.git` directory (which is protected already) — whether or
/// not it exists yet. `None` outside a repository, without git, or when git does not
/// answer in time.
pub(crate) fn hooks_dir(workspace: &Path) -> Option<PathBuf> {
    let mut child = Command::new("git")
        .arg("-C")
        .arg(workspace)
        .args([
            "rev-parse",
            "--path-format=absolute",
            "--git-dir",
            "--git-path",
            "hooks",
        ])
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + ANSWER_WITHIN;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(2)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let output = child.wait_with_output().ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?;
    let mut lines = text.lines();
    let (git_dir, hooks) = (PathBuf::from(lines.next()?), PathBuf::from(lines.next()?));
    let git_dir = git_dir.canonicalize().unwrap_or(git_dir);
    let hooks = crate::policy::real(&hooks);
    (!hooks.starts_with(&git_dir)).then_some(hooks)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) -> bool {
        Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    #[test]
    fn a_hooks_path_in_the_work_tree_is_found_and_the_default_is_left_to_git_s_own() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().canonicalize().unwrap();
        // Every machine wonopcode is built on has git; a skip here would check nothing.
        assert!(
            git(&repo, &["init", "-q"]),
            "git init failed: is git installed?"
        );
        assert_eq!(
            hooks_dir(&repo),
            None,
            "hooks in .git are protected already"
        );
        assert!(git(&repo, &["config", "core.hooksPath", ".husky/_"]));
        std::fs::create_dir(repo.join("sub")).unwrap();
        assert_eq!(hooks_dir(&repo.join("sub")), Some(repo.join(".husky/_")));
        assert_eq!(hooks_dir(dir.path()), Some(repo.join(".husky/_")));
        let outside = tempfile::tempdir().unwrap();
        assert_eq!(hooks_dir(outside.path()), None, "not a repository");
    }
}
