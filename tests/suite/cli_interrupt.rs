//! Interrupting a turn: Ctrl-C (SIGINT) aborts the request and records what happened; SIGKILL
//! mid-turn loses nothing already accepted; both sessions resume.

use std::time::{Duration, Instant};

use crate::support::harness::{TestEnv, stderr, stdout};
use crate::support::mock_llm::{MockLlm, Reply};

/// Starts `hermes -z` on a slow answer and waits until the mock has sent a few chunks.
fn start_slow(env: &TestEnv, mock: &MockLlm) -> std::process::Child {
    let child = env
        .spawnable(&mock.base_url(), &["-z", "tell me a long story"])
        .spawn()
        .unwrap();
    wait_for_first_request(mock);
    // Let a few chunks arrive so there is partial text.
    std::thread::sleep(Duration::from_millis(700));
    child
}

fn wait_for_first_request(mock: &MockLlm) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while mock.request_count() == 0 {
        assert!(Instant::now() < deadline, "hermes never called the model");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn signal(child: &std::process::Child, sig: libc::c_int) {
    // SAFETY: sending a signal to our own child process.
    let rc = unsafe { libc::kill(child.id() as libc::pid_t, sig) };
    assert_eq!(rc, 0);
}

#[test]
fn ctrl_c_interrupts_records_partial_and_resumes() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script([
        Reply::slow_chunks(Duration::from_millis(150)),
        Reply::text("Resumed fine."),
    ]);
    let child = start_slow(&env, &mock);
    signal(&child, libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(stderr(&out).contains("interrupted"), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    let rows = env.rows();
    assert_eq!(rows[0].0, "user");
    assert_eq!(rows.len(), 2, "{rows:?}");
    let partial = rows[1].1.clone().unwrap();
    assert!(partial.starts_with("A slow"), "{partial}");
    assert!(partial.contains("[interrupted by the user]"), "{partial}");

    let id = env.session_ids().pop().unwrap();
    let out = env
        .cmd(&mock.base_url())
        .args(["-r", &id, "-z", "go on"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Resumed fine.\n");
}

#[test]
fn kill_9_mid_turn_keeps_the_user_message() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script([
        Reply::slow_chunks(Duration::from_millis(150)),
        Reply::text("Answer after the crash."),
    ]);
    let child = start_slow(&env, &mock);
    signal(&child, libc::SIGKILL);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), None, "killed by a signal");
    let rows = env.rows();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].1.as_deref(), Some("tell me a long story"));
    let integrity: String = env
        .db()
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");

    let id = env.session_ids().pop().unwrap();
    let out = env
        .cmd(&mock.base_url())
        .args(["-r", &id, "-z", "again"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let sent = &mock.requests()[1]["messages"];
    assert_eq!(sent[1]["content"], "tell me a long story");
    assert_eq!(sent[2]["content"], "again");
}

#[test]
fn ctrl_c_stops_a_running_command_and_answers_every_call() {
    let env = TestEnv::new();
    let marker = env.cwd.path().join("never-written");
    let mock = MockLlm::with_script([
        crate::support::mock_llm::Reply::tool_call(
            "c1",
            "terminal",
            serde_json::json!({"command": format!("sleep 30; touch {}", marker.display())}),
        ),
        Reply::text("after the interrupt"),
    ]);
    let child = env
        .spawnable(&mock.base_url(), &["--yolo", "-z", "wait"])
        .spawn()
        .unwrap();
    // Wait until the command is running (the tool call has been received and dispatched).
    wait_for_first_request(&mock);
    std::thread::sleep(Duration::from_millis(500));
    let started = Instant::now();
    signal(&child, libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the command was not killed"
    );
    assert!(!marker.exists());
    // The call has a recorded result, so the session resumes cleanly.
    let rows = env.rows();
    let roles: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "tool"]);
    assert!(
        rows[2].1.as_deref().unwrap().contains("interrupt"),
        "{rows:?}"
    );
    let id = env.session_ids().pop().unwrap();
    let out = env
        .cmd(&mock.base_url())
        .args(["-r", &id, "-z", "status?"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "after the interrupt\n");
}
