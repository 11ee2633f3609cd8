//! Child agents and MCP servers through the real binary: a `delegate_task` child gets the
//! parent's `mcp-*` toolsets (`delegation.inherit_mcp_toolsets`, default true), also when the
//! task names its own toolsets, and none of them when the key is false.

use serde_json::json;

use super::mcp_client::tool_names;
use crate::support::mcp_servers::McpHome;
use crate::support::mock_llm::{MockLlm, Reply};

/// A model that delegates `goal` (toolsets `file`) as call `d1`, then ends; the child's
/// replies are the caller's to queue (`push_for(goal, …)`).
pub(crate) fn delegating(goal: &str) -> MockLlm {
    MockLlm::with_script([
        Reply::tool_call(
            "d1",
            "delegate_task",
            json!({"goal": goal, "toolsets": ["file"]}),
        ),
        Reply::text("Parent done."),
    ])
}

/// The tools array of the child's first request (the one whose goal is `goal`).
fn child_tools(top: &str, goal: &str) -> Vec<String> {
    let env = McpHome::new().top(top).stdio("t", "").warm();
    let mock = delegating(goal);
    mock.push_for(goal, Reply::text("child done"));
    env.ask(&mock, "delegate it");
    let parent = tool_names(&mock.requests()[0]);
    assert!(parent.iter().any(|n| n == "mcp__t__echo"), "{parent:?}");
    let child = mock
        .recorded()
        .into_iter()
        .find(|r| r.body["messages"].to_string().contains(goal) && r.body != mock.requests()[0])
        .expect("the child made a request");
    tool_names(&child.body)
}

#[test]
fn a_child_inherits_the_parents_mcp_toolsets_unless_configured_off() {
    let tools = child_tools("", "zeta: use the server");
    assert!(tools.iter().any(|n| n == "mcp__t__echo"), "{tools:?}");
    assert!(tools.iter().any(|n| n == "read_file"), "{tools:?}");
    let tools = child_tools(
        "delegation:\n  inherit_mcp_toolsets: false",
        "eta: no server",
    );
    assert!(!tools.iter().any(|n| n.starts_with("mcp__")), "{tools:?}");
    assert!(tools.iter().any(|n| n == "read_file"), "{tools:?}");
}
