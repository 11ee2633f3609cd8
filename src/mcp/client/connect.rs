//! Opening one MCP connection: a stdio server (`command`/`args`/`env`) spawned with the terminal's
//! scrubbed environment plus the entry's own `env`, its stderr appended to
//! `logs/mcp-<server>.log`, in its own process group under the terminal's supervisor (stopped
//! with everything it started however its connection or hermes ends: `tree.rs`); or a
//! Streamable HTTP server (`url`/`headers`) on hermes's rustls. Header values (often secrets
//! expanded from `${VAR}`) are never logged or put in an error.

use std::collections::HashMap;
use std::process::Stdio;

use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};

use crate::config::Config;
use crate::config::mcp::McpServerConfig;

/// A live client session with one server.
pub type Connection = RunningService<RoleClient, ()>;

/// Why a connection could not be opened (the text the model and `hermes mcp` show).
#[derive(Debug, Clone, thiserror::Error)]
pub enum ConnectError {
    #[error("its entry has neither `command` nor `url`; add one in config.yaml")]
    NoTransport,
    #[error(
        "`transport: sse` (the legacy SSE transport) is not supported; use the server's Streamable HTTP URL"
    )]
    Sse,
    #[error("cannot start `{command}`: {reason}")]
    Spawn { command: String, reason: String },
    #[error("the header `{0}` has a name or value HTTP does not allow")]
    BadHeader(String),
    #[error("the MCP handshake failed: {0}")]
    Handshake(String),
}

/// The `capabilities` the server declared in its handshake (`Null` when it sent none).
pub fn capabilities(conn: &Connection) -> serde_json::Value {
    conn.peer()
        .peer_info()
        .and_then(|info| serde_json::to_value(&*info).ok())
        .and_then(|v| v.get("capabilities").cloned())
        .unwrap_or(serde_json::Value::Null)
}

/// Connects and completes the MCP handshake (no timeout here: the caller bounds it).
pub async fn connect(
    config: &Config,
    name: &str,
    entry: &McpServerConfig,
    http: &reqwest::Client,
) -> Result<Connection, ConnectError> {
    if entry.transport.as_deref() == Some("sse") {
        return Err(ConnectError::Sse);
    }
    match (&entry.command, &entry.url) {
        (Some(command), _) => stdio(config, name, command, entry).await,
        (None, Some(url)) => streamable_http(url, entry, http).await,
        (None, None) => Err(ConnectError::NoTransport),
    }
}

async fn stdio(
    config: &Config,
    name: &str,
    command: &str,
    entry: &McpServerConfig,
) -> Result<Connection, ConnectError> {
    let spawn_err = |reason: String| ConnectError::Spawn {
        command: command.to_string(),
        reason,
    };
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(&entry.args);
    crate::security::sandbox::env::apply(config, &mut cmd);
    cmd.envs(&entry.env);
    // Relative paths in `args` resolve where the user runs hermes, as in Python Hermes.
    let log = stderr_log(config, name);
    let stderr = match log {
        Some(file) => Stdio::from(file),
        None => Stdio::null(),
    };
    // Its own process group (a Ctrl-C in the terminal must not reach the server) under the
    // terminal's supervisor, which kills the server and all it started when the connection is
    // stopped or dropped, when the server exits, and when hermes is SIGKILLed (tree.rs).
    let mut cmd = process_wrap::tokio::CommandWrap::from(cmd);
    cmd.wrap(super::tree::OwnTree);
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(stderr)
        .spawn()
        .map_err(|e| spawn_err(e.to_string()))?;
    ().serve(transport)
        .await
        .map_err(|e| ConnectError::Handshake(e.to_string()))
}

/// `logs/mcp-<server>.log`, opened for appending with a start line.
fn stderr_log(config: &Config, name: &str) -> Option<std::fs::File> {
    use std::io::Write;
    let dir = config.home.logs_dir();
    std::fs::create_dir_all(&dir).ok()?;
    let path = dir.join(format!("mcp-{}.log", super::names::sanitize(name)));
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| tracing::warn!(path = %path.display(), error = %e, "cannot open the MCP server log"))
        .ok()?;
    let _ = writeln!(
        file,
        "--- {} starting MCP server {name} ---",
        chrono::Utc::now().to_rfc3339()
    );
    Some(file)
}

async fn streamable_http(
    url: &str,
    entry: &McpServerConfig,
    http: &reqwest::Client,
) -> Result<Connection, ConnectError> {
    let mut headers = HashMap::new();
    for (k, v) in &entry.headers {
        let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
            .map_err(|_| ConnectError::BadHeader(k.clone()))?;
        let value = reqwest::header::HeaderValue::from_str(v)
            .map_err(|_| ConnectError::BadHeader(k.clone()))?;
        headers.insert(name, value);
    }
    let transport_config =
        StreamableHttpClientTransportConfig::with_uri(url.to_string()).custom_headers(headers);
    let transport = StreamableHttpClientTransport::with_client(http.clone(), transport_config);
    ().serve(transport)
        .await
        .map_err(|e| ConnectError::Handshake(e.to_string()))
}
