//! Files as an editor holds them. When a front-end drives wonopcode from an editor that
//! offers its buffers (ACP's `fs/read_text_file`), the file tools read what the person
//! sees, unsaved changes included. Every path is still checked by the tool first (the path
//! guard, the hidden list, the permission rules), and the directories on its way are held
//! still while the editor opens it by name: the editor is only asked about files the tool
//! may touch. Writes go to disk, beneath the workspace root, never through the editor by
//! name (`docs/security.md`): the editor sees them as changes on disk.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;

/// An editor's view of the workspace's files.
#[async_trait]
pub trait EditorFiles: Send + Sync {
    /// The text of `path` (absolute, checked) as the editor holds it; `None`: the editor
    /// does not read files, and the disk is read. `Err`: one line saying why not.
    async fn read_text(&self, path: &Path) -> Option<Result<String, String>>;
}

impl std::fmt::Debug for dyn EditorFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EditorFiles")
    }
}

/// A shared [`EditorFiles`].
pub type SharedEditorFiles = Arc<dyn EditorFiles>;
