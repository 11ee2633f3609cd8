//! The API server front end: an OpenAI-compatible HTTP endpoint (axum) so any OpenAI client can
//! talk to the agent. `POST /v1/chat/completions` (JSON or SSE streaming) and `GET /v1/models`,
//! bearer-key auth (`API_SERVER_KEY`, required), bound to `API_SERVER_HOST` (default 127.0.0.1)
//! and `API_SERVER_PORT` (default 8642; 0 takes a free port, recorded in the gateway status).
//!
//! Each conversation is a session: the `X-Hermes-Session-Id` header or the body's `user` field
//! names it (routed through `gateway_routing` like a chat); without either every request is a
//! new session. The agent keeps the history, so only the last user message of the request is
//! the new turn. Turns of one conversation run one at a time. No one can answer approval
//! questions over this API: dangerous commands are refused (unless `--yolo`).
//!
//! Hostile clients: the key must be at least 16 characters; at most
//! `gateway.api_server.max_concurrent` turns run at once (past it: 429 with `Retry-After`); the
//! request body must arrive within the header timeout; connections are accepted by
//! `api_listener` (header timeout, connection caps, accept back-off).

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::agent::{Agent, AgentError, AgentEvent, AgentOptions, Services};
use crate::gateway::api_listener::{self, ConnectionLimits};
use crate::gateway::session::lock;
use crate::llm::LlmClient;
use crate::security::approval::ApprovalChoice;

const MODEL_ID: &str = "hermes-agent";
const DEFAULT_PORT: u16 = 8642;
/// Python Hermes refuses shorter keys too: a short key is guessable over the network.
pub const MIN_KEY_CHARS: usize = 16;
/// Largest request body accepted (a long conversation with pasted files fits).
const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;
/// What a client is told to wait before retrying when every turn slot is taken.
const RETRY_AFTER_SECS: u64 = 5;

/// Where and with which key the API server listens.
#[derive(Clone)]
pub struct ApiServerConfig {
    pub addr: SocketAddr,
    pub key: String,
    /// Turns running at once (`gateway.api_server.max_concurrent`, Python's
    /// `max_concurrent_runs`; default 10).
    pub max_concurrent: usize,
    pub limits: ConnectionLimits,
}

impl std::fmt::Debug for ApiServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ApiServerConfig({}, key redacted)", self.addr)
    }
}

impl ApiServerConfig {
    /// Enabled when `API_SERVER_KEY` is set (or `API_SERVER_ENABLED` is true, which then
    /// requires the key).
    pub fn from_config(config: &crate::config::Config) -> Option<Result<Self, String>> {
        let enabled = config
            .env
            .get("API_SERVER_ENABLED")
            .is_some_and(|v| matches!(v.trim().to_lowercase().as_str(), "1" | "true" | "yes"));
        let key = config
            .env
            .get("API_SERVER_KEY")
            .map(|k| k.trim().to_string());
        if !enabled && key.is_none() {
            return None;
        }
        let host = config.env.get("API_SERVER_HOST").unwrap_or("127.0.0.1");
        // Every bind needs a key (a loopback one too: any local process could drive the agent),
        // so a non-loopback bind without one is refused here as well.
        let Some(key) = key.filter(|k| !k.is_empty()) else {
            return Some(Err(format!(
                "API_SERVER_ENABLED is set but API_SERVER_KEY is empty: the API server (on {host}) needs a bearer key of at least {MIN_KEY_CHARS} characters, e.g. from `openssl rand -hex 24`"
            )));
        };
        let chars = key.chars().count();
        if chars < MIN_KEY_CHARS {
            return Some(Err(format!(
                "API_SERVER_KEY is too short ({chars} characters): use at least {MIN_KEY_CHARS} random characters, e.g. from `openssl rand -hex 24`"
            )));
        }
        let port = match config.env.get("API_SERVER_PORT") {
            Some(p) => match p.trim().parse::<u16>() {
                Ok(p) => p,
                Err(_) => return Some(Err(format!("API_SERVER_PORT `{p}` is not a port number"))),
            },
            None => DEFAULT_PORT,
        };
        let addr = match format!("{host}:{port}").parse::<SocketAddr>() {
            Ok(a) => a,
            Err(_) => {
                return Some(Err(format!(
                    "API_SERVER_HOST `{host}` is not an IP address"
                )));
            }
        };
        let (max_concurrent, limits) = match limits_from_config(config) {
            Ok(l) => l,
            Err(e) => return Some(Err(e)),
        };
        Some(Ok(ApiServerConfig {
            addr,
            key,
            max_concurrent,
            limits,
        }))
    }
}

