//! MCP servers an editor brings over ACP (`mcpServers` in `session/new`): started for that
//! session through the MCP client, their tools in that session only, the servers stopped when
//! the session is closed or the editor's connection ends. Uses the stdio test server (a Cargo example).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::suite::mcp_client::tool_names;
use crate::support::acp_editor::{Editor, prompt};
use crate::support::harness::{TestEnv, stderr};
use crate::support::mcp_servers::stdio_server;
use crate::support::mock_llm::{MockLlm, Reply};

/// The stdio test server as the editor lists it, with these environment variables.
fn editor_server(env: &[(&str, &std::path::Path)]) -> Value {
    let env: Vec<Value> = env
        .iter()
        .map(|(k, v)| json!({"name": k, "value": v}))
        .collect();
    json!({"name": "ed", "command": stdio_server(), "args": [], "env": env})
}

/// Running (a zombie waiting for its reaper counts as gone).
fn alive(pid: &str) -> bool {
    let stat = std::path::Path::new("/proc").join(pid.trim()).join("stat");
    std::fs::read_to_string(stat).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .is_some_and(|rest| !rest.trim_start().starts_with('Z'))
    })
}

#[test]
fn an_editors_stdio_server_serves_its_session_only_and_stops_with_it() {
    let env = TestEnv::new();
    env.config("mcp_discovery_timeout: 20\n");
    let scratch = tempfile::tempdir().unwrap();
    let go = scratch.path().join("go");
    let (pid1, pid2) = (scratch.path().join("pid1"), scratch.path().join("pid2"));
    let mock = MockLlm::with_script([
        Reply::tool_call(
            "c1",
            "tool_call",
            json!({"name": "mcp__ed__echo", "arguments": {"text": "from the editor"}}),
        ),
        Reply::text("first done"),
    ]);
    let mut editor = Editor::start(&env, &mock);
    let init = editor.initialize();
    assert_eq!(
        init["agentCapabilities"]["mcpCapabilities"]["http"], true,
        "{init}"
    );

    // A server that answers only once `go` exists: it cannot be up when the session freezes
    // its tools, so the model reaches it through tool_call.
    let server = editor_server(&[("MCP_TEST_WAIT_FILE", &go), ("MCP_TEST_PID_FILE", &pid1)]);
    let r = editor.call(
        "session/new",
        json!({"cwd": env.cwd.path(), "mcpServers": [server]}),
    );
    let first = r["result"]["sessionId"].as_str().unwrap().to_string();
    std::fs::write(&go, "go").unwrap();
    let done = editor.call(
        "session/prompt",
        prompt(&first, "echo via the editor's server"),
    );
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let requests = mock.requests();
    let names = tool_names(&requests[0]);
    assert!(names.iter().any(|n| n == "tool_call"), "{names:?}");
    let result = requests[1].to_string();
    assert!(result.contains("echo: from the editor"), "{result}");

    // Its next session sends the server's tools directly (the list is known now) …
    mock.push(Reply::tool_call(
        "c2",
        "mcp__ed__echo",
        json!({"text": "direct"}),
    ));
    mock.push(Reply::text("second done"));
    let server = editor_server(&[("MCP_TEST_WAIT_FILE", &go), ("MCP_TEST_PID_FILE", &pid2)]);
    let r = editor.call(
        "session/new",
        json!({"cwd": env.cwd.path(), "mcpServers": [server]}),
    );
    let second = r["result"]["sessionId"].as_str().unwrap().to_string();
    editor.call("session/prompt", prompt(&second, "echo directly"));
    let requests = mock.requests();
    let asked = &requests[requests.len() - 2];
    assert!(
        tool_names(asked).iter().any(|n| n == "mcp__ed__echo"),
        "{:?}",
        tool_names(asked)
    );
    let result = requests.last().unwrap().to_string();
    assert!(result.contains("echo: direct"), "{result}");

    // … and a session the editor gave no servers has none of their tools.
    mock.push(Reply::text("plain"));
    let plain = editor.new_session(env.cwd.path());
    editor.call("session/prompt", prompt(&plain, "no servers here"));
    let names = tool_names(mock.requests().last().unwrap());
    assert!(
        !names.iter().any(|n| n.starts_with("mcp__ed__")),
        "{names:?}"
    );
    let pids = [
        std::fs::read_to_string(&pid1).unwrap(),
        std::fs::read_to_string(&pid2).unwrap(),
    ];
    assert!(pids.iter().all(|p| alive(p)), "the servers run: {pids:?}");

    // Closing a session stops its server; the other session's keeps running.
    let closed = editor.call("session/close", json!({"sessionId": first}));
    assert!(closed.get("error").is_none(), "{closed}");
    wait_gone(&pids[..1]);
    assert!(alive(&pids[1]), "the other session's server was stopped");
    let again = editor.call("session/close", json!({"sessionId": first}));
    let message = again["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("no open session"), "{again}");

    // The editor goes: its servers go with the sessions.
    editor.finish();
    wait_gone(&pids[1..]);
}

/// Waits (bounded) until none of `pids` runs.
fn wait_gone(pids: &[String]) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while pids.iter().any(|p| alive(p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !pids.iter().any(|p| alive(p)),
        "an MCP server kept running: {pids:?}"
    );
}

#[test]
fn a_malformed_server_list_is_refused_with_a_reason() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script([]);
    let mut editor = Editor::start(&env, &mock);
    editor.initialize();
    let server = editor_server(&[]);
    let r = editor.call(
        "session/new",
        json!({"cwd": env.cwd.path(), "mcpServers": [server.clone(), server]}),
    );
    let message = r["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("named `ed`"), "{r}");
    editor.finish();
}

#[test]
fn a_delegated_child_inherits_the_editors_servers() {
    let env = TestEnv::new();
    // The editor's server was seen before (its list saved), so the session offers it at once;
    // config.yaml has no server of its own.
    env.config(&format!(
        "mcp_servers:\n  ed:\n    command: {}\n",
        stdio_server().display()
    ));
    let out = env.bare_cmd().args(["mcp", "test", "ed"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    env.config("mcp_discovery_timeout: 5\n");
    let goal = "kappa: echo through the editor's server";
    let mock = crate::suite::mcp_delegation::delegating(goal);
    mock.push_for(
        goal,
        Reply::tool_call("c1", "mcp__ed__echo", json!({"text": "from the child"})),
    );
    mock.push_for(goal, Reply::text("child done"));
    let mut editor = Editor::start(&env, &mock);
    editor.initialize();
    let r = editor.call(
        "session/new",
        json!({"cwd": env.cwd.path(), "mcpServers": [editor_server(&[])]}),
    );
    let id = r["result"]["sessionId"].as_str().unwrap().to_string();
    let done = editor.call("session/prompt", prompt(&id, "delegate it"));
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");

    let parent = tool_names(&mock.requests()[0]);
    assert!(parent.iter().any(|n| n == "mcp__ed__echo"), "{parent:?}");
    let child: Vec<Value> = mock
        .requests()
        .into_iter()
        .filter(|r| r["messages"][0]["content"].to_string().contains(goal))
        .collect();
    let report = crate::suite::mcp_client::result_in(&mock.requests()[1], "d1");
    assert!(
        child.len() >= 2,
        "the child made {} requests: {report}",
        child.len()
    );
    let tools = tool_names(&child[0]);
    assert!(tools.iter().any(|n| n == "mcp__ed__echo"), "{tools:?}");
    assert!(tools.iter().any(|n| n == "read_file"), "{tools:?}");
    let result = crate::suite::mcp_client::result_in(&child[1], "c1");
    assert!(result.contains("echo: from the child"), "{result}");
    editor.finish();
}
