//! Gateway over the fake Telegram: answers, chunking, authorisation, rate limits, duplicate
//! updates (also across a restart) and hooks that misbehave.

use std::time::{Duration, Instant};

use super::gateway_support::Gw;
use crate::support::mock_llm::Reply;

const WAIT: Duration = Duration::from_secs(20);

fn utf16(s: &str) -> usize {
    s.encode_utf16().count()
}

#[test]
fn dm_gets_an_answer_and_a_long_answer_arrives_in_fenced_chunks() {
    let code: Vec<String> = (0..700)
        .map(|i| format!("    let value_{i} = {i};"))
        .collect();
    let long = format!(
        "Here you go:\n```rust\nfn main() {{\n{}\n}}\n```\nDone.",
        code.join("\n")
    );
    let mut gw = Gw::new([Reply::text("hello there"), Reply::text(long.clone())]);
    gw.start();
    let m1 = gw.tg.push_text(42, "hi");
    let sends = gw.tg.wait_sends(WAIT, |s| !s.is_empty());
    assert_eq!(sends[0].text, "hello there");
    assert_eq!(sends[0].chat_id, 42);
    // The answer quotes the user's message (message ids are update ids' counterpart in the fake).
    assert!(sends[0].reply_to.is_some(), "{sends:?}");
    assert!(!gw.tg.calls("sendChatAction").is_empty(), "typing is shown");
    let _ = m1;

    gw.tg.push_text(42, "show me code");
    let sends = gw.tg.wait_sends(WAIT, |s| {
        s.last()
            .is_some_and(|l| l.text.ends_with("Done.") || l.text.contains("Done. ("))
    });
    let chunks: Vec<_> = sends[1..].iter().map(|s| s.text.clone()).collect();
    let n = chunks.len();
    assert!(
        n >= 5,
        "{} units need several chunks, got {n}",
        utf16(&long)
    );
    for (i, c) in chunks.iter().enumerate() {
        assert!(utf16(c) <= 4096, "chunk {i} is {} units", utf16(c));
        assert!(
            c.ends_with(&format!(" ({}/{n})", i + 1)),
            "chunk {i} marker: {}",
            &c[c.len().saturating_sub(20)..]
        );
        let fences = c
            .lines()
            .filter(|l| l.trim_start().starts_with("```"))
            .count();
        assert_eq!(fences % 2, 0, "chunk {i} has unbalanced fences");
        if i > 0 && i + 1 < n {
            assert!(c.starts_with("```rust\n"), "chunk {i} reopens the fence");
        }
    }
    for i in [0, 350, 699] {
        let line = format!("let value_{i} = {i};");
        assert_eq!(
            chunks.iter().filter(|c| c.contains(&line)).count(),
            1,
            "{line} arrives once"
        );
    }
    let status = gw.stop();
    assert!(status.success(), "SIGTERM stops cleanly: {status:?}");
}

#[test]
fn unauthorised_user_gets_one_refusal_and_no_llm_request() {
    let mut gw = Gw::new([]);
    gw.start();
    gw.tg.push_text(666, "let me in");
    let sends = gw.tg.wait_sends(WAIT, |s| !s.is_empty());
    assert_eq!(sends.len(), 1);
    assert_eq!(sends[0].chat_id, 666);
    assert!(
        sends[0].text.contains("not authorised") && sends[0].text.contains("666"),
        "{}",
        sends[0].text
    );
    gw.tg.push_text(666, "please");
    gw.tg.push_text(666, "/new");
    gw.settle(3);
    assert_eq!(gw.tg.sends().len(), 1, "one refusal, not one per message");
    assert_eq!(gw.llm.request_count(), 0, "no agent turn for unknown users");
}

#[test]
fn duplicate_update_is_answered_once_also_after_restart() {
    let mut gw = Gw::new([Reply::text("only once")]);
    gw.start();
    let u = gw.tg.push_text(42, "hello");
    gw.tg.wait_sends(WAIT, |s| !s.is_empty());
    gw.tg.redeliver(u);
    gw.settle(3);
    assert!(gw.stop().success());
    let polls_before = gw.tg.offsets().len();
    gw.start();
    // The persisted cursor: the restarted gateway asks for what comes after the update.
    assert_eq!(gw.tg.offsets()[polls_before], Some(u + 1));
    gw.tg.redeliver(u);
    gw.settle(3);
    let answers: Vec<_> = gw
        .tg
        .sends()
        .into_iter()
        .filter(|s| s.text == "only once")
        .collect();
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert_eq!(gw.llm.request_count(), 1, "one agent turn");
}

