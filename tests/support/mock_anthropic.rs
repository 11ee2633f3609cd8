//! A scripted mock of the Anthropic Messages API, for integration tests.
//!
//! `MockAnthropic::start()` listens on 127.0.0.1 on a free port, on its own thread and tokio
//! runtime (so it works from plain `#[test]`s and async tests alike); it stops when dropped. Each
//! POST to `/v1/messages` is recorded (body and headers) and answered with the next scripted
//! [`Reply`], streamed as Anthropic SSE events (`message_start`, `content_block_*` with
//! `text_delta` / `input_json_delta` / `thinking_delta` / `signature_delta`, `message_delta` with
//! usage and stop reason, `message_stop`, plus a `ping`). An empty script answers 500 with an
//! `api_error` body so a test that makes one call too many fails loudly.
//! `GET /v1/models` lists `claude-mock`.

#![allow(dead_code, clippy::expect_used)]

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use super::mock_llm::BackgroundServer;
use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

/// One request the mock received.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The JSON body (a JSON string holding the raw text if it was not JSON).
    pub body: Value,
    /// Header names lowercased; repeated headers joined with ", ".
    pub headers: BTreeMap<String, String>,
}

#[derive(Default)]
struct MockState {
    script: VecDeque<Reply>,
    requests: Vec<Recorded>,
    aborted_streams: usize,
    finished_streams: usize,
    /// Protocol invariant violations: `request #N: what`.
    violations: Vec<String>,
}

type Shared = Arc<Mutex<MockState>>;

fn lock(shared: &Shared) -> MutexGuard<'_, MockState> {
    shared
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The running mock server.
pub struct MockAnthropic {
    server: BackgroundServer,
    shared: Shared,
}

impl Drop for MockAnthropic {
    fn drop(&mut self) {
        let violations = std::mem::take(&mut lock(&self.shared).violations);
        if !violations.is_empty() && !std::thread::panicking() {
            panic!(
                "hermes sent requests the Messages API rejects:\n{}",
                violations.join("\n")
            );
        }
    }
}

fn blocks(message: &Value) -> Vec<Value> {
    match &message["content"] {
        Value::Array(b) => b.clone(),
        Value::String(t) => vec![json!({"type": "text", "text": t})],
        _ => Vec::new(),
    }
}

/// What the Messages API would reject in `request` (checked on every request): a `tool_use`
/// without its `tool_result` in the next user message, a result without its call in the
/// assistant message before it, an empty assistant turn or text block, and tool blocks in a
/// request that defines no `tools` ("Requests which include `tool_use` or `tool_result` blocks
/// must define tools").
pub fn protocol_violations(request: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let Some(messages) = request["messages"].as_array() else {
        return out;
    };
    let has_tools = request["tools"].as_array().is_some_and(|t| !t.is_empty());
    let mut open: Vec<String> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let role = m["role"].as_str().unwrap_or_default();
        let content = blocks(m);
        let kind = |b: &Value| b["type"].as_str().unwrap_or_default().to_string();
        if !has_tools
            && content
                .iter()
                .any(|b| matches!(kind(b).as_str(), "tool_use" | "tool_result"))
        {
            out.push(format!(
                "messages[{i}]: tool_use/tool_result blocks in a request without tools"
            ));
        }
        for b in &content {
            if kind(b) == "text" && b["text"].as_str().is_none_or(str::is_empty) {
                out.push(format!("messages[{i}]: empty text block"));
            }
        }
        let results: Vec<String> = content
            .iter()
            .filter(|b| kind(b) == "tool_result")
            .filter_map(|b| b["tool_use_id"].as_str().map(String::from))
            .collect();
        for id in &results {
            match open.iter().position(|c| c == id) {
                Some(at) => {
                    open.remove(at);
                }
                None => out.push(format!(
                    "messages[{i}]: tool_result for `{id}` without its tool_use in the assistant message before it"
                )),
            }
        }
        if !open.is_empty() {
            out.push(format!(
                "messages[{i}]: tool_use {open:?} without a tool_result in this message"
            ));
            open.clear();
        }
        if role == "assistant" {
            if content.is_empty() {
                out.push(format!("messages[{i}]: empty assistant turn"));
            }
            open = content
                .iter()
                .filter(|b| kind(b) == "tool_use")
                .filter_map(|b| b["id"].as_str().map(String::from))
                .collect();
        }
    }
    if !open.is_empty() {
        out.push(format!(
            "tool_use {open:?} at the end of the request has no result"
        ));
    }
    out
}

