//! One configured server as the rest of hermes sees it: its connection state (shared by its
//! supervisor, its tools and `hermes mcp`), the availability every one of its tools shares, and
//! the handlers that turn a model's call into a request on the live connection — with the
//! per-call `timeout`, which ends the call, never the connection.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, GetPromptRequestParams, ReadResourceRequestParams};
use rmcp::{Peer, RoleClient};
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::config::mcp::McpServerConfig;
use crate::tools::dynamic::{Availability, ToolHandler};
use crate::tools::registry::{ToolContext, ToolError};

use super::result;

/// Python Hermes's defaults (seconds).
pub const DEFAULT_CALL_TIMEOUT: f64 = 300.0;
pub const DEFAULT_CONNECT_TIMEOUT: f64 = 60.0;
pub const DEFAULT_KEEPALIVE: f64 = 180.0;
/// Python Hermes's floor for `keepalive_interval` (a tiny value must not busy-loop).
pub const MIN_KEEPALIVE: f64 = 5.0;

/// Where a server's connection stands.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerStatus {
    /// Connecting for the first time since hermes started (or since `/reload-mcp`).
    Connecting,
    /// Connected; `tools` registered, `connect_ms` to connect and list them.
    Ready { tools: usize, connect_ms: u64 },
    /// Not connected; `reason` says why, the supervisor retries after a pause.
    Down { reason: String },
    /// A stdio server stopped after `idle_timeout_seconds` or `max_lifetime_seconds`
    /// (`reason` names the key); its tools stay offered and the next call starts it again.
    Idle { reason: &'static str },
    /// `enabled: false` in config.yaml.
    Disabled,
}

impl ServerStatus {
    /// Still waiting for its first answer.
    pub fn is_settled(&self) -> bool {
        !matches!(self, ServerStatus::Connecting)
    }
}

impl std::fmt::Display for ServerStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerStatus::Connecting => write!(f, "connecting"),
            ServerStatus::Ready { tools, connect_ms } => {
                write!(f, "connected, {tools} tools ({connect_ms} ms)")
            }
            ServerStatus::Down { reason } => write!(f, "down: {reason}"),
            ServerStatus::Idle { reason } => {
                write!(f, "stopped ({reason}); the next call starts it")
            }
            ServerStatus::Disabled => write!(f, "disabled"),
        }
    }
}

/// A configured server, shared by its supervisor and its tools.
pub struct Server {
    pub name: String,
    pub entry: McpServerConfig,
    pub status: watch::Sender<ServerStatus>,
    /// The live connection's request handle (`None` while down).
    pub peer: RwLock<Option<Peer<RoleClient>>>,
    /// Shared by every tool of this server.
    pub availability: Availability,
    /// Its tools were offered from the list saved by an earlier run (`known.rs`).
    pub known: std::sync::atomic::AtomicBool,
    /// Wakes the supervisor of a recycled (idle) server: a call needs it.
    pub wake: tokio::sync::Notify,
    /// Held by each call unless `supports_parallel_tool_calls` is true.
    call_lock: tokio::sync::Mutex<()>,
    /// Calls running now (a server is not recycled under a call).
    in_flight: AtomicUsize,
    /// When the last call started or ended, in ms since `born`.
    last_call_ms: AtomicU64,
    born: Instant,
}

impl Server {
    pub fn new(name: &str, entry: McpServerConfig) -> Arc<Self> {
        let initial = if entry.is_enabled() {
            ServerStatus::Connecting
        } else {
            ServerStatus::Disabled
        };
        Arc::new(Server {
            name: name.to_string(),
            entry,
            status: watch::channel(initial).0,
            peer: RwLock::new(None),
            availability: Availability::unavailable(format!(
                "the MCP server `{name}` is still connecting"
            )),
            known: std::sync::atomic::AtomicBool::new(false),
            wake: tokio::sync::Notify::new(),
            call_lock: tokio::sync::Mutex::new(()),
            in_flight: AtomicUsize::new(0),
            last_call_ms: AtomicU64::new(0),
            born: Instant::now(),
        })
    }

    /// `supports_parallel_tool_calls: true`.
    pub fn parallel(&self) -> bool {
        self.entry.supports_parallel_tool_calls == Some(true)
    }

    /// `keepalive_interval` (default 180 s, at least 5 s).
    pub fn keepalive(&self) -> Duration {
        let v = secs(self.entry.keepalive_interval, DEFAULT_KEEPALIVE);
        v.max(Duration::from_secs_f64(MIN_KEEPALIVE))
    }

    /// Notes that a call starts or ends now (the idle clock).
    fn touch(&self) {
        let ms = self.born.elapsed().as_millis() as u64;
        self.last_call_ms.store(ms, Ordering::Relaxed);
    }

