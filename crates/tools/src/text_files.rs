//! A workspace file's whole text, read and written by the file tools: through the editor
//! the run is driven from when it offers its files (what the person sees, unsaved changes
//! included; a write lands in the editor), else on disk beneath the workspace root. The
//! caller has checked the path (the guard, the hidden list); a path that is on disk but is
//! not a regular file (a FIFO, a device) is refused either way.

use std::path::Path;

use wonopcode_agent_loop::{ToolEnv, ToolError};

use crate::edit::{MAX_EDIT_BYTES, read_for_edit, write_beneath};
use crate::workspace::{OpenError, describe};

/// How long the editor has to answer a read or a write.
const EDITOR_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The text of `path` (`rel` as the model sees it), at most [`MAX_EDIT_BYTES`].
pub(crate) async fn read(env: &ToolEnv, path: &Path, rel: &str) -> Result<String, ToolError> {
    if let Some(editor) = &env.editor {
        regular_or_missing(path, rel).await?;
        let asked = tokio::time::timeout(EDITOR_TIMEOUT, editor.read_text(path)).await;
        match asked {
            Err(_) => return Err(editor_silent("read", rel)),
            Ok(Some(Err(e))) => {
                return Err(ToolError::Failed(format!(
                    "cannot read `{rel}` from the editor: {e}"
                )));
            }
            Ok(Some(Ok(text))) if text.len() as u64 > MAX_EDIT_BYTES => {
                return Err(ToolError::Failed(format!(
                    "`{rel}` is too large to read whole ({} MiB; the limit is {} MiB)",
                    text.len() >> 20,
                    MAX_EDIT_BYTES >> 20
                )));
            }
            Ok(Some(Ok(text))) => return Ok(text),
            Ok(None) => {}
        }
    }
    read_for_edit(&env.workspace_root, path, rel).await
}

/// Writes `text` over `path` (made when missing).
pub(crate) async fn write(
    env: &ToolEnv,
    path: &Path,
    rel: &str,
    text: &str,
) -> Result<(), ToolError> {
    if let Some(editor) = &env.editor {
        regular_or_missing(path, rel).await?;
        let asked = tokio::time::timeout(EDITOR_TIMEOUT, editor.write_text(path, text)).await;
        match asked {
            Err(_) => return Err(editor_silent("write", rel)),
            Ok(Some(written)) => {
                return written.map_err(|e| {
                    ToolError::Failed(format!("cannot write `{rel}` in the editor: {e}"))
                });
            }
            Ok(None) => {}
        }
    }
    write_beneath(&env.workspace_root, path, text.as_bytes())
        .await
        .map_err(|e| ToolError::Failed(format!("cannot write `{rel}`: {}", describe(&e))))
}

/// Whether the editor answers reads (else the disk is read, a line at a time).
pub(crate) fn editor_reads(env: &ToolEnv) -> bool {
    env.editor.is_some()
}

/// Refuses a path that is on disk as something other than a regular file: the editor is
/// never asked to open a FIFO or a device.
async fn regular_or_missing(path: &Path, rel: &str) -> Result<(), ToolError> {
    match tokio::fs::symlink_metadata(path).await {
        Ok(meta) if !meta.is_file() => Err(OpenError::NotRegular.for_path(rel)),
        _ => Ok(()),
    }
}

fn editor_silent(what: &str, rel: &str) -> ToolError {
    ToolError::Failed(format!(
        "the editor did not answer the {what} of `{rel}` within {} s",
        EDITOR_TIMEOUT.as_secs()
    ))
}