/// `gateway.api_server.{max_concurrent, max_connections, max_connections_per_ip,
/// header_timeout}`; each must be a positive number.
fn limits_from_config(config: &crate::config::Config) -> Result<(usize, ConnectionLimits), String> {
    let s = &config.file.gateway.api_server;
    let num = |k: &str, v: Option<f64>| -> Result<Option<f64>, String> {
        match v {
            Some(n) if !(n > 0.0 && n.is_finite()) => Err(format!(
                "gateway.api_server.{k} in config.yaml must be a positive number, got {n}"
            )),
            other => Ok(other),
        }
    };
    let defaults = ConnectionLimits::default();
    let max_concurrent = match num("max_concurrent", s.max_concurrent)? {
        Some(n) => n,
        None => num("max_concurrent_runs", s.max_concurrent_runs)?.unwrap_or(10.0),
    };
    let limits = ConnectionLimits {
        header_timeout: num("header_timeout", s.header_timeout)?
            .map(Duration::from_secs_f64)
            .unwrap_or(defaults.header_timeout),
        max_connections: num("max_connections", s.max_connections)?
            .map(|n| n as usize)
            .unwrap_or(defaults.max_connections),
        max_per_ip: num("max_connections_per_ip", s.max_connections_per_ip)?
            .map(|n| n as usize)
            .unwrap_or(defaults.max_per_ip),
    };
    Ok((max_concurrent.max(1.0) as usize, limits))
}

struct ApiState {
    max_concurrent: usize,
    services: Arc<Services>,
    client: Arc<dyn LlmClient>,
    options: AgentOptions,
    key: String,
    /// One lock per live conversation, so its turns run in order.
    turns: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// Permits for running turns (`max_concurrent`); none left → 429.
    turn_slots: Arc<tokio::sync::Semaphore>,
    /// How long the request body may take to arrive.
    body_timeout: Duration,
    shutdown: CancellationToken,
}

/// Serves until `shutdown`; returns an error message if the address cannot be bound.
pub async fn serve(
    config: ApiServerConfig,
    services: Arc<Services>,
    client: Arc<dyn LlmClient>,
    mut options: AgentOptions,
    shutdown: CancellationToken,
) -> Result<(), String> {
    options.source = "api_server".into();
    options.interactive = false;
    let store = services.store.clone();
    let state = Arc::new(ApiState {
        max_concurrent: config.max_concurrent,
        services,
        client,
        options,
        key: config.key.clone(),
        turns: Mutex::new(HashMap::new()),
        turn_slots: Arc::new(tokio::sync::Semaphore::new(config.max_concurrent)),
        body_timeout: config.limits.header_timeout,
        shutdown: shutdown.clone(),
    });
    let app = Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/v1/models", get(models))
        .with_state(state);
    let listener = tokio::net::TcpListener::bind(config.addr)
        .await
        .map_err(|e| format!("API server cannot listen on {}: {e}", config.addr))?;
    // The address really bound: with `API_SERVER_PORT=0` the kernel picks a free port, and the
    // status is how a supervisor (or a test) learns it without racing anyone for a port.
    let addr = listener.local_addr().unwrap_or(config.addr);
    tracing::info!(addr = %addr, "API server listening");
    // `hermes gateway status` reads these (as it reads each polling platform's).
    record_state(&store, &format!("listening on {addr}"), true).await;
    api_listener::serve(listener, app, config.limits, shutdown).await;
    record_state(&store, "stopped", false).await;
    Ok(())
}

/// Records the API server's status (and this process's id while it runs) in `gateway_state`.
async fn record_state(store: &Arc<crate::sessions::SessionStore>, status: &str, running: bool) {
    let status = status.to_string();
    let pid = running.then(|| std::process::id().to_string());
    let result = store
        .call(move |s| {
            s.gateway_set_state("api_server.status", &status)?;
            match pid {
                Some(pid) => s.gateway_set_state("api_server.pid", &pid),
                None => Ok(()),
            }
        })
        .await;
    if let Err(e) = result {
        tracing::warn!(error = %e, "cannot record the API server's state");
    }
}

fn error(status: StatusCode, kind: &str, message: &str) -> Response {
    let body = json!({"error": {"message": message, "type": kind, "code": status.as_u16()}});
    (status, axum::Json(body)).into_response()
}

