//! The Anthropic Messages client against the scripted Anthropic mock, through the public library
//! API (streaming text, tool_use, thinking, usage with cache tokens, errors, cancellation, the
//! exact request shape with its cache markers), (`anthropic_cli.rs` drives the real binary).

use std::time::{Duration, Instant};

use futures::StreamExt;
use hermes::llm::anthropic::AnthropicClient;
use hermes::llm::prompt_cache::CacheTtl;
use hermes::llm::{
    ChatRequest, FailoverReason, LlmClient, LlmError, LlmEvent, LlmResponse, Message, Provider,
    ToolSchema, WireApi,
};
use serde_json::{Value, json};

use crate::support::mock_anthropic::{MockAnthropic, Reply};

const KEY: &str = "sk-ant-test-0123456789abcdef";

fn provider(mock: &MockAnthropic) -> Provider {
    let p = Provider::new("anthropic", "claude-x", &mock.base_url(), Some(KEY.into()));
    assert_eq!(p.wire_api, WireApi::AnthropicMessages);
    p
}

fn client(provider: Provider) -> AnthropicClient {
    AnthropicClient::new(provider).unwrap()
}

fn request(messages: Vec<Message>) -> ChatRequest {
    ChatRequest {
        model: "claude-x".into(),
        system: "You are a test.".into(),
        messages,
        tools: vec![ToolSchema {
            name: "read_file".into(),
            description: "Read a text file".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}},
                               "required": ["path"]}),
        }],
        max_tokens: None,
        temperature: None,
    }
}

struct Outcome {
    events: Vec<LlmEvent>,
    end: Result<LlmResponse, LlmError>,
}

impl Outcome {
    fn response(&self) -> &LlmResponse {
        match &self.end {
            Ok(r) => r,
            Err(e) => panic!("expected a response, got: {e}"),
        }
    }
    fn error(&self) -> &LlmError {
        match &self.end {
            Ok(r) => panic!("expected an error, got: {r:?}"),
            Err(e) => e,
        }
    }
    fn text(&self) -> String {
        self.events
            .iter()
            .filter_map(|e| match e {
                LlmEvent::TextDelta(t) => Some(t.as_str()),
                _ => None,
            })
            .collect()
    }
    fn reasoning(&self) -> String {
        self.events
            .iter()
            .filter_map(|e| match e {
                LlmEvent::ReasoningDelta(t) => Some(t.as_str()),
                _ => None,
            })
            .collect()
    }
}

async fn run(client: &AnthropicClient, request: ChatRequest) -> Outcome {
    let mut stream = match client.stream(request).await {
        Ok(s) => s,
        Err(e) => {
            return Outcome {
                events: Vec::new(),
                end: Err(e),
            };
        }
    };
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(LlmEvent::Done(response)) => {
                assert!(stream.next().await.is_none(), "nothing may follow Done");
                return Outcome {
                    events,
                    end: Ok(response),
                };
            }
            Ok(event) => events.push(event),
            Err(e) => {
                assert!(stream.next().await.is_none(), "nothing may follow an error");
                return Outcome {
                    events,
                    end: Err(e),
                };
            }
        }
    }
    panic!("stream ended without Done or an error; events: {events:?}");
}