#[test]
fn rate_limited_send_waits_retry_after_and_sends_once() {
    let mut gw = Gw::new([Reply::text("after the limit")]);
    gw.start();
    gw.tg.rate_limit(1, 1);
    let start = Instant::now();
    gw.tg.push_text(42, "go");
    let sends = gw.tg.wait_sends(WAIT, |s| !s.is_empty());
    assert!(
        start.elapsed() >= Duration::from_secs(1),
        "retry_after honoured"
    );
    assert_eq!(gw.tg.calls("sendMessage429").len(), 1);
    assert_eq!(sends.len(), 1);
    assert_eq!(sends[0].text, "after the limit");
}

#[test]
fn hooks_that_sleep_fail_or_print_garbage_never_stop_the_gateway() {
    let mut gw = Gw::new([Reply::text("still serving"), Reply::text("and again")]);
    let hooks = gw.env.home_path().join("hooks");
    for (name, script) in [
        ("sleeper", "#!/bin/sh\nexec sleep 60\n"),
        ("failer", "#!/bin/sh\necho boom >&2\nexit 1\n"),
        ("garbage", "#!/bin/sh\necho '{\"decision\": 12, ]]'\n"),
    ] {
        let d = hooks.join(name);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("HOOK.yaml"),
            "events: [\"agent:*\", \"command:*\", \"session:*\"]\ntimeout: 1\n",
        )
        .unwrap();
        let h = d.join("handler");
        std::fs::write(&h, script).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&h, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    // The example hook shipped in the repository logs events as JSON lines.
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("hooks/event-logger");
    let dest = hooks.join("event-logger");
    std::fs::create_dir_all(&dest).unwrap();
    for f in ["HOOK.yaml", "handler"] {
        std::fs::copy(example.join(f), dest.join(f)).unwrap();
    }
    gw.start();
    gw.tg.push_text(42, "hi");
    gw.tg
        .wait_sends(WAIT, |s| s.iter().any(|m| m.text == "still serving"));
    gw.tg.push_text(42, "/new");
    gw.tg.wait_sends(WAIT, |s| {
        s.iter().any(|m| m.text.contains("new conversation"))
    });
    gw.tg.push_text(42, "more");
    gw.tg
        .wait_sends(WAIT, |s| s.iter().any(|m| m.text == "and again"));
    let log = gw.env.home_path().join("logs/hook-events.jsonl");
    let start = Instant::now();
    let events = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let events: Vec<String> = text
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| v["event"].as_str().map(String::from))
            .collect();
        if events.iter().filter(|e| *e == "agent:end").count() >= 2 || start.elapsed() > WAIT {
            break events;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    for e in [
        "gateway:startup",
        "session:start",
        "agent:start",
        "agent:end",
        "command:new",
        "session:reset",
    ] {
        assert!(events.iter().any(|x| x == e), "{e} logged: {events:?}");
    }
    assert!(gw.stop().success());
}

#[test]
fn streamed_answer_is_edits_of_one_message_and_nothing_else() {
    let answer = "word ".repeat(60).trim_end().to_string();
    let mut gw = Gw::new([Reply::text(answer.clone())
        .chunk_chars(10)
        .chunk_interval(Duration::from_millis(20))]);
    gw.config("gateway:\n  streaming: true\n  stream_interval_ms: 50\n");
    gw.start();
    gw.tg.push_text(42, "stream please");
    gw.wait_ledger(|l| l == ["sent"]);
    let sends = gw.tg.sends();
    assert_eq!(sends.len(), 1, "one message: {sends:#?}");
    let edits = gw.tg.calls("editMessageText");
    assert!(
        edits.len() >= 2,
        "the preview was edited as it grew: {edits:#?}"
    );
    assert!(
        edits
            .iter()
            .all(|e| e["message_id"].as_i64() == Some(sends[0].message_id)),
        "every edit targets the one message"
    );
    let last = edits.last().map(|e| e["text"].clone());
    assert_eq!(
        last,
        Some(serde_json::Value::from(answer)),
        "the final edit is the whole answer"
    );
}

