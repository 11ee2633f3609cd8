//! One task per configured server: connect (bounded by `connect_timeout`), list its tools,
//! register them in the process's catalog, watch the connection, and when it ends mark every tool
//! unavailable with the reason and reconnect with exponential backoff (0.5 s doubling to 60 s,
//! reset after a connection that lived). While connected it pings the server every
//! `keepalive_interval` (a ping that gets no answer ends the connection: reconnect), and stops a
//! stdio server past `idle_timeout_seconds`/`max_lifetime_seconds` when no call is running; such
//! a server stays offered and is started again by the next call. Nothing here blocks a session:
//! sessions read the catalog and the shared availability.

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

/// How a connection ended.
enum Ended {
    Shutdown,
    /// Closed or stopped answering: reconnect after the backoff.
    Lost(String),
    /// Recycled (`idle_timeout_seconds` / `max_lifetime_seconds`): wait for a call.
    Recycled(&'static str),
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
                    let ended = watch(&server, conn, &shutdown, Instant::now()).await;
                    *server.peer.write().unwrap_or_else(|p| p.into_inner()) = None;
                    if started.elapsed() > STABLE {
                        backoff = FIRST_BACKOFF;
                    }
                    match ended {
                        Ended::Shutdown => break,
                        Ended::Lost(reason) => reason,
                        Ended::Recycled(why) => {
                            tracing::info!(server = %server.name, reason = why, "MCP server stopped until the next call");
                            server.status.send_replace(ServerStatus::Idle { reason: why });
                            tokio::select! {
                                _ = shutdown.cancelled() => break,
                                _ = server.wake.notified() => {}
                            }
                            backoff = FIRST_BACKOFF;
                            continue;
                        }
                    }
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

/// Serves one connection until it ends, hermes stops, a keepalive ping gets no answer, or the
/// server is due to be recycled while no call runs.
async fn watch(
    server: &Server,
    conn: Connection,
    shutdown: &CancellationToken,
    connected: Instant,
) -> Ended {
    let closed = conn.cancellation_token();
    let waiting = conn.waiting();
    tokio::pin!(waiting);
    let keepalive = server.keepalive();
    let mut next_ping = tokio::time::Instant::now() + keepalive;
    let close = |waiting| async move {
        closed.cancel();
        let _ = tokio::time::timeout(Duration::from_secs(3), waiting).await;
    };
    loop {
        // Recomputed each time: a call moves the idle deadline.
        let recycle = server.recycle_due(connected);
        let recycle_at = recycle.map(|(at, _)| tokio::time::Instant::from_std(at));
        tokio::select! {
            _ = shutdown.cancelled() => {
                close(waiting).await;
                return Ended::Shutdown;
            }
            r = &mut waiting => {
                tracing::info!(server = %server.name, reason = ?r, "MCP connection ended");
                return Ended::Lost("the connection closed (the server exited or hung up)".into());
            }
            _ = tokio::time::sleep_until(next_ping) => {
                next_ping = tokio::time::Instant::now() + keepalive;
                if let Err(why) = ping(server, keepalive).await {
                    tracing::warn!(server = %server.name, %why, "MCP keepalive failed; reconnecting");
                    close(waiting).await;
                    return Ended::Lost(format!("it did not answer a keepalive ping ({why})"));
                }
            }
            _ = sleep_until_opt(recycle_at) => {
                if server.busy() {
                    // Not under a running call; look again shortly.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
                if let Some((at, why)) = server.recycle_due(connected)
                    && at <= Instant::now()
                {
                    // Tools stay offered: calls wait for the restart instead of failing.
                    *server.peer.write().unwrap_or_else(|p| p.into_inner()) = None;
                    server.status.send_replace(ServerStatus::Idle { reason: why });
                    close(waiting).await;
                    return Ended::Recycled(why);
                }
            }
        }
    }
}

async fn sleep_until_opt(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// One liveness ping. A JSON-RPC error answer (a server without the optional `ping`) still
/// proves the server alive; no answer within `limit`, or a broken transport, does not.
async fn ping(server: &Server, limit: Duration) -> Result<(), String> {
    let Some(peer) = server
        .peer
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
    else {
        return Ok(());
    };
    let request = rmcp::model::ClientRequest::PingRequest(rmcp::model::PingRequest {
        method: Default::default(),
        extensions: Default::default(),
    });
    match tokio::time::timeout(limit, peer.send_request(request)).await {
        Err(_) => Err(format!("no answer within {} s", limit.as_secs_f64())),
        Ok(Ok(_)) | Ok(Err(rmcp::ServiceError::McpError(_))) => Ok(()),
        Ok(Err(e)) => Err(e.to_string()),
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

/// Replaces the server's tools in the catalog at once (sessions already running keep theirs;
/// one selecting now sees the old list or the new one, never part of it).
pub fn register(
    server: &Arc<Server>,
    catalog: &ToolCatalog,
    tools: &[McpTool],
    capabilities: &Value,
) -> usize {
    let toolset = names::toolset(&server.name);
    let mut built: Vec<Arc<dyn crate::tools::registry::Tool>> = Vec::new();
    for tool in tools.iter().filter(|t| server.entry.allows_tool(&t.name)) {
        let name = names::tool_name(&server.name, &tool.name);
        let description = tool.description.as_deref().unwrap_or("").to_string();
        let schema = Value::Object((*tool.input_schema).clone());
        let handler = Arc::new(CallTool {
            server: server.clone(),
            tool: tool.name.to_string(),
        });
        let dynamic = DynamicTool::new(&name, &toolset, description, schema, handler)
            // Python's opt-in: such a server's tools may run beside other read-only calls.
            .read_only(server.parallel())
            .with_availability(server.availability.clone())
            .offered_while_unavailable(true);
        built.push(Arc::new(dynamic));
    }
    let count = built.len();
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
        built.push(Arc::new(dynamic));
    }
    let errors = catalog.replace_toolset(&toolset, built);
    for (tool, e) in &errors {
        tracing::warn!(server = %server.name, %tool, error = %e, "MCP tool not registered");
    }
    count.saturating_sub(errors.len())
}