/// Constant-time comparison of the presented bearer key.
pub(crate) fn authorised(headers: &HeaderMap, key: &str) -> bool {
    let Some(given) = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return false;
    };
    let (a, b) = (given.trim().as_bytes(), key.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn models(State(state): State<Arc<ApiState>>, headers: HeaderMap) -> Response {
    if !authorised(&headers, &state.key) {
        return error(
            StatusCode::UNAUTHORIZED,
            "invalid_request_error",
            "invalid API key",
        );
    }
    axum::Json(json!({"object": "list", "data": [
        {"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "hermes"}
    ]}))
    .into_response()
}

/// The text of the last user message (string content or text parts).
fn last_user_text(body: &Value) -> Option<String> {
    let messages = body.get("messages")?.as_array()?;
    let last = messages.iter().rev().find(|m| m["role"] == "user")?;
    let text = match &last["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => return None,
    };
    Some(text).filter(|t| !t.trim().is_empty())
}

fn conversation(headers: &HeaderMap, body: &Value) -> Option<String> {
    headers
        .get("x-hermes-session-id")
        .and_then(|v| v.to_str().ok())
        .map(String::from)
        .or_else(|| body.get("user").and_then(Value::as_str).map(String::from))
        .map(|c| c.trim().chars().take(200).collect::<String>())
        .filter(|c| !c.is_empty())
}

/// Reads the request body within the body timeout and size cap.
async fn read_body(state: &ApiState, body: Body) -> Result<Vec<u8>, Response> {
    match tokio::time::timeout(
        state.body_timeout,
        axum::body::to_bytes(body, MAX_BODY_BYTES),
    )
    .await
    {
        Ok(Ok(bytes)) => Ok(bytes.to_vec()),
        Ok(Err(_)) => Err(error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_request_error",
            &format!("the request body is over {MAX_BODY_BYTES} bytes or was cut off"),
        )),
        Err(_) => Err(error(
            StatusCode::REQUEST_TIMEOUT,
            "invalid_request_error",
            &format!(
                "the request body did not arrive within {:?}",
                state.body_timeout
            ),
        )),
    }
}

/// 429 with `Retry-After`: every turn slot is taken.
fn too_busy(max: usize) -> Response {
    let mut response = error(
        StatusCode::TOO_MANY_REQUESTS,
        "rate_limit_error",
        &format!(
            "{max} turns are already running (gateway.api_server.max_concurrent); retry later"
        ),
    );
    response
        .headers_mut()
        .insert("retry-after", HeaderValue::from(RETRY_AFTER_SECS));
    response
}

async fn chat(State(state): State<Arc<ApiState>>, headers: HeaderMap, body: Body) -> Response {
    if !authorised(&headers, &state.key) {
        return error(
            StatusCode::UNAUTHORIZED,
            "invalid_request_error",
            "invalid API key",
        );
    }
    let body = match read_body(&state, body).await {
        Ok(b) => b,
        Err(response) => return response,
    };
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "the body is not JSON",
        );
    };
    let Some(text) = last_user_text(&body) else {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "`messages` must contain a user message with text",
        );
    };
    let key = conversation(&headers, &body).map(|c| format!("agent:main:api_server:dm:{c}"));
    let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let id = format!("chatcmpl-{:016x}", rand::random::<u64>());
    let created = crate::gateway::unix_now() as u64;
    // The slot is taken before anything starts and held by the turn until it ends.
    let Ok(slot) = state.turn_slots.clone().try_acquire_owned() else {
        tracing::info!("API server: every turn slot is taken; 429");
        return too_busy(state.max_concurrent);
    };
    let (tx, rx) = mpsc::unbounded_channel::<Piece>();
    let cancel = state.shutdown.child_token();
    let (st, turn_cancel, failed) = (state.clone(), cancel.clone(), tx.clone());
    tokio::spawn(async move {
        let _slot = slot;
        // A panic in this turn answers this request with an error; the server goes on.
        if let Err(panic) = crate::panics::catch(run(st, key, text, tx, turn_cancel)).await {
            tracing::error!(%panic, "API turn panicked");
            let _ = failed.send(Piece::Failed(format!(
                "internal error in hermes: {}",
                crate::security::redact::redact(&panic)
            )));
        }
    });
    if stream {
        let chunk = move |delta: Value, finish: Value| {
            json!({"id": id, "object": "chat.completion.chunk", "created": created, "model": MODEL_ID,
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            .to_string()
        };
        let first = chunk(json!({"role": "assistant", "content": ""}), Value::Null);
        // Dropping the response (client gone) drops `rx`; the guard cancels the turn.
        let guard = cancel.drop_guard();
        let events = futures::stream::unfold(
            (rx, Some(first), false, guard),
            move |(mut rx, first, done, guard)| {
                let chunk = chunk.clone();
                async move {
                    if let Some(f) = first {
                        return Some((
                            Ok::<_, Infallible>(Event::default().data(f)),
                            (rx, None, false, guard),
                        ));
                    }
                    if done {
                        return None;
                    }
                    let data = match rx.recv().await {
                        Some(Piece::Delta(d)) => chunk(json!({"content": d}), Value::Null),
                        Some(Piece::Done(_)) => {
                            let stop = chunk(json!({}), Value::from("stop"));
                            return Some((
                                Ok(Event::default().data(stop)),
                                (rx, None, true, guard),
                            ));
                        }
                        Some(Piece::Failed(m)) => {
                            let e = json!({"error": {"message": m, "type": "server_error"}});
                            return Some((
                                Ok(Event::default().data(e.to_string())),
                                (rx, None, true, guard),
                            ));
                        }
                        None => return None,
                    };
                    Some((Ok(Event::default().data(data)), (rx, None, false, guard)))
                }
            },
        );
        let done = futures::stream::once(async { Ok(Event::default().data("[DONE]")) });
        use futures::StreamExt;
        return Sse::new(events.chain(done)).into_response();
    }
    // A client that hangs up cancels its turn.
    let _guard = cancel.drop_guard();
    let mut rx = rx;
    loop {
        match rx.recv().await {
            Some(Piece::Delta(_)) => {}
            Some(Piece::Done(outcome)) => {
                let body = json!({
                    "id": id, "object": "chat.completion", "created": created, "model": MODEL_ID,
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": outcome.0},
                                 "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": outcome.1, "completion_tokens": outcome.2,
                              "total_tokens": outcome.1 + outcome.2}
                });
                return axum::Json(body).into_response();
            }
            Some(Piece::Failed(m)) => return error(StatusCode::BAD_GATEWAY, "server_error", &m),
            None => {
                return error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "server_error",
                    "the turn ended without an answer",
                );
            }
        }
    }
}

