//! The Streamable HTTP MCP test server: `mcp_tools::TestServer` behind rmcp's
//! `StreamableHttpService` on a loopback port, refusing requests without the expected
//! `Authorization` header (so a test proves the configured headers are sent).

use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::Response;
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};

use super::mcp_tools::TestServer;
use super::mock_llm::BackgroundServer;

/// The bearer token the server expects.
pub const TOKEN: &str = "mcp-test-sekrit-4242";

/// Serves the test server at `http://ADDR/mcp` until dropped.
pub fn start() -> BackgroundServer {
    let service: StreamableHttpService<TestServer, LocalSessionManager> =
        StreamableHttpService::new(
            || Ok(TestServer::new(0)),
            Default::default(),
            StreamableHttpServerConfig::default(),
        );
    let app = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn(require_token));
    BackgroundServer::start("mcp-http", app)
}

async fn require_token(request: Request, next: Next) -> Result<Response, StatusCode> {
    let expected = format!("Bearer {TOKEN}");
    match request.headers().get("authorization") {
        Some(v) if v.as_bytes() == expected.as_bytes() => Ok(next.run(request).await),
        _ => Err(StatusCode::UNAUTHORIZED),
    }
}
