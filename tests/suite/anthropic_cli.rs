//! The real `hermes` binary on the Anthropic Messages wire (and Claude through OpenRouter):
//! tool rounds with thinking, cache markers on exactly the right blocks, usage with cache tokens
//! in state.db, the configured cache TTL, and retries decided by the agent loop.

use serde_json::json;

use super::anthropic_client::marked;
use crate::support::harness::{TestEnv, stderr, stdout};
use crate::support::mock_anthropic::{MockAnthropic, Reply};

/// The real binary with `--provider anthropic`: two tool rounds, then the answer. The second
/// and third requests carry cache markers on exactly the system prompt and the last three
/// messages' last markable blocks (never on thinking), and usage with cache tokens is recorded.
#[test]
fn binary_runs_tool_rounds_with_cache_markers() {
    let env = TestEnv::new();
    env.write("hello.txt", "greetings from the file\n");
    env.write("second.txt", "second file\n");
    let mock = MockAnthropic::with_script([
        Reply::tool_use("toolu_a", "read_file", json!({"path": "hello.txt"}))
            .with_thinking("Read the file first.", "sig-a")
            .with_text("Let me look.")
            .with_usage(900, 20, 0, 850),
        Reply::tool_use("toolu_b", "read_file", json!({"path": "second.txt"}))
            .with_usage(60, 20, 850, 40),
        Reply::text("The file says: greetings from the file").with_usage(50, 10, 890, 30),
    ]);
    let out = env
        .bare_cmd()
        .args([
            "--provider",
            "anthropic",
            "--base-url",
            &mock.base_url(),
            "--api-key",
            "test",
        ])
        .args(["-m", "claude-x", "-z", "Read hello.txt and second.txt"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "The file says: greetings from the file\n");
    assert_eq!(mock.request_count(), 3);
    assert_eq!(mock.header(0, "x-api-key").as_deref(), Some("test"));

    let requests = mock.requests();
    let second = &requests[1];
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "{second}");
    let assistant = messages[1]["content"].as_array().unwrap();
    let kinds: Vec<&str> = assistant
        .iter()
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, vec!["thinking", "text", "tool_use"], "{second}");
    assert_eq!(assistant[0]["signature"], "sig-a");
    let result = &messages[2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "toolu_a");
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("greetings from the file")
    );
    assert_eq!(
        marked(second),
        vec![
            "messages[0].content[0]",
            "messages[1].content[2]",
            "messages[2].content[0]",
            "system[0]"
        ],
        "{second}"
    );
    let marker = json!({"type": "ephemeral"});
    assert_eq!(second["system"][0]["cache_control"], marker);
    assert_eq!(messages[1]["content"][2]["cache_control"], marker);

    // Third request: five messages; the first two lose their markers, the last three carry them.
    let third = &requests[2];
    assert_eq!(third["messages"].as_array().unwrap().len(), 5, "{third}");
    assert_eq!(
        marked(third),
        vec![
            "messages[2].content[0]",
            "messages[3].content[0]",
            "messages[4].content[0]",
            "system[0]"
        ],
        "{third}"
    );
    // The cached prefix is byte-identical apart from the markers that moved.
    assert_eq!(second["system"], third["system"]);
    assert_eq!(second["tools"], third["tools"]);

    let db = env.db();
    let (input, read, write): (i64, i64, i64) = db
        .query_row(
            "SELECT input_tokens, cache_read_tokens, cache_write_tokens FROM sessions",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!((read, write), (850 + 890, 850 + 40 + 30));
    // Input counts the whole prompt (uncached + cache read + cache write), like OpenAI's
    // prompt_tokens, so context-size decisions see the real size.
    assert_eq!(input, (900 + 850) + (60 + 850 + 40) + (50 + 890 + 30));
}

/// `prompt_caching.cache_ttl: 1h` in config.yaml reaches the markers through provider
/// resolution, on the OpenRouter path of the real binary.
#[test]
fn binary_openrouter_claude_uses_configured_ttl() {
    use crate::support::mock_llm::{MockLlm, Reply as ChatReply};

    let env = TestEnv::new();
    env.config("prompt_caching:\n  cache_ttl: 1h\n");
    let mock = MockLlm::with_script([ChatReply::text("cached hello")]);
    let out = env
        .bare_cmd()
        .args(["--provider", "openrouter", "--base-url", &mock.base_url()])
        .args([
            "--api-key",
            "or-key",
            "-m",
            "anthropic/claude-x",
            "-z",
            "hi",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "cached hello\n");
    let body = &mock.requests()[0];
    let marks = marked(body);
    assert_eq!(marks.len(), 2, "system + the user message: {body}");
    assert_eq!(
        body["messages"][0]["content"][0]["cache_control"],
        json!({"type": "ephemeral", "ttl": "1h"})
    );
}

/// The agent loop retries Anthropic's 429 (honouring `retry-after`) and 529, then answers; a
/// 400 is not retried and its message reaches the user with a failing exit code.
#[test]
fn binary_retries_rate_limits_and_overload_but_not_bad_requests() {
    let env = TestEnv::new();
    let mock = MockAnthropic::with_script([
        Reply::rate_limited("0.05"),
        Reply::overloaded(),
        Reply::text("made it"),
        Reply::bad_request("messages.0.content.0.text: text content blocks must be non-empty"),
    ]);
    let run = |prompt: &str| {
        env.bare_cmd()
            .args(["--provider", "anthropic", "--base-url", &mock.base_url()])
            .args(["--api-key", "test", "-m", "claude-x", "-z", prompt])
            .output()
            .unwrap()
    };
    let out = run("hello");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "made it\n");
    assert_eq!(mock.request_count(), 3);

    let out = run("again");
    assert!(!out.status.success());
    assert!(out.stdout.is_empty(), "no answer, nothing on stdout");
    let err = stderr(&out);
    assert!(
        err.contains("text content blocks must be non-empty"),
        "{err}"
    );
    assert_eq!(mock.request_count(), 4, "a bad request is not retried");
}
