//! The MCP tools `hermes mcp serve` offers, with Python Hermes's names and arguments
//! (`conversations_list conversation_get messages_read attachments_fetch events_poll events_wait
//! messages_send channels_list`) plus `conversations_search` (full-text search over every
//! conversation). Each tool is a thin typed door onto [`Conversations`]; a failure is a tool
//! error result the caller can read, never a protocol error.
//!
//! Not offered: Python's `permissions_list_open` / `permissions_respond`. Approvals are asked
//! and answered inside the process running the turn (the chat, the REPL, the editor); this
//! server is another process and has no channel to them, so offering the tools would only
//! pretend. The server's instructions say so.

use std::sync::Arc;
use std::time::Duration;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::conversations::Conversations;
use crate::security::redact::Redactor;
use crate::security::secrets;

/// What a client is told about this server.
const INSTRUCTIONS: &str = "Hermes Agent's conversations and channels: list, read and search \
every conversation hermes has had (chat platforms, terminal, editor), follow new messages with \
events_poll/events_wait, and send a message to a chat with messages_send. Approval requests \
are answered where they are asked (the chat or terminal running the turn); this server cannot \
list or answer them.";

fn clamp(value: Option<i64>, default: i64, min: i64, max: i64) -> usize {
    usize::try_from(value.unwrap_or(default).clamp(min, max)).unwrap_or(0)
}

