//! A scripted mock of an OpenAI-compatible chat completions server, for integration tests and the
//! end-to-end benchmark (`benches/e2e.rs` includes this file with `#[path]`).
//!
//! `MockLlm::start()` listens on 127.0.0.1 on a free port, on its own thread and tokio runtime, so
//! it works from plain `#[test]`s and from async tests alike; it stops when dropped. Each POST to
//! `/v1/chat/completions` is recorded (body and headers) and answered with the next scripted
//! [`Reply`], streamed as SSE when the request says `stream: true`, as one JSON completion
//! otherwise. An empty script answers 500 "mock script exhausted" so a test that makes one call
//! too many fails loudly. `GET /v1/models` lists models (for local-server probing).
//!
//! Every request is checked against the protocol invariants a real server enforces (as codex-rs's
//! test server does): every tool call has its result right after it, no result without its call,
//! no empty assistant turn. A violating request is answered 400 like the real API, and the mock
//! panics when dropped, so the test that caused it fails even if hermes survived the 400.
//!
//! Only axum, tokio, serde_json and futures are used.

#![allow(dead_code, clippy::expect_used)]

use std::collections::{BTreeMap, VecDeque};
use std::future::IntoFuture;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

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
    /// When the request arrived (to show that requests overlapped in time).
    pub at: std::time::Instant,
}

#[derive(Default)]
struct MockState {
    script: VecDeque<Reply>,
    /// Replies for requests whose system message contains the key, served before `script`.
    routed: Vec<(String, VecDeque<Reply>)>,
    requests: Vec<Recorded>,
    models: Vec<String>,
    /// SSE bodies whose client went away before the mock finished sending.
    aborted_streams: usize,
    /// SSE bodies sent to the end (`[DONE]`) or cut on purpose.
    finished_streams: usize,
    /// Protocol invariant violations: `request #N: what`.
    violations: Vec<String>,
}

type Shared = Arc<Mutex<MockState>>;

fn lock(shared: &Shared) -> MutexGuard<'_, MockState> {
    // A panicking test thread must not take every later assertion down with it.
    shared
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The running mock server.
pub struct MockLlm {
    server: BackgroundServer,
    shared: Shared,
}

impl Drop for MockLlm {
    fn drop(&mut self) {
        let violations = std::mem::take(&mut lock(&self.shared).violations);
        if !violations.is_empty() && !std::thread::panicking() {
            panic!(
                "hermes sent requests that break the chat completions protocol:\n{}",
                violations.join("\n")
            );
        }
    }
}

