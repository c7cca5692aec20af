//! `write`: create or overwrite a file.

use std::path::Path;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use wonopcode_agent_loop::{ToolEnv, ToolError, ToolOutput, TypedTool, parameters_of};
use wonopcode_protocol::event::{FileChange, FileChangeKind};
use wonopcode_protocol::{Interrupted, ToolCategory, ToolKind, ToolSpec};

use crate::diff::{MAX_DIFF_INPUT, unified};
use crate::spec::spec;
use crate::workspace::{OpenError, describe, display, resolve, resolve_for, rule_subject};
use crate::write_guard::WriteGuard;

/// Writes a file, creating parent directories.
pub struct WriteTool {
    spec: ToolSpec,
    guard: WriteGuard,
}

impl WriteTool {
    /// A `write` held to the run's `guard` (protected names, files changed since read).
    pub(crate) fn guarded(guard: WriteGuard) -> Self {
        Self {
            guard,
            ..Self::default()
        }
    }
}

impl Default for WriteTool {
    /// A `write` with no sandbox to keep protected names by.
    fn default() -> Self {
        Self {
            guard: WriteGuard::default(),
            spec: spec(
                "write",
                "Create or overwrite a file of the workspace with the given content. Parent directories are created.",
                ToolKind::Mutating,
                ToolCategory::FileSystem,
                parameters_of::<WriteArgs>(),
            ),
        }
    }
}

/// A `write` call's arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteArgs {
    /// File path, relative to the workspace root
    path: String,
    // The file's whole new content.
    content: String,
}

#[async_trait]
impl TypedTool for WriteTool {
    type Args = WriteArgs;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn permission_subject(&self, args: &WriteArgs, root: &Path) -> Option<String> {
        Some(rule_subject(root, &args.path))
    }

    async fn preview(&self, a: &WriteArgs, root: &Path) -> Option<String> {
        let path = resolve(root, &a.path).ok()?;
        let rel = display(root, &path);
        match tokio::fs::metadata(&path).await {
            Ok(meta) if meta.is_file() => {
                let before = small_text(&path, meta.len()).await?;
                unified(&rel, Some(&before), &a.content)
            }
            Ok(_) => None,
            Err(_) => unified(&rel, None, &a.content),
        }
    }

    /// Writing the same content again leaves the same file: it runs.
    async fn interrupted(&self, _args: &WriteArgs, _root: &Path) -> Interrupted {
        Interrupted::RunAgain
    }

    async fn run(&self, a: WriteArgs, env: &ToolEnv) -> Result<ToolOutput, ToolError> {
        let path = resolve_for(env, &a.path)?;
        let rel = display(&env.workspace_root, &path);
        self.guard.before("write", env, &path, &rel).await?;
        // The exact bytes it replaces, read once for the diff and the run's checkpoints (a
        // file too large to keep is not: its change cannot be taken back).
        let (kind, replaced) = match tokio::fs::metadata(&path).await {
            // Writing to a FIFO would wait for a reader; to a device, reach past the files.
            Ok(meta) if !meta.is_file() => {
                return Err(OpenError::NotRegular.for_path(&a.path));
            }
            Ok(meta) => (
                FileChangeKind::Update,
                bounded_bytes(&path, meta.len()).await,
            ),
            Err(_) => (FileChangeKind::Add, None),
        };
        let before = match kind {
            FileChangeKind::Add => None,
            // The editor's text is the one the person sees (and the diff is against).
            _ if crate::text_files::editor_reads(env) => {
                crate::text_files::read(env, &path, &rel).await.ok()
            }
            _ => replaced
                .as_deref()
                .filter(|bytes| bytes.len() <= MAX_DIFF_INPUT)
                .and_then(|bytes| std::str::from_utf8(bytes).ok())
                .map(str::to_owned),
        };
        if let Some(parent) = path.parent() {
            let (root, parent) = (env.workspace_root.clone(), parent.to_path_buf());
            tokio::task::spawn_blocking(move || wonopcode_os::beneath::create_dirs(&root, &parent))
                .await
                .map_err(std::io::Error::other)
                .and_then(|made| made)
                .map_err(|e| {
                    ToolError::Failed(format!(
                        "cannot create the directory of `{rel}`: {}",
                        describe(&e)
                    ))
                })?;
        }
        crate::text_files::write(env, &path, &rel, &a.content).await?;
        self.guard.wrote(env, &path).await;
        if kind == FileChangeKind::Add || replaced.is_some() {
            env.changed(&rel, replaced.as_deref(), Some(a.content.as_bytes()));
        }
        let mut out = ToolOutput::text(format!("wrote {} bytes to {rel}", a.content.len()));
        // A file that was there but too large (or not text) to diff gets no diff rather
        // than one showing every line as new.
        let diff = match kind {
            FileChangeKind::Add => unified(&rel, None, &a.content),
            FileChangeKind::Update | FileChangeKind::Delete => {
                before.and_then(|b| unified(&rel, Some(&b), &a.content))
            }
        };
        out.file_change = Some(FileChange {
            path: rel,
            kind,
            diff,
        });
        Ok(out)
    }
}

/// The text of a file of `size` bytes when it is small enough to diff and is UTF-8.
async fn small_text(path: &Path, size: u64) -> Option<String> {
    if size > MAX_DIFF_INPUT as u64 {
        return None;
    }
    tokio::fs::read_to_string(path).await.ok()
}

/// The bytes of the file at `path`, of `size` bytes, when that is at most
/// [`crate::edit::MAX_EDIT_BYTES`].
async fn bounded_bytes(path: &Path, size: u64) -> Option<Vec<u8>> {
    if size > crate::edit::MAX_EDIT_BYTES {
        return None;
    }
    tokio::fs::read(path).await.ok()
}