    /// When a stdio server connected at `connected` is due to be recycled, and why: the earlier
    /// of `max_lifetime_seconds` after connecting and `idle_timeout_seconds` after the last call
    /// (or the connection, if no call came since). `None` for HTTP servers and without limits.
    pub fn recycle_due(&self, connected: Instant) -> Option<(Instant, &'static str)> {
        // Python recycles stdio servers only (an HTTP session costs no process).
        self.entry.command.as_ref()?;
        let lifetime = self
            .entry
            .lifecycle_seconds("max_lifetime_seconds")
            .map(|s| (connected + s, "max_lifetime_seconds"));
        let idle = self
            .entry
            .lifecycle_seconds("idle_timeout_seconds")
            .map(|s| {
                let last =
                    self.born + Duration::from_millis(self.last_call_ms.load(Ordering::Relaxed));
                (last.max(connected) + s, "idle_timeout_seconds")
            });
        match (lifetime, idle) {
            (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
            (a, b) => a.or(b),
        }
    }

    /// Whether a call is running now.
    pub fn busy(&self) -> bool {
        self.in_flight.load(Ordering::Relaxed) > 0
    }

    pub fn call_timeout(&self) -> Duration {
        secs(self.entry.timeout, DEFAULT_CALL_TIMEOUT)
    }

    pub fn connect_timeout(&self) -> Duration {
        secs(self.entry.connect_timeout, DEFAULT_CONNECT_TIMEOUT)
    }

    pub fn current_status(&self) -> ServerStatus {
        self.status.borrow().clone()
    }

    fn live_peer(&self) -> Option<Peer<RoleClient>> {
        self.peer.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The live connection; a call made while the first connection is still being opened (tools
    /// offered from a saved list) or while the server is recycled waits for it (waking it), at
    /// most `connect_timeout`.
    async fn peer(&self) -> Result<Peer<RoleClient>, ToolError> {
        let status = self.current_status();
        let waiting = matches!(status, ServerStatus::Connecting | ServerStatus::Idle { .. });
        if self.live_peer().is_none() && waiting {
            if matches!(status, ServerStatus::Idle { .. }) {
                self.wake.notify_one();
            }
            let mut rx = self.status.subscribe();
            let _ = tokio::time::timeout(
                self.connect_timeout(),
                rx.wait_for(|s| {
                    matches!(s, ServerStatus::Ready { .. } | ServerStatus::Down { .. })
                }),
            )
            .await;
        }
        let peer = self.live_peer();
        match peer {
            Some(peer) => Ok(peer),
            None => Err(ToolError::Respond(match self.availability.check() {
                Err(reason) => reason,
                Ok(()) => format!("the MCP server `{}` is not connected", self.name),
            })),
        }
    }

    /// Sends one request, bounded by the call timeout and the user's interrupt; a timeout
    /// drops the request (rmcp then tells the server it was cancelled) and keeps the connection.
    async fn request<F, T>(&self, what: &str, ctx: &ToolContext, fut: F) -> Result<T, ToolError>
    where
        F: std::future::Future<Output = Result<T, rmcp::ServiceError>>,
    {
        let timeout = self.call_timeout();
        let _running = InFlight::enter(self);
        let serialized = async {
            // One call at a time unless the server says it copes with more.
            let _turn = match self.parallel() {
                true => None,
                false => Some(self.call_lock.lock().await),
            };
            fut.await
        };
        tokio::select! {
            _ = ctx.cancel.cancelled() => Err(ToolError::Cancelled),
            r = tokio::time::timeout(timeout, serialized) => match r {
                Err(_) => Err(ToolError::Respond(format!(
                    "{what} on the MCP server `{}` did not answer within {} s (its `timeout`); the call was cancelled, the connection is kept",
                    self.name,
                    timeout.as_secs_f64()
                ))),
                Ok(Err(e)) => Err(ToolError::Respond(format!(
                    "{what} on the MCP server `{}` failed: {e}",
                    self.name
                ))),
                Ok(Ok(v)) => Ok(v),
            },
        }
    }
}

/// Counts a call in flight and keeps the idle clock (a server is not recycled under a call).
struct InFlight<'a>(&'a Server);

impl<'a> InFlight<'a> {
    fn enter(server: &'a Server) -> Self {
        server.in_flight.fetch_add(1, Ordering::Relaxed);
        server.touch();
        InFlight(server)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.touch();
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

fn secs(value: Option<f64>, default: f64) -> Duration {
    let v = value
        .filter(|v| v.is_finite() && *v > 0.0)
        .unwrap_or(default);
    Duration::from_secs_f64(v.min(86_400.0))
}

/// Calls one tool of the server (`tool` is the server's own name for it).
pub struct CallTool {
    pub server: Arc<Server>,
    pub tool: String,
}

#[async_trait::async_trait]
impl ToolHandler for CallTool {
    async fn call(&self, arguments: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let peer = self.server.peer().await?;
        let mut params = CallToolRequestParams::new(self.tool.clone());
        if let Value::Object(map) = arguments {
            params = params.with_arguments(map);
        }
        let what = format!("the tool `{}`", self.tool);
        let reply = self
            .server
            .request(&what, ctx, peer.call_tool(params))
            .await?;
        let value = serde_json::to_value(&reply).unwrap_or(Value::Null);
        let text = result::wrap(&self.server.name, &self.tool, &result::text_of(&value));
        if value.get("isError").and_then(Value::as_bool) == Some(true) {
            return Err(ToolError::Respond(format!(
                "the MCP tool `{}` reported an error:\n{text}",
                self.tool
            )));
        }
        Ok(text)
    }
}

/// The four utility calls for servers that declare resources or prompts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Utility {
    ListResources,
    ReadResource,
    ListPrompts,
    GetPrompt,
}

impl Utility {
    pub fn suffix(self) -> &'static str {
        match self {
            Utility::ListResources => "list_resources",
            Utility::ReadResource => "read_resource",
            Utility::ListPrompts => "list_prompts",
            Utility::GetPrompt => "get_prompt",
        }
    }

    pub fn description(self, server: &str) -> String {
        match self {
            Utility::ListResources => format!("List the resources of the MCP server {server}."),
            Utility::ReadResource => {
                format!("Read one resource of the MCP server {server} by its URI.")
            }
            Utility::ListPrompts => format!("List the prompts of the MCP server {server}."),
            Utility::GetPrompt => {
                format!("Get one prompt of the MCP server {server}, filled with its arguments.")
            }
        }
    }

    pub fn schema(self) -> Value {
        match self {
            Utility::ListResources | Utility::ListPrompts => {
                json!({"type": "object", "properties": {}})
            }
            Utility::ReadResource => json!({
                "type": "object",
                "properties": {"uri": {"type": "string", "description": "The resource URI."}},
                "required": ["uri"]
            }),
            Utility::GetPrompt => json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The prompt's name."},
                    "arguments": {"type": "object", "description": "Its arguments (strings)."}
                },
                "required": ["name"]
            }),
        }
    }
}