/// Paths (like `system[0]`, `messages[2].content[1]`) of every object carrying `cache_control`.
pub(crate) fn marked(body: &Value) -> Vec<String> {
    fn walk(value: &Value, path: String, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if map.contains_key("cache_control") {
                    out.push(path.clone());
                }
                for (k, v) in map {
                    let sep = if path.is_empty() { "" } else { "." };
                    walk(v, format!("{path}{sep}{k}"), out);
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    walk(v, format!("{path}[{i}]"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(body, String::new(), &mut out);
    out.sort();
    out
}

#[tokio::test]
async fn text_streams_with_usage_and_headers() {
    let mock = MockAnthropic::with_script([Reply::text("Hello there, world!")
        .chunk_chars(5)
        .with_usage(12, 7, 1000, 200)]);
    let out = run(&client(provider(&mock)), request(vec![Message::user("hi")])).await;
    let deltas = out
        .events
        .iter()
        .filter(|e| matches!(e, LlmEvent::TextDelta(_)))
        .count();
    assert!(deltas >= 3, "several deltas: {:?}", out.events);
    assert_eq!(out.text(), "Hello there, world!");
    let r = out.response();
    assert_eq!(r.message.content.as_deref(), Some("Hello there, world!"));
    assert_eq!(r.message.finish_reason.as_deref(), Some("stop"));
    assert_eq!(r.model.as_deref(), Some("claude-x"));
    assert_eq!(
        r.usage.input_tokens, 1212,
        "the whole prompt, cached parts included"
    );
    assert_eq!(r.usage.output_tokens, 7);
    assert_eq!(r.usage.cache_read_tokens, 1000);
    assert_eq!(r.usage.cache_write_tokens, 200);

    assert_eq!(mock.header(0, "x-api-key").as_deref(), Some(KEY));
    assert_eq!(
        mock.header(0, "anthropic-version").as_deref(),
        Some("2023-06-01")
    );
    assert_eq!(mock.header(0, "authorization"), None);
    let body = &mock.requests()[0];
    assert_eq!(body["model"], "claude-x");
    assert_eq!(body["stream"], true);
    assert!(body["max_tokens"].as_u64().unwrap() > 0);
    assert_eq!(body["system"][0]["text"], "You are a test.");
    assert_eq!(
        body["tools"][0]["input_schema"]["required"],
        json!(["path"])
    );
    assert_eq!(
        marked(body),
        vec!["messages[0].content[0]", "system[0]"],
        "system + the only message"
    );
    assert_eq!(
        body["system"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
}

#[tokio::test]
async fn tool_use_and_thinking_then_results_go_back_signed() {
    let mock = MockAnthropic::with_script([
        Reply::tool_uses([
            ("toolu_01", "read_file", json!({"path": "a.txt"})),
            (
                "toolu_02",
                "read_file",
                json!({"path": "dir/b.txt", "limit": 20}),
            ),
        ])
        .with_text("Reading both.")
        .with_thinking("I should read a.txt and b.txt.", "c2lnbmF0dXJl"),
        Reply::text("Both read."),
    ]);
    let c = client(provider(&mock));
    let first = run(&c, request(vec![Message::user("read them")])).await;
    assert_eq!(first.reasoning(), "I should read a.txt and b.txt.");
    assert_eq!(first.text(), "Reading both.");
    let starts: Vec<(usize, String, String)> = first
        .events
        .iter()
        .filter_map(|e| match e {
            LlmEvent::ToolCallStart { index, id, name } => Some((*index, id.clone(), name.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        starts,
        vec![
            (0, "toolu_01".into(), "read_file".into()),
            (1, "toolu_02".into(), "read_file".into())
        ]
    );
    let answer = first.response().message.clone();
    assert_eq!(answer.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(
        answer.reasoning.as_deref(),
        Some("I should read a.txt and b.txt.")
    );
    let args: Vec<Value> = answer
        .tool_calls
        .iter()
        .map(|c| serde_json::from_str(&c.arguments).unwrap())
        .collect();
    assert_eq!(
        args,
        vec![
            json!({"path": "a.txt"}),
            json!({"path": "dir/b.txt", "limit": 20})
        ]
    );

    let history = vec![
        Message::user("read them"),
        answer.clone(),
        Message::tool_result(&answer.tool_calls[0], "alpha"),
        Message::tool_result(&answer.tool_calls[1], "beta"),
    ];
    let second = run(&c, request(history)).await;
    assert_eq!(
        second.response().message.content.as_deref(),
        Some("Both read.")
    );
    let body = &mock.requests()[1];
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    let assistant = messages[1]["content"].as_array().unwrap();
    let kinds: Vec<&str> = assistant
        .iter()
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, vec!["thinking", "text", "tool_use", "tool_use"]);
    assert_eq!(assistant[0]["signature"], "c2lnbmF0dXJl");
    assert_eq!(assistant[0]["thinking"], "I should read a.txt and b.txt.");
    assert_eq!(
        assistant[3]["input"],
        json!({"path": "dir/b.txt", "limit": 20})
    );
    let results = messages[2]["content"].as_array().unwrap();
    assert_eq!(messages[2]["role"], "user");
    assert_eq!(results.len(), 2, "both results in one user message");
    assert_eq!(results[0]["tool_use_id"], "toolu_01");
    assert_eq!(results[1]["tool_use_id"], "toolu_02");
    assert_eq!(results[1]["content"], "beta");
    assert_eq!(
        marked(body),
        vec![
            "messages[0].content[0]",
            "messages[1].content[3]",
            "messages[2].content[1]",
            "system[0]"
        ]
    );
}

#[tokio::test]
async fn one_hour_ttl_and_gateway_base_url() {
    let mock = MockAnthropic::with_script([Reply::text("ok")]);
    // A gateway base without `/v1` (like `https://host/anthropic`) still reaches /v1/messages.
    let mut p = Provider::new("custom", "glm-x", &mock.root_url(), None);
    p.wire_api = WireApi::AnthropicMessages;
    p.cache_ttl = CacheTtl::OneHour;
    let c = client(p);
    assert_eq!(c.endpoint(), format!("{}/v1/messages", mock.root_url()));
    let out = run(&c, request(vec![Message::user("hi")])).await;
    assert_eq!(out.text(), "ok");
    assert_eq!(
        mock.header(0, "x-api-key"),
        None,
        "no key configured, none sent"
    );
    let body = &mock.requests()[0];
    assert_eq!(
        body["system"][0]["cache_control"],
        json!({"type": "ephemeral", "ttl": "1h"})
    );
}

#[tokio::test]
async fn http_errors_are_classified() {
    let mock = MockAnthropic::with_script([
        Reply::rate_limited("0.2"),
        Reply::overloaded(),
        Reply::bad_request("messages.0.content: field required"),
        Reply::bad_request("prompt is too long: 210000 tokens > 200000 maximum"),
        Reply::api_error(
            400,
            "invalid_request_error",
            "Your credit balance is too low",
        ),
        Reply::api_error(
            401,
            "authentication_error",
            &format!("invalid x-api-key {KEY}"),
        ),
    ]);
    let c = client(provider(&mock));
    let call = || run(&c, request(vec![Message::user("hi")]));

    let out = call().await;
    let e = out.error();
    assert_eq!((e.reason, e.status), (FailoverReason::RateLimit, Some(429)));
    assert_eq!(e.retry_after, Some(Duration::from_millis(200)));
    assert!(e.body.contains("rate limit"), "{}", e.body);
    assert!(!e.partial);

    let out = call().await;
    assert_eq!(
        (out.error().reason, out.error().status),
        (FailoverReason::Overloaded, Some(529))
    );

    let out = call().await;
    let e = out.error();
    assert_eq!(e.reason, FailoverReason::FormatError);
    assert!(e.body.contains("field required"), "{}", e.body);
    assert!(e.endpoint.ends_with("/v1/messages"), "{}", e.endpoint);

    assert_eq!(call().await.error().reason, FailoverReason::ContextOverflow);
    assert_eq!(call().await.error().reason, FailoverReason::Billing);

    let out = call().await;
    let e = out.error();
    assert_eq!(e.reason, FailoverReason::Auth);
    assert!(
        !e.body.contains(KEY),
        "the key must be scrubbed: {}",
        e.body
    );
    assert!(!e.to_string().contains(KEY));
    assert_eq!(mock.request_count(), 6, "the client never retries");
}

#[tokio::test]
async fn cut_stream_and_stream_errors_are_partial_failures() {
    let mock = MockAnthropic::with_script([
        Reply::cut_after(6),
        Reply::text("half an answer").then_stream_error("overloaded_error", "Overloaded"),
    ]);
    let c = client(provider(&mock));
    let out = run(&c, request(vec![Message::user("hi")])).await;
    assert!(!out.text().is_empty(), "some text arrived before the cut");
    let e = out.error();
    assert_eq!(e.reason, FailoverReason::ServerError);
    assert!(e.partial);

    let out = run(&c, request(vec![Message::user("hi")])).await;
    assert_eq!(out.text(), "half an answer");
    let e = out.error();
    assert_eq!(e.reason, FailoverReason::Overloaded);
    assert!(e.partial);
    assert!(e.body.contains("Overloaded"), "{}", e.body);
}

#[tokio::test]
async fn whole_json_answers_are_accepted() {
    let mock =
        MockAnthropic::with_script([
            Reply::tool_use("toolu_9", "read_file", json!({"path": "x"}))
                .with_text("One moment.")
                .with_usage(10, 5, 3, 0)
                .whole_json(),
        ]);
    let out = run(&client(provider(&mock)), request(vec![Message::user("hi")])).await;
    assert_eq!(out.text(), "One moment.");
    let r = out.response();
    assert_eq!(r.message.tool_calls[0].arguments, r#"{"path":"x"}"#);
    assert_eq!((r.usage.input_tokens, r.usage.cache_read_tokens), (13, 3));
}

#[tokio::test]
async fn idle_stream_times_out() {
    let mock = MockAnthropic::with_script([Reply::text("slow")
        .chunk_chars(1)
        .chunk_interval(Duration::from_secs(2))]);
    let mut p = provider(&mock);
    p.stream_idle_timeout = Duration::from_millis(300);
    let started = Instant::now();
    let out = run(&client(p), request(vec![Message::user("hi")])).await;
    assert_eq!(out.error().reason, FailoverReason::Timeout);
    assert!(out.error().body.contains("idle"), "{}", out.error().body);
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn dropping_the_stream_closes_the_connection() {
    let mock = MockAnthropic::with_script([Reply::text("word ".repeat(200))
        .chunk_chars(5)
        .chunk_interval(Duration::from_millis(50))]);
    let c = client(provider(&mock));
    let mut stream = c.stream(request(vec![Message::user("hi")])).await.unwrap();
    let first = stream.next().await.unwrap().unwrap();
    assert!(matches!(first, LlmEvent::TextDelta(_)));
    drop(stream);
    let deadline = Instant::now() + Duration::from_secs(5);
    while mock.aborted_streams() == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        mock.aborted_streams(),
        1,
        "the server should see the client go away"
    );
    assert_eq!(mock.finished_streams(), 0);
}

#[tokio::test]
async fn unreachable_server_is_named() {
    // Held for the whole test: a dropped listener's port can be handed to another test's mock.
    let closed = crate::support::closed_port::ClosedPort::new();
    let addr = closed.addr();
    let p = Provider::new("anthropic", "claude-x", &format!("http://{addr}/v1"), None);
    let out = run(&client(p), request(vec![Message::user("hi")])).await;
    let e = out.error();
    assert!(e.body.contains("cannot connect"), "{}", e.body);
    assert!(e.body.contains(&addr.to_string()), "{}", e.body);
}

/// Claude through OpenRouter on the chat-completions wire: the system message and the last three
/// messages with content become text parts with markers; other models get plain strings.
#[tokio::test]
async fn openrouter_claude_gets_cache_markers() {
    use crate::support::mock_llm::{MockLlm, Reply as ChatReply};
    use hermes::llm::openai::OpenAiClient;

    let mock = MockLlm::with_script([ChatReply::text("a"), ChatReply::text("b")]);
    let call = hermes::llm::ToolCall {
        id: "call_1".into(),
        name: "read_file".into(),
        arguments: r#"{"path":"a"}"#.into(),
    };
    let history = vec![
        Message::user("first"),
        Message::assistant(Some("ok".into()), vec![]),
        Message::user("read a"),
        Message::assistant(None, vec![call.clone()]),
        Message::tool_result(&call, "alpha"),
    ];
    for (model, cached) in [
        ("anthropic/claude-sonnet-4", true),
        ("openai/gpt-4o", false),
    ] {
        let p = Provider::new("openrouter", model, &mock.base_url(), Some("or-key".into()));
        let c = OpenAiClient::new(p).unwrap();
        let mut req = request(history.clone());
        req.model = model.into();
        let mut stream = c.stream(req).await.unwrap();
        while let Some(item) = stream.next().await {
            item.unwrap();
        }
        let body = mock.requests().last().unwrap().clone();
        if cached {
            assert_eq!(
                marked(&body),
                vec![
                    "messages[0].content[0]",
                    "messages[2].content[0]",
                    "messages[3].content[0]",
                    "messages[5].content[0]"
                ],
                "{body}"
            );
            assert_eq!(body["messages"][1]["content"], "first");
            assert!(body["messages"][4]["content"].is_null());
            assert_eq!(body["messages"][5]["content"][0]["text"], "alpha");
        } else {
            assert!(marked(&body).is_empty(), "{body}");
            assert_eq!(body["messages"][5]["content"], "alpha");
        }
    }
}