/// What the turn task reports to the HTTP handler.
enum Piece {
    Delta(String),
    /// (text, prompt tokens, completion tokens)
    Done((String, u64, u64)),
    Failed(String),
}

async fn run(
    state: Arc<ApiState>,
    key: Option<String>,
    text: String,
    tx: mpsc::UnboundedSender<Piece>,
    cancel: CancellationToken,
) {
    let turn_lock = key.as_ref().map(|k| {
        let mut turns = lock(&state.turns);
        // Forget locks nobody holds any more, so the map stays as small as the live traffic.
        turns.retain(|_, l| Arc::strong_count(l) > 1);
        turns.entry(k.clone()).or_default().clone()
    });
    let _guard = match &turn_lock {
        Some(l) => Some(l.lock().await),
        None => None,
    };
    let mut agent = match open(&state, key.as_deref()).await {
        Ok(a) => a,
        Err(e) => {
            let _ = tx.send(Piece::Failed(format!("cannot open the conversation: {e}")));
            return;
        }
    };
    let (etx, mut erx) = mpsc::unbounded_channel::<AgentEvent>();
    let out = tx.clone();
    let forward = tokio::spawn(async move {
        while let Some(ev) = erx.recv().await {
            match ev {
                AgentEvent::TextDelta(d) => {
                    let _ = out.send(Piece::Delta(d));
                }
                AgentEvent::ApprovalNeeded { respond, .. } => {
                    let _ = respond.send(ApprovalChoice::Deny);
                }
                _ => {}
            }
        }
    });
    let result = agent.run_turn(&text, &etx, &cancel).await;
    drop(etx);
    let _ = forward.await;
    let piece = match result {
        Ok(o) => Piece::Done((o.text, o.usage.input_tokens, o.usage.output_tokens)),
        Err(e) => Piece::Failed(crate::security::redact::redact(&e.to_string())),
    };
    let _ = tx.send(piece);
}