/// Every string in `value` redacted (the strings, not the JSON text: `"session_key": "agent:…"`
/// would read as a named secret and be hidden).
fn redact_strings(value: &mut Value, redactor: &Redactor) {
    match value {
        Value::String(s) => {
            if let std::borrow::Cow::Owned(red) = redactor.redact(s) {
                *s = red;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| redact_strings(v, redactor)),
        Value::Object(map) => map.values_mut().for_each(|v| redact_strings(v, redactor)),
        _ => {}
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListArgs {
    /// Only this platform (telegram, cli, acp, api_server, ...).
    pub platform: Option<String>,
    /// Conversations to return (1-200, default 50).
    pub limit: Option<i64>,
    /// Text to find in the title, first message or session key.
    pub search: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct KeyArgs {
    /// The session key (or session id) from conversations_list.
    pub session_key: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadArgs {
    /// The session key (or session id) from conversations_list.
    pub session_key: String,
    /// Most recent messages to return (1-200, default 50).
    pub limit: Option<i64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct AttachmentArgs {
    /// The session key (or session id) from conversations_list.
    pub session_key: String,
    /// The message id from messages_read.
    pub message_id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchArgs {
    /// Words to find; "exact phrase", OR, NOT and a trailing * work.
    pub query: String,
    /// Conversations to return (1-10, default 5).
    pub limit: Option<i64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct PollArgs {
    /// Return events after this cursor (0 for all; latest_cursor in a result is "now").
    pub after_cursor: Option<i64>,
    /// Only this conversation.
    pub session_key: Option<String>,
    /// Events to return (1-200, default 20).
    pub limit: Option<i64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct WaitArgs {
    /// Wait for an event after this cursor.
    pub after_cursor: Option<i64>,
    /// Only this conversation.
    pub session_key: Option<String>,
    /// Longest wait in milliseconds (0-300000, default 30000).
    pub timeout_ms: Option<i64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SendArgs {
    /// "platform:chat_id", e.g. "telegram:6308981865" (channels_list shows targets).
    pub target: String,
    /// The text to send.
    pub message: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ChannelArgs {
    /// Only this platform.
    pub platform: Option<String>,
}

/// The MCP server's handler: one per client connection, sharing the store.
#[derive(Clone)]
pub struct HermesMcp {
    conversations: Conversations,
    /// What leaves the process is redacted as a tool result is: user messages are stored as
    /// typed (a key pasted into a chat), and a row may predate the secret it holds.
    redactor: Arc<Redactor>,
    tool_router: ToolRouter<Self>,
}

impl HermesMcp {
    pub fn new(conversations: Conversations) -> Self {
        let config = &conversations.config;
        let redactor = Redactor::new(secrets::collect(config), config.security.redact_secrets);
        HermesMcp {
            conversations,
            redactor: Arc::new(redactor),
            tool_router: Self::tool_router(),
        }
    }

    fn answer(&self, result: Result<Value, String>) -> Result<String, String> {
        result.and_then(|mut v| {
            redact_strings(&mut v, &self.redactor);
            serde_json::to_string_pretty(&v).map_err(|e| format!("cannot encode the result: {e}"))
        })
    }
}

#[tool_router]
impl HermesMcp {
    #[tool(
        description = "List conversations (chat platforms, terminal, editor), newest first, with the session_key the other tools take."
    )]
    async fn conversations_list(
        &self,
        Parameters(a): Parameters<ListArgs>,
    ) -> Result<String, String> {
        let limit = clamp(a.limit, 50, 1, 200);
        self.answer(
            self.conversations
                .list(a.platform.as_deref(), limit, a.search.as_deref())
                .await,
        )
    }

    #[tool(description = "Details of one conversation by its session key.")]
    async fn conversation_get(&self, Parameters(a): Parameters<KeyArgs>) -> Result<String, String> {
        self.answer(self.conversations.get(&a.session_key).await)
    }

    #[tool(description = "Read a conversation's recent user and assistant messages, oldest first.")]
    async fn messages_read(&self, Parameters(a): Parameters<ReadArgs>) -> Result<String, String> {
        let limit = clamp(a.limit, 50, 1, 200);
        self.answer(self.conversations.read(&a.session_key, limit).await)
    }

    #[tool(description = "List the media files (MEDIA: paths) and images of one message.")]
    async fn attachments_fetch(
        &self,
        Parameters(a): Parameters<AttachmentArgs>,
    ) -> Result<String, String> {
        self.answer(
            self.conversations
                .attachments(&a.session_key, &a.message_id)
                .await,
        )
    }

    #[tool(
        description = "Full-text search over every past conversation; returns the best-matching conversations with the messages around each match."
    )]
    async fn conversations_search(
        &self,
        Parameters(a): Parameters<SearchArgs>,
    ) -> Result<String, String> {
        let limit = clamp(a.limit, 5, 1, 10);
        self.answer(self.conversations.search(&a.query, limit).await)
    }

    #[tool(
        description = "New messages since a cursor (event type: message). Pass next_cursor to the next call."
    )]
    async fn events_poll(&self, Parameters(a): Parameters<PollArgs>) -> Result<String, String> {
        let limit = clamp(a.limit, 20, 1, 200);
        self.answer(
            self.conversations
                .poll(a.after_cursor.unwrap_or(0), a.session_key.as_deref(), limit)
                .await,
        )
    }

    #[tool(description = "Wait for the next message after a cursor (long poll).")]
    async fn events_wait(&self, Parameters(a): Parameters<WaitArgs>) -> Result<String, String> {
        let ms = clamp(a.timeout_ms, 30_000, 0, 300_000);
        self.answer(
            self.conversations
                .wait(
                    a.after_cursor.unwrap_or(0),
                    a.session_key.as_deref(),
                    Duration::from_millis(ms as u64),
                )
                .await,
        )
    }

    #[tool(
        description = "Send a message to a chat through hermes's configured platforms (target \"platform:chat_id\")."
    )]
    async fn messages_send(&self, Parameters(a): Parameters<SendArgs>) -> Result<String, String> {
        self.answer(self.conversations.send(&a.target, &a.message).await)
    }

    #[tool(
        description = "Chats hermes has talked in, as messages_send targets; can_send says whether the platform is configured here."
    )]
    async fn channels_list(
        &self,
        Parameters(a): Parameters<ChannelArgs>,
    ) -> Result<String, String> {
        self.answer(self.conversations.channels(a.platform.as_deref()).await)
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for HermesMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("hermes", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }
}
