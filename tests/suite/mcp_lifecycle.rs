//! The per-server keys that shape a connection's life, through the real binary: calls to one
//! server overlap only with `supports_parallel_tool_calls: true`; a stdio server is stopped after
//! `idle_timeout_seconds` / `max_lifetime_seconds` and started again by the next call; the
//! keepalive pings a connected server.

use std::time::Duration;

use serde_json::json;

use super::mcp_client::{result_in, tool_names};
use crate::support::mcp_servers::McpHome;
use crate::support::mock_llm::{MockLlm, Reply};

fn number(text: &str) -> String {
    text.lines()
        .find(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_digit()))
        .unwrap_or("")
        .to_string()
}

#[test]
fn calls_overlap_only_on_a_server_that_supports_parallel_calls() {
    let env = McpHome::new()
        .stdio("par", "    supports_parallel_tool_calls: true\n")
        .stdio("one", "")
        .warm();
    let two = |server: &str, id: &str| {
        Reply::tool_calls([
            (
                format!("{id}a"),
                format!("mcp__{server}__sleep"),
                json!({"ms": 400}),
            ),
            (
                format!("{id}b"),
                format!("mcp__{server}__sleep"),
                json!({"ms": 401}),
            ),
        ])
    };
    let mock = MockLlm::with_script([two("par", "p"), two("one", "o"), Reply::text("done")]);
    env.ask(&mock, "sleep twice");
    let requests = mock.requests();
    let par = result_in(&requests[1], "pb") + &result_in(&requests[1], "pa");
    assert!(par.contains("at most 2 at once"), "{par}");
    let one = result_in(&requests[2], "oa") + &result_in(&requests[2], "ob");
    assert!(one.matches("at most 1 at once").count() == 2, "{one}");
}

#[test]
fn an_idle_or_old_stdio_server_is_stopped_and_the_next_call_starts_it() {
    let env = McpHome::new()
        .stdio("idle", "    idle_timeout_seconds: 1\n")
        .stdio("old", "    lifecycle:\n      max_lifetime_seconds: 1\n")
        .stdio(
            "keep",
            "    idle_timeout_seconds: 0\n    keepalive_interval: 1\n",
        )
        .warm();
    let mock = MockLlm::with_script([
        Reply::tool_calls([
            ("c1", "mcp__idle__pid", json!({})),
            ("c2", "mcp__old__pid", json!({})),
            ("c3", "mcp__keep__pid", json!({})),
        ]),
        // Past both limits (and past the 5 s floor of the keepalive by the end).
        Reply::tool_calls([
            ("c4", "mcp__idle__pid", json!({})),
            ("c5", "mcp__old__pid", json!({})),
            ("c6", "mcp__keep__pid", json!({})),
        ])
        .delay(Duration::from_millis(2500)),
        Reply::text("done").delay(Duration::from_millis(3500)),
    ]);
    env.ask(&mock, "pids");
    let requests = mock.requests();
    assert!(tool_names(&requests[0]).contains(&"mcp__idle__pid".to_string()));
    let pid = |r: usize, id: &str| number(&result_in(&requests[r], id));
    for (first, again, server) in [("c1", "c4", "idle"), ("c2", "c5", "old")] {
        let (a, b) = (pid(1, first), pid(2, again));
        assert!(!a.is_empty() && !b.is_empty(), "{server}: {a:?} {b:?}");
        assert_ne!(a, b, "{server} was restarted by the call");
    }
    // `idle_timeout_seconds: 0` turns the limit off: the same process answers.
    assert_eq!(pid(1, "c3"), pid(2, "c6"));
    let log = std::fs::read_to_string(env.home_path().join("logs/mcp-keep.log")).unwrap();
    assert!(log.contains("ping received"), "{log}");
    let log = std::fs::read_to_string(env.home_path().join("logs/mcp-idle.log")).unwrap();
    assert_eq!(
        log.matches("mcp test server starting").count(),
        // `hermes mcp test`, the session's first process, the restarted one.
        3,
        "{log}"
    );
}