impl MockAnthropic {
    pub fn start() -> MockAnthropic {
        let shared: Shared = Arc::default();
        let app = Router::new()
            .route("/v1/messages", post(messages))
            .route("/v1/models", get(models))
            .fallback(unknown_route)
            .with_state(shared.clone());
        MockAnthropic {
            server: BackgroundServer::start("mock-anthropic", app),
            shared,
        }
    }

    pub fn with_script(replies: impl IntoIterator<Item = Reply>) -> MockAnthropic {
        let mock = MockAnthropic::start();
        for reply in replies {
            mock.push(reply);
        }
        mock
    }

    pub fn push(&self, reply: Reply) -> &Self {
        lock(&self.shared).script.push_back(reply);
        self
    }

    /// `http://127.0.0.1:PORT/v1`, the provider base URL.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.server.addr())
    }

    /// `http://127.0.0.1:PORT/anthropic`-style base without `/v1` (gateway layout).
    pub fn root_url(&self) -> String {
        format!("http://{}", self.server.addr())
    }

    pub fn requests(&self) -> Vec<Value> {
        lock(&self.shared)
            .requests
            .iter()
            .map(|r| r.body.clone())
            .collect()
    }

    pub fn recorded(&self) -> Vec<Recorded> {
        lock(&self.shared).requests.clone()
    }

    /// Header `name` (any case) of request number `index`.
    pub fn header(&self, index: usize, name: &str) -> Option<String> {
        lock(&self.shared)
            .requests
            .get(index)?
            .headers
            .get(&name.to_ascii_lowercase())
            .cloned()
    }

    pub fn request_count(&self) -> usize {
        lock(&self.shared).requests.len()
    }

    pub fn remaining(&self) -> usize {
        lock(&self.shared).script.len()
    }

    pub fn aborted_streams(&self) -> usize {
        lock(&self.shared).aborted_streams
    }

    pub fn finished_streams(&self) -> usize {
        lock(&self.shared).finished_streams
    }
}

#[derive(Debug, Clone)]
enum Kind {
    Answer {
        text: String,
        calls: Vec<(String, String, Value)>,
    },
    Error {
        status: u16,
        body: String,
    },
}

/// One scripted answer.
#[derive(Debug, Clone)]
pub struct Reply {
    kind: Kind,
    /// (thinking text, signature).
    thinking: Option<(String, String)>,
    /// (input, output, cache_read, cache_write); `None` estimates from sizes.
    usage: Option<(u64, u64, u64, u64)>,
    stop_reason: Option<String>,
    headers: Vec<(String, String)>,
    delay: Duration,
    chunk_interval: Duration,
    chunk_chars: Option<usize>,
    cut_after: Option<usize>,
    /// An `error` event (type, message) sent after the content, instead of the end events.
    stream_error: Option<(String, String)>,
    /// Answer with one JSON message even when asked to stream (gateways that ignore `stream`).
    whole: bool,
}

impl Reply {
    fn answer(text: String, calls: Vec<(String, String, Value)>) -> Reply {
        Reply {
            kind: Kind::Answer { text, calls },
            thinking: None,
            usage: None,
            stop_reason: None,
            headers: Vec::new(),
            delay: Duration::ZERO,
            chunk_interval: Duration::ZERO,
            chunk_chars: None,
            cut_after: None,
            stream_error: None,
            whole: false,
        }
    }

    /// A text answer streamed in several `text_delta`s.
    pub fn text(text: impl Into<String>) -> Reply {
        Reply::answer(text.into(), Vec::new())
    }

    /// `tool_use` blocks `(id, name, input)`; each input streams in several `input_json_delta`s.
    pub fn tool_uses<I, A, B>(calls: I) -> Reply
    where
        I: IntoIterator<Item = (A, B, Value)>,
        A: Into<String>,
        B: Into<String>,
    {
        let calls = calls
            .into_iter()
            .map(|(id, name, input)| (id.into(), name.into(), input))
            .collect();
        Reply::answer(String::new(), calls)
    }

    pub fn tool_use(id: &str, name: &str, input: Value) -> Reply {
        Reply::tool_uses([(id, name, input)])
    }

