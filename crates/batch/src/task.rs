//! The tasks file: JSON Lines, one task a line. A task names its prompt and where it runs (a
//! directory copied into a scratch workspace, or a git repository checked out at a ref), and
//! may choose its own loop, model and limits over the batch's flags.
//!
//! ```json
//! {"id": "fix-1", "prompt": "Fix the failing test", "workspace": "repos/app"}
//! {"id": "docs", "prompt": "Document the API", "git": {"url": "https://example.com/r.git", "ref": "v1.2"}, "model": "claude-haiku-4-5", "max_cost": 0.25}
//! ```

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::BatchError;

/// One task of a batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    /// Names the task in results and directories (letters, digits, `.`, `_`, `-`). Default:
    /// the first 16 hex digits of the SHA-256 of its line, so an unchanged line keeps its id.
    #[serde(default)]
    pub id: String,
    /// The prompt.
    pub prompt: String,
    /// A directory copied to the task's scratch workspace (relative to the tasks file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<PathBuf>,
    /// A git repository checked out into the task's scratch workspace instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<GitSource>,
    /// A named loop or agent, or a guest file (`.wasm`, relative to the tasks file).
    #[serde(default, alias = "agent", skip_serializing_if = "Option::is_none")]
    pub r#loop: Option<String>,
    /// The provider, over the batch's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The model, over the batch's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// A transcript to answer from instead of a provider (relative to the tasks file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<PathBuf>,
    /// Model requests allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_iterations: Option<u32>,
    /// The most the task may cost, in US dollars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost: Option<f64>,
    /// The most tokens the task may use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// How long after its start the task may still send a request (`90s`, `10m`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_wall: Option<String>,
}

/// A repository and the ref to check out (a branch, a tag or a commit).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GitSource {
    /// Anything `git clone` takes.
    pub url: String,
    /// Default: the repository's default branch.
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
}

impl Task {
    /// `max_wall` as a duration.
    pub fn wall(&self) -> Option<Duration> {
        self.max_wall
            .as_deref()
            .and_then(|w| humantime::parse_duration(w).ok())
    }

    /// `max_cost` in micro-cents (1e-8 USD), the unit budgets count in.
    pub fn cost_limit(&self) -> Option<u64> {
        self.max_cost.map(|usd| (usd * 1e8).round() as u64)
    }
}

/// A batch's tasks, read from one file.
#[derive(Debug, Clone)]
pub struct TaskFile {
    /// The file.
    pub path: PathBuf,
    /// Its tasks, in file order, paths resolved against the file's directory.
    pub tasks: Vec<Task>,
}

impl TaskFile {
    /// Reads and checks every line (blank lines and lines starting with `#` are skipped); the
    /// first bad line is the error, with its number. A task's `workspace` must lie beneath
    /// the tasks file's directory.
    pub fn read(path: &Path) -> Result<Self, BatchError> {
        Self::read_within(path, None)
    }

