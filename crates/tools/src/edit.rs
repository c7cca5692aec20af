//! `edit`: exact string replacement in a file.

use std::path::Path;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use wonopcode_agent_loop::{ToolEnv, ToolError, ToolOutput, TypedTool, parameters_of};
use wonopcode_protocol::event::{FileChange, FileChangeKind};
use wonopcode_protocol::{Interrupted, ToolCategory, ToolKind, ToolSpec};

use crate::diff::unified;
use crate::spec::spec;
use crate::workspace::{describe, display, open_regular, resolve, resolve_for, rule_subject};
use crate::write_guard::WriteGuard;

/// Replaces an exact string in a file.
pub struct EditTool {
    spec: ToolSpec,
    guard: WriteGuard,
}

impl EditTool {
    /// An `edit` held to the run's `guard` (protected names, files changed since read).
    pub(crate) fn guarded(guard: WriteGuard) -> Self {
        Self {
            guard,
            ..Self::default()
        }
    }
}

impl Default for EditTool {
    /// An `edit` with no sandbox to keep protected names by.
    fn default() -> Self {
        Self {
            guard: WriteGuard::default(),
            spec: spec(
                "edit",
                "Replace an exact string in a file. old_string must match exactly once unless replace_all is true.",
                ToolKind::Mutating,
                ToolCategory::FileSystem,
                parameters_of::<EditArgs>(),
            ),
        }
    }
}

/// An `edit` call's arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditArgs {
    // File path, relative to the workspace root.
    path: String,
    // The exact text replaced.
    #[schemars(length(min = 1))]
    old_string: String,
    // What replaces it.
    new_string: String,
    // Replace every match (else `old_string` must match exactly once).
    #[serde(default)]
    #[schemars(extend("default" = false))]
    replace_all: bool,
}

#[async_trait]
impl TypedTool for EditTool {
    type Args = EditArgs;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn permission_subject(&self, args: &EditArgs, root: &Path) -> Option<String> {
        Some(rule_subject(root, &args.path))
    }

    async fn preview(&self, a: &EditArgs, root: &Path) -> Option<String> {
        let path = resolve(root, &a.path).ok()?;
        let rel = display(root, &path);
        let text = read_for_edit(root, &path, &rel).await.ok()?;
        let (updated, _) = replaced(&text, a, &rel).ok()?;
        unified(&rel, Some(&text), &updated)
    }

    /// Done when the file no longer has `old_string` and has `new_string`: the edit was made
    /// before the run stopped (answered as the edit would have been); otherwise it runs.
    async fn interrupted(&self, a: &EditArgs, root: &Path) -> Interrupted {
        let Ok(path) = resolve(root, &a.path) else {
            return Interrupted::RunAgain;
        };
        let rel = display(root, &path);
        let Ok(text) = read_for_edit(root, &path, &rel).await else {
            return Interrupted::RunAgain;
        };
        let made = !a.new_string.is_empty()
            && !text.contains(&a.old_string)
            && text.contains(&a.new_string);
        if !made {
            return Interrupted::RunAgain;
        }
        let matches = if a.replace_all {
            text.matches(&a.new_string).count()
        } else {
            1
        };
        Interrupted::Done(replaced_message(matches, &rel))
    }

    async fn run(&self, a: EditArgs, env: &ToolEnv) -> Result<ToolOutput, ToolError> {
        let path = resolve_for(env, &a.path)?;
        let rel = display(&env.workspace_root, &path);
        self.guard.before("edit", env, &path, &rel).await?;
        let text = crate::text_files::read(env, &path, &rel).await?;
        let (updated, matches) = replaced(&text, &a, &rel)?;
        crate::text_files::write(env, &path, &rel, &updated).await?;
        self.guard.wrote(env, &path).await;
        env.changed(&rel, Some(text.as_bytes()), Some(updated.as_bytes()));
        let mut out = ToolOutput::text(replaced_message(matches, &rel));
        out.file_change = Some(FileChange {
            diff: unified(&rel, Some(&text), &updated),
            path: rel,
            kind: FileChangeKind::Update,
        });
        Ok(out)
    }
}

/// What the model is told of an edit made.
fn replaced_message(matches: usize, rel: &str) -> String {
    format!("replaced {matches} occurrence(s) in {rel}")
}

