//! A model that never answers, one that only sends SSE keep-alives and one that streams without
//! end: each ends the turn with a clear error once `agent.request_timeout`,
//! `agent.stream_idle_timeout` or `agent.max_answer_mb` is reached, through the real binary.

use std::time::Duration;

use crate::support::harness::{TestEnv, stderr};
use crate::support::mock_llm::{MockLlm, Reply};

/// Runs `hermes -z hi` against `reply` with the given `agent:` settings (no retries).
fn run_one(reply: Reply, agent_yaml: &str) -> (std::process::Output, MockLlm) {
    let env = TestEnv::new();
    env.config(&format!("agent:\n  api_max_retries: 0\n{agent_yaml}"));
    let mock = MockLlm::with_script([reply]);
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "hi"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    (out, mock)
}

#[test]
fn a_model_that_never_answers_ends_at_the_request_timeout() {
    let (out, mock) = run_one(
        Reply::text("too late").delay(Duration::from_secs(3600)),
        "  request_timeout: 1\n",
    );
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("request timeout"), "{err}");
    assert_eq!(mock.request_count(), 1);
}

#[test]
fn keep_alive_comments_count_as_silence() {
    let (out, mock) = run_one(
        Reply::keepalive_forever(),
        "  request_timeout: 120\n  stream_idle_timeout: 1\n",
    );
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("stream idle timeout"), "{err}");
    // The connection was closed, not left open.
    let start = std::time::Instant::now();
    while mock.aborted_streams() == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "stream still open"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn an_endless_answer_is_capped_and_says_there_was_no_done() {
    let (out, _mock) = run_one(Reply::endless(8192), "  max_answer_mb: 1\n");
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("cap of 1.0 MiB"), "{err}");
    assert!(err.contains("no [DONE]"), "{err}");
}

#[test]
fn limits_that_are_not_positive_numbers_are_refused_at_start() {
    let env = TestEnv::new();
    env.config("agent:\n  stream_idle_timeout: 0\n");
    let mock = MockLlm::with_script([]);
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "hi"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("agent.stream_idle_timeout") && err.contains("positive number"),
        "{err}"
    );
    assert_eq!(mock.request_count(), 0);
}