    /// [`TaskFile::read`], with tasks' workspaces beneath `root` instead of the tasks file's
    /// directory (a tasks file from elsewhere — a data set, another person — must not make
    /// a task copy `~/.ssh` into its output).
    pub fn read_within(path: &Path, root: Option<&Path>) -> Result<Self, BatchError> {
        let text = std::fs::read_to_string(path).map_err(|e| BatchError::Io {
            what: format!("cannot read the tasks file {}", path.display()),
            source: e,
        })?;
        // `tasks.jsonl`'s parent is the empty path, beneath which every path would lie.
        let base = path
            .parent()
            .filter(|dir| !dir.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let root = real_or_plain(root.unwrap_or(base));
        let mut tasks = Vec::new();
        let mut seen = HashSet::new();
        for (index, line) in text.lines().enumerate() {
            let number = index + 1;
            let trimmed = line.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let bad = |reason: String| BatchError::Task {
                file: path.to_path_buf(),
                line: number,
                reason,
            };
            let mut task: Task = serde_json::from_str(trimmed).map_err(|e| bad(e.to_string()))?;
            if task.id.is_empty() {
                task.id = line_id(trimmed);
            }
            check(&task).map_err(bad)?;
            if !seen.insert(task.id.clone()) {
                return Err(bad(format!(
                    "the id `{}` is used by an earlier task",
                    task.id
                )));
            }
            for relative in [&mut task.workspace, &mut task.replay]
                .into_iter()
                .flatten()
            {
                if relative.is_relative() {
                    *relative = base.join(&*relative);
                }
            }
            if let Some(workspace) = &task.workspace {
                let real = real_or_plain(workspace);
                if !real.starts_with(&root) {
                    return Err(bad(format!(
                        "the workspace {} is outside {} (the tasks file's directory; --workspace-root names another)",
                        workspace.display(),
                        root.display()
                    )));
                }
            }
            if let Some(name) = &mut task.r#loop
                && name.ends_with(".wasm")
                && Path::new(name).is_relative()
            {
                *name = base.join(&*name).display().to_string();
            }
            tasks.push(task);
        }
        if tasks.is_empty() {
            return Err(BatchError::Empty(path.to_path_buf()));
        }
        Ok(Self {
            path: path.to_path_buf(),
            tasks,
        })
    }
}

/// `path` with its links resolved where it exists, else made absolute with `.` and `..`
/// taken as written (a missing directory is refused later, when the task starts).
fn real_or_plain(path: &Path) -> PathBuf {
    if let Ok(real) = path.canonicalize() {
        return real;
    }
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut plain = PathBuf::new();
    for part in absolute.components() {
        match part {
            std::path::Component::ParentDir => {
                plain.pop();
            }
            std::path::Component::CurDir => {}
            other => plain.push(other),
        }
    }
    plain
}

/// The default id of a task: from its line's bytes.
fn line_id(line: &str) -> String {
    let digest = Sha256::digest(line.as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// What a task must be beyond parsing.
fn check(task: &Task) -> Result<(), String> {
    let id = &task.id;
    let id_ok = id.len() <= 128
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if !id_ok {
        return Err(format!(
            "the id `{id}` is not usable as a directory name: use letters, digits, `.`, `_` and `-` (at most 128, not starting with `.`)"
        ));
    }
    if task.prompt.trim().is_empty() {
        return Err("the prompt is empty".to_owned());
    }
    if task.workspace.is_some() && task.git.is_some() {
        return Err("give `workspace` or `git`, not both".to_owned());
    }
    if task.git.as_ref().is_some_and(|g| g.url.trim().is_empty()) {
        return Err("`git.url` is empty".to_owned());
    }
    if let Some(wall) = &task.max_wall
        && humantime::parse_duration(wall).is_err()
    {
        return Err(format!(
            "`max_wall` `{wall}` is not a duration (for example 90s or 10m)"
        ));
    }
    if task.max_cost.is_some_and(|c| !c.is_finite() || c <= 0.0) {
        return Err("`max_cost` must be a positive number of US dollars".to_owned());
    }
    if task.max_iterations == Some(0) || task.max_tokens == Some(0) {
        return Err("`max_iterations` and `max_tokens` must be at least 1".to_owned());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<TaskFile, BatchError> {
        let dir = tempfile::tempdir().map_err(|e| BatchError::Io {
            what: "tempdir".into(),
            source: e,
        })?;
        let path = dir.path().join("tasks.jsonl");
        std::fs::write(&path, text).map_err(|e| BatchError::Io {
            what: "write".into(),
            source: e,
        })?;
        TaskFile::read(&path)
    }

    #[test]
    fn a_workspace_outside_the_tasks_files_directory_is_refused() {
        for outside in ["../home/.ssh", "/etc", "ws/../../x"] {
            let line = format!("{{\"prompt\":\"p\",\"workspace\":\"{outside}\"}}\n");
            let e = read(&line).unwrap_err().to_string();
            assert!(
                e.contains("is outside") && e.contains(":1:"),
                "{outside}: {e}"
            );
        }
        assert!(read("{\"prompt\":\"p\",\"workspace\":\"ws/../ws2\"}\n").is_ok());
    }

    #[test]
    fn tasks_are_read_with_their_defaults_and_paths() -> Result<(), BatchError> {
        let file = read(concat!(
            "# a comment\n",
            "{\"id\":\"a\",\"prompt\":\"one\",\"workspace\":\"ws\",\"max_wall\":\"90s\"}\n",
            "\n",
            "{\"prompt\":\"two\",\"agent\":\"coder\",\"git\":{\"url\":\"file:///r\",\"ref\":\"main\"}}\n",
        ))?;
        assert_eq!(file.tasks.len(), 2);
        let a = &file.tasks[0];
        assert!(
            a.workspace
                .as_ref()
                .is_some_and(|w| w.is_absolute() && w.ends_with("ws"))
        );
        assert_eq!(a.wall(), Some(Duration::from_secs(90)));
        let b = &file.tasks[1];
        assert_eq!(b.id.len(), 16);
        assert_eq!(b.r#loop.as_deref(), Some("coder"));
        assert_eq!(
            b.git.as_ref().and_then(|g| g.reference.as_deref()),
            Some("main")
        );
        // The same line gives the same id.
        let again = read(
            "{\"prompt\":\"two\",\"agent\":\"coder\",\"git\":{\"url\":\"file:///r\",\"ref\":\"main\"}}\n",
        )?;
        assert_eq!(again.tasks[0].id, b.id);
        Ok(())
    }

    #[test]
    fn a_bad_line_is_named_by_its_number() {
        for (text, line, says) in [
            (
                "{\"prompt\":\"a\"}\n{\"prompt\":\"\"}\n",
                2,
                "the prompt is empty",
            ),
            (
                "{\"prompt\":\"a\",\"id\":\"x\"}\n{\"prompt\":\"b\",\"id\":\"x\"}\n",
                2,
                "used by an earlier task",
            ),
            (
                "{\"prompt\":\"a\",\"id\":\"../up\"}\n",
                1,
                "not usable as a directory name",
            ),
            (
                "{\"prompt\":\"a\",\"colour\":1}\n",
                1,
                "unknown field `colour`",
            ),
            ("not json\n", 1, "expected"),
            (
                "{\"prompt\":\"a\",\"max_wall\":\"soon\"}\n",
                1,
                "not a duration",
            ),
            (
                "{\"prompt\":\"a\",\"workspace\":\"w\",\"git\":{\"url\":\"u\"}}\n",
                1,
                "not both",
            ),
        ] {
            let error = read(text).map(|_| ()).unwrap_err_text();
            assert!(error.contains(&format!(":{line}: ")), "{text:?}: {error}");
            assert!(error.contains(says), "{text:?}: {error}");
        }
        let error = read("\n# nothing\n").map(|_| ()).unwrap_err_text();
        assert!(error.contains("no tasks"), "{error}");
    }

    trait ErrText {
        fn unwrap_err_text(self) -> String;
    }

    impl ErrText for Result<(), BatchError> {
        fn unwrap_err_text(self) -> String {
            match self {
                Ok(()) => "no error".to_owned(),
                Err(e) => e.to_string(),
            }
        }
    }
}
