//! Exactly-once delivery across crashes: SIGKILL after the model answered but before the send
//! went out → the restarted gateway sends it once; SIGKILL after the send → nothing is resent.
//! Finished records leave the ledger after the retention period; the conversation stays.

use std::time::{Duration, Instant};

use super::gateway_support::Gw;
use crate::support::mock_llm::Reply;

const WAIT: Duration = Duration::from_secs(20);

#[test]
fn killed_before_send_delivers_once_after_restart() {
    let mut gw = Gw::new([Reply::text("the answer")]);
    gw.start();
    gw.tg.stall_sends(true);
    gw.tg.push_text(42, "question");
    gw.wait_ledger(|l| l == ["pending"]);
    gw.kill();
    gw.tg.stall_sends(false);
    assert!(gw.tg.sends().is_empty());
    gw.start();
    gw.tg.wait_sends(WAIT, |s| !s.is_empty());
    gw.wait_ledger(|l| l == ["sent"]);
    gw.settle(3);
    let sends = gw.tg.sends();
    assert_eq!(sends.len(), 1, "{sends:?}");
    assert_eq!(sends[0].text, "the answer");
    assert!(
        sends[0].reply_to.is_some(),
        "the recovered answer still quotes the question"
    );
    assert_eq!(gw.llm.request_count(), 1, "the turn is not run again");
}

#[test]
fn killed_after_send_sends_nothing_again() {
    let mut gw = Gw::new([Reply::text("sent already")]);
    gw.start();
    gw.tg.push_text(42, "question");
    gw.tg.wait_sends(WAIT, |s| !s.is_empty());
    gw.wait_ledger(|l| l == ["sent"]);
    gw.kill();
    gw.start();
    gw.settle(3);
    assert_eq!(gw.tg.sends().len(), 1);
    assert_eq!(gw.llm.request_count(), 1);
}

#[test]
fn killed_mid_turn_the_accepted_message_is_answered_after_restart() {
    // The first model call is slow; the gateway dies during it. The message was accepted
    // (recorded) so the restarted gateway runs the turn again rather than losing it.
    let mut gw = Gw::new([
        Reply::text("too late").delay(Duration::from_secs(30)),
        Reply::text("answered"),
    ]);
    gw.start();
    gw.tg.push_text(42, "question");
    let start = Instant::now();
    while gw.llm.request_count() == 0 {
        assert!(start.elapsed() < WAIT, "the turn never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    gw.kill();
    gw.start();
    let sends = gw.tg.wait_sends(WAIT, |s| !s.is_empty());
    assert_eq!(sends.len(), 1);
    assert_eq!(sends[0].text, "answered");
}

#[test]
fn old_finished_records_are_pruned_at_startup_and_the_conversation_stays() {
    let mut gw = Gw::new([Reply::text("first answer"), Reply::text("second answer")]);
    gw.start();
    gw.tg.push_text(42, "first question");
    gw.wait_ledger(|l| l == ["sent"]);
    gw.stop();
    // Eight days pass (the default retention is seven).
    let eight_days = 8.0 * 86_400.0;
    let db = gw.env.db();
    db.execute(
        "UPDATE gateway_inbound SET received_at = received_at - ?1, done_at = done_at - ?1",
        [eight_days],
    )
    .unwrap();
    db.execute(
        "UPDATE gateway_outbound SET created_at = created_at - ?1, sent_at = sent_at - ?1",
        [eight_days],
    )
    .unwrap();
    drop(db);

    gw.start();
    let start = Instant::now();
    while !gw.ledger().is_empty() {
        assert!(start.elapsed() < WAIT, "old delivery never pruned");
        std::thread::sleep(Duration::from_millis(20));
    }
    let inbound: i64 = gw
        .env
        .db()
        .query_row("SELECT COUNT(*) FROM gateway_inbound", [], |r| r.get(0))
        .unwrap();
    assert_eq!(inbound, 0, "the answered update is forgotten too");

    gw.tg.push_text(42, "second question");
    gw.wait_ledger(|l| l == ["sent"]);
    let sends = gw.tg.sends();
    assert_eq!(
        sends.iter().map(|s| s.text.as_str()).collect::<Vec<_>>(),
        ["first answer", "second answer"]
    );
    let second = gw.llm.requests()[1].to_string();
    assert!(
        second.contains("first question") && second.contains("first answer"),
        "the chat still resumes with its history: {second}"
    );
}