    /// An HTTP error with this status and raw body.
    pub fn error(status: u16, body: impl Into<String>) -> Reply {
        Reply {
            kind: Kind::Error {
                status,
                body: body.into(),
            },
            ..Reply::text("")
        }
    }

    /// An HTTP error with Anthropic's error body `{"type":"error","error":{type, message}}`.
    pub fn api_error(status: u16, error_type: &str, message: &str) -> Reply {
        Reply::error(status, error_body(error_type, message).to_string())
    }

    /// 429 `rate_limit_error` with `retry-after: <seconds>`.
    pub fn rate_limited(retry_after: &str) -> Reply {
        Reply::api_error(
            429,
            "rate_limit_error",
            "Number of request tokens has exceeded your per-minute rate limit",
        )
        .header("retry-after", retry_after)
    }

    /// 529 `overloaded_error`.
    pub fn overloaded() -> Reply {
        Reply::api_error(529, "overloaded_error", "Overloaded")
    }

    /// 400 `invalid_request_error` with `message`.
    pub fn bad_request(message: &str) -> Reply {
        Reply::api_error(400, "invalid_request_error", message)
    }

    /// A text answer whose connection is dropped after `n` SSE events, without `message_stop`.
    pub fn cut_after(n: usize) -> Reply {
        Reply::text("This answer is going to be cut off before it ends.")
            .chunk_chars(4)
            .then_cut_after(n)
    }

    pub fn with_text(mut self, text: impl Into<String>) -> Reply {
        if let Kind::Answer { text: t, .. } = &mut self.kind {
            *t = text.into();
        }
        self
    }

    /// A signed thinking block streamed before everything else.
    pub fn with_thinking(mut self, thinking: &str, signature: &str) -> Reply {
        self.thinking = Some((thinking.to_string(), signature.to_string()));
        self
    }

    pub fn with_usage(
        mut self,
        input: u64,
        output: u64,
        cache_read: u64,
        cache_write: u64,
    ) -> Reply {
        self.usage = Some((input, output, cache_read, cache_write));
        self
    }

    /// Default: `end_turn`, or `tool_use` when the reply has calls.
    pub fn with_stop_reason(mut self, reason: &str) -> Reply {
        self.stop_reason = Some(reason.to_string());
        self
    }

    /// After the content, an `error` event of this type instead of the end of the message.
    pub fn then_stream_error(mut self, error_type: &str, message: &str) -> Reply {
        self.stream_error = Some((error_type.to_string(), message.to_string()));
        self
    }

    /// Answers with one JSON message instead of a stream.
    pub fn whole_json(mut self) -> Reply {
        self.whole = true;
        self
    }

    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    pub fn delay(mut self, delay: Duration) -> Reply {
        self.delay = delay;
        self
    }

    pub fn chunk_interval(mut self, interval: Duration) -> Reply {
        self.chunk_interval = interval;
        self
    }

    pub fn chunk_chars(mut self, n: usize) -> Reply {
        self.chunk_chars = Some(n.max(1));
        self
    }

    pub fn then_cut_after(mut self, n: usize) -> Reply {
        self.cut_after = Some(n);
        self
    }

    fn stop_reason_or_default(&self) -> String {
        if let Some(reason) = &self.stop_reason {
            return reason.clone();
        }
        match &self.kind {
            Kind::Answer { calls, .. } if !calls.is_empty() => "tool_use".into(),
            _ => "end_turn".into(),
        }
    }

    fn usage_numbers(&self, request_bytes: usize) -> (u64, u64, u64, u64) {
        self.usage.unwrap_or_else(|| {
            let out = match &self.kind {
                Kind::Answer { text, calls } => {
                    text.len() + calls.iter().map(|c| c.2.to_string().len()).sum::<usize>()
                }
                Kind::Error { .. } => 0,
            };
            ((request_bytes / 4) as u64, (out / 4).max(1) as u64, 0, 0)
        })
    }
}

fn error_body(error_type: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": error_type, "message": message}})
}

