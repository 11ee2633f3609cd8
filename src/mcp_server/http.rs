//! `hermes mcp serve --http ADDR`: Streamable HTTP (rmcp's service under `/mcp`) on the API
//! server's hardened accept loop (`gateway::api_listener`: header deadline, connection caps).
//!
//! The key is `MCP_SERVER_KEY` (environment or `$HERMES_HOME/.env`), at least 16 characters,
//! sent as `Authorization: Bearer KEY` and compared in constant time. A loopback address may
//! run without one (any local process can already start `hermes mcp serve` on stdio); any other
//! address is refused without a key, since it would hand every conversation to the network.
//! Browser `Origin`s are always refused, and on loopback the `Host` must be a loopback name, so
//! a web page cannot reach the server through DNS rebinding.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::{Conversations, HermesMcp, McpServeError};
use crate::config::Config;
use crate::gateway::api_listener::ConnectionLimits;
use crate::gateway::api_server::MIN_KEY_CHARS;

/// The variable holding the bearer key.
pub const KEY_VAR: &str = "MCP_SERVER_KEY";

/// Where and how the HTTP server listens.
#[derive(Clone)]
pub struct HttpOptions {
    pub addr: SocketAddr,
    key: Option<String>,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let key = if self.key.is_some() { "set" } else { "none" };
        write!(f, "HttpOptions({}, key {key})", self.addr)
    }
}

impl HttpOptions {
    /// `addr` as given to `--http` (`127.0.0.1:8765`, `[::1]:0`, `0.0.0.0:8765`), the key from
    /// `config`'s environment.
    pub fn from_config(config: &Config, addr: &str) -> Result<Self, McpServeError> {
        let addr: SocketAddr = addr.trim().parse().map_err(|_| {
            McpServeError::Config(format!(
                "--http `{addr}` is not an address: use IP:PORT, e.g. 127.0.0.1:8765"
            ))
        })?;
        let key = config
            .env
            .get(KEY_VAR)
            .map(|k| k.trim().to_string())
            .filter(|k| !k.is_empty());
        if let Some(k) = &key {
            let chars = k.chars().count();
            if chars < MIN_KEY_CHARS {
                return Err(McpServeError::Config(format!(
                    "{KEY_VAR} is too short ({chars} characters): use at least {MIN_KEY_CHARS} random characters, e.g. from `openssl rand -hex 24`"
                )));
            }
        }
        if key.is_none() && !addr.ip().is_loopback() {
            return Err(McpServeError::Config(format!(
                "refusing to serve every conversation on {addr} without a key: set {KEY_VAR} (at least {MIN_KEY_CHARS} characters, e.g. from `openssl rand -hex 24`) in the environment or $HERMES_HOME/.env, or listen on 127.0.0.1"
            )));
        }
        Ok(HttpOptions { addr, key })
    }

    pub fn has_key(&self) -> bool {
        self.key.is_some()
    }
}

/// Refuses a request without the bearer key (when one is configured).
async fn require_key(State(key): State<Arc<Option<String>>>, req: Request, next: Next) -> Response {
    if let Some(key) = key.as_ref()
        && !crate::gateway::api_server::authorised(req.headers(), key)
    {
        return (
            StatusCode::UNAUTHORIZED,
            [("www-authenticate", "Bearer")],
            "missing or wrong bearer key (Authorization: Bearer $MCP_SERVER_KEY)",
        )
            .into_response();
    }
    next.run(req).await
}

/// Serves until `stop` fires. `on_bound` is told the bound address (port 0 picks one).
pub async fn serve_http(
    conversations: Conversations,
    options: HttpOptions,
    stop: CancellationToken,
    on_bound: impl FnOnce(SocketAddr),
) -> Result<(), McpServeError> {
    let mut http = StreamableHttpServerConfig::default()
        .with_cancellation_token(stop.child_token())
        .enforce_origin_validation();
    if !options.addr.ip().is_loopback() {
        // Clients name this host however they reach it; the key is what admits them.
        http = http.disable_allowed_hosts();
    }
    let service: StreamableHttpService<HermesMcp, LocalSessionManager> = StreamableHttpService::new(
        move || Ok(HermesMcp::new(conversations.clone())),
        Default::default(),
        http,
    );
    let app = axum::Router::new().nest_service("/mcp", service).layer(
        axum::middleware::from_fn_with_state(Arc::new(options.key.clone()), require_key),
    );
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .map_err(|error| McpServeError::Bind {
            addr: options.addr.to_string(),
            error,
        })?;
    let bound = listener.local_addr().unwrap_or(options.addr);
    tracing::info!(addr = %bound, key = options.has_key(), "MCP server listening (Streamable HTTP)");
    on_bound(bound);
    crate::gateway::api_listener::serve(listener, app, ConnectionLimits::default(), stop).await;
    Ok(())
}
