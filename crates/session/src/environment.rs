//! What a run tells the model of where and when it works, at the end of its instructions
//! (`wonopcode_protocol::environment`): the working directory, the OS and its release,
//! the shell, today's date, and whether the workspace is in a git repository — its branch
//! and its short status at the start of the session, as Claude Code tells them.
//!
//! The status comes from `git status`, which a repository's own config can make run
//! commands (`core.fsmonitor`, a clean filter): it runs as a hook runs — in the run's
//! sandbox, in the run's command environment, killed after [`GIT_TIMEOUT`] — with the
//! monitor turned off, and at most [`STATUS_LINES`] of it are told.

use std::path::Path;
use std::time::Duration;

use wonopcode_hooks::{HookEnv, Ran, run_command};
use wonopcode_protocol::environment::block;

/// How long `git status` may take before it is left out.
const GIT_TIMEOUT: Duration = Duration::from_secs(3);

/// The most lines of the status told; the rest is counted.
const STATUS_LINES: usize = 40;

/// The status command: short, with the branch line, no monitor hook, no pager, no colour.
const STATUS: &str =
    "git -c core.fsmonitor=false -c color.status=false --no-optional-locks status --short --branch";

/// The environment block for a run in `root`, its commands run as `env` says.
pub async fn describe(root: std::path::PathBuf, env: HookEnv) -> String {
    let root = root.as_path();
    let env = &env;
    let mut lines = vec![
        format!("Working directory: {}", root.display()),
        format!("Platform: {}", platform()),
    ];
    if let Some(shell) = std::env::var_os("SHELL") {
        let shell = Path::new(&shell)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !shell.is_empty() {
            lines.push(format!("Shell: {shell}"));
        }
    }
    lines.push(format!("Today's date: {}", today()));
    lines.extend(git(root, env).await);
    block(&lines)
}

/// The OS, with its kernel's release where the system tells it: `linux 6.8.0-45-generic`.
fn platform() -> String {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    match release.trim() {
        "" => std::env::consts::OS.to_owned(),
        release => format!("{} {release}", std::env::consts::OS),
    }
}

/// Today in UTC, `YYYY-MM-DD`.
fn today() -> String {
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    now.get(..10).unwrap_or(&now).to_owned()
}

/// The repository lines: none where `root` is in no repository, else whether it is one and
/// its status.
async fn git(root: &Path, env: &HookEnv) -> Vec<String> {
    if !root.ancestors().any(|dir| dir.join(".git").exists()) {
        return vec!["Git repository: no".to_owned()];
    }
    let mut lines = vec!["Git repository: yes".to_owned()];
    match run_command(STATUS, GIT_TIMEOUT, b"", env, "0").await {
        Ran::Exited {
            code: Some(0),
            stdout,
            ..
        } => lines.extend(status_lines(&stdout)),
        Ran::Exited { .. } | Ran::NotStarted(_) => {
            lines.push("Git status: not available".to_owned());
        }
        Ran::TimedOut(_) => lines.push("Git status: took too long; not known".to_owned()),
    }
    lines
}

/// `git status --short --branch` output as told: the branch, then the changes, bounded.
fn status_lines(stdout: &str) -> Vec<String> {
    let mut out = stdout.lines();
    let mut lines = Vec::new();
    if let Some(branch) = out.next().and_then(|l| l.strip_prefix("## ")) {
        lines.push(format!("Current branch: {branch}"));
    }
    let changes: Vec<&str> = out.collect();
    if changes.is_empty() {
        lines.push("Status at the start of the session: clean".to_owned());
        return lines;
    }
    lines.push("Status at the start of the session (short; it does not update):".to_owned());
    lines.extend(
        changes
            .iter()
            .take(STATUS_LINES)
            .map(|l| wonopcode_protocol::shown::one_line(l).into_owned()),
    );
    if changes.len() > STATUS_LINES {
        lines.push(format!("… and {} more", changes.len() - STATUS_LINES));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_is_the_branch_then_the_changes_bounded() {
        assert_eq!(
            status_lines("## main...origin/main [ahead 1]\n"),
            [
                "Current branch: main...origin/main [ahead 1]",
                "Status at the start of the session: clean"
            ]
        );
        let many: String = (0..50).map(|i| format!("?? f{i}\n")).collect();
        let lines = status_lines(&format!("## dev\n M src/a.rs\n{many}"));
        assert_eq!(lines[0], "Current branch: dev");
        assert_eq!(lines[2], " M src/a.rs");
        assert_eq!(lines.len(), 2 + STATUS_LINES + 1);
        assert_eq!(lines[lines.len() - 1], "… and 11 more");
    }
}
