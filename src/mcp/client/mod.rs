//! The MCP client: one supervisor task per enabled `mcp_servers:` entry (see `supervisor.rs`),
//! started the first time a session opens (so `hermes mcp add` or `hermes doctor` never spawn
//! servers). A session waits for servers still connecting for the first time at most
//! `mcp_discovery_timeout` (Python Hermes's key, 1.5 s by default), and not at all once every
//! server has answered or failed; a server that never answers therefore delays only the first
//! session of a process, by that bound. `reload` stops every supervisor, forgets their tools and
//! starts again from the current config (`/reload-mcp`).

pub mod connect;
pub mod names;
pub mod result;
pub mod server;
pub mod supervisor;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::tools::ToolCatalog;

pub use server::{Server, ServerStatus};
pub use supervisor::Context;

/// Python Hermes's `mcp_discovery_timeout` default (seconds).
pub const DEFAULT_DISCOVERY_TIMEOUT: f64 = 1.5;

struct Running {
    servers: BTreeMap<String, Arc<Server>>,
    shutdown: CancellationToken,
}

/// The process's MCP servers (`Services::mcp`).
#[derive(Default)]
pub struct McpClients {
    running: Mutex<Option<Running>>,
}

impl McpClients {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Running>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts a supervisor per enabled server, once (later calls do nothing). Must run inside
    /// the tokio runtime.
    pub fn start(&self, cx: &Context) {
        let mut running = self.lock();
        if running.is_some() {
            return;
        }
        *running = Some(spawn_all(cx));
    }

    /// Stops every supervisor, removes their tools from the catalog and starts again from
    /// `cx.config` (sessions already running keep the tools they started with).
    pub fn reload(&self, cx: &Context) {
        let old = self.lock().take();
        if let Some(old) = old {
            old.shutdown.cancel();
            for name in old.servers.keys() {
                cx.catalog.deregister_toolset(&names::toolset(name));
            }
        }
        *self.lock() = Some(spawn_all(cx));
    }

    /// Waits until every enabled server has answered or failed once, at most `limit`.
    pub async fn wait_discovery(&self, limit: Duration) {
        let servers: Vec<Arc<Server>> = match &*self.lock() {
            Some(r) => r.servers.values().cloned().collect(),
            None => return,
        };
        let deadline = tokio::time::Instant::now() + limit;
        for server in servers {
            let mut rx = server.status.subscribe();
            let _ = tokio::time::timeout_at(deadline, rx.wait_for(ServerStatus::is_settled)).await;
        }
    }

    /// Every configured server with its status, in name order.
    pub fn statuses(&self) -> Vec<(String, ServerStatus)> {
        match &*self.lock() {
            Some(r) => r
                .servers
                .iter()
                .map(|(n, s)| (n.clone(), s.current_status()))
                .collect(),
            None => Vec::new(),
        }
    }

    /// Stops every supervisor (their children are killed as their connections drop).
    pub fn shutdown(&self) {
        if let Some(r) = self.lock().take() {
            r.shutdown.cancel();
        }
    }
}

impl Drop for McpClients {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn spawn_all(cx: &Context) -> Running {
    let shutdown = CancellationToken::new();
    let mut servers = BTreeMap::new();
    for (name, entry) in &cx.config.file.mcp_servers {
        let server = Server::new(name, entry.clone());
        if entry.is_enabled() {
            tokio::spawn(supervisor::supervise(
                server.clone(),
                cx.clone(),
                shutdown.clone(),
            ));
        }
        servers.insert(name.clone(), server);
    }
    Running { servers, shutdown }
}

/// What `hermes mcp test NAME` reports.
pub struct TestReport {
    pub connect_ms: u64,
    pub list_ms: u64,
    /// Registered name, server's name, description — after the include/exclude filter.
    pub tools: Vec<(String, String, String)>,
    /// Tools the filter left out.
    pub filtered_out: Vec<String>,
    pub server_info: String,
}

/// Connects to one server once, lists its tools and times both (no supervisor, no catalog).
pub async fn test_server(
    config: &Config,
    name: &str,
    entry: &config_mcp::McpServerConfig,
    http: &reqwest::Client,
) -> Result<TestReport, String> {
    let server = Server::new(name, entry.clone());
    let started = Instant::now();
    let conn = tokio::time::timeout(
        server.connect_timeout(),
        connect::connect(config, name, entry, http),
    )
    .await
    .map_err(|_| {
        format!(
            "no answer within {} s (its `connect_timeout`)",
            server.connect_timeout().as_secs_f64()
        )
    })?
    .map_err(|e| e.to_string())?;
    let connect_ms = started.elapsed().as_millis() as u64;
    let listed = Instant::now();
    let tools = tokio::time::timeout(server.call_timeout(), conn.peer().list_all_tools())
        .await
        .map_err(|_| "listing its tools timed out".to_string())?
        .map_err(|e| format!("listing its tools failed: {e}"))?;
    let list_ms = listed.elapsed().as_millis() as u64;
    let server_info = conn
        .peer()
        .peer_info()
        .and_then(|i| serde_json::to_value(&*i).ok())
        .and_then(|v| v.get("serverInfo").cloned())
        .map(|v| {
            format!(
                "{} {}",
                v.get("name").and_then(|n| n.as_str()).unwrap_or("?"),
                v.get("version").and_then(|n| n.as_str()).unwrap_or("")
            )
        })
        .unwrap_or_default();
    let (kept, dropped): (Vec<_>, Vec<_>) =
        tools.into_iter().partition(|t| entry.allows_tool(&t.name));
    let mut conn = conn;
    let _ = conn.close_with_timeout(Duration::from_secs(3)).await;
    Ok(TestReport {
        connect_ms,
        list_ms,
        tools: kept
            .into_iter()
            .map(|t| {
                (
                    names::tool_name(name, &t.name),
                    t.name.to_string(),
                    t.description.as_deref().unwrap_or("").to_string(),
                )
            })
            .collect(),
        filtered_out: dropped.into_iter().map(|t| t.name.to_string()).collect(),
        server_info,
    })
}

use crate::config::mcp as config_mcp;

/// A session's toolsets with every connected server's `mcp-<server>` toolset added — unless the
/// list already names an `mcp-*` toolset (then it is taken as the user's exact choice).
/// `agent.disabled_toolsets` still removes them when the session's tools are selected.
pub fn session_toolsets(catalog: &ToolCatalog, toolsets: &[String]) -> Vec<String> {
    let mut out = toolsets.to_vec();
    if toolsets.iter().any(|t| t.starts_with("mcp-")) {
        return out;
    }
    out.extend(catalog.toolsets_with_prefix("mcp-"));
    out
}

/// Builds the supervisor context from the process's pieces.
pub fn context(
    config: &Arc<Config>,
    catalog: &Arc<ToolCatalog>,
    http: &reqwest::Client,
) -> Context {
    Context {
        config: config.clone(),
        catalog: catalog.clone(),
        http: http.clone(),
    }
}