/// Runs one utility call.
pub struct CallUtility {
    pub server: Arc<Server>,
    pub utility: Utility,
}

fn string_arg(arguments: &Value, key: &str) -> Result<String, ToolError> {
    match arguments.get(key).and_then(Value::as_str) {
        Some(s) if !s.is_empty() => Ok(s.to_string()),
        _ => Err(ToolError::Respond(format!(
            "`{key}` is required (a non-empty string)"
        ))),
    }
}

#[async_trait::async_trait]
impl ToolHandler for CallUtility {
    async fn call(&self, arguments: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let peer = self.server.peer().await?;
        let what = self.utility.suffix();
        let s = &self.server;
        let (value, source) = match self.utility {
            Utility::ListResources => {
                let r = s.request(what, ctx, peer.list_all_resources()).await?;
                (
                    serde_json::to_value(&r).unwrap_or(Value::Null),
                    what.to_string(),
                )
            }
            Utility::ListPrompts => {
                let r = s.request(what, ctx, peer.list_all_prompts()).await?;
                (
                    serde_json::to_value(&r).unwrap_or(Value::Null),
                    what.to_string(),
                )
            }
            Utility::ReadResource => {
                let uri = string_arg(&arguments, "uri")?;
                let params = ReadResourceRequestParams::new(uri.clone());
                let r = s.request(what, ctx, peer.read_resource(params)).await?;
                (serde_json::to_value(&r).unwrap_or(Value::Null), uri)
            }
            Utility::GetPrompt => {
                let name = string_arg(&arguments, "name")?;
                let mut params = GetPromptRequestParams::new(name.clone());
                if let Some(Value::Object(args)) = arguments.get("arguments") {
                    params = params.with_arguments(args.clone());
                }
                let r = s.request(what, ctx, peer.get_prompt(params)).await?;
                (serde_json::to_value(&r).unwrap_or(Value::Null), name)
            }
        };
        // Lists are JSON arrays of descriptors; single items have content to read.
        let text = if value.is_array() {
            serde_json::to_string_pretty(&value).unwrap_or_default()
        } else {
            result::text_of(&value)
        };
        Ok(result::wrap(&s.name, &source, &text))
    }
}
