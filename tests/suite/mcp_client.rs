//! The MCP client end to end: the real `hermes` binary spawns the stdio test server (or reaches
//! the Streamable HTTP one), offers its tools as `mcp__<server>__<tool>`, calls them for the
//! scripted mock LLM and feeds the results back as untrusted data; timeouts, a server dying and
//! coming back, filters, headers, a server that never answers and one that answers late.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::harness::{stderr, stdout};
use crate::support::mcp_servers::McpHome;
use crate::support::mock_llm::{MockLlm, Reply};

/// The names in a request's tools array.
pub(crate) fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// How many tool lists are saved for server `name` (`cache/mcp/<name>.<fingerprint>.json`).
fn saved_lists(home: &std::path::Path, name: &str) -> usize {
    std::fs::read_dir(home.join("cache/mcp")).map_or(0, |dir| {
        dir.filter_map(Result::ok)
            .filter(|e| {
                let file = e.file_name().to_string_lossy().into_owned();
                file.strip_prefix(&format!("{name}."))
                    .is_some_and(|rest| rest.ends_with(".json") && rest != "json")
            })
            .count()
    })
}

/// The content of the tool result answering `call_id` in request `i`.
fn result_of(mock: &MockLlm, i: usize, call_id: &str) -> String {
    result_in(&mock.requests()[i], call_id)
}

