//! `apply_patch`: adds, updates, moves and deletes files with one patch in the format
//! Codex's models are trained on (`parse`), its `input` argument as in Codex's function tool.
//! The whole patch is worked out before anything is written: every path is checked to be in
//! the workspace and every hunk to apply, so a patch that fails anywhere changes nothing.
//! Operations apply in order, each seeing the files as the ones before it left them.

mod apply;
mod parse;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use wonopcode_agent_loop::{ToolEnv, ToolError, ToolOutput, parameters_of};
use wonopcode_protocol::event::{FileChange, FileChangeKind};
use wonopcode_protocol::{ToolCategory, ToolKind, ToolSpec};

use crate::diff::unified;
use crate::edit::read_for_edit;
use crate::spec::spec;
use crate::workspace::{OpenError, describe, display, resolve_visible};
use crate::write_guard::WriteGuard;
use apply::apply_hunks;
use parse::{FileOp, parse};
use wonopcode_os::beneath::Dir;

/// What the model is told about the format.
const DESCRIPTION: &str = "Add, update, move and delete files with one patch. The patch \
starts with `*** Begin Patch` and ends with `*** End Patch`. Between them, each file \
operation starts with a header: `*** Add File: PATH` (then every line of the new file, each \
prefixed with `+`), `*** Delete File: PATH`, or `*** Update File: PATH` (optionally followed \
by `*** Move to: NEW_PATH`, then hunks). A hunk starts with `@@` (optionally followed by a \
line that comes before the change, such as a function's first line) and lists lines \
prefixed with ` ` (unchanged context, about 3 lines before and after), `-` (removed) or `+` \
(added); `*** End of File` after a hunk anchors it at the end of the file. Paths are \
relative to the workspace. If any hunk does not apply, nothing is changed.";

/// Applies a patch to the workspace.
pub struct ApplyPatchTool {
    spec: ToolSpec,
    guard: WriteGuard,
}

impl ApplyPatchTool {
    /// An `apply_patch` held to the run's `guard` (protected names, files changed since read).
    pub(crate) fn guarded(guard: WriteGuard) -> Self {
        Self {
            guard,
            ..Self::default()
        }
    }
}

impl Default for ApplyPatchTool {
    /// An `apply_patch` with no sandbox to keep protected names by.
    fn default() -> Self {
        Self {
            guard: WriteGuard::default(),
            spec: spec(
                "apply_patch",
                DESCRIPTION,
                ToolKind::Mutating,
                ToolCategory::FileSystem,
                parameters_of::<ApplyPatchArgs>(),
            ),
        }
    }
}

/// An `apply_patch` call's arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApplyPatchArgs {
    /// The whole patch, from `*** Begin Patch` to `*** End Patch`
    input: String,
}

#[async_trait]
impl wonopcode_agent_loop::TypedTool for ApplyPatchTool {
    type Args = ApplyPatchArgs;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn preview(&self, a: &ApplyPatchArgs, root: &Path) -> Option<String> {
        // The preview shows the person what the call would do; it reads no hidden file either.
        let plan = Plan::of(root, &[], &a.input).await.ok()?;
        let diffs: Vec<String> = plan.changes.into_iter().filter_map(|c| c.diff).collect();
        (!diffs.is_empty()).then(|| diffs.concat())
    }

    async fn run(&self, a: ApplyPatchArgs, env: &ToolEnv) -> Result<ToolOutput, ToolError> {
        let plan = Plan::of(&env.workspace_root, env.hidden(), &a.input).await?;
        // Every file it touches, before any is written: a patch applies whole or not at all.
        for (path, rel) in &plan.order {
            self.guard.before("apply_patch", env, path, rel).await?;
        }
        plan.write().await?;
        for (path, rel) in &plan.order {
            self.guard.wrote(env, path).await;
            let after = plan.files.get(path).and_then(Option::as_deref);
            // What it replaced, as the plan read it: a file it could not read back is not
            // kept, so its change is not taken back.
            if let Some(before) = plan.originals.get(path) {
                env.changed(
                    rel,
                    before.as_deref().map(str::as_bytes),
                    after.map(str::as_bytes),
                );
            }
        }
        let summary: Vec<String> = plan
            .changes
            .iter()
            .map(|c| {
                let letter = match c.kind {
                    FileChangeKind::Add => 'A',
                    FileChangeKind::Update => 'M',
                    FileChangeKind::Delete => 'D',
                };
                format!("{letter} {}", c.path)
            })
            .collect();
        let mut out = ToolOutput::text(format!("applied the patch:\n{}", summary.join("\n")));
        out.file_changes = plan.changes;
        Ok(out)
    }
}