/// `text` with the edit `a` made, and how many places it replaced; the same rules for the
/// call and for its preview.
fn replaced(text: &str, a: &EditArgs, rel: &str) -> Result<(String, usize), ToolError> {
    let matches = text.matches(&a.old_string).count();
    // Many small matches each replaced by a long string could grow the file without end.
    let grown = (text.len() - matches * a.old_string.len())
        .saturating_add(matches.saturating_mul(a.new_string.len()));
    if grown as u64 > MAX_EDIT_BYTES {
        return Err(ToolError::Failed(format!(
            "the edit would make `{rel}` {} MiB, past the limit of {} MiB",
            grown >> 20,
            MAX_EDIT_BYTES >> 20
        )));
    }
    match (matches, a.replace_all) {
        (0, _) => Err(ToolError::Failed(format!(
            "old_string was not found in `{rel}`; read the file and copy the text exactly"
        ))),
        (1, _) | (_, true) => Ok((text.replace(&a.old_string, &a.new_string), matches)),
        (n, false) => Err(ToolError::Failed(format!(
            "old_string matches {n} places in `{rel}`; add surrounding lines to make it unique, or set replace_all"
        ))),
    }
}

/// Writes `bytes` over the file `path` of the workspace `root` (made when missing), opened
/// beneath `root` so no link leads the write out of it.
pub(crate) async fn write_beneath(root: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let (root, path, bytes) = (root.to_path_buf(), path.to_path_buf(), bytes.to_vec());
    tokio::task::spawn_blocking(move || {
        use std::io::Write;
        let mut file =
            wonopcode_os::beneath::open(&root, &path, wonopcode_os::beneath::Access::Replace)?;
        if !file.metadata()?.is_file() {
            return Err(std::io::Error::other("not a regular file"));
        }
        file.write_all(&bytes)
    })
    .await
    .map_err(std::io::Error::other)?
}

/// Files larger than this are not edited (the whole file is held, twice, while editing).
pub(crate) const MAX_EDIT_BYTES: u64 = 64 << 20;

/// The text of a regular file of the workspace `root` of at most [`MAX_EDIT_BYTES`].
pub(crate) async fn read_for_edit(
    root: &Path,
    path: &Path,
    rel: &str,
) -> Result<String, ToolError> {
    let (root, path, rel) = (root.to_path_buf(), path.to_path_buf(), rel.to_owned());
    tokio::task::spawn_blocking(move || {
        use std::io::Read;
        let (file, size) = open_regular(&root, &path).map_err(|e| e.for_path(&rel))?;
        if size > MAX_EDIT_BYTES {
            return Err(ToolError::Failed(format!(
                "`{rel}` is too large to edit ({} MiB; the limit is {} MiB)",
                size >> 20,
                MAX_EDIT_BYTES >> 20
            )));
        }
        let mut text = String::new();
        file.take(MAX_EDIT_BYTES)
            .read_to_string(&mut text)
            .map_err(|e| ToolError::Failed(format!("cannot read `{rel}`: {}", describe(&e))))?;
        Ok(text)
    })
    .await
    .map_err(|e| ToolError::Failed(format!("reading the file stopped: {e}")))?
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    // The calls as the registry makes them: JSON, through the blanket `Tool`.
    use wonopcode_agent_loop::Tool;

    #[tokio::test]
    async fn an_interrupted_edit_is_done_only_where_the_file_shows_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("f"), "one two\n").unwrap();
        let edit =
            |old: &str, new: &str| json!({"path": "f", "old_string": old, "new_string": new});
        let tool = EditTool::default();
        // Made: answered as the edit would have been.
        assert_eq!(
            Tool::interrupted(&tool, &edit("uno", "one"), &root).await,
            Interrupted::Done("replaced 1 occurrence(s) in f".to_owned())
        );
        // Not made yet, or a file that cannot say: it runs.
        for (old, new) in [("two", "dos"), ("three", "four")] {
            assert_eq!(
                Tool::interrupted(&tool, &edit(old, new), &root).await,
                Interrupted::RunAgain,
                "{old}"
            );
        }
        let gone = json!({"path": "missing", "old_string": "a", "new_string": "b"});
        assert_eq!(
            Tool::interrupted(&tool, &gone, &root).await,
            Interrupted::RunAgain
        );
    }

    #[tokio::test]
    async fn an_edit_that_would_grow_the_file_past_the_limit_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("f"), "a".repeat(1000)).unwrap();
        let env = ToolEnv::outside_a_run(root.clone());
        let refused = Tool::run(
                &EditTool::default(),
                json!({"path": "f", "old_string": "a", "new_string": "b".repeat(100_000), "replace_all": true}),
                &env,
            )
            .await
            .unwrap_err();
        assert!(
            refused.to_string().contains("past the limit of 64 MiB"),
            "{refused}"
        );
        assert_eq!(
            std::fs::read_to_string(root.join("f")).unwrap(),
            "a".repeat(1000)
        );
    }
}
