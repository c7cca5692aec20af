//! The editor's files for the file tools, when the editor offers them at `initialize`
//! (`fs.readTextFile`): `read`, `edit` and `write` read the buffer the person sees
//! (unsaved changes included) with `fs/read_text_file`. The tool has checked the path first
//! (the guard, the hidden list, the permission rules) and holds its directories still
//! while the editor opens it by name. `fs/write_text_file` is never sent, even when
//! offered: a write by name could be led out of the workspace by a link swapped in after
//! the check, so writes go to disk beneath the root and the editor sees them there.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{FileSystemCapabilities, ReadTextFileRequest, SessionId};
use async_trait::async_trait;
use wonopcode_protocol::editor_files::EditorFiles;

/// One session's view of the editor's files.
pub(crate) struct EditorFs {
    /// The session's id, set once it is built.
    session: Arc<OnceLock<SessionId>>,
    client: ConnectionTo<Client>,
}

impl EditorFs {
    /// The editor's files for the session `session`, when it offers reading them.
    pub(crate) fn offered(
        session: Arc<OnceLock<SessionId>>,
        client: ConnectionTo<Client>,
        offered: &FileSystemCapabilities,
    ) -> Option<Self> {
        offered.read_text_file.then(|| Self { session, client })
    }
}

#[async_trait]
impl EditorFiles for EditorFs {
    async fn read_text(&self, path: &Path) -> Option<Result<String, String>> {
        let session = self.session.get()?.clone();
        let request = ReadTextFileRequest::new(session, path.to_path_buf());
        let answered = self.client.send_request(request).block_task().await;
        Some(answered.map(|r| r.content).map_err(|e| e.to_string()))
    }
}