/// A patch worked out: every file's new content (`None`: removed), the files in the order
/// first touched (with their workspace-relative names), and the changes to report.
struct Plan {
    /// The workspace root the files are read beneath.
    root: PathBuf,
    files: BTreeMap<PathBuf, Option<String>>,
    /// Each file as the plan first read it from disk (`None`: there was none); a file it
    /// could not read is not here.
    originals: BTreeMap<PathBuf, Option<String>>,
    order: Vec<(PathBuf, String)>,
    changes: Vec<FileChange>,
}

impl Plan {
    /// Parses `patch` and works out what it does to the files under `root`, none of them
    /// `hidden`, without writing; the first problem is the error.
    async fn of(root: &Path, hidden: &[PathBuf], patch: &str) -> Result<Self, ToolError> {
        let ops = parse(patch).map_err(ToolError::Failed)?;
        let mut plan = Self {
            root: root.to_path_buf(),
            files: BTreeMap::new(),
            originals: BTreeMap::new(),
            order: Vec::new(),
            changes: Vec::new(),
        };
        for op in &ops {
            let path = resolve_visible(root, hidden, op.path())?;
            let rel = display(root, &path);
            match op {
                FileOp::Add { lines, .. } => {
                    let before = plan.current(&path, &rel).await.ok();
                    let mut after = lines.join("\n");
                    after.push('\n');
                    plan.change(&rel, before.as_deref(), Some(&after));
                    plan.set(path, rel, Some(after));
                }
                FileOp::Delete { .. } => {
                    let before = plan.current(&path, &rel).await?;
                    plan.change(&rel, Some(&before), None);
                    plan.set(path, rel, None);
                }
                FileOp::Update { move_to, hunks, .. } => {
                    let before = plan.current(&path, &rel).await?;
                    let after = apply_hunks(&before, hunks, &rel).map_err(ToolError::Failed)?;
                    match move_to {
                        None => {
                            plan.change(&rel, Some(&before), Some(&after));
                            plan.set(path, rel, Some(after));
                        }
                        Some(target) => {
                            let target = resolve_visible(root, hidden, target)?;
                            let target_rel = display(root, &target);
                            plan.change(&rel, Some(&before), None);
                            plan.set(path, rel, None);
                            match plan.current(&target, &target_rel).await {
                                Ok(existing) => {
                                    plan.change(&target_rel, Some(&existing), Some(&after));
                                }
                                // A new file, whose diff shows what the move changed.
                                Err(_) => plan.changes.push(FileChange {
                                    diff: unified(&target_rel, Some(&before), &after),
                                    path: target_rel.clone(),
                                    kind: FileChangeKind::Add,
                                }),
                            }
                            plan.set(target, target_rel, Some(after));
                        }
                    }
                }
            }
        }
        Ok(plan)
    }

    /// The text of `path` as the operations so far leave it; `Err` when it is not there
    /// (or not a text file wonopcode can edit).
    async fn current(&mut self, path: &Path, rel: &str) -> Result<String, ToolError> {
        match self.files.get(path) {
            Some(Some(text)) => Ok(text.clone()),
            Some(None) => Err(ToolError::Failed(format!(
                "`{rel}` is deleted by an earlier part of the patch"
            ))),
            None => {
                let read = read_for_edit(&self.root, path, rel).await;
                if !self.originals.contains_key(path) {
                    match &read {
                        Ok(text) => {
                            self.originals
                                .insert(path.to_path_buf(), Some(text.clone()));
                        }
                        Err(_) if tokio::fs::symlink_metadata(path).await.is_err() => {
                            self.originals.insert(path.to_path_buf(), None);
                        }
                        Err(_) => {}
                    }
                }
                read
            }
        }
    }