/// What a real chat completions server would reject in `request`'s messages.
pub fn protocol_violations(request: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let Some(messages) = request["messages"].as_array() else {
        return out;
    };
    // Ids of the assistant message's calls still waiting for their result, while the messages
    // right after it are tool results.
    let mut open: Option<Vec<String>> = None;
    for (i, m) in messages.iter().enumerate() {
        let role = m["role"].as_str().unwrap_or_default();
        if role == "tool" {
            let id = m["tool_call_id"].as_str().unwrap_or_default();
            match open.as_mut().and_then(|ids| ids.iter().position(|c| c == id).map(|at| (ids, at))) {
                Some((ids, at)) => {
                    ids.remove(at);
                }
                None => out.push(format!(
                    "messages[{i}]: tool result for `{id}` without its call in the assistant message before it"
                )),
            }
            continue;
        }
        if let Some(ids) = open.take()
            && !ids.is_empty()
        {
            out.push(format!(
                "messages[{i}]: tool calls {ids:?} have no result before this message"
            ));
        }
        if role == "assistant" {
            let calls: Vec<String> = m["tool_calls"]
                .as_array()
                .map(|c| {
                    c.iter()
                        .filter_map(|c| c["id"].as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default();
            let text = m["content"].as_str().map(str::trim).unwrap_or_default();
            if calls.is_empty() && text.is_empty() && !m["content"].is_array() {
                out.push(format!(
                    "messages[{i}]: empty assistant turn (no text, no tool calls)"
                ));
            }
            if !calls.is_empty() {
                open = Some(calls);
            }
        }
    }
    if let Some(ids) = open
        && !ids.is_empty()
    {
        out.push(format!(
            "tool calls {ids:?} at the end of the request have no result"
        ));
    }
    out
}

impl MockLlm {
    /// Starts an empty mock (script it with [`MockLlm::push`]).
    pub fn start() -> MockLlm {
        let shared: Shared = Arc::new(Mutex::new(MockState {
            models: vec!["mock-model".to_string()],
            ..MockState::default()
        }));
        let app = Router::new()
            .route("/v1/chat/completions", post(chat_completions))
            .route("/v1/models", get(models))
            .fallback(unknown_route)
            .with_state(shared.clone());
        MockLlm {
            server: BackgroundServer::start("mock-llm", app),
            shared,
        }
    }

    /// Starts a mock with a script.
    pub fn with_script(replies: impl IntoIterator<Item = Reply>) -> MockLlm {
        let mock = MockLlm::start();
        for reply in replies {
            mock.push(reply);
        }
        mock
    }

    /// Appends a reply to the script (replies are served in FIFO order).
    pub fn push(&self, reply: Reply) -> &Self {
        lock(&self.shared).script.push_back(reply);
        self
    }

    /// Queues a reply for requests whose system message contains `needle` (concurrent agents,
    /// such as delegated children, each get their own script whatever order they arrive in).
    pub fn push_for(&self, needle: &str, reply: Reply) -> &Self {
        let mut state = lock(&self.shared);
        match state.routed.iter_mut().find(|(k, _)| k == needle) {
            Some((_, queue)) => queue.push_back(reply),
            None => state
                .routed
                .push((needle.to_string(), VecDeque::from([reply]))),
        }
        self
    }

    /// `http://127.0.0.1:PORT/v1`, the provider base URL.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.server.addr())
    }

    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// Bodies of the chat completion requests received so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        lock(&self.shared)
            .requests
            .iter()
            .map(|r| r.body.clone())
            .collect()
    }

    /// Bodies and headers of the chat completion requests received so far.
    pub fn recorded(&self) -> Vec<Recorded> {
        lock(&self.shared).requests.clone()
    }

    /// Forgets the requests recorded so far (long benchmarks keep the log from growing).
    pub fn forget_requests(&self) {
        let mut state = lock(&self.shared);
        state.requests.clear();
        state.requests.shrink_to_fit();
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

    /// Scripted replies not yet served.
    pub fn remaining(&self) -> usize {
        lock(&self.shared).script.len()
    }

    /// Streams whose client disconnected before the mock finished sending them.
    pub fn aborted_streams(&self) -> usize {
        lock(&self.shared).aborted_streams
    }

    /// Streams sent to the end (or cut on purpose by [`Reply::cut_after`]).
    pub fn finished_streams(&self) -> usize {
        lock(&self.shared).finished_streams
    }

    /// Replaces the model ids `GET /v1/models` lists (default: `mock-model`).
    pub fn set_models(&self, models: &[&str]) {
        lock(&self.shared).models = models.iter().map(|m| m.to_string()).collect();
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
        content_type: &'static str,
    },
    RefuseStream,
    /// A 200 event stream that only ever sends `: keep-alive` comments.
    KeepAliveForever,
    /// A 200 event stream of content chunks (this many chars each) that never ends.
    Endless {
        chunk: usize,
    },
}

/// One scripted answer.
#[derive(Debug, Clone)]
pub struct Reply {
    kind: Kind,
    reasoning: Option<String>,
    /// (prompt, completion, cached); `None` estimates from the sizes (~4 chars per token).
    usage: Option<(u64, u64, u64)>,
    finish_reason: Option<String>,
    headers: Vec<(String, String)>,
    delay: Duration,
    chunk_interval: Duration,
    chunk_chars: Option<usize>,
    cut_after: Option<usize>,
    /// Sends no usage at all, even when asked (llama.cpp-style servers).
    no_usage: bool,
}

impl Reply {
    fn answer(text: String, calls: Vec<(String, String, Value)>) -> Reply {
        Reply {
            kind: Kind::Answer { text, calls },
            reasoning: None,
            usage: None,
            finish_reason: None,
            headers: Vec::new(),
            delay: Duration::ZERO,
            chunk_interval: Duration::ZERO,
            chunk_chars: None,
            cut_after: None,
            no_usage: false,
        }
    }

    /// A text answer, streamed in several chunks, with usage in a final chunk.
    pub fn text(text: impl Into<String>) -> Reply {
        Reply::answer(text.into(), Vec::new())
    }

    /// Text exactly as a local model would write it, e.g. with `<tool_call>` blocks inside.
    pub fn text_raw_content(text: impl Into<String>) -> Reply {
        Reply::text(text)
    }

    /// Structured tool calls `(id, name, arguments)`; arguments stream in several fragments and
    /// each call has its own index.
    pub fn tool_calls<I, A, B>(calls: I) -> Reply
    where
        I: IntoIterator<Item = (A, B, Value)>,
        A: Into<String>,
        B: Into<String>,
    {
        let calls = calls
            .into_iter()
            .map(|(id, name, args)| (id.into(), name.into(), args))
            .collect();
        Reply::answer(String::new(), calls)
    }

    /// One structured tool call.
    pub fn tool_call(id: &str, name: &str, arguments: Value) -> Reply {
        Reply::tool_calls([(id, name, arguments)])
    }

    /// An HTTP error with this status and body (JSON bodies get a JSON content type).
    pub fn error(status: u16, body: impl Into<String>) -> Reply {
        let body = body.into();
        let content_type = if serde_json::from_str::<Value>(&body).is_ok() {
            "application/json"
        } else {
            "text/plain; charset=utf-8"
        };
        Reply {
            kind: Kind::Error {
                status,
                body,
                content_type,
            },
            ..Reply::text("")
        }
    }

    /// An nginx-style HTML error page.
    pub fn html_error(status: u16) -> Reply {
        let title = match status {
            502 => "502 Bad Gateway",
            503 => "503 Service Temporarily Unavailable",
            504 => "504 Gateway Time-out",
            _ => "Error",
        };
        let body = format!(
            "<html>\r\n<head><title>{title}</title></head>\r\n<body>\r\n<center><h1>{title}</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
        );
        Reply {
            kind: Kind::Error {
                status,
                body,
                content_type: "text/html",
            },
            ..Reply::text("")
        }
    }

    /// Answers a streaming request with 400 "streaming is not supported"; the client's
    /// non-streaming retry then gets the NEXT reply of the script as a JSON completion.
    pub fn refuse_stream() -> Reply {
        Reply {
            kind: Kind::RefuseStream,
            ..Reply::text("")
        }
    }

    /// A stream that sends SSE keep-alive comments every 100 ms and nothing else, forever.
    pub fn keepalive_forever() -> Reply {
        Reply {
            kind: Kind::KeepAliveForever,
            ..Reply::text("")
        }
    }

    /// A stream of `chunk`-char content deltas that never finishes (no finish_reason, no
    /// `[DONE]`), for the answer cap.
    pub fn endless(chunk: usize) -> Reply {
        Reply {
            kind: Kind::Endless { chunk },
            ..Reply::text("")
        }
    }

    /// A text answer whose connection is dropped after `n` chunks, without `[DONE]`.
    pub fn cut_after(n: usize) -> Reply {
        Reply::text("This answer is going to be cut off before it ends.")
            .chunk_chars(4)
            .then_cut_after(n)
    }

    /// A text answer whose every chunk (the first included) comes `interval` after the last.
    pub fn slow_chunks(interval: Duration) -> Reply {
        Reply::text("A slow answer, one piece at a time.")
            .chunk_chars(6)
            .chunk_interval(interval)
    }

    /// Text sent before the tool calls of a tool-call reply (or replacing a text reply's text).
    pub fn with_text(mut self, text: impl Into<String>) -> Reply {
        if let Kind::Answer { text: t, .. } = &mut self.kind {
            *t = text.into();
        }
        self
    }

    /// Reports no usage, neither in the stream nor in a whole answer, as servers that ignore
    /// `stream_options.include_usage` do.
    pub fn without_usage(mut self) -> Reply {
        self.no_usage = true;
        self
    }

    pub fn with_usage(mut self, prompt: u64, completion: u64, cached: u64) -> Reply {
        self.usage = Some((prompt, completion, cached));
        self
    }

    /// Default: `stop`, or `tool_calls` when the reply has calls.
    pub fn with_finish_reason(mut self, reason: &str) -> Reply {
        self.finish_reason = Some(reason.to_string());
        self
    }

    /// Reasoning streamed as `reasoning_content` deltas before the answer.
    pub fn with_reasoning(mut self, reasoning: impl Into<String>) -> Reply {
        self.reasoning = Some(reasoning.into());
        self
    }

    /// Extra response header (e.g. `retry-after`).
    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// Waits this long before answering at all.
    pub fn delay(mut self, delay: Duration) -> Reply {
        self.delay = delay;
        self
    }

    /// Waits this long before each chunk.
    pub fn chunk_interval(mut self, interval: Duration) -> Reply {
        self.chunk_interval = interval;
        self
    }

    /// Characters of text per chunk (default: the text in about four chunks).
    pub fn chunk_chars(mut self, n: usize) -> Reply {
        self.chunk_chars = Some(n.max(1));
        self
    }

    /// Drops the connection after `n` chunks, without `[DONE]`.
    pub fn then_cut_after(mut self, n: usize) -> Reply {
        self.cut_after = Some(n);
        self
    }

    fn finish_reason_or_default(&self) -> String {
        if let Some(reason) = &self.finish_reason {
            return reason.clone();
        }
        match &self.kind {
            Kind::Answer { calls, .. } if !calls.is_empty() => "tool_calls".to_string(),
            _ => "stop".to_string(),
        }
    }

    fn usage_json(&self, request_bytes: usize) -> Value {
        let (prompt, completion, cached) = self.usage.unwrap_or_else(|| {
            let out = match &self.kind {
                Kind::Answer { text, calls } => {
                    text.len()
                        + calls
                            .iter()
                            .map(|c| arguments_text(&c.2).len())
                            .sum::<usize>()
                }
                _ => 0,
            };
            ((request_bytes / 4) as u64, (out / 4).max(1) as u64, 0)
        });
        json!({
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        })
    }
}

/// Splits `text` into pieces of `n` chars (by default about four pieces).
fn pieces(text: &str, n: Option<usize>) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let size = n.unwrap_or_else(|| chars.len().div_ceil(4)).max(1);
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

fn chunk_json(id: &str, model: &str, delta: Value, finish: Option<&str>) -> String {
    json!({
        "id": id, "object": "chat.completion.chunk", "created": 0, "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    })
    .to_string()
}

/// The SSE `data:` payloads of a streamed answer (without `[DONE]`).
fn stream_events(reply: &Reply, id: &str, model: &str, usage: Option<Value>) -> Vec<String> {
    let Kind::Answer { text, calls } = &reply.kind else {
        return Vec::new();
    };
    let mut deltas: Vec<Value> = Vec::new();
    if let Some(reasoning) = &reply.reasoning {
        for piece in pieces(reasoning, reply.chunk_chars) {
            deltas.push(json!({"reasoning_content": piece}));
        }
    }
    for piece in pieces(text, reply.chunk_chars) {
        deltas.push(json!({"content": piece}));
    }
    for (index, (call_id, name, args)) in calls.iter().enumerate() {
        deltas.push(
            json!({"tool_calls": [{"index": index, "id": call_id, "type": "function",
            "function": {"name": name, "arguments": ""}}]}),
        );
        let text = arguments_text(args);
        for piece in pieces(&text, Some(text.len().div_ceil(3))) {
            deltas
                .push(json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}));
        }
    }
    let mut events: Vec<String> = deltas
        .into_iter()
        .enumerate()
        .map(|(i, mut delta)| {
            if i == 0 {
                delta["role"] = json!("assistant");
            }
            chunk_json(id, model, delta, None)
        })
        .collect();
    let finish = reply.finish_reason_or_default();
    events.push(chunk_json(id, model, json!({}), Some(&finish)));
    if let Some(usage) = usage {
        events.push(
            json!({"id": id, "object": "chat.completion.chunk", "created": 0, "model": model,
                   "choices": [], "usage": usage})
            .to_string(),
        );
    }
    events
}

fn completion_json(reply: &Reply, id: &str, model: &str, usage: Value) -> Value {
    let (text, calls) = match &reply.kind {
        Kind::Answer { text, calls } => (text.as_str(), calls.as_slice()),
        _ => ("", &[][..]),
    };
    let mut message = json!({
        "role": "assistant",
        "content": if text.is_empty() && !calls.is_empty() { Value::Null } else { json!(text) },
    });
    if !calls.is_empty() {
        message["tool_calls"] = calls
            .iter()
            .map(|(call_id, name, args)| {
                json!({"id": call_id, "type": "function",
                       "function": {"name": name, "arguments": arguments_text(args)}})
            })
            .collect();
    }
    if let Some(reasoning) = &reply.reasoning {
        message["reasoning_content"] = json!(reasoning);
    }
    json!({
        "id": id, "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "message": message,
                     "finish_reason": reply.finish_reason_or_default()}],
        "usage": usage,
    })
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
    events: VecDeque<String>,
    interval: Duration,
    cut_after: Option<usize>,
    sent: usize,
    guard: StreamGuard,
}

