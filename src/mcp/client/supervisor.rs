//! One task per configured server: connect (bounded by `connect_timeout`), list its tools,
//! register them in the process's catalog, watch the connection, and when it ends mark every tool
//! unavailable with the reason and reconnect with exponential backoff (0.5 s doubling to 60 s,
//! reset after a connection that lived). Nothing here blocks a session: sessions read the
//! catalog and the shared availability.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::Tool as McpTool;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::tools::ToolCatalog;
use crate::tools::dynamic::DynamicTool;

use super::connect::{self, Connection};
use super::names;
use super::server::{CallTool, CallUtility, Server, ServerStatus, Utility};

const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// A connection that lived this long resets the backoff.
const STABLE: Duration = Duration::from_secs(30);

/// What a supervisor needs from the process.
#[derive(Clone)]
pub struct Context {
    pub config: Arc<Config>,
    pub catalog: Arc<ToolCatalog>,
    pub http: reqwest::Client,
}

/// Runs until `shutdown`: connect, serve, reconnect.
pub async fn supervise(server: Arc<Server>, cx: Context, shutdown: CancellationToken) {
    let mut backoff = FIRST_BACKOFF;
    loop {
        let started = Instant::now();
        let reason = tokio::select! {
            _ = shutdown.cancelled() => break,
            r = connect_and_list(&server, &cx) => match r {
                Err(reason) => reason,
                Ok((conn, count)) => {
                    let connect_ms = started.elapsed().as_millis() as u64;
                    server.status.send_replace(ServerStatus::Ready { tools: count, connect_ms });
                    tracing::info!(server = %server.name, tools = count, connect_ms, "MCP server connected");
                    let reason = watch(&server, conn, &shutdown).await;
                    if shutdown.is_cancelled() {
                        break;
                    }
                    if started.elapsed() > STABLE {
                        backoff = FIRST_BACKOFF;
                    }
                    reason
                }
            },
        };
        *server.peer.write().unwrap_or_else(|p| p.into_inner()) = None;
        let message = format!(
            "the MCP server `{}` is not connected ({reason}); hermes retries in {:.1} s — see logs/mcp-{}.log",
            server.name,
            backoff.as_secs_f64(),
            names::sanitize(&server.name)
        );
        tracing::warn!(server = %server.name, %reason, "MCP server down");
        server.availability.set_unavailable(message);
        server.status.send_replace(ServerStatus::Down { reason });
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
    *server.peer.write().unwrap_or_else(|p| p.into_inner()) = None;
    server
        .availability
        .set_unavailable(format!("the MCP server `{}` was stopped", server.name));
}

/// Waits until the connection ends; returns why.
async fn watch(server: &Server, conn: Connection, shutdown: &CancellationToken) -> String {
    let closed = conn.cancellation_token();
    let waiting = conn.waiting();
    tokio::pin!(waiting);
    tokio::select! {
        _ = shutdown.cancelled() => {
            closed.cancel();
            let _ = tokio::time::timeout(Duration::from_secs(3), waiting).await;
            "stopped".to_string()
        }
        r = &mut waiting => {
            tracing::info!(server = %server.name, reason = ?r, "MCP connection ended");
            "the connection closed (the server exited or hung up)".to_string()
        }
    }
}

/// Connects, lists and registers; the live connection and its tool count.
async fn connect_and_list(
    server: &Arc<Server>,
    cx: &Context,
) -> Result<(Connection, usize), String> {
    let timeout = server.connect_timeout();
    let attempt = async {
        let conn = connect::connect(&cx.config, &server.name, &server.entry, &cx.http)
            .await
            .map_err(|e| e.to_string())?;
        let tools = conn
            .peer()
            .list_all_tools()
            .await
            .map_err(|e| format!("listing its tools failed: {e}"))?;
        Ok::<_, String>((conn, tools))
    };
    let (conn, tools) = match tokio::time::timeout(timeout, attempt).await {
        Ok(r) => r?,
        Err(_) => {
            return Err(format!(
                "no answer within {} s (its `connect_timeout`)",
                timeout.as_secs_f64()
            ));
        }
    };
    *server.peer.write().unwrap_or_else(|p| p.into_inner()) = Some(conn.peer().clone());
    // Available before registering, so no session sees the new tools as down.
    server.availability.set_available();
    let capabilities = connect::capabilities(&conn);
    let count = register(server, &cx.catalog, &tools, &capabilities);
    let (config, name, entry) = (cx.config.clone(), server.name.clone(), server.entry.clone());
    // The next process offers these tools without waiting (known.rs).
    tokio::task::spawn_blocking(move || {
        super::known::save(&config, &name, &entry, &tools, &capabilities)
    });
    Ok((conn, count))
}

/// Replaces the server's tools in the catalog (sessions already running keep theirs).
pub fn register(
    server: &Arc<Server>,
    catalog: &ToolCatalog,
    tools: &[McpTool],
    capabilities: &Value,
) -> usize {
    let toolset = names::toolset(&server.name);
    catalog.deregister_toolset(&toolset);
    let mut count = 0;
    for tool in tools.iter().filter(|t| server.entry.allows_tool(&t.name)) {
        let name = names::tool_name(&server.name, &tool.name);
        let description = tool.description.as_deref().unwrap_or("").to_string();
        let schema = Value::Object((*tool.input_schema).clone());
        let handler = Arc::new(CallTool {
            server: server.clone(),
            tool: tool.name.to_string(),
        });
        let dynamic = DynamicTool::new(&name, &toolset, description, schema, handler)
            .with_availability(server.availability.clone())
            .offered_while_unavailable(true);
        match catalog.register(Arc::new(dynamic)) {
            Ok(()) => count += 1,
            Err(e) => {
                tracing::warn!(server = %server.name, tool = %name, error = %e, "MCP tool not registered")
            }
        }
    }
    let mut utilities = Vec::new();
    if capabilities.get("resources").is_some_and(|v| !v.is_null()) {
        utilities.extend([Utility::ListResources, Utility::ReadResource]);
    }
    if capabilities.get("prompts").is_some_and(|v| !v.is_null()) {
        utilities.extend([Utility::ListPrompts, Utility::GetPrompt]);
    }
    for utility in utilities {
        let name = names::tool_name(&server.name, utility.suffix());
        let handler = Arc::new(CallUtility {
            server: server.clone(),
            utility,
        });
        let dynamic = DynamicTool::new(
            &name,
            &toolset,
            utility.description(&server.name),
            utility.schema(),
            handler,
        )
        .read_only(true)
        .with_availability(server.availability.clone())
        .offered_while_unavailable(true);
        if let Err(e) = catalog.register(Arc::new(dynamic)) {
            tracing::warn!(server = %server.name, tool = %name, error = %e, "MCP utility not registered");
        }
    }
    count
}