    fn set(&mut self, path: PathBuf, rel: String, content: Option<String>) {
        if !self.files.contains_key(&path) {
            self.order.push((path.clone(), rel));
        }
        self.files.insert(path, content);
    }

    /// Notes a change of `rel` for the event stream: added when there was no file, deleted
    /// when there is none after.
    fn change(&mut self, rel: &str, before: Option<&str>, after: Option<&str>) {
        let kind = match (before, after) {
            (None, _) => FileChangeKind::Add,
            (Some(_), None) => FileChangeKind::Delete,
            (Some(_), Some(_)) => FileChangeKind::Update,
        };
        self.changes.push(FileChange {
            path: rel.to_owned(),
            kind,
            diff: unified(rel, before, after.unwrap_or_default()),
        });
    }

    /// Writes every file (through a temporary file renamed into place) and removes the
    /// deleted ones, each through its directory opened beneath the workspace root.
    async fn write(&self) -> Result<(), ToolError> {
        for (path, rel) in &self.order {
            let change = match self.files.get(path) {
                Some(Some(text)) => Some(Some(text.clone())),
                Some(None) => Some(None),
                None => None,
            };
            let Some(change) = change else { continue };
            let (root, path, owned_rel) = (self.root.clone(), path.clone(), rel.clone());
            let done = tokio::task::spawn_blocking(move || -> Result<(), ToolError> {
                let name = path
                    .file_name()
                    .ok_or_else(|| OpenError::NotRegular.for_path(&owned_rel))?;
                let dir = path.parent().unwrap_or(&root);
                match change {
                    Some(text) => Dir::make(&root, dir)
                        .and_then(|d| d.replace(name, text.as_bytes(), None))
                        .map_err(|e| {
                            ToolError::Failed(format!(
                                "cannot write `{owned_rel}`: {}",
                                describe(&e)
                            ))
                        }),
                    None => match Dir::open(&root, dir).and_then(|d| d.remove(name)) {
                        Ok(()) => Ok(()),
                        // Added and deleted by the same patch: nothing to remove.
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                        Err(e) => Err(ToolError::Failed(format!(
                            "cannot delete `{owned_rel}`: {}",
                            describe(&e)
                        ))),
                    },
                }
            });
            done.await
                .map_err(|e| ToolError::Failed(format!("writing the file stopped: {e}")))??;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    // The calls as the registry makes them: JSON, through the blanket `Tool`.
    use wonopcode_agent_loop::Tool;

    struct Workspace {
        _dir: tempfile::TempDir,
        root: PathBuf,
    }

    impl Workspace {
        fn new(files: &[(&str, &str)]) -> Self {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path().join("ws");
            std::fs::create_dir(&root).unwrap();
            let root = root.canonicalize().unwrap();
            for (path, text) in files {
                let path = root.join(path);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, text).unwrap();
            }
            Self { _dir: dir, root }
        }

        async fn apply(&self, patch: &str) -> Result<ToolOutput, ToolError> {
            let env = ToolEnv::outside_a_run(self.root.clone());
            ApplyPatchTool::default()
                .run(json!({ "input": patch }), &env)
                .await
        }

        fn read(&self, path: &str) -> Option<String> {
            std::fs::read_to_string(self.root.join(path)).ok()
        }
    }

    #[tokio::test]
    async fn add_update_with_several_hunks_delete_and_move() {
        let ws = Workspace::new(&[
            (
                "src/app.py",
                "import os\n\ndef greet():\n    print(\"Hi\")\n\ndef main():\n    greet()\n",
            ),
            ("obsolete.txt", "old\n"),
            ("notes/a.md", "# A\ntext\n"),
        ]);
        let out = ws
            .apply(
                "*** Begin Patch\n*** Add File: docs/hello.txt\n+Hello world\n*** Update File: src/app.py\n@@ def greet():\n-    print(\"Hi\")\n+    print(\"Hello, world!\")\n@@ def main():\n-    greet()\n+    greet()\n+    greet()\n*** Delete File: obsolete.txt\n*** Update File: notes/a.md\n*** Move to: notes/b.md\n@@\n-text\n+more text\n*** End Patch\n",
            )
            .await
            .unwrap();
        assert_eq!(
            out.content,
            "applied the patch:\nA docs/hello.txt\nM src/app.py\nD obsolete.txt\nD notes/a.md\nA notes/b.md"
        );
        assert_eq!(ws.read("docs/hello.txt").as_deref(), Some("Hello world\n"));
        assert_eq!(
            ws.read("src/app.py").as_deref(),
            Some(
                "import os\n\ndef greet():\n    print(\"Hello, world!\")\n\ndef main():\n    greet()\n    greet()\n"
            )
        );
        assert_eq!(ws.read("obsolete.txt"), None);
        assert_eq!(ws.read("notes/a.md"), None);
        assert_eq!(ws.read("notes/b.md").as_deref(), Some("# A\nmore text\n"));
        let kinds: Vec<_> = out.file_changes.iter().map(|c| c.kind).collect();
        assert_eq!(
            kinds,
            [
                FileChangeKind::Add,
                FileChangeKind::Update,
                FileChangeKind::Delete,
                FileChangeKind::Delete,
                FileChangeKind::Add
            ]
        );
        assert!(
            out.file_changes[1]
                .diff
                .as_deref()
                .unwrap()
                .contains("+    print(\"Hello, world!\")")
        );
    }

    #[tokio::test]
    async fn a_stale_hunk_changes_nothing_and_says_where() {
        let ws = Workspace::new(&[("a.txt", "one\ntwo\n"), ("b.txt", "x\n")]);
        let error = ws
            .apply("*** Begin Patch\n*** Add File: new.txt\n+new\n*** Update File: b.txt\n@@\n-x\n+y\n*** Update File: a.txt\n@@\n-three\n+3\n*** End Patch")
            .await
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("`a.txt`: hunk 1 (patch line 9) does not apply: its line `three` was not found from line 1"),
            "{error}"
        );
        assert_eq!(ws.read("new.txt"), None, "nothing is written");
        assert_eq!(ws.read("b.txt").as_deref(), Some("x\n"));
    }