fn sse_body(reply: &Reply, events: Vec<String>, shared: Shared) -> Body {
    let mut queue: VecDeque<String> = events.into_iter().collect();
    if reply.cut_after.is_none() {
        queue.push_back("[DONE]".to_string());
    }
    let state = BodyState {
        events: queue,
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
            // Let hyper flush what was sent (it drops unflushed bytes when the body fails), as
            // a real connection dying after a few chunks would have delivered them.
            tokio::time::sleep(Duration::from_millis(50)).await;
            // An error makes hyper abort the connection mid-body: no terminating chunk.
            let cut = std::io::Error::new(std::io::ErrorKind::ConnectionAborted, "mock cut");
            return Some((Err(cut), st));
        }
        let Some(event) = st.events.pop_front() else {
            st.guard.finish();
            return None;
        };
        if !st.interval.is_zero() {
            tokio::time::sleep(st.interval).await;
        }
        st.sent += 1;
        Some((
            Ok::<String, std::io::Error>(format!("data: {event}\n\n")),
            st,
        ))
    });
    Body::from_stream(stream)
}

/// The body of a stream that never ends on its own (keep-alives, or endless content); counted
/// as aborted when the client hangs up.
fn forever_body(kind: &Kind, id: &str, model: &str, shared: Shared) -> Body {
    let event = match kind {
        Kind::Endless { chunk } => {
            let delta = json!({"role": "assistant", "content": "x".repeat(*chunk)});
            format!("data: {}\n\n", chunk_json(id, model, delta, None))
        }
        _ => ": keep-alive\n\n".to_string(),
    };
    let pause = match kind {
        Kind::Endless { .. } => Duration::ZERO,
        _ => Duration::from_millis(100),
    };
    let guard = StreamGuard {
        shared,
        finished: false,
    };
    let stream = futures::stream::unfold((event, guard), move |(event, guard)| async move {
        if pause.is_zero() {
            tokio::task::yield_now().await;
        } else {
            tokio::time::sleep(pause).await;
        }
        Some((Ok::<String, std::io::Error>(event.clone()), (event, guard)))
    });
    Body::from_stream(stream)
}

