//! A workspace file's whole text, read and written by the file tools. A read goes through
//! the editor the run is driven from when it offers its files (what the person sees,
//! unsaved changes included), with the directories on the way held still
//! ([`crate::held_path`]): an answer for a path that moved while the editor opened it by
//! name is dropped, and the disk is read beneath the workspace root instead. A write goes
//! to disk beneath the root, never through the editor by name: nothing can hold a path
//! still before a write lands, and the editor sees the change on disk. The caller has
//! checked the path (the guard, the hidden list); a path that is on disk but is not a
//! regular file (a FIFO, a device) is refused either way.

use std::path::Path;

use wonopcode_agent_loop::{ToolEnv, ToolError};

use crate::edit::{MAX_EDIT_BYTES, read_for_edit, write_beneath};
use crate::held_path::HeldPath;
use crate::workspace::describe;

/// How long the editor has to answer a read.
const EDITOR_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The text of `path` (`rel` as the model sees it), at most [`MAX_EDIT_BYTES`].
pub(crate) async fn read(env: &ToolEnv, path: &Path, rel: &str) -> Result<String, ToolError> {
    if let Some(editor) = env.editor() {
        let held = HeldPath::hold(&env.workspace_root, path).map_err(|e| e.for_path(rel))?;
        if let Some(held) = held {
            let asked = tokio::time::timeout(EDITOR_TIMEOUT, editor.read_text(path)).await;
            match asked {
                Err(_) => return Err(editor_silent(rel)),
                Ok(Some(Err(e))) => {
                    return Err(ToolError::Failed(format!(
                        "cannot read `{rel}` from the editor: {e}"
                    )));
                }
                Ok(Some(Ok(text))) if !held.unchanged() => {
                    tracing::warn!(
                        path = rel,
                        "the path moved while the editor read it; reading the disk"
                    );
                    drop(text);
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
    }
    read_for_edit(&env.workspace_root, path, rel).await
}

/// Writes `text` over `path` (made when missing), on disk beneath the workspace root.
pub(crate) async fn write(
    env: &ToolEnv,
    path: &Path,
    rel: &str,
    text: &str,
) -> Result<(), ToolError> {
    write_beneath(&env.workspace_root, path, text.as_bytes())
        .await
        .map_err(|e| ToolError::Failed(format!("cannot write `{rel}`: {}", describe(&e))))
}

/// Whether the editor answers reads (else the disk is read, a line at a time).
pub(crate) fn editor_reads(env: &ToolEnv) -> bool {
    env.editor().is_some()
}

fn editor_silent(rel: &str) -> ToolError {
    ToolError::Failed(format!(
        "the editor did not answer the read of `{rel}` within {} s",
        EDITOR_TIMEOUT.as_secs()
    ))
}
