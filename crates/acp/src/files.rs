//! The editor's files for the file tools, when the editor offers them at `initialize`
//! (`fs.readTextFile`, `fs.writeTextFile`): `read`, `edit` and `write` read the buffer the
//! person sees (unsaved changes included) with `fs/read_text_file` and write with
//! `fs/write_text_file`, so an edit lands in the editor. The tool has checked the path
//! first (the guard, the hidden list, the permission rules): the editor is asked only about
//! files the tool may touch. What the editor does not offer is read or written on disk.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    FileSystemCapabilities, ReadTextFileRequest, SessionId, WriteTextFileRequest,
};
use async_trait::async_trait;
use wonopcode_agent_loop::editor_files::EditorFiles;

/// One session's view of the editor's files.
pub(crate) struct EditorFs {
    /// The session's id, set once it is built.
    session: Arc<OnceLock<SessionId>>,
    client: ConnectionTo<Client>,
    offered: FileSystemCapabilities,
}

impl EditorFs {
    /// The editor's files for the session `session`, when it offers reading or writing.
    pub(crate) fn offered(
        session: Arc<OnceLock<SessionId>>,
        client: ConnectionTo<Client>,
        offered: &FileSystemCapabilities,
    ) -> Option<Self> {
        (offered.read_text_file || offered.write_text_file).then(|| Self {
            session,
            client,
            offered: offered.clone(),
        })
    }
}

#[async_trait]
impl EditorFiles for EditorFs {
    async fn read_text(&self, path: &Path) -> Option<Result<String, String>> {
        if !self.offered.read_text_file {
            return None;
        }
        let session = self.session.get()?.clone();
        let request = ReadTextFileRequest::new(session, path.to_path_buf());
        let answered = self.client.send_request(request).block_task().await;
        Some(answered.map(|r| r.content).map_err(|e| e.to_string()))
    }

    async fn write_text(&self, path: &Path, text: &str) -> Option<Result<(), String>> {
        if !self.offered.write_text_file {
            return None;
        }
        let session = self.session.get()?.clone();
        let request = WriteTextFileRequest::new(session, path.to_path_buf(), text);
        let answered = self.client.send_request(request).block_task().await;
        Some(answered.map(|_| ()).map_err(|e| e.to_string()))
    }
}
