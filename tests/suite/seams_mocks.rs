//! The mock LLMs keep their promise: both check protocol invariants on every request (every tool
//! call has its result, no result without its call, no empty assistant turn; Anthropic: no tool
//! blocks in a request without tools), answer a violation 400 like the real APIs, and fail the
//! test that caused it when dropped. The budget-summary call on the Messages wire is valid.

use serde_json::{Value, json};

use crate::support::harness::{TestEnv, stderr, stdout};
use crate::support::{mock_anthropic, mock_llm};

async fn post(url: String, body: Value) -> u16 {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
        .post(url)
        .json(&body)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

fn dropping_panics<T>(mock: T) -> bool {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(mock))).is_err()
}

#[test]
fn chat_completions_invariants() {
    let call = json!({"role": "assistant", "content": null,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}]});
    let result = json!({"role": "tool", "tool_call_id": "c1", "content": "ok"});
    let user = json!({"role": "user", "content": "hi"});
    let ok = json!({"messages": [user, call, result, {"role": "assistant", "content": "done"}]});
    assert!(mock_llm::protocol_violations(&ok).is_empty());
    for (bad, why) in [
        (json!({"messages": [user, call, user]}), "no result"),
        (json!({"messages": [user, result]}), "without its call"),
        (
            json!({"messages": [user, {"role": "assistant", "content": ""}]}),
            "empty assistant",
        ),
    ] {
        let found = mock_llm::protocol_violations(&bad).join("; ");
        assert!(found.contains(why), "{why}: {found}");
    }
}

#[test]
fn messages_api_invariants() {
    let tools = json!([{"name": "t", "input_schema": {"type": "object"}}]);
    let use_ = json!({"role": "assistant", "content": [{"type": "tool_use", "id": "u1", "name": "t", "input": {}}]});
    let result = json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "u1", "content": "ok"}]});
    let user = json!({"role": "user", "content": "hi"});
    let ok = json!({"tools": tools, "messages": [user, use_, result]});
    assert!(mock_anthropic::protocol_violations(&ok).is_empty());
    for (bad, why) in [
        (json!({"messages": [user, use_, result]}), "without tools"),
        (
            json!({"tools": tools, "messages": [user, use_, user]}),
            "without a tool_result",
        ),
        (
            json!({"tools": tools, "messages": [user, result]}),
            "without its tool_use",
        ),
        (
            json!({"messages": [user, {"role": "assistant", "content": []}]}),
            "empty assistant",
        ),
        (
            json!({"messages": [{"role": "user", "content": [{"type": "text", "text": ""}]}]}),
            "empty text",
        ),
    ] {
        let found = mock_anthropic::protocol_violations(&bad).join("; ");
        assert!(found.contains(why), "{why}: {found}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_violation_is_a_400_and_fails_the_test_that_caused_it() {
    let mock = mock_llm::MockLlm::with_script([mock_llm::Reply::text("never served")]);
    let bad =
        json!({"model": "m", "messages": [{"role": "tool", "tool_call_id": "x", "content": "?"}]});
    let status = post(format!("{}/chat/completions", mock.base_url()), bad).await;
    assert_eq!(status, 400);
    assert_eq!(
        mock.remaining(),
        1,
        "a rejected request consumes no scripted reply"
    );
    assert!(dropping_panics(mock), "the mock must fail the test at drop");

    let mock = mock_anthropic::MockAnthropic::with_script([mock_anthropic::Reply::text("x")]);
    let bad =
        json!({"model": "m", "max_tokens": 5, "messages": [{"role": "assistant", "content": []}]});
    let status = post(format!("{}/messages", mock.base_url()), bad).await;
    assert_eq!(status, 400);
    assert!(dropping_panics(mock));
}

#[test]
fn budget_summary_on_the_messages_wire_is_a_valid_request() {
    let env = TestEnv::new();
    env.write("x.txt", "x\n");
    let mock = mock_anthropic::MockAnthropic::with_script([
        mock_anthropic::Reply::tool_use("toolu_1", "read_file", json!({"path": "x.txt"})),
        mock_anthropic::Reply::tool_use("toolu_2", "read_file", json!({"path": "x.txt"})),
        mock_anthropic::Reply::text("Summary: read x.txt twice."),
    ]);
    let out = env
        .bare_cmd()
        .args(["--provider", "anthropic", "--base-url", &mock.base_url()])
        .args(["--api-key", "test", "-m", "claude-x"])
        .args(["--max-turns", "2", "-z", "loop"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Summary: read x.txt twice.\n");
    let last = mock.requests().pop().unwrap();
    assert!(last.get("tools").is_none(), "{last}");
    // The calls are still visible to the model, as text.
    assert!(last["messages"].to_string().contains("read_file"), "{last}");
}
