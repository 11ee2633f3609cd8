//! A fake Telegram Bot API server for gateway tests: `POST /bot<TOKEN>/<method>` on 127.0.0.1,
//! on its own thread and tokio runtime (like `mock_llm.rs`), stopped when dropped.
//!
//! Tests queue updates (`push_text`), re-deliver an update regardless of the offset
//! (`redeliver`), make the next sends answer 429 with `retry_after` (`rate_limit`), make
//! `sendMessage` hang without recording anything (`stall_sends`, to kill the gateway "before the
//! send"), and read every recorded call (`sends`, `calls`). `getUpdates` long-polls (woken at
//! once by a new update, at most 1 s) and honours `offset` like Telegram: updates below it are
//! forgotten.

#![allow(dead_code, clippy::expect_used)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::mock_llm::BackgroundServer;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

pub const TOKEN: &str = "123456:TEST-token";

/// One recorded `sendMessage`.
#[derive(Debug, Clone, PartialEq)]
pub struct Sent {
    pub chat_id: i64,
    pub text: String,
    pub message_id: i64,
    pub reply_to: Option<i64>,
}

#[derive(Default)]
struct FakeState {
    updates: Vec<Value>,
    /// Every update ever queued (for `redeliver`).
    all: Vec<Value>,
    redeliver: VecDeque<Value>,
    next_update: i64,
    next_message: i64,
    /// Every call except getUpdates: (method, body).
    calls: Vec<(String, Value)>,
    sends: Vec<Sent>,
    rate_limited: u32,
    retry_after: u64,
    stall: bool,
    get_updates: usize,
    offsets: Vec<Option<i64>>,
    /// Connections to cut, per method, before the call is processed.
    drops: std::collections::HashMap<String, u32>,
}

struct Inner {
    state: Mutex<FakeState>,
    /// Wakes long polls as soon as an update is queued.
    notify: tokio::sync::Notify,
}

type Shared = Arc<Inner>;

fn lock(s: &Shared) -> MutexGuard<'_, FakeState> {
    s.state.lock().unwrap_or_else(|p| p.into_inner())
}

pub struct FakeTelegram {
    server: BackgroundServer,
    shared: Shared,
}

impl FakeTelegram {
    pub fn start() -> FakeTelegram {
        let shared: Shared = Arc::new(Inner {
            state: Mutex::new(FakeState {
                next_update: 1000,
                next_message: 1,
                ..FakeState::default()
            }),
            notify: tokio::sync::Notify::new(),
        });
        let app = Router::new()
            .route("/{bot}/{method}", post(handle))
            .with_state(shared.clone());
        FakeTelegram {
            server: BackgroundServer::start("fake-telegram", app),
            shared,
        }
    }