    #[tokio::test]
    async fn paths_outside_the_workspace_and_missing_files_are_refused() {
        let ws = Workspace::new(&[("a.txt", "a\n")]);
        for (patch, says) in [
            (
                "*** Begin Patch\n*** Add File: ../escape.txt\n+x\n*** End Patch",
                "outside the workspace",
            ),
            (
                "*** Begin Patch\n*** Update File: a.txt\n*** Move to: ../b.txt\n@@\n-a\n+b\n*** End Patch",
                "outside the workspace",
            ),
            (
                "*** Begin Patch\n*** Delete File: gone.txt\n*** End Patch",
                "gone.txt",
            ),
            (
                "*** Begin Patch\n*** Delete File: a.txt\n*** Update File: a.txt\n@@\n-a\n+b\n*** End Patch",
                "deleted by an earlier part of the patch",
            ),
        ] {
            let error = ws.apply(patch).await.unwrap_err().to_string();
            assert!(error.contains(says), "{patch:?}: {error}");
        }
        assert_eq!(ws.read("a.txt").as_deref(), Some("a\n"));
        assert!(!ws.root.parent().unwrap().join("escape.txt").exists());
        assert!(!ws.root.parent().unwrap().join("b.txt").exists());
    }

    #[tokio::test]
    async fn the_preview_is_the_diff_of_every_file() {
        let ws = Workspace::new(&[("a.txt", "a\n")]);
        let preview = ApplyPatchTool::default()
            .preview(
                &json!({"input": "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n*** Add File: c.txt\n+c\n*** End Patch"}),
                &ws.root,
            )
            .await
            .unwrap();
        assert!(preview.contains("-a\n+b"), "{preview}");
        assert!(preview.contains("+c"), "{preview}");
        assert_eq!(
            ws.read("a.txt").as_deref(),
            Some("a\n"),
            "a preview writes nothing"
        );
    }
}