async fn chat_completions(
    State(shared): State<Shared>,
    headers: HeaderMap,
    body: String,
) -> Response {
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
    let include_usage = request["stream_options"]["include_usage"]
        .as_bool()
        .unwrap_or(false);
    let model = request["model"]
        .as_str()
        .unwrap_or("mock-model")
        .to_string();

    let violations = protocol_violations(&request);
    let (number, reply) = {
        let mut state = lock(&shared);
        let system = request["messages"][0]["content"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        state.requests.push(Recorded {
            body: request,
            headers: recorded_headers,
            at: std::time::Instant::now(),
        });
        let number = state.requests.len();
        if !violations.is_empty() {
            for v in &violations {
                state.violations.push(format!("request #{number}: {v}"));
            }
            let body = json!({"error": {"message": format!("mock LLM: invalid request: {}", violations.join("; ")),
                                        "type": "invalid_request_error", "code": "protocol_violation"}});
            return (StatusCode::BAD_REQUEST, axum::Json(body)).into_response();
        }
        let routed = state
            .routed
            .iter_mut()
            .find(|(needle, queue)| !queue.is_empty() && system.contains(needle.as_str()))
            .and_then(|(_, queue)| queue.pop_front());
        let mut reply = routed.or_else(|| state.script.pop_front());
        // A refusal only answers a streaming request; a plain request skips it.
        if !streaming && matches!(reply.as_ref().map(|r| &r.kind), Some(Kind::RefuseStream)) {
            reply = state.script.pop_front();
        }
        (number, reply)
    };
    if parsed.is_none() {
        return (
            StatusCode::BAD_REQUEST,
            "mock LLM: the request body is not JSON",
        )
            .into_response();
    }
    let Some(reply) = reply else {
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("mock LLM script exhausted: request #{number} has no scripted reply"),
        )
            .into_response();
    };
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    let id = format!("chatcmpl-mock-{number}");
    let mut response = match &reply.kind {
        Kind::Error {
            status,
            body,
            content_type,
        } => Response::builder()
            .status(*status)
            .header("content-type", *content_type)
            .body(Body::from(body.clone())),
        Kind::RefuseStream => Response::builder()
            .status(400)
            .header("content-type", "application/json")
            .body(Body::from(
                json!({"error": {"message": "streaming is not supported by this server",
                                 "type": "invalid_request_error", "code": "stream_unsupported"}})
                .to_string(),
            )),
        Kind::KeepAliveForever | Kind::Endless { .. } => Response::builder()
            .status(200)
            .header("content-type", "text/event-stream")
            .header("cache-control", "no-cache")
            .body(forever_body(&reply.kind, &id, &model, shared.clone())),
        Kind::Answer { .. } if streaming => {
            let usage = (include_usage && !reply.no_usage).then(|| reply.usage_json(body.len()));
            let events = stream_events(&reply, &id, &model, usage);
            Response::builder()
                .status(200)
                .header("content-type", "text/event-stream")
                .header("cache-control", "no-cache")
                .body(sse_body(&reply, events, shared.clone()))
        }
        Kind::Answer { .. } => Response::builder()
            .status(200)
            .header("content-type", "application/json")
            .body(Body::from(
                completion_json(
                    &reply,
                    &id,
                    &model,
                    if reply.no_usage {
                        Value::Null
                    } else {
                        reply.usage_json(body.len())
                    },
                )
                .to_string(),
            )),
    }
    .unwrap_or_else(|e| {
        (StatusCode::INTERNAL_SERVER_ERROR, format!("mock LLM: {e}")).into_response()
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

async fn models(State(shared): State<Shared>) -> Response {
    let models = lock(&shared).models.clone();
    let data: Vec<Value> = models
        .iter()
        .map(|m| json!({"id": m, "object": "model", "created": 0, "owned_by": "mock"}))
        .collect();
    axum::Json(json!({"object": "list", "data": data})).into_response()
}

async fn unknown_route(method: Method, uri: Uri) -> Response {
    (
        StatusCode::NOT_FOUND,
        format!("mock LLM: no route for {method} {uri}"),
    )
        .into_response()
}

/// The `arguments` text of a scripted call: a JSON string is sent verbatim (so tests can script
/// malformed JSON), anything else is serialized.
fn arguments_text(args: &Value) -> String {
    match args {
        Value::String(raw) => raw.clone(),
        other => other.to_string(),
    }
}

/// An axum app served on 127.0.0.1 (a free port) by its own thread and tokio runtime, so plain
/// synchronous tests can use it; stopped (open connections included) when dropped. Shared by the
/// mock LLM, the mock Anthropic API and the fake Telegram Bot API.
pub struct BackgroundServer {
    addr: SocketAddr,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl BackgroundServer {
    pub fn start(name: &str, app: Router) -> BackgroundServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        listener
            .set_nonblocking(true)
            .expect("make the server socket non-blocking");
        let addr = listener.local_addr().expect("server address");
        let (shutdown, stop) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("server runtime");
                runtime.block_on(async move {
                    let listener =
                        tokio::net::TcpListener::from_std(listener).expect("server listener");
                    tokio::select! {
                        _ = axum::serve(listener, app).into_future() => {}
                        _ = stop => {}
                    }
                });
                // Open connections (e.g. a stream the test never finished) die with the runtime.
                runtime.shutdown_background();
            })
            .expect("spawn the server thread");
        BackgroundServer {
            addr,
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for BackgroundServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