/// The content of the tool result answering `call_id` in `request`.
pub(crate) fn result_in(request: &Value, call_id: &str) -> String {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

#[test]
fn stdio_tools_are_offered_called_and_wrapped_as_untrusted() {
    let env = McpHome::new()
        .stdio("t", "    tools:\n      exclude: [die]\n")
        .warm();
    let mock = MockLlm::with_script([
        Reply::tool_call("c1", "mcp__t__echo", json!({"text": "hi there"})),
        Reply::tool_call("c2", "mcp__t__hostile", json!({})),
        Reply::tool_call(
            "c3",
            "mcp__t__read_resource",
            json!({"uri": "memo://hello"}),
        ),
        Reply::text("done"),
    ]);
    let out = env.ask(&mock, "use the tools");
    assert_eq!(stdout(&out), "done\n");
    assert!(!stderr(&out).contains("not supported"), "{}", stderr(&out));
    let names = tool_names(&mock.requests()[0]);
    for want in [
        "mcp__t__echo",
        "mcp__t__add",
        "mcp__t__list_resources",
        "mcp__t__get_prompt",
        "terminal",
    ] {
        assert!(
            names.iter().any(|n| n == want),
            "{want} missing from {names:?}"
        );
    }
    // `tools.exclude` keeps `die` out.
    assert!(!names.iter().any(|n| n == "mcp__t__die"), "{names:?}");
    let echo = result_of(&mock, 1, "c1");
    assert!(echo.contains("echo: hi there"), "{echo}");
    assert!(echo.contains("trust=\"untrusted\""), "{echo}");
    let hostile = result_of(&mock, 2, "c2");
    assert!(hostile.starts_with("warning:"), "{hostile}");
    let memo = result_of(&mock, 3, "c3");
    assert!(memo.contains("the memo says hello"), "{memo}");
    // The server's stderr went to its own log, not to the terminal.
    let log = std::fs::read_to_string(env.home_path().join("logs/mcp-t.log")).unwrap();
    assert!(log.contains("mcp test server starting"), "{log}");
    assert!(!stderr(&out).contains("mcp test server starting"));
}

#[test]
fn timeout_keeps_the_connection_and_a_dead_server_comes_back() {
    let env = McpHome::new().stdio("t", "    timeout: 1\n").warm();
    let mock = MockLlm::with_script([
        Reply::tool_call("c1", "mcp__t__pid", json!({})),
        Reply::tool_call("c2", "mcp__t__sleep", json!({"ms": 4000})),
        Reply::tool_call("c3", "mcp__t__pid", json!({})),
        Reply::tool_call("c4", "mcp__t__die", json!({})),
        // Time for the supervisor to see the exit.
        Reply::tool_call("c5", "mcp__t__echo", json!({"text": "x"}))
            .delay(Duration::from_millis(400)),
        // Time for the reconnection (first backoff 0.5 s).
        Reply::tool_call("c6", "mcp__t__pid", json!({})).delay(Duration::from_millis(2000)),
        Reply::text("done"),
    ]);
    let started = Instant::now();
    env.ask(&mock, "go");
    let pid1 = result_of(&mock, 1, "c1");
    let timed_out = result_of(&mock, 2, "c2");
    assert!(
        timed_out.contains("did not answer within 1 s"),
        "{timed_out}"
    );
    assert!(timed_out.contains("connection is kept"), "{timed_out}");
    // The same server process answers after the timeout.
    let pid2 = result_of(&mock, 3, "c3");
    let number = |s: &str| {
        s.lines()
            .find(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_digit()))
            .unwrap_or("")
            .to_string()
    };
    assert!(!number(&pid1).is_empty(), "{pid1}");
    assert_eq!(number(&pid1), number(&pid2));
    let down = result_of(&mock, 5, "c5");
    assert!(down.contains("not connected"), "{down}");
    assert!(down.contains("retries in"), "{down}");
    let pid3 = result_of(&mock, 6, "c6");
    assert!(!number(&pid3).is_empty(), "after restart: {pid3}");
    assert_ne!(number(&pid3), number(&pid1), "a new server process answers");
    // The 4 s sleep was not waited for.
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[test]
fn streamable_http_with_headers_from_env() {
    let server = crate::support::mcp_http::start();
    let env = McpHome::new().url(
        "web",
        &format!("http://{}/mcp", server.addr()),
        "    headers:\n      Authorization: Bearer ${MCP_WEB_TOKEN}\n    tools:\n      include: [add]\n",
    );
    std::fs::write(
        env.home_path().join(".env"),
        format!("MCP_WEB_TOKEN={}\n", crate::support::mcp_http::TOKEN),
    )
    .unwrap();
    let env = env.warm();
    let mock = MockLlm::with_script([
        Reply::tool_call("c1", "mcp__web__add", json!({"a": 2, "b": 40})),
        Reply::text("42"),
    ]);
    env.ask(&mock, "add");
    let names = tool_names(&mock.requests()[0]);
    let mcp: Vec<&String> = names
        .iter()
        .filter(|n| n.starts_with("mcp__web__"))
        .collect();
    // `include: [add]` plus the four utility calls (resources and prompts are declared).
    assert!(mcp.iter().any(|n| *n == "mcp__web__add"), "{names:?}");
    assert!(!mcp.iter().any(|n| *n == "mcp__web__echo"), "{names:?}");
    let sum = result_of(&mock, 1, "c1");
    assert!(sum.contains("\n42\n"), "{sum}");
    // The header's secret is in no log.
    for entry in std::fs::read_dir(env.home_path().join("logs")).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap_or_default();
        assert!(!text.contains(crate::support::mcp_http::TOKEN));
    }

    // `hermes mcp test` connects, lists and times it.
    let out = env
        .bare_cmd()
        .args(["mcp", "test", "web"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let report = stdout(&out);
    assert!(
        report.contains("connected in") && report.contains("mcp__web__add"),
        "{report}"
    );
    assert!(
        report.contains("left out by tools.include/exclude"),
        "{report}"
    );
}

#[test]
fn a_server_that_never_answers_holds_nothing_up() {
    let env = McpHome::new()
        .top("mcp_discovery_timeout: 0.3")
        .stdio(
            "hang",
            "    connect_timeout: 1\n    env:\n      MCP_TEST_HANG: '1'\n",
        )
        .stdio("t", "")
        .write()
        .warm_only(&["t"]);
    let mock = MockLlm::with_script([Reply::text("fine")]);
    let started = Instant::now();
    let out = env.ask(&mock, "hi");
    assert_eq!(stdout(&out), "fine\n");
    // The known server's tools are there; the silent one has none, held nothing up, and is
    // reachable later in the session through tool_search.
    let names = tool_names(&mock.requests()[0]);
    assert!(names.iter().any(|n| n == "mcp__t__echo"), "{names:?}");
    assert!(names.iter().any(|n| n == "tool_search"), "{names:?}");
    assert!(
        !names.iter().any(|n| n.starts_with("mcp__hang__")),
        "{names:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );

    // `hermes mcp list` shows both, with the status of each.
    let out = env.bare_cmd().args(["mcp", "list"]).output().unwrap();
    let listed = stdout(&out);
    assert!(listed.contains("connected, 6 tools"), "{listed}");
}

#[test]
fn a_never_seen_slow_server_is_found_late_in_the_session_and_sent_directly_next_time() {
    let go = tempfile::tempdir().unwrap();
    let go_file = go.path().join("go");
    let env = McpHome::new()
        .top("mcp_discovery_timeout: 20")
        .stdio(
            "slow",
            &format!(
                "    env:\n      MCP_TEST_WAIT_FILE: {}\n",
                go_file.display()
            ),
        )
        .write();
    let mock = MockLlm::with_script([
        Reply::tool_call("c1", "tool_search", json!({"query": "echo"})),
        Reply::tool_call(
            "c2",
            "tool_call",
            json!({"name": "mcp__slow__echo", "arguments": {"text": "late"}}),
        ),
        Reply::text("done"),
    ]);
    // The server answers only once hermes's first model request went out.
    let out = std::thread::scope(|scope| {
        scope.spawn(|| {
            let deadline = Instant::now() + Duration::from_secs(60);
            while mock.request_count() == 0 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            // A moment more, so the slow server answers while tool_search waits for it.
            std::thread::sleep(Duration::from_millis(300));
            std::fs::write(&go_file, "go").unwrap();
        });
        env.ask(&mock, "echo something")
    });
    assert_eq!(stdout(&out), "done\n");
    let requests = mock.requests();
    let first = tool_names(&requests[0]);
    assert!(first.iter().any(|n| n == "tool_search"), "{first:?}");
    assert!(first.iter().any(|n| n == "tool_call"), "{first:?}");
    assert!(
        !first.iter().any(|n| n.starts_with("mcp__slow__")),
        "{first:?}"
    );
    let found = result_in(&requests[1], "c1");
    assert!(found.contains("mcp__slow__echo"), "{found}");
    let echoed = result_in(&requests[2], "c2");
    assert!(echoed.contains("echo: late"), "{echoed}");
    // The tools array never changed within the session.
    for r in &requests[1..] {
        assert_eq!(r["tools"], requests[0]["tools"]);
    }

    // The next session (a new process) sends its tools directly, without the bridge.
    let mock = MockLlm::with_script([
        Reply::tool_call("c1", "mcp__slow__echo", json!({"text": "direct"})),
        Reply::text("done"),
    ]);
    env.ask(&mock, "again");
    let names = tool_names(&mock.requests()[0]);
    assert!(names.iter().any(|n| n == "mcp__slow__echo"), "{names:?}");
    assert!(!names.iter().any(|n| n == "tool_search"), "{names:?}");
    let echoed = result_of(&mock, 1, "c1");
    assert!(echoed.contains("echo: direct"), "{echoed}");
}

#[test]
fn a_server_still_connecting_is_named_by_tool_search() {
    let env = McpHome::new()
        .top("mcp_discovery_timeout: 0.2")
        .stdio(
            "hang",
            "    connect_timeout: 30\n    env:\n      MCP_TEST_HANG: '1'\n",
        )
        .write();
    let mock = MockLlm::with_script([
        Reply::tool_call("c1", "tool_search", json!({"query": "echo"})),
        Reply::tool_call(
            "c2",
            "tool_call",
            json!({"name": "mcp__hang__echo", "arguments": {}}),
        ),
        Reply::text("done"),
    ]);
    env.ask(&mock, "hi");
    let found = result_of(&mock, 1, "c1");
    assert!(
        found.contains("the MCP server `hang` is still connecting"),
        "{found}"
    );
    let called = result_of(&mock, 2, "c2");
    assert!(
        called.contains("no deferred tool is named") && called.contains("still connecting"),
        "{called}"
    );
}

#[test]
fn a_known_server_is_offered_at_once_and_its_first_call_waits_for_the_connection() {
    // No waiting at all for servers still connecting.
    let env = McpHome::new()
        .top("mcp_discovery_timeout: 0")
        .stdio("t", "")
        .write();
    // First run: the server is discovered (and its list saved) while the session runs.
    let mock = MockLlm::with_script([Reply::text("first").delay(Duration::from_millis(500))]);
    env.ask(&mock, "hi");
    assert_eq!(saved_lists(env.home_path(), "t"), 1);
    // Second run: its tools are in the first request without waiting, and a call made at once
    // waits for the connection instead of failing.
    let mock = MockLlm::with_script([
        Reply::tool_call("c1", "mcp__t__echo", json!({"text": "early"})),
        Reply::text("done"),
    ]);
    env.ask(&mock, "hi");
    let names = tool_names(&mock.requests()[0]);
    assert!(names.iter().any(|n| n == "mcp__t__echo"), "{names:?}");
    let echo = result_of(&mock, 1, "c1");
    assert!(echo.contains("echo: early"), "{echo}");
}

#[test]
fn reload_mcp_in_the_repl_reconnects_and_the_next_session_gets_the_new_tools() {
    use std::io::Write;
    let mut env = McpHome::new().stdio("t", "").write();
    let mock = MockLlm::with_script([Reply::text("after reload")]);
    let mut child = env.spawn_repl(&mock.base_url(), &[]);
    // Once `t` answered, hermes has read its config: change it under the running REPL.
    let deadline = Instant::now() + Duration::from_secs(20);
    while saved_lists(env.home_path(), "t") == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    env.replace("u", "");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"/reload-mcp\n/new\nhi\n/quit\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("MCP servers reloaded"), "{text}");
    assert!(text.contains("after reload"), "{text}");
    let names = tool_names(&mock.requests()[0]);
    assert!(names.iter().any(|n| n == "mcp__u__echo"), "{names:?}");
    assert!(names.iter().any(|n| n == "mcp__t__echo"), "{names:?}");
}

#[test]
fn a_known_server_that_is_down_keeps_its_tools_listed_and_says_why() {
    let mut env = McpHome::new()
        .stdio(
            "t",
            "    connect_timeout: 1\n    env:\n      MCP_TEST_HANG: '0'\n",
        )
        .warm();
    // Same server (same command, same variable names), but now it never answers.
    env.replace(
        "t",
        "    connect_timeout: 1\n    env:\n      MCP_TEST_HANG: '1'\n",
    );
    let mock = MockLlm::with_script([
        Reply::tool_call("c1", "mcp__t__echo", json!({"text": "x"})),
        Reply::text("done"),
    ]);
    let started = Instant::now();
    env.ask(&mock, "hi");
    let names = tool_names(&mock.requests()[0]);
    assert!(names.iter().any(|n| n == "mcp__t__echo"), "{names:?}");
    let why = result_of(&mock, 1, "c1");
    assert!(
        why.contains("not connected") && why.contains("no answer within 1 s"),
        "{why}"
    );
    assert!(started.elapsed() < Duration::from_secs(15));
}

#[test]
fn two_servers_of_the_same_name_keep_their_own_tool_lists() {
    use crate::support::mcp_servers::stdio_server;
    let env = McpHome::new();
    // `t` run directly, and `t` run through `sh` (an editor's server and a config one may
    // share a name this way): `hang` 1 makes it never answer.
    let direct = |hang: u8| {
        format!(
            "mcp_servers:\n  t:\n    command: {}\n    connect_timeout: 1\n    env:\n      MCP_TEST_HANG: '{hang}'\n",
            stdio_server().display()
        )
    };
    let via_sh = |hang: u8| {
        format!(
            "mcp_servers:\n  t:\n    command: sh\n    args: [\"-c\", \"exec '{}'\"]\n    connect_timeout: 1\n    env:\n      MCP_TEST_HANG: '{hang}'\n",
            stdio_server().display()
        )
    };
    for yaml in [direct(0), via_sh(0)] {
        env.config(&yaml);
        let out = env.bare_cmd().args(["mcp", "test", "t"]).output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
    // Neither answers now: each is offered from its own saved list all the same.
    for yaml in [direct(1), via_sh(1)] {
        env.config(&yaml);
        let mock = MockLlm::with_script([Reply::text("hi")]);
        env.ask(&mock, "hi");
        let names = tool_names(&mock.requests()[0]);
        assert!(
            names.iter().any(|n| n == "mcp__t__echo"),
            "{yaml}: {names:?}"
        );
    }
    assert_eq!(saved_lists(env.home_path(), "t"), 2);
}

/// A REPL over `env` whose config.yaml is changed (server `u` added) once `t` answered;
/// then `/new` and one turn. Its stdout, and the tools of the new session's request.
fn repl_after_config_change(top: &str) -> (String, Vec<String>) {
    use std::io::Write;
    let mut env = McpHome::new().top(top).stdio("t", "").write();
    let mock = MockLlm::with_script([Reply::text("after the change")]);
    let mut child = env.spawn_repl(&mock.base_url(), &[]);
    let deadline = Instant::now() + Duration::from_secs(20);
    while saved_lists(env.home_path(), "t") == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    env.replace("u", "");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"/new\nhi\n/quit\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    (stdout(&out), tool_names(&mock.requests()[0]))
}

#[test]
fn a_changed_mcp_config_is_reloaded_between_turns_unless_turned_off() {
    let (text, names) = repl_after_config_change("");
    assert!(
        text.contains("MCP server config changed — reloading"),
        "{text}"
    );
    assert!(names.iter().any(|n| n == "mcp__u__echo"), "{names:?}");

    let (text, names) = repl_after_config_change("mcp:\n  auto_reload_on_config_change: false");
    assert!(
        text.contains("not reloaded") && text.contains("/reload-mcp"),
        "{text}"
    );
    assert!(
        !names.iter().any(|n| n.starts_with("mcp__u__")),
        "{names:?}"
    );
}
