//! Per-chat ordering and parallelism, the FIFO inbox while a turn runs, `/stop`, and approval of
//! dangerous commands in a chat (`/approve`, `/deny`, timeout).

use std::time::{Duration, Instant};

use serde_json::json;

use super::gateway_support::Gw;
use crate::support::fake_telegram::Sent;
use crate::support::mock_llm::Reply;

const WAIT: Duration = Duration::from_secs(30);

#[test]
fn hundred_messages_across_twenty_chats_are_all_answered_in_order() {
    let mut gw = Gw::new((0..100).map(|_| Reply::text("ok")));
    // Queue everything first: the gateway's first poll gets all 100 at once.
    for round in 0..5 {
        for chat in 100..120 {
            gw.tg.push_text(chat, &format!("message {round}"));
        }
    }
    gw.start();
    let sends = gw.tg.wait_sends(Duration::from_secs(60), |s| {
        s.iter().filter(|m| m.text == "ok").count() >= 100
    });
    let answers: Vec<&Sent> = sends.iter().filter(|m| m.text == "ok").collect();
    assert_eq!(answers.len(), 100);
    for chat in 100..120 {
        let replies: Vec<i64> = answers
            .iter()
            .filter(|a| a.chat_id == chat)
            .filter_map(|a| a.reply_to)
            .collect();
        assert_eq!(replies.len(), 5, "chat {chat}: {replies:?}");
        assert!(
            replies.windows(2).all(|w| w[0] < w[1]),
            "chat {chat} answered out of order: {replies:?}"
        );
    }
    assert_eq!(gw.llm.request_count(), 100);
    // Each chat is its own session; its five user messages are stored in order.
    let db = gw.env.db();
    let mut stmt = db
        .prepare("SELECT m.content FROM messages m JOIN sessions s ON s.id = m.session_id WHERE s.source = 'telegram' AND m.role = 'user' ORDER BY m.session_id, m.id")
        .unwrap();
    let contents: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(contents.len(), 100);
    for chunk in contents.chunks(5) {
        let want: Vec<String> = (0..5).map(|i| format!("message {i}")).collect();
        assert_eq!(chunk, want.as_slice());
    }
}

#[test]
fn messages_sent_during_a_turn_are_queued_acknowledged_and_answered_in_order() {
    let mut gw = Gw::new([
        Reply::text("first").delay(Duration::from_millis(1500)),
        Reply::text("second"),
        Reply::text("third"),
        Reply::text("fourth"),
    ]);
    gw.start();
    gw.tg.push_text(42, "one");
    let start = Instant::now();
    while gw.llm.request_count() == 0 {
        assert!(start.elapsed() < WAIT);
        std::thread::sleep(Duration::from_millis(10));
    }
    for t in ["two", "three", "four"] {
        gw.tg.push_text(42, t);
    }
    let sends = gw
        .tg
        .wait_sends(WAIT, |s| s.iter().any(|m| m.text == "fourth"));
    let acks = sends
        .iter()
        .filter(|m| m.text.starts_with("Queued"))
        .count();
    // One notice per burst, not one per message.
    assert_eq!(acks, 1, "{sends:#?}");
    let answers: Vec<&str> = sends
        .iter()
        .map(|m| m.text.as_str())
        .filter(|t| !t.starts_with("Queued"))
        .collect();
    assert_eq!(answers, ["first", "second", "third", "fourth"]);
}

#[test]
fn stop_interrupts_the_running_turn() {
    let mut gw = Gw::new([
        Reply::text("never").delay(Duration::from_secs(30)),
        Reply::text("next"),
    ]);
    gw.start();
    gw.tg.push_text(42, "long job");
    let start = Instant::now();
    while gw.llm.request_count() == 0 {
        assert!(start.elapsed() < WAIT);
        std::thread::sleep(Duration::from_millis(10));
    }
    gw.tg.push_text(42, "/stop");
    let sends = gw.tg.wait_sends(WAIT, |s| s.len() >= 2);
    assert!(
        sends.iter().any(|m| m.text == "Stopping the current turn."),
        "{sends:#?}"
    );
    gw.tg.push_text(42, "after");
    let sends = gw
        .tg
        .wait_sends(WAIT, |s| s.iter().any(|m| m.text == "next"));
    assert!(!sends.iter().any(|m| m.text == "never"));
}