#[test]
fn status_reports_health_and_send_delivers_one_message() {
    use crate::support::fake_telegram::TOKEN;
    let mut gw = Gw::new([]);
    gw.start();
    let status = |gw: &Gw| -> serde_json::Value {
        let out = gw
            .env
            .bare_cmd()
            .args(["gateway", "status", "--json"])
            .output()
            .unwrap();
        assert!(out.status.success());
        serde_json::from_slice(&out.stdout).unwrap()
    };
    gw.settle(2); // at least one poll has completed
    let running = status(&gw);
    assert_eq!(
        running["platforms"]["telegram"]["status"], "connected",
        "{running}"
    );
    assert_eq!(running["platforms"]["telegram"]["process_alive"], true);
    assert!(
        running["platforms"]["telegram"]["seconds_since_last_ok"]
            .as_f64()
            .is_some()
    );
    assert_eq!(running["pending_deliveries"], 0);
    assert!(gw.stop().success());
    let stopped = status(&gw);
    assert_eq!(
        stopped["platforms"]["telegram"]["status"], "stopped",
        "{stopped}"
    );

    let send = |target: &str, text: &str| {
        gw.env
            .bare_cmd()
            .env("TELEGRAM_BOT_TOKEN", TOKEN)
            .env("TELEGRAM_API_BASE_URL", gw.tg.base_url())
            .args(["send", target, text])
            .output()
            .unwrap()
    };
    let out = send("telegram:42", "from a script");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sends = gw.tg.sends();
    assert_eq!(sends.len(), 1);
    assert_eq!(
        (sends[0].chat_id, sends[0].text.as_str()),
        (42, "from a script")
    );
    for bad in ["telegram", ":42", "nowhere:1"] {
        let out = send(bad, "x");
        assert!(!out.status.success(), "{bad} is refused");
        assert!(
            !String::from_utf8_lossy(&out.stderr).contains(TOKEN),
            "the token never leaks"
        );
    }
    assert_eq!(gw.tg.sends().len(), 1);
}

#[test]
fn unknown_dm_user_pairs_with_a_code_the_owner_approves() {
    let mut gw = Gw::new([Reply::text("welcome aboard")]);
    gw.start();
    gw.tg.push_text(777, "hello?");
    let sends = gw.tg.wait_sends(WAIT, |s| !s.is_empty());
    let text = &sends[0].text;
    let code: String = text
        .split_whitespace()
        .find(|w| {
            w.len() == 8
                && w.chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        })
        .unwrap_or_else(|| panic!("a pairing code in {text}"))
        .to_string();
    assert_eq!(gw.llm.request_count(), 0);
    let approve = |code: &str| {
        gw.env
            .bare_cmd()
            .args(["pairing", "approve", "telegram", code])
            .output()
            .unwrap()
    };
    let wrong = approve("ZZZZ9999");
    assert!(!wrong.status.success(), "an unknown code is refused");
    let ok = approve(&code);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    gw.tg.push_text(777, "now?");
    let sends = gw
        .tg
        .wait_sends(WAIT, |s| s.iter().any(|m| m.text == "welcome aboard"));
    assert_eq!(sends.len(), 2, "{sends:#?}");
}

#[test]
fn a_rejected_token_stops_the_gateway_with_a_clear_error_and_no_leak() {
    let gw = Gw::new([]);
    let out = gw
        .env
        .spawnable(&gw.llm.base_url(), &["gateway", "run"])
        .env("TELEGRAM_BOT_TOKEN", "999:revoked-secret-token")
        .env("TELEGRAM_ALLOWED_USERS", "42")
        .env("TELEGRAM_API_BASE_URL", gw.tg.base_url())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("TELEGRAM_BOT_TOKEN"), "{err}");
    assert!(!err.contains("revoked-secret-token"), "{err}");
    assert_eq!(gw.tg.get_updates_count(), 0, "no polling with a bad token");
}

#[test]
fn dropped_connections_lose_and_duplicate_nothing() {
    let mut gw = Gw::new([Reply::text("first answer"), Reply::text("second answer")]);
    gw.tg.drop_connections("getUpdates", 2);
    gw.start();
    gw.tg.push_text(42, "one");
    let sends = gw.tg.wait_sends(WAIT, |s| !s.is_empty());
    assert_eq!(sends[0].text, "first answer");
    assert_eq!(gw.tg.drops_left("getUpdates"), 0, "both polls were cut");
    // A send whose connection breaks before Telegram acted on it is sent again, once.
    gw.tg.drop_connections("sendMessage", 1);
    gw.tg.push_text(42, "two");
    let sends = gw.tg.wait_sends(WAIT, |s| s.len() >= 2);
    std::thread::sleep(Duration::from_millis(500));
    let sends_now = gw.tg.sends();
    assert_eq!(sends_now.len(), 2, "{sends_now:?}");
    assert_eq!(sends[1].text, "second answer");
    assert_eq!(gw.tg.drops_left("sendMessage"), 0, "the send was cut once");
    assert!(gw.stop().success());
}
