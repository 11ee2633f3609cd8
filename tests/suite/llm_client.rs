//! The OpenAI chat completions client against the scripted mock server, through the public
//! library API: streaming, tool-call assembly, usage, error classification, timeouts,
//! cancellation, the non-streaming fallback and the exact request bytes.

use std::time::{Duration, Instant};

use futures::StreamExt;
use hermes::llm::openai::OpenAiClient;
use hermes::llm::{
    ChatRequest, FailoverReason, LlmClient, LlmError, LlmEvent, LlmResponse, Message, Provider,
    ToolSchema,
};
use serde_json::{Value, json};

use crate::support::mock_llm::{MockLlm, Reply};

fn provider(mock: &MockLlm) -> Provider {
    Provider::new("custom", "test-model", &mock.base_url(), None)
}

fn client(provider: Provider) -> OpenAiClient {
    OpenAiClient::new(provider).unwrap()
}

fn request(text: &str) -> ChatRequest {
    ChatRequest {
        model: "test-model".into(),
        system: "You are a test.".into(),
        messages: vec![Message::user(text)],
        tools: Vec::new(),
        max_tokens: None,
        temperature: None,
    }
}

fn with_tools(mut request: ChatRequest) -> ChatRequest {
    request.tools = vec![ToolSchema {
        name: "read_file".into(),
        description: "Read a text file".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}},
                           "required": ["path"]}),
    }];
    request
}

/// Everything a call produced: the live events before the end, and the end itself.
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
}

async fn run(client: &OpenAiClient, request: ChatRequest) -> Outcome {
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

#[tokio::test]
async fn text_streams_in_chunks_then_done() {
    let mock = MockLlm::with_script([Reply::text("Hello there, world!")]);
    let out = run(&client(provider(&mock)), request("hi")).await;
    let deltas = out
        .events
        .iter()
        .filter(|e| matches!(e, LlmEvent::TextDelta(_)))
        .count();
    assert!(
        deltas >= 3,
        "text should arrive in several deltas: {:?}",
        out.events
    );
    assert_eq!(out.text(), "Hello there, world!");
    let resp = out.response();
    assert_eq!(resp.message.content.as_deref(), Some("Hello there, world!"));
    assert!(resp.message.tool_calls.is_empty());
    assert_eq!(resp.message.finish_reason.as_deref(), Some("stop"));
    assert_eq!(resp.model.as_deref(), Some("test-model"));
    assert!(
        resp.usage.input_tokens > 0,
        "usage comes in the final chunk"
    );
    assert_eq!(mock.request_count(), 1);
}

#[tokio::test]
async fn parallel_tool_calls_assemble_across_chunks() {
    let mock = MockLlm::with_script([Reply::tool_calls([
        ("call_1", "read_file", json!({"path": "a.txt"})),
        (
            "call_2",
            "search_files",
            json!({"pattern": "fn main", "path": "src"}),
        ),
    ])]);
    let out = run(&client(provider(&mock)), with_tools(request("look"))).await;
    let starts: Vec<(usize, String, String)> = out
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
            (0, "call_1".into(), "read_file".into()),
            (1, "call_2".into(), "search_files".into())
        ]
    );
    let resp = out.response();
    assert_eq!(resp.message.content, None);
    assert_eq!(resp.message.finish_reason.as_deref(), Some("tool_calls"));
    let calls = &resp.message.tool_calls;
    assert_eq!(calls.len(), 2);
    let args: Vec<Value> = calls
        .iter()
        .map(|c| serde_json::from_str(&c.arguments).unwrap())
        .collect();
    assert_eq!(args[0], json!({"path": "a.txt"}));
    assert_eq!(args[1], json!({"pattern": "fn main", "path": "src"}));
    assert_eq!(
        (calls[1].id.as_str(), calls[1].name.as_str()),
        ("call_2", "search_files")
    );
}

#[tokio::test]
async fn usage_with_cached_tokens() {
    let mock = MockLlm::with_script([Reply::text("ok").with_usage(1200, 34, 1024)]);
    let out = run(&client(provider(&mock)), request("hi")).await;
    let usage = out.response().usage;
    assert_eq!(usage.input_tokens, 1200);
    assert_eq!(usage.output_tokens, 34);
    assert_eq!(usage.cache_read_tokens, 1024);
}

