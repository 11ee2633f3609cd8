//! The loop breaker through the real binary: repeated failing calls and ping-pong stop the turn.

use serde_json::json;

use crate::support::harness::{TestEnv, stderr};
use crate::support::mock_llm::{MockLlm, Reply};

#[test]
fn identical_failing_call_stops_the_turn() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script((0..6).map(|i| {
        Reply::tool_call(
            &format!("c{i}"),
            "read_file",
            json!({"path": "missing.txt"}),
        )
    }));
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "read it"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    let err = stderr(&out);
    assert!(
        err.contains("going in circles") && err.contains("failed 5 times"),
        "{err}"
    );
    assert_eq!(
        mock.request_count(),
        5,
        "stopped after the configured count"
    );
    // The second identical failure already carried a note telling the model to change approach.
    let second = mock.requests()[2]["messages"].as_array().unwrap().clone();
    let note = second.iter().rfind(|m| m["role"] == "tool").unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(note.contains("loop guard"), "{note}");
}

#[test]
fn ping_pong_stops_the_turn() {
    let env = TestEnv::new();
    env.write("a.txt", "A\n");
    env.write("b.txt", "B\n");
    let mock = MockLlm::with_script((0..8).map(|i| {
        let path = if i % 2 == 0 { "a.txt" } else { "b.txt" };
        Reply::tool_call(&format!("c{i}"), "read_file", json!({"path": path}))
    }));
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "compare"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("going in circles"), "{err}");
    assert!(mock.request_count() <= 6, "{}", mock.request_count());
}

#[test]
fn hard_stop_can_be_turned_off() {
    let env = TestEnv::new();
    env.config("tool_loop_guardrails:\n  hard_stop_enabled: false\n");
    let mut script: Vec<Reply> = (0..6)
        .map(|i| {
            Reply::tool_call(
                &format!("c{i}"),
                "read_file",
                json!({"path": "missing.txt"}),
            )
        })
        .collect();
    script.push(Reply::text("I could not find it."));
    let mock = MockLlm::with_script(script);
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "read it"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(mock.request_count(), 7);
}