fn pieces(text: &str, n: Option<usize>) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let size = n.unwrap_or_else(|| chars.len().div_ceil(4)).max(1);
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// The SSE events (type, data) of a streamed answer.
fn stream_events(reply: &Reply, id: &str, model: &str, request_bytes: usize) -> Vec<Value> {
    let Kind::Answer { text, calls } = &reply.kind else {
        return Vec::new();
    };
    let (input, output, cache_read, cache_write) = reply.usage_numbers(request_bytes);
    let mut events = vec![
        json!({"type": "message_start", "message": {
            "id": id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": input, "cache_creation_input_tokens": cache_write,
                      "cache_read_input_tokens": cache_read, "output_tokens": 1}}}),
        json!({"type": "ping"}),
    ];
    let mut index = 0;
    if let Some((thinking, signature)) = &reply.thinking {
        events.push(json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "thinking", "thinking": ""}}));
        for piece in pieces(thinking, reply.chunk_chars) {
            events.push(json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "thinking_delta", "thinking": piece}}));
        }
        events.push(json!({"type": "content_block_delta", "index": index,
            "delta": {"type": "signature_delta", "signature": signature}}));
        events.push(json!({"type": "content_block_stop", "index": index}));
        index += 1;
    }
    if !text.is_empty() {
        events.push(json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "text", "text": ""}}));
        for piece in pieces(text, reply.chunk_chars) {
            events.push(json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "text_delta", "text": piece}}));
        }
        events.push(json!({"type": "content_block_stop", "index": index}));
        index += 1;
    }
    for (call_id, name, input) in calls {
        events.push(json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}}}));
        // Like the real API: an empty first fragment, then the JSON text in pieces.
        let json_text = match input {
            Value::String(raw) => raw.clone(),
            other => other.to_string(),
        };
        let mut fragments = vec![String::new()];
        fragments.extend(pieces(&json_text, Some(json_text.len().div_ceil(3))));
        for fragment in fragments {
            events.push(json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": fragment}}));
        }
        events.push(json!({"type": "content_block_stop", "index": index}));
        index += 1;
    }
    if let Some((error_type, message)) = &reply.stream_error {
        events.push(error_body(error_type, message));
        return events;
    }
    events.push(json!({"type": "message_delta",
        "delta": {"stop_reason": reply.stop_reason_or_default(), "stop_sequence": null},
        "usage": {"output_tokens": output}}));
    events.push(json!({"type": "message_stop"}));
    events
}

/// The whole JSON message for a non-streamed answer.
fn whole_message(reply: &Reply, id: &str, model: &str, request_bytes: usize) -> Value {
    let (input, output, cache_read, cache_write) = reply.usage_numbers(request_bytes);
    let mut content = Vec::new();
    if let Kind::Answer { text, calls } = &reply.kind {
        if let Some((thinking, signature)) = &reply.thinking {
            content.push(json!({"type": "thinking", "thinking": thinking, "signature": signature}));
        }
        if !text.is_empty() {
            content.push(json!({"type": "text", "text": text}));
        }
        for (call_id, name, input) in calls {
            content.push(json!({"type": "tool_use", "id": call_id, "name": name, "input": input}));
        }
    }
    json!({"id": id, "type": "message", "role": "assistant", "model": model, "content": content,
           "stop_reason": reply.stop_reason_or_default(), "stop_sequence": null,
           "usage": {"input_tokens": input, "output_tokens": output,
                     "cache_read_input_tokens": cache_read, "cache_creation_input_tokens": cache_write}})
}

/// Counts a streamed body as aborted unless it was sent to the end.
struct StreamGuard {
    shared: Shared,
    finished: bool,
}

impl StreamGuard {
    fn finish(&mut self) {
        self.finished = true;
    }
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        let mut state = lock(&self.shared);
        if self.finished {
            state.finished_streams += 1;
        } else {
            state.aborted_streams += 1;
        }
    }
}

struct BodyState {
    events: VecDeque<Value>,
    interval: Duration,
    cut_after: Option<usize>,
    sent: usize,
    guard: StreamGuard,
}