async fn open(state: &ApiState, key: Option<&str>) -> Result<Agent, AgentError> {
    let store = state.services.store.clone();
    let existing = match key {
        Some(k) => {
            let k = k.to_string();
            store.call(move |s| s.gateway_routed_session(&k)).await?
        }
        None => None,
    };
    let (services, client, options) = (
        state.services.clone(),
        state.client.clone(),
        state.options.clone(),
    );
    match existing {
        Some(row) => Agent::resume(services, client, row, options).await,
        None => {
            let agent = Agent::start(services, client, options).await?;
            if let Some(k) = key {
                let (k, id) = (k.to_string(), agent.session_id().to_string());
                store.call(move |s| s.gateway_set_route(&k, &id)).await?;
            }
            Ok(agent)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_keys_compare_exactly() {
        let mut h = HeaderMap::new();
        assert!(!authorised(&h, "k1"));
        h.insert("authorization", "Bearer k1".parse().unwrap());
        assert!(authorised(&h, "k1"));
        assert!(!authorised(&h, "k12"));
        assert!(!authorised(&h, "k2"));
        h.insert("authorization", "Basic k1".parse().unwrap());
        assert!(!authorised(&h, "k1"));
    }

    fn config(env: &[(&str, &str)], raw: Value) -> crate::config::Config {
        let mut vars = crate::config::EnvVars::default();
        for (k, v) in env {
            vars.set(*k, *v);
        }
        let yaml = if raw.is_null() {
            String::new()
        } else {
            raw.to_string()
        };
        crate::config::Config::from_yaml(
            crate::config::HermesHome::new("/tmp/x"),
            vars,
            &yaml,
            std::path::Path::new("/tmp/x/config.yaml"),
        )
        .unwrap()
    }

    #[test]
    fn short_or_missing_keys_are_refused_on_any_address() {
        let err = |env: &[(&str, &str)]| {
            ApiServerConfig::from_config(&config(env, Value::Null))
                .unwrap()
                .unwrap_err()
        };
        let e = err(&[("API_SERVER_KEY", "x"), ("API_SERVER_HOST", "0.0.0.0")]);
        assert!(e.contains("too short (1 characters)"), "{e}");
        let e = err(&[("API_SERVER_KEY", "fifteen-chars-k")]);
        assert!(e.contains("at least 16"), "{e}");
        let e = err(&[("API_SERVER_ENABLED", "1"), ("API_SERVER_HOST", "0.0.0.0")]);
        assert!(
            e.contains("API_SERVER_KEY is empty") && e.contains("0.0.0.0"),
            "{e}"
        );
        let ok = ApiServerConfig::from_config(&config(
            &[
                ("API_SERVER_KEY", "sixteen-chars-ok"),
                ("API_SERVER_HOST", "0.0.0.0"),
            ],
            Value::Null,
        ))
        .unwrap()
        .unwrap();
        assert_eq!(ok.max_concurrent, 10);
        assert_eq!(ok.limits, ConnectionLimits::default());
    }

    #[test]
    fn limits_come_from_the_gateway_section() {
        let key = [("API_SERVER_KEY", "sixteen-chars-ok")];
        let parsed = |raw: Value| ApiServerConfig::from_config(&config(&key, raw)).unwrap();
        let c = parsed(json!({"gateway": {"api_server": {"max_concurrent_runs": 3,
            "header_timeout": 1.5, "max_connections": 7, "max_connections_per_ip": 2}}}))
        .unwrap();
        assert_eq!(c.max_concurrent, 3);
        assert_eq!(c.limits.header_timeout, Duration::from_millis(1500));
        assert_eq!((c.limits.max_connections, c.limits.max_per_ip), (7, 2));
        let c = parsed(
            json!({"gateway": {"api_server": {"max_concurrent": 4, "max_concurrent_runs": 3}}}),
        )
        .unwrap();
        assert_eq!(c.max_concurrent, 4, "our name wins over Python's");
        let e = parsed(json!({"gateway": {"api_server": {"max_connections": -1}}})).unwrap_err();
        assert!(e.contains("gateway.api_server.max_connections"), "{e}");
    }

    #[test]
    fn last_user_message_is_the_turn() {
        let body = json!({"messages": [
            {"role": "user", "content": "old"},
            {"role": "assistant", "content": "a"},
            {"role": "user", "content": [{"type": "text", "text": "new"}, {"type": "image_url"}]}
        ]});
        assert_eq!(last_user_text(&body).as_deref(), Some("new"));
        assert_eq!(last_user_text(&json!({"messages": []})), None);
        assert_eq!(last_user_text(&json!({"messages": "x"})), None);
        assert_eq!(
            last_user_text(&json!({"messages": [{"role": "user", "content": 5}]})),
            None
        );
    }
}