#[test]
fn dangerous_command_waits_for_approve_and_deny_or_timeout_refuse() {
    let rm = || json!({"command": "rm -rf build"});
    let mut gw = Gw::new([
        Reply::tool_call("c1", "terminal", rm()),
        Reply::text("after deny"),
        Reply::tool_call("c2", "terminal", rm()),
        Reply::text("after timeout"),
        Reply::tool_call("c3", "terminal", rm()),
        Reply::text("after approve"),
    ]);
    gw.config("approvals:\n  timeout: 2\n");
    let victim = gw.env.write("build/keep.txt", "precious\n");
    gw.install_event_logger();
    gw.start();
    let asked = |s: &[Sent], n: usize| {
        s.iter()
            .filter(|m| m.text.contains("Approval needed"))
            .count()
            >= n
    };

    gw.tg.push_text(42, "clean up (deny)");
    gw.tg.wait_sends(WAIT, |s| asked(s, 1));
    gw.tg.push_text(42, "/deny");
    gw.tg
        .wait_sends(WAIT, |s| s.iter().any(|m| m.text == "after deny"));
    assert!(victim.exists());
    assert!(gw.tg.sends().iter().any(|m| m.text == "Denied."));

    gw.tg.push_text(42, "clean up (no answer)");
    gw.tg.wait_sends(WAIT, |s| asked(s, 2));
    let sends = gw
        .tg
        .wait_sends(WAIT, |s| s.iter().any(|m| m.text == "after timeout"));
    assert!(sends.iter().any(|m| m.text.contains("No answer in time")));
    assert!(victim.exists(), "a timeout refuses");

    gw.tg.push_text(42, "clean up (approve)");
    gw.tg.wait_sends(WAIT, |s| asked(s, 3));
    gw.tg.push_text(42, "/approve");
    gw.tg
        .wait_sends(WAIT, |s| s.iter().any(|m| m.text == "after approve"));
    assert!(!victim.exists(), "approved command ran");
    // Each tool round was reported to hooks as an `agent:step`.
    let start = Instant::now();
    loop {
        let steps: Vec<_> = gw
            .hook_events()
            .into_iter()
            .filter(|(e, c)| e == "agent:step" && c["tool_names"] == json!(["terminal"]))
            .collect();
        if steps.len() >= 3 {
            break;
        }
        assert!(start.elapsed() < WAIT, "agent:step events: {steps:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    // An unauthorised user cannot approve anything.
    assert!(gw.tg.sends_to(666).is_empty());
}

#[test]
fn an_approval_question_in_the_chat_shows_no_secret() {
    let token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    let mut gw = Gw::new([
        Reply::tool_call(
            "c1",
            "terminal",
            json!({"command": format!("rm -rf build && echo {token}")}),
        ),
        Reply::text("after deny"),
    ]);
    gw.config("approvals:\n  timeout: 5\n");
    gw.start();
    gw.tg.push_text(42, "clean up");
    let sends = gw.tg.wait_sends(WAIT, |s| {
        s.iter().any(|m| m.text.contains("Approval needed"))
    });
    let question = sends
        .iter()
        .find(|m| m.text.contains("Approval needed"))
        .map(|m| m.text.clone())
        .unwrap_or_default();
    assert!(question.contains("rm -rf build"), "{question}");
    assert!(question.contains("[REDACTED]"), "{question}");
    assert!(!question.contains(token), "{question}");
    gw.tg.push_text(42, "/deny");
    gw.tg
        .wait_sends(WAIT, |s| s.iter().any(|m| m.text == "after deny"));
}

#[test]
fn idle_session_is_evicted_and_resumed_from_state_db() {
    let mut gw = Gw::new([Reply::text("first answer"), Reply::text("second answer")]);
    gw.config("gateway:\n  session_idle_seconds: 1\n");
    gw.install_event_logger();
    gw.start();
    gw.tg.push_text(42, "remember me");
    gw.tg
        .wait_sends(WAIT, |s| s.iter().any(|m| m.text == "first answer"));
    // After the idle limit the worker and its agent leave memory (the hook sees session:end).
    let start = Instant::now();
    while !gw
        .hook_events()
        .iter()
        .any(|(e, c)| e == "session:end" && c["reason"] == "idle")
    {
        assert!(
            start.elapsed() < WAIT,
            "no idle eviction: {:?}",
            gw.hook_events()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    gw.tg.push_text(42, "still there?");
    gw.tg
        .wait_sends(WAIT, |s| s.iter().any(|m| m.text == "second answer"));
    // The resumed session is the same one: the model saw the first exchange.
    let second = gw.llm.requests()[1].to_string();
    assert!(
        second.contains("remember me") && second.contains("first answer"),
        "{second}"
    );
    let db = gw.env.db();
    let sessions: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM sessions WHERE source = 'telegram'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(sessions, 1);
}

#[test]
fn in_groups_only_mentions_are_answered_and_each_user_has_a_session() {
    let mut gw = Gw::new([Reply::text("hi 42"), Reply::text("hi 100")]);
    gw.start();
    gw.tg
        .push_chat(-500, 42, "supergroup", "just chatting among humans");
    gw.tg
        .push_chat(-500, 42, "supergroup", "@hermes_test_bot hello");
    let sends = gw
        .tg
        .wait_sends(WAIT, |s| s.iter().any(|m| m.text == "hi 42"));
    assert_eq!(
        sends.len(),
        1,
        "the unaddressed message got no answer: {sends:#?}"
    );
    assert_eq!(sends[0].chat_id, -500);
    // The mention is not part of what the model reads.
    let first = gw.llm.requests()[0].to_string();
    assert!(
        first.contains("hello") && !first.contains("@hermes_test_bot"),
        "{first}"
    );
    gw.tg
        .push_chat(-500, 100, "supergroup", "@hermes_test_bot me too");
    gw.tg
        .wait_sends(WAIT, |s| s.iter().any(|m| m.text == "hi 100"));
    let second = gw.llm.requests()[1].to_string();
    assert!(
        !second.contains("hi 42"),
        "another user's group session is separate: {second}"
    );
    let db = gw.env.db();
    let keys: i64 = db
        .query_row("SELECT COUNT(*) FROM gateway_routing WHERE session_key LIKE 'agent:main:telegram:group:-500:%'", [], |r| r.get(0))
        .unwrap();
    assert_eq!(keys, 2);
}

#[test]
fn agents_beyond_max_live_sessions_leave_memory_and_resume_with_history() {
    let mut gw = Gw::new((0..6).map(|i| Reply::text(format!("answer {i}"))));
    gw.config("max_live_sessions: 1\nmax_concurrent_sessions: 1\n");
    gw.start();
    for chat in [100, 101, 102] {
        gw.tg.push_text(chat, &format!("first from {chat}"));
    }
    gw.tg.wait_sends(WAIT, |s| s.len() >= 3);
    for chat in [100, 101, 102] {
        gw.tg.push_text(chat, &format!("second from {chat}"));
    }
    gw.tg.wait_sends(WAIT, |s| s.len() >= 6);
    // Every second turn saw its own chat's first message, whether its agent stayed in memory
    // or was resumed from state.db.
    let requests = gw.llm.requests();
    for chat in [100, 101, 102] {
        let second = requests
            .iter()
            .map(|r| r.to_string())
            .find(|r| r.contains(&format!("second from {chat}")))
            .unwrap();
        assert!(second.contains(&format!("first from {chat}")), "{second}");
        for other in [100, 101, 102].iter().filter(|o| **o != chat) {
            assert!(
                !second.contains(&format!("from {other}")),
                "sessions are separate"
            );
        }
    }
}
