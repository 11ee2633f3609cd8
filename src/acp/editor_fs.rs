//! The editor's file system as a session's file backend (`tools::file_io`): when the client says
//! in `initialize` that it offers `fs.readTextFile` / `fs.writeTextFile`, the file tools' final
//! reads and writes become `fs/read_text_file` / `fs/write_text_file` requests, so the model
//! reads unsaved buffers and its edits land in the editor (which shows and saves them). The path
//! policy, the edit question and the checkpoint run before any request is sent.

use std::path::Path;
use std::time::Duration;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, ReadTextFileRequest, WriteTextFileRequest,
};

use crate::tools::file_io::FileBackend;

/// How long an editor may take to answer one file request.
const ANSWER_WITHIN: Duration = Duration::from_secs(30);

/// What the client offered in `initialize`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Offered {
    pub read: bool,
    pub write: bool,
}

impl Offered {
    pub fn from_capabilities(caps: &ClientCapabilities) -> Self {
        Offered {
            read: caps.fs.read_text_file,
            write: caps.fs.write_text_file,
        }
    }

    pub fn any(self) -> bool {
        self.read || self.write
    }
}

/// One session's view of the editor's files.
pub struct EditorFiles {
    cx: ConnectionTo<Client>,
    session_id: String,
    offered: Offered,
}

impl EditorFiles {
    pub fn new(cx: ConnectionTo<Client>, session_id: &str, offered: Offered) -> Self {
        EditorFiles {
            cx,
            session_id: session_id.to_string(),
            offered,
        }
    }
}

/// The editor's answer within [`ANSWER_WITHIN`], with errors in words.
async fn answered<T>(
    what: &str,
    asked: impl Future<Output = Result<T, agent_client_protocol::Error>>,
) -> Result<T, String> {
    match tokio::time::timeout(ANSWER_WITHIN, asked).await {
        Err(_) => Err(format!(
            "the editor did not answer the {what} request within {} s",
            ANSWER_WITHIN.as_secs()
        )),
        Ok(Err(e)) => Err(format!("the editor refused the {what} request: {e}")),
        Ok(Ok(v)) => Ok(v),
    }
}

#[async_trait::async_trait]
impl FileBackend for EditorFiles {
    fn name(&self) -> &str {
        "the editor"
    }

    fn reads(&self) -> bool {
        self.offered.read
    }

    fn writes(&self) -> bool {
        self.offered.write
    }

    async fn read_text(&self, path: &Path) -> Result<String, String> {
        let request = ReadTextFileRequest::new(self.session_id.clone(), path.to_path_buf());
        let asked = self.cx.send_request(request).block_task();
        let response = answered("fs/read_text_file", asked).await?;
        tracing::debug!(path = %path.display(), bytes = response.content.len(), "read through the editor");
        Ok(response.content)
    }

    async fn write_text(&self, path: &Path, content: &str) -> Result<(), String> {
        let request = WriteTextFileRequest::new(
            self.session_id.clone(),
            path.to_path_buf(),
            content.to_string(),
        );
        let asked = self.cx.send_request(request).block_task();
        answered("fs/write_text_file", asked).await?;
        tracing::debug!(path = %path.display(), bytes = content.len(), "written through the editor");
        Ok(())
    }
}
