//! Deferred tool loading through the real binary: 300 MCP tools and a 32K context window → the
//! MCP schemas are not sent, `tool_search` / `tool_describe` / `tool_call` are, the model finds
//! and calls one, and every request of the session carries the same tools array (the prefix
//! stays byte-stable).

use serde_json::{Value, json};

use super::mcp_client::{result_in as result_of, tool_names};
use crate::support::harness::stdout;
use crate::support::mcp_servers::McpHome;
use crate::support::mock_llm::{MockLlm, Reply};

#[test]
fn three_hundred_tools_are_found_and_called_through_tool_search() {
    // Warm: the tools are deferred because of their size, not because the server is late.
    let env = McpHome::new()
        .top("model:\n  context_length: 32000")
        .stdio("fleet", "    env:\n      MCP_TEST_EXTRA_TOOLS: '300'\n")
        .warm();
    let mock = MockLlm::with_script([
        Reply::tool_call("c1", "tool_search", json!({"query": "widget 123"})),
        Reply::tool_call(
            "c2",
            "tool_describe",
            json!({"name": "mcp__fleet__widget_123"}),
        ),
        Reply::tool_call(
            "c3",
            "tool_call",
            json!({"name": "mcp__fleet__widget_123", "arguments": {"action": "start"}}),
        ),
        Reply::tool_call(
            "c4",
            "tool_call",
            json!({"name": "mcp__fleet__nope", "arguments": {}}),
        ),
        Reply::text("started"),
    ]);
    let out = env.ask(&mock, "start widget 123");
    assert_eq!(stdout(&out), "started\n");
    let requests = mock.requests();
    let names = tool_names(&requests[0]);
    for bridge in ["tool_search", "tool_describe", "tool_call", "terminal"] {
        assert!(
            names.iter().any(|n| n == bridge),
            "{bridge} missing: {names:?}"
        );
    }
    assert!(!names.iter().any(|n| n.starts_with("mcp__")), "{names:?}");

    let found = result_of(&requests[1], "c1");
    let hits: Value = serde_json::from_str(&found).unwrap();
    assert_eq!(
        hits["results"][0]["name"], "mcp__fleet__widget_123",
        "{found}"
    );
    let described = result_of(&requests[2], "c2");
    assert!(described.contains("\"action\""), "{described}");
    let called = result_of(&requests[3], "c3");
    assert!(called.contains("widget_123 did start"), "{called}");
    assert!(called.contains("trust=\"untrusted\""), "{called}");
    let missing = result_of(&requests[4], "c4");
    assert!(missing.contains("tool_search"), "{missing}");

    // Byte-stable prefix: the same tools array and system prompt on every request, and each
    // request's messages start with the previous request's messages.
    for pair in requests.windows(2) {
        assert_eq!(
            serde_json::to_string(&pair[0]["tools"]).unwrap(),
            serde_json::to_string(&pair[1]["tools"]).unwrap()
        );
        let before = pair[0]["messages"].as_array().unwrap();
        let after = pair[1]["messages"].as_array().unwrap();
        assert_eq!(&after[..before.len()], &before[..]);
    }
    // The first request stays small although 300 tools are configured.
    let body = serde_json::to_string(&requests[0]).unwrap();
    assert!(
        body.len() <= 15_000,
        "first request is {} bytes",
        body.len()
    );
}

#[test]
fn few_tools_are_sent_directly() {
    let env = McpHome::new()
        .top("model:\n  context_length: 32000")
        .stdio("t", "")
        .warm();
    let mock = MockLlm::with_script([Reply::text("ok")]);
    env.ask(&mock, "hi");
    let tools = serde_json::to_string(&mock.requests()[0]["tools"]).unwrap();
    assert!(
        tools.contains("mcp__t__echo") && !tools.contains("tool_search"),
        "{tools}"
    );
}