#[tokio::test]
async fn nonstandard_finish_reason_is_accepted() {
    let mock = MockLlm::with_script([Reply::text("done").with_finish_reason("eos")]);
    let out = run(&client(provider(&mock)), request("hi")).await;
    assert_eq!(out.response().message.finish_reason.as_deref(), Some("eos"));
    assert_eq!(out.response().message.content.as_deref(), Some("done"));
}

#[tokio::test]
async fn reasoning_streams_as_its_own_deltas() {
    let mock =
        MockLlm::with_script([Reply::text("42").with_reasoning("Six times seven is forty-two.")]);
    let out = run(&client(provider(&mock)), request("6*7?")).await;
    let reasoning: String = out
        .events
        .iter()
        .filter_map(|e| match e {
            LlmEvent::ReasoningDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(reasoning, "Six times seven is forty-two.");
    assert_eq!(out.text(), "42");
    let resp = out.response();
    assert_eq!(
        resp.message.reasoning.as_deref(),
        Some("Six times seven is forty-two.")
    );
    assert_eq!(resp.message.content.as_deref(), Some("42"));
}

#[tokio::test]
async fn rate_limit_keeps_retry_after_and_is_not_retried() {
    let mock = MockLlm::with_script([
        Reply::error(
            429,
            r#"{"error":{"message":"Rate limit reached","type":"requests"}}"#,
        )
        .header("retry-after", "2.5"),
        Reply::text("must not be fetched"),
    ]);
    let out = run(&client(provider(&mock)), request("hi")).await;
    let err = out.error();
    assert_eq!(err.reason, FailoverReason::RateLimit);
    assert_eq!(err.status, Some(429));
    assert_eq!(err.retry_after, Some(Duration::from_millis(2500)));
    assert!(err.body.contains("Rate limit reached"), "{}", err.body);
    assert_eq!(
        err.endpoint,
        format!("{}/chat/completions", mock.base_url())
    );
    assert!(!err.partial);
    assert_eq!(
        mock.request_count(),
        1,
        "the client must not retry by itself"
    );
}

#[tokio::test]
async fn html_error_page_is_kept() {
    let mock = MockLlm::with_script([Reply::html_error(502)]);
    let out = run(&client(provider(&mock)), request("hi")).await;
    let err = out.error();
    assert_eq!(err.reason, FailoverReason::ServerError);
    assert_eq!(err.status, Some(502));
    assert!(
        err.body.contains("<title>502 Bad Gateway</title>"),
        "{}",
        err.body
    );
    assert!(err.body.contains("nginx"), "{}", err.body);
    assert_eq!(mock.request_count(), 1);
}

#[tokio::test]
async fn json_401_is_auth_and_the_key_is_redacted() {
    let key = "sk-proj-abcdefghijklmnopqrstuvwxyz0123";
    let mock = MockLlm::with_script([Reply::error(
        401,
        json!({"error": {"message": format!("Incorrect API key provided: {key}."),
                         "type": "invalid_request_error", "code": "invalid_api_key"}})
        .to_string(),
    )]);
    let mut p = provider(&mock);
    p.api_key = Some(key.into());
    let out = run(&client(p), request("hi")).await;
    let err = out.error();
    assert_eq!(err.reason, FailoverReason::Auth);
    assert!(
        err.body.contains("Incorrect API key provided"),
        "{}",
        err.body
    );
    assert!(!err.body.contains("abcdefghijklmnop"), "{}", err.body);
    assert!(!err.to_string().contains("abcdefghijklmnop"));
}

#[tokio::test]
async fn context_length_400_is_overflow() {
    let mock = MockLlm::with_script([Reply::error(
        400,
        r#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9001 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
    )]);
    let out = run(&client(provider(&mock)), request("hi")).await;
    assert_eq!(out.error().reason, FailoverReason::ContextOverflow);
    assert_eq!(out.error().status, Some(400));
}

#[tokio::test]
async fn cut_stream_is_an_error_marked_partial() {
    let mock = MockLlm::with_script([Reply::cut_after(3), Reply::cut_after(0)]);
    let c = client(provider(&mock));

    let out = run(&c, request("hi")).await;
    assert!(!out.text().is_empty(), "some text arrived before the cut");
    let err = out.error();
    assert_eq!(err.reason, FailoverReason::ServerError);
    assert!(
        err.body
            .contains("stream ended before the response was complete"),
        "{}",
        err.body
    );
    assert!(err.partial);

    let out = run(&c, request("hi")).await;
    assert!(out.events.is_empty());
    assert_eq!(out.error().reason, FailoverReason::ServerError);
    assert!(!out.error().partial, "nothing was shown before the cut");
}

#[tokio::test]
async fn silent_stream_hits_the_idle_timeout() {
    let mock = MockLlm::with_script([Reply::slow_chunks(Duration::from_secs(3))]);
    let mut p = provider(&mock);
    p.stream_idle_timeout = Duration::from_millis(300);
    let started = Instant::now();
    let out = run(&client(p), request("hi")).await;
    let err = out.error();
    assert_eq!(err.reason, FailoverReason::Timeout);
    assert!(err.body.contains("idle timeout"), "{}", err.body);
    assert!(!err.partial);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn slow_server_hits_the_request_timeout() {
    let mock = MockLlm::with_script([Reply::text("late").delay(Duration::from_secs(3))]);
    let mut p = provider(&mock);
    p.request_timeout = Duration::from_millis(300);
    let started = Instant::now();
    let out = run(&client(p), request("hi")).await;
    assert_eq!(out.error().reason, FailoverReason::Timeout);
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn refused_streaming_falls_back_and_stays_off() {
    let mock = MockLlm::with_script([
        Reply::refuse_stream(),
        Reply::text("plain answer").with_usage(50, 5, 0),
        Reply::text("second plain answer"),
    ]);
    let c = client(provider(&mock));
    let out = run(&c, request("hi")).await;
    assert_eq!(out.text(), "plain answer");
    assert_eq!(
        out.response().message.content.as_deref(),
        Some("plain answer")
    );
    assert_eq!(out.response().usage.input_tokens, 50);
    assert!(c.streaming_disabled());

    let out = run(&c, request("again")).await;
    assert_eq!(
        out.response().message.content.as_deref(),
        Some("second plain answer")
    );
    let requests = mock.requests();
    let streams: Vec<Value> = requests.iter().map(|r| r["stream"].clone()).collect();
    assert_eq!(streams, vec![json!(true), json!(false), json!(false)]);
    assert!(requests[2].get("stream_options").is_none());
}

#[tokio::test]
async fn json_answer_to_a_stream_request_is_used_as_is() {
    let completion = json!({
        "id": "x", "object": "chat.completion", "model": "test-model",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "whole answer"}}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 2}
    });
    let mock = MockLlm::with_script([Reply::error(200, completion.to_string())]);
    let c = client(provider(&mock));
    let out = run(&c, request("hi")).await;
    assert_eq!(out.text(), "whole answer");
    assert_eq!(out.response().usage.input_tokens, 9);
    assert!(c.streaming_disabled());
    assert_eq!(
        mock.request_count(),
        1,
        "the answer already came; no second request"
    );
}

#[tokio::test]
async fn unreachable_endpoint_says_so() {
    // Held for the whole test: a dropped listener's port can be handed to another test's mock.
    let closed = crate::support::closed_port::ClosedPort::new();
    let port = closed.addr().port();
    let base = format!("http://127.0.0.1:{port}/v1");
    let c = client(Provider::new("custom", "m", &base, None));
    let out = run(&c, request("hi")).await;
    let err = out.error();
    assert_eq!(err.reason, FailoverReason::Unknown);
    assert!(
        err.body
            .contains(&format!("cannot connect to {base}/chat/completions")),
        "{}",
        err.body
    );
    assert!(err.body.contains("is the server running"), "{}", err.body);
    assert!(err.body.to_lowercase().contains("refused"), "{}", err.body);
}

#[tokio::test]
async fn dropping_the_stream_closes_the_connection() {
    let long = "word ".repeat(200);
    let mock = MockLlm::with_script([Reply::text(long)
        .chunk_chars(5)
        .chunk_interval(Duration::from_millis(50))]);
    let c = client(provider(&mock));
    let mut stream = c.stream(request("hi")).await.unwrap();
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
async fn text_tool_calls_become_structured_calls() {
    let raw = "I'll read it.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.md\"}}\n</tool_call>";
    let mock = MockLlm::with_script([Reply::text_raw_content(raw), Reply::text_raw_content(raw)]);
    let c = client(provider(&mock));

    let out = run(&c, with_tools(request("read notes"))).await;
    assert!(!out.text().contains("<tool_call>"), "{}", out.text());
    let resp = out.response();
    assert_eq!(resp.message.content.as_deref(), Some("I'll read it."));
    assert_eq!(resp.message.tool_calls.len(), 1);
    let call = &resp.message.tool_calls[0];
    assert_eq!(
        (call.id.as_str(), call.name.as_str()),
        ("call_text_0", "read_file")
    );
    assert_eq!(
        serde_json::from_str::<Value>(&call.arguments).unwrap(),
        json!({"path": "notes.md"})
    );

    // Without tools on offer the text is just text.
    let out = run(&c, request("read notes")).await;
    assert_eq!(out.response().message.content.as_deref(), Some(raw));
    assert!(out.response().message.tool_calls.is_empty());
}

#[tokio::test]
async fn request_body_and_headers_on_the_wire() {
    let mock = MockLlm::with_script([Reply::text("a"), Reply::text("b")]);
    let mut p = provider(&mock);
    p.headers.push(("X-Title".into(), "hermes-test".into()));
    let mut req = with_tools(request("hi"));
    req.messages
        .push(Message::assistant(Some("earlier".into()), Vec::new()));
    req.max_tokens = Some(256);
    run(&client(p.clone()), req.clone()).await.response();

    p.api_key = Some("test-key-123".into());
    run(&client(p), req).await.response();

    let requests = mock.requests();
    let body = &requests[0];
    assert_eq!(body["model"], "test-model");
    assert_eq!(
        body["messages"][0],
        json!({"role": "system", "content": "You are a test."})
    );
    assert_eq!(
        body["messages"][1],
        json!({"role": "user", "content": "hi"})
    );
    assert_eq!(
        body["messages"][2],
        json!({"role": "assistant", "content": "earlier"})
    );
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "function": {
            "name": "read_file", "description": "Read a text file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                           "required": ["path"]}}}])
    );
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["max_tokens"], 256);
    for absent in ["tool_choice", "temperature"] {
        assert!(
            body.get(absent).is_none(),
            "{absent} must not be sent: {body}"
        );
    }
    assert_eq!(requests[0], requests[1], "same request, same body");

    assert_eq!(
        mock.header(0, "authorization"),
        None,
        "no key, no Authorization header"
    );
    assert_eq!(mock.header(0, "x-title").as_deref(), Some("hermes-test"));
    assert_eq!(
        mock.header(1, "authorization").as_deref(),
        Some("Bearer test-key-123")
    );
}

#[tokio::test]
async fn exhausted_script_fails_loudly() {
    let mock = MockLlm::start();
    let out = run(&client(provider(&mock)), request("hi")).await;
    assert_eq!(out.error().status, Some(500));
    assert!(
        out.error().body.contains("mock LLM script exhausted"),
        "{}",
        out.error().body
    );
    assert_eq!(mock.request_count(), 1);
}

/// The mock works from a plain synchronous test (no runtime of the test's own), as the CLI tests
/// use it, and lists models for local-server probing.
#[test]
fn mock_serves_plain_tests_and_lists_models() {
    use std::io::{Read, Write};
    let mock = MockLlm::start();
    mock.set_models(&["qwen3:8b", "llama3"]);
    let mut conn = std::net::TcpStream::connect(mock.addr()).unwrap();
    conn.write_all(b"GET /v1/models HTTP/1.1\r\nHost: mock\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    conn.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let body: Value = serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    let ids: Vec<&str> = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec!["qwen3:8b", "llama3"]);
    assert_eq!(
        mock.request_count(),
        0,
        "only chat completions are recorded"
    );
}

#[tokio::test]
async fn timeouts_of_forever_do_not_overflow() {
    let mock = MockLlm::with_script([Reply::text("fine")]);
    let mut p = provider(&mock);
    p.request_timeout = Duration::MAX;
    p.stream_idle_timeout = Duration::MAX;
    let out = run(&client(p), request("hi")).await;
    assert_eq!(out.response().message.content.as_deref(), Some("fine"));
}

#[tokio::test]
async fn malformed_base_url_is_explained() {
    let c = client(Provider::new("custom", "m", "localhost:8080/v1", None));
    let out = run(&c, request("hi")).await;
    let err = out.error();
    assert_eq!(err.reason, FailoverReason::FormatError, "{err}");
    assert!(err.body.contains("check the base URL"), "{}", err.body);
}