    /// The value for `TELEGRAM_API_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.server.addr())
    }

    /// Queues a private message from `user` (chat id = user id); returns its update id.
    pub fn push_text(&self, user: i64, text: &str) -> i64 {
        self.push_chat(user, user, "private", text)
    }

    /// Queues a message in `chat` (`private`, `group`, `supergroup`) from `user`.
    pub fn push_chat(&self, chat: i64, user: i64, kind: &str, text: &str) -> i64 {
        let mut s = lock(&self.shared);
        s.next_update += 1;
        s.next_message += 1;
        let (uid, mid) = (s.next_update, s.next_message);
        let update = json!({
            "update_id": uid,
            "message": {
                "message_id": mid, "date": 1_700_000_000,
                "from": {"id": user, "is_bot": false, "first_name": format!("user{user}")},
                "chat": {"id": chat, "type": kind},
                "text": text
            }
        });
        s.all.push(update.clone());
        s.updates.push(update);
        drop(s);
        self.shared.notify.notify_waiters();
        uid
    }

    /// The `message_id` of the message pushed as update `update_id` (what a reply quotes).
    pub fn message_id(&self, update_id: i64) -> Option<i64> {
        let s = lock(&self.shared);
        s.all
            .iter()
            .find(|u| u["update_id"] == update_id)
            .and_then(|u| u["message"]["message_id"].as_i64())
    }

    /// Serves update `update_id` once more in the next `getUpdates`, whatever the offset.
    pub fn redeliver(&self, update_id: i64) {
        let mut s = lock(&self.shared);
        let update = s
            .all
            .iter()
            .find(|u| u["update_id"] == update_id)
            .cloned()
            .expect("known update");
        s.redeliver.push_back(update);
        drop(s);
        self.shared.notify.notify_waiters();
    }

    /// The next `n` sends answer 429 with `retry_after` seconds.
    pub fn rate_limit(&self, n: u32, retry_after: u64) {
        let mut s = lock(&self.shared);
        s.rate_limited = n;
        s.retry_after = retry_after;
    }

    /// While true, `sendMessage` never answers and records nothing.
    pub fn stall_sends(&self, stall: bool) {
        lock(&self.shared).stall = stall;
    }

    /// Cuts the connection of the next `n` calls of `method` before the fake acts on them
    /// (the client sees a response that breaks off mid-body).
    pub fn drop_connections(&self, method: &str, n: u32) {
        lock(&self.shared).drops.insert(method.to_string(), n);
    }

    /// Cuts still pending for `method` (0 once every requested cut happened).
    pub fn drops_left(&self, method: &str) -> u32 {
        lock(&self.shared).drops.get(method).copied().unwrap_or(0)
    }

    pub fn sends(&self) -> Vec<Sent> {
        lock(&self.shared).sends.clone()
    }

    pub fn sends_to(&self, chat: i64) -> Vec<Sent> {
        self.sends()
            .into_iter()
            .filter(|s| s.chat_id == chat)
            .collect()
    }

    /// Bodies of calls to `method` (not getUpdates).
    pub fn calls(&self, method: &str) -> Vec<Value> {
        lock(&self.shared)
            .calls
            .iter()
            .filter(|(m, _)| m == method)
            .map(|(_, b)| b.clone())
            .collect()
    }

    pub fn get_updates_count(&self) -> usize {
        lock(&self.shared).get_updates
    }

    /// Offsets passed to getUpdates, in order.
    pub fn offsets(&self) -> Vec<Option<i64>> {
        lock(&self.shared).offsets.clone()
    }

    /// Waits until `pred(sends)` holds; panics with the sends after `timeout`.
    pub fn wait_sends(&self, timeout: Duration, pred: impl Fn(&[Sent]) -> bool) -> Vec<Sent> {
        let start = Instant::now();
        loop {
            let sends = self.sends();
            if pred(&sends) {
                return sends;
            }
            if start.elapsed() > timeout {
                panic!("timed out waiting for sends; got {sends:#?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until getUpdates has been called `n` more times than `since` (the gateway polled).
    pub fn wait_polls(&self, since: usize, n: usize, timeout: Duration) {
        let start = Instant::now();
        while self.get_updates_count() < since + n {
            assert!(start.elapsed() < timeout, "the gateway stopped polling");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

fn ok(result: Value) -> Response {
    axum::Json(json!({"ok": true, "result": result})).into_response()
}

fn refuse(code: u16, description: &str, extra: Value) -> Response {
    let mut body = json!({"ok": false, "error_code": code, "description": description});
    if !extra.is_null() {
        body["parameters"] = extra;
    }
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::BAD_REQUEST);
    (status, axum::Json(body)).into_response()
}

async fn handle(
    State(shared): State<Shared>,
    Path((bot, method)): Path<(String, String)>,
    body: String,
) -> Response {
    if bot != format!("bot{TOKEN}") {
        return refuse(401, "Unauthorized", Value::Null);
    }
    let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    if take_drop(&shared, &method) {
        return cut_connection();
    }
    match method.as_str() {
        "getUpdates" => get_updates(shared, body).await,
        "getMe" => ok(json!({"id": 1, "is_bot": true, "username": "hermes_test_bot"})),
        "sendMessage" => {
            let stalled = lock(&shared).stall;
            if stalled {
                futures::future::pending::<()>().await;
            }
            let mut s = lock(&shared);
            if s.rate_limited > 0 {
                s.rate_limited -= 1;
                let after = s.retry_after;
                s.calls.push(("sendMessage429".into(), body));
                return refuse(
                    429,
                    &format!("Too Many Requests: retry after {after}"),
                    json!({"retry_after": after}),
                );
            }
            s.next_message += 1;
            let id = s.next_message;
            s.sends.push(Sent {
                chat_id: body["chat_id"].as_i64().unwrap_or(0),
                text: body["text"].as_str().unwrap_or("").to_string(),
                message_id: id,
                reply_to: body["reply_parameters"]["message_id"].as_i64(),
            });
            s.calls.push((method.clone(), body.clone()));
            ok(json!({"message_id": id, "chat": {"id": body["chat_id"]}, "text": body["text"]}))
        }
        "editMessageText" | "deleteMessage" | "sendChatAction" => {
            lock(&shared).calls.push((method.clone(), body));
            ok(json!(true))
        }
        _ => refuse(404, "Not Found: method not found", Value::Null),
    }
}

fn take_drop(shared: &Shared, method: &str) -> bool {
    let mut s = lock(shared);
    match s.drops.get_mut(method) {
        Some(n) if *n > 0 => {
            *n -= 1;
            true
        }
        _ => false,
    }
}

/// A 200 whose body promises more bytes than it sends and then fails: the connection is cut.
fn cut_connection() -> Response {
    let broken = futures::stream::iter([
        Ok::<_, std::io::Error>(axum::body::Bytes::from_static(b"{\"ok\": tr")),
        Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "cut by the fake",
        )),
    ]);
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/json")
        .header("content-length", "64")
        .body(axum::body::Body::from_stream(broken))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

async fn get_updates(shared: Shared, body: Value) -> Response {
    let offset = body["offset"].as_i64();
    let timeout =
        Duration::from_secs(body["timeout"].as_u64().unwrap_or(0)).min(Duration::from_secs(1));
    {
        let mut s = lock(&shared);
        s.get_updates += 1;
        s.offsets.push(offset);
    }
    let start = Instant::now();
    loop {
        // Registered before looking, so a push between the look and the wait is not missed.
        let notified = shared.notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        {
            let mut s = lock(&shared);
            if let Some(o) = offset {
                // Like Telegram: an offset confirms (and forgets) every earlier update.
                s.updates
                    .retain(|u| u["update_id"].as_i64().unwrap_or(0) >= o);
            }
            let mut out: Vec<Value> = s.redeliver.drain(..).collect();
            out.extend(s.updates.iter().cloned());
            if !out.is_empty() {
                return ok(Value::Array(out));
            }
        }
        let Some(left) = timeout.checked_sub(start.elapsed()) else {
            return ok(json!([]));
        };
        let _ = tokio::time::timeout(left, notified).await;
    }
}