fn sse_body(reply: &Reply, events: Vec<Value>, shared: Shared) -> Body {
    let state = BodyState {
        events: events.into_iter().collect(),
        interval: reply.chunk_interval,
        cut_after: reply.cut_after,
        sent: 0,
        guard: StreamGuard {
            shared,
            finished: false,
        },
    };
    let stream = futures::stream::unfold(state, |mut st| async move {
        if st.cut_after.is_some_and(|n| st.sent >= n) {
            st.guard.finish();
            // Let hyper flush what was sent before the connection is aborted mid-body.
            tokio::time::sleep(Duration::from_millis(50)).await;
            let cut = std::io::Error::new(std::io::ErrorKind::ConnectionAborted, "mock cut");
            return Some((Err(cut), st));
        }
        let event = match st.events.pop_front() {
            Some(event) => event,
            None => {
                st.guard.finish();
                return None;
            }
        };
        if !st.interval.is_zero() {
            tokio::time::sleep(st.interval).await;
        }
        st.sent += 1;
        let name = event["type"].as_str().unwrap_or("message").to_string();
        Some((
            Ok::<String, std::io::Error>(format!("event: {name}\ndata: {event}\n\n")),
            st,
        ))
    });
    Body::from_stream(stream)
}

async fn messages(State(shared): State<Shared>, headers: HeaderMap, body: String) -> Response {
    let parsed: Option<Value> = serde_json::from_str(&body).ok();
    let recorded_headers: BTreeMap<String, String> = headers
        .keys()
        .map(|name| {
            let joined: Vec<String> = headers
                .get_all(name)
                .iter()
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                .collect();
            (name.as_str().to_string(), joined.join(", "))
        })
        .collect();
    let request = parsed
        .clone()
        .unwrap_or_else(|| Value::String(body.clone()));
    let streaming = request["stream"].as_bool().unwrap_or(false);
    let model = request["model"]
        .as_str()
        .unwrap_or("claude-mock")
        .to_string();
    let violations = protocol_violations(&request);
    let (number, reply) = {
        let mut state = lock(&shared);
        state.requests.push(Recorded {
            body: request,
            headers: recorded_headers,
        });
        let number = state.requests.len();
        if !violations.is_empty() {
            for v in &violations {
                state.violations.push(format!("request #{number}: {v}"));
            }
            let message = format!("mock: invalid request: {}", violations.join("; "));
            let body = error_body("invalid_request_error", &message);
            return (StatusCode::BAD_REQUEST, axum::Json(body)).into_response();
        }
        (number, state.script.pop_front())
    };
    if parsed.is_none() {
        let body = error_body(
            "invalid_request_error",
            "mock: the request body is not JSON",
        );
        return (StatusCode::BAD_REQUEST, axum::Json(body)).into_response();
    }
    let Some(reply) = reply else {
        let message =
            format!("mock Anthropic script exhausted: request #{number} has no scripted reply");
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            axum::Json(error_body("api_error", &message)),
        )
            .into_response();
    };
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    let id = format!("msg_mock_{number}");
    let built = match &reply.kind {
        Kind::Error { status, body } => {
            let content_type = if serde_json::from_str::<Value>(body).is_ok() {
                "application/json"
            } else {
                "text/plain; charset=utf-8"
            };
            Response::builder()
                .status(*status)
                .header("content-type", content_type)
                .body(Body::from(body.clone()))
        }
        Kind::Answer { .. } if streaming && !reply.whole => {
            let events = stream_events(&reply, &id, &model, body.len());
            Response::builder()
                .status(200)
                .header("content-type", "text/event-stream; charset=utf-8")
                .header("cache-control", "no-cache")
                .body(sse_body(&reply, events, shared.clone()))
        }
        Kind::Answer { .. } => Response::builder()
            .status(200)
            .header("content-type", "application/json")
            .body(Body::from(
                whole_message(&reply, &id, &model, body.len()).to_string(),
            )),
    };
    let mut response = built.unwrap_or_else(|e| {
        (StatusCode::INTERNAL_SERVER_ERROR, format!("mock: {e}")).into_response()
    });
    for (name, value) in &reply.headers {
        if let (Ok(name), Ok(value)) = (
            axum::http::HeaderName::from_bytes(name.as_bytes()),
            axum::http::HeaderValue::from_str(value),
        ) {
            response.headers_mut().insert(name, value);
        }
    }
    response
}

async fn models() -> Response {
    axum::Json(json!({"data": [{"id": "claude-mock", "type": "model"}], "has_more": false}))
        .into_response()
}

async fn unknown_route(method: Method, uri: Uri) -> Response {
    let message = format!("mock Anthropic: no route for {method} {uri}");
    (
        StatusCode::NOT_FOUND,
        axum::Json(error_body("not_found_error", &message)),
    )
        .into_response()
}
