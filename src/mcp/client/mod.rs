//! The MCP client: one supervisor task per enabled `mcp_servers:` entry (see `supervisor.rs`),
//! started the first time a session opens (so `hermes mcp add` or `hermes doctor` never spawn
//! servers). Start-up never waits for a server: a server whose tool list is saved from an earlier
//! run (`known.rs`) is offered at once, and one never seen before is in a session's tools array
//! if it answered before the session froze it (the system prompt is built meanwhile); if not, the
//! session reaches it through `tool_search`/`tool_call` (`late.rs`), and the next session sends
//! its tools directly. `mcp_discovery_timeout` (Python Hermes's key, 1.5 s by default) bounds how
//! long one of those bridge calls waits for a server still connecting. `reload` stops every
//! supervisor, forgets their tools and starts again from the current config (`/reload-mcp`).
//! `SessionMcp` runs servers one session brings (an editor's, over ACP) beside the process's.

pub mod connect;
pub mod known;
pub mod late;
pub mod names;
pub mod result;
pub mod server;
pub mod supervisor;
pub mod tree;

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
    /// Where their tools are registered.
    catalog: Arc<ToolCatalog>,
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
        *running = Some(spawn_all(cx, &cx.config.file.mcp_servers));
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
        *self.lock() = Some(spawn_all(cx, &cx.config.file.mcp_servers));
    }

    /// Waits until every enabled server has answered or failed once, at most `limit` (`hermes
    /// mcp list`'s live statuses; sessions never wait).
    pub async fn wait_discovery(&self, limit: Duration) {
        let servers: Vec<Arc<Server>> = match &*self.lock() {
            Some(r) => r.servers.values().cloned().collect(),
            None => return,
        };
        let deadline = tokio::time::Instant::now() + limit;
        for server in servers {
            if server.known.load(std::sync::atomic::Ordering::Relaxed) {
                continue;
            }
            let mut rx = server.status.subscribe();
            let _ = tokio::time::timeout_at(deadline, rx.wait_for(ServerStatus::is_settled)).await;
        }
    }

    /// The enabled servers that have not answered with their tools yet (connecting or down),
    /// with the catalog their tools will be registered in. Taken before a session selects its
    /// tools, so a server that answers in between is either in the array or late, never lost.
    pub fn unsettled(&self) -> Vec<(Arc<Server>, Arc<ToolCatalog>)> {
        match &*self.lock() {
            Some(r) => r
                .servers
                .values()
                .filter(|s| {
                    matches!(
                        s.current_status(),
                        ServerStatus::Connecting | ServerStatus::Down { .. }
                    )
                })
                .map(|s| (s.clone(), r.catalog.clone()))
                .collect(),
            None => Vec::new(),
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

fn spawn_all(cx: &Context, entries: &BTreeMap<String, config_mcp::McpServerConfig>) -> Running {
    let shutdown = CancellationToken::new();
    let mut servers = BTreeMap::new();
    for (name, entry) in entries {
        let server = Server::new(name, entry.clone());
        if entry.is_enabled() {
            if let Some(list) = known::load(&cx.config, name, entry) {
                // Offered at once; calls wait for the connection.
                server.availability.set_available();
                supervisor::register(&server, &cx.catalog, &list.tools, &list.capabilities);
                server
                    .known
                    .store(true, std::sync::atomic::Ordering::Relaxed);
            }
            tokio::spawn(supervisor::supervise(
                server.clone(),
                cx.clone(),
                shutdown.clone(),
            ));
        }
        servers.insert(name.clone(), server);
    }
    Running {
        servers,
        catalog: cx.catalog.clone(),
        shutdown,
    }
}

/// MCP servers one session brings beside the process's `mcp_servers:` (an editor's
/// `mcpServers` in ACP `session/new`): their own supervisors and their own catalog, so their
/// tools reach only the session that holds this (`Agent::start_with_mcp`). Dropping the last
/// handle stops them.
pub struct SessionMcp {
    clients: McpClients,
    catalog: Arc<ToolCatalog>,
}

impl SessionMcp {
    /// Starts a supervisor per enabled entry (inside the tokio runtime). Their stderr goes to
    /// `logs/mcp-<name>.log`, and a list seen before is offered at once, as for the process's.
    pub fn start(
        config: &Arc<Config>,
        http: &reqwest::Client,
        servers: BTreeMap<String, config_mcp::McpServerConfig>,
    ) -> Arc<Self> {
        let catalog = Arc::new(ToolCatalog::default());
        let cx = context(config, &catalog, http);
        let clients = McpClients::default();
        *clients.lock() = Some(spawn_all(&cx, &servers));
        Arc::new(SessionMcp { clients, catalog })
    }

    /// The servers with their status, in name order.
    pub fn statuses(&self) -> Vec<(String, ServerStatus)> {
        self.clients.statuses()
    }

    /// See `McpClients::unsettled`.
    pub fn unsettled(&self) -> Vec<(Arc<Server>, Arc<ToolCatalog>)> {
        self.clients.unsettled()
    }

    /// Every tool registered so far (the session adds those its toolsets allow).
    pub fn tools(&self) -> crate::tools::ToolRegistry {
        self.catalog.snapshot()
    }

    /// The `mcp-*` toolsets of these servers registered so far.
    pub fn toolsets(&self) -> std::collections::BTreeSet<String> {
        self.catalog.toolsets_with_prefix("mcp-")
    }

    /// Adds to `tools` the tools registered so far of these servers' `mcp-*` toolsets that
    /// `wanted` accepts (a session's array; a delegated child's when it inherits them).
    pub fn add_tools(
        &self,
        config: &Config,
        tools: &mut crate::tools::ToolRegistry,
        wanted: impl Fn(&str) -> bool,
    ) {
        let sets: Vec<String> = self.toolsets().into_iter().filter(|t| wanted(t)).collect();
        let Ok(selected) = self.tools().select(config, &sets) else {
            return;
        };
        for name in selected.names() {
            if let Some(tool) = selected.get(name)
                && let Err(e) = tools.register(tool.clone())
            {
                tracing::warn!(tool = name, error = %e, "a session MCP tool was not added");
            }
        }
    }
}

/// A session's tools array, frozen now: the process's tools of `requested` toolsets (every
/// `mcp-*` toolset registered by now unless `requested` names some), the tools of `extra`'s
/// servers, and — when servers were still missing (`unsettled`, taken before) — the late
/// servers for the bridge tools, waited for at most `mcp_discovery_timeout` per call.
pub fn freeze_tools(
    config: &Arc<Config>,
    catalog: &ToolCatalog,
    extra: Option<&SessionMcp>,
    requested: &[String],
    unsettled: Vec<(Arc<Server>, Arc<ToolCatalog>)>,
) -> Result<
    (
        crate::tools::ToolRegistry,
        Option<Arc<dyn crate::tools::deferred::LateTools>>,
    ),
    crate::tools::registry::ToolsetError,
> {
    let toolsets = session_toolsets(catalog, requested);
    let mut tools = catalog.select(config, &toolsets)?;
    let named_mcp = requested.iter().any(|t| t.starts_with("mcp-"));
    let wanted = |toolset: &str| !named_mcp || requested.iter().any(|t| t == toolset);
    if let Some(extra) = extra {
        extra.add_tools(config, &mut tools, wanted);
    }
    let present: std::collections::BTreeSet<String> = tools
        .names()
        .into_iter()
        .filter_map(|n| tools.get(n).map(|t| t.toolset().to_string()))
        .collect();
    let late: Vec<(Arc<Server>, Arc<ToolCatalog>)> = unsettled
        .into_iter()
        .filter(|(s, _)| {
            let set = names::toolset(&s.name);
            wanted(&set) && !present.contains(&set)
        })
        .collect();
    if late.is_empty() {
        return Ok((tools, None));
    }
    let wait = config
        .file
        .mcp_discovery_timeout
        .filter(|v| v.is_finite() && *v >= 0.0)
        .unwrap_or(DEFAULT_DISCOVERY_TIMEOUT)
        .min(600.0);
    tracing::info!(
        servers = late.len(),
        "MCP servers still connecting at freeze time: reachable through tool_search"
    );
    let late = late::LateServers::new(late, config.clone(), Duration::from_secs_f64(wait));
    Ok((tools, Some(Arc::new(late))))
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

/// Connects to one server once, lists its tools and times both (no supervisor, no catalog);
/// the list is saved (`known.rs`), so the next session offers it at once.
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
    let capabilities = connect::capabilities(&conn);
    // The next session offers these tools at once instead of finding them late.
    known::save(config, name, entry, &tools, &capabilities);
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
