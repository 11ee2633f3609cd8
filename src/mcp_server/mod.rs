//! `hermes mcp serve`: hermes as an MCP server, so other agents and editors can read, search
//! and follow hermes's conversations and send to its chats. stdio by default (the client starts
//! `hermes mcp serve` as a child); `--http ADDR` serves Streamable HTTP behind a bearer key.
//!
//! Files: `tools.rs` (the tools and the rmcp handler), `conversations.rs` (what they read from
//! state.db and send through the gateway), `http.rs` (the HTTP transport, its key and binding
//! rules). Nothing but MCP frames goes to stdout; logs go to `$HERMES_HOME/logs`.

mod conversations;
mod http;
mod tools;

use std::sync::Arc;

use rmcp::ServiceExt;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::sessions::SessionStore;

pub use conversations::Conversations;
pub use http::{HttpOptions, KEY_VAR, serve_http};
pub use tools::HermesMcp;

/// Why the MCP server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum McpServeError {
    #[error("{0}")]
    Config(String),
    #[error("cannot listen on {addr}: {error}")]
    Bind { addr: String, error: std::io::Error },
    #[error("the MCP client could not start a session over stdio: {0}")]
    Handshake(String),
}

/// Serves MCP over this process's stdin/stdout until the client closes stdin or `stop` fires.
pub async fn serve_stdio(
    config: Arc<Config>,
    store: Arc<SessionStore>,
    stop: CancellationToken,
) -> Result<(), McpServeError> {
    let handler = HermesMcp::new(Conversations { store, config });
    let running = handler
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| McpServeError::Handshake(e.to_string()))?;
    let cancel = running.cancellation_token();
    tokio::select! {
        r = running.waiting() => {
            if let Err(e) = r {
                tracing::warn!(error = %e, "MCP stdio session ended with an error");
            }
        }
        _ = stop.cancelled() => cancel.cancel(),
    }
    Ok(())
}
