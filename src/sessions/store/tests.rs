//! Unit tests for `SessionStore`: round trips, counters, lifecycle, undo, delete, search, errors.

use std::time::Duration;

use rusqlite::Connection;

use super::*;
use crate::llm::{Message, Role, ToolCall, Usage};

fn store() -> (tempfile::TempDir, SessionStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::open(&dir.path().join("state.db")).unwrap();
    (dir, store)
}

fn session(store: &SessionStore, id: &str, source: &str) {
    store
        .create_session(&NewSession {
            id: id.into(),
            source: source.into(),
            model: Some("m1".into()),
            ..Default::default()
        })
        .unwrap();
}

fn call(id: &str, name: &str, args: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.into(),
    }
}

fn raw(store: &SessionStore, sql: &str) -> i64 {
    store.lock().query_row(sql, [], |r| r.get(0)).unwrap()
}

#[test]
fn store_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<SessionStore>();
    check::<StoreError>();
}

#[test]
fn session_id_has_python_format() {
    let id = new_session_id();
    let re = regex::Regex::new(r"^\d{8}_\d{6}_[0-9a-f]{6}$").unwrap();
    assert!(re.is_match(&id), "{id}");
}

#[test]
fn every_message_kind_round_trips() {
    let (_d, s) = store();
    session(&s, "s1", "cli");
    let calls = vec![
        call("c1", "terminal", r#"{"command":"ls"}"#),
        call("c2", "read_file", "{not json"),
    ];
    let mut assistant = Message::assistant(None, calls.clone());
    assistant.reasoning = Some("thinking".into());
    assistant.finish_reason = Some("tool_calls".into());
    let mut user = Message::user("hi 你好 \u{0} nul");
    user.api_content = Some("hi\n<memory-context>x</memory-context>".into());
    let sent = vec![
        Message::system("sys"),
        user,
        assistant,
        Message::tool_result(&calls[0], "out"),
        Message::tool_result(&calls[1], ""),
        Message::assistant(Some("done".into()), vec![]),
    ];
    for m in &sent {
        s.append_message("s1", m).unwrap();
    }
    let back: Vec<Message> = s
        .messages("s1")
        .unwrap()
        .into_iter()
        .map(|m| m.message)
        .collect();
    assert_eq!(back, sent);
    let stored = s.messages("s1").unwrap();
    assert!(
        stored
            .windows(2)
            .all(|w| w[0].id < w[1].id && w[0].timestamp <= w[1].timestamp)
    );
    assert!(stored.iter().all(|m| m.active && m.session_id == "s1"));
    // NULL, not "[]", when there are no tool calls; Python reads both, but that is what it writes.
    assert_eq!(
        raw(&s, "SELECT COUNT(*) FROM messages WHERE tool_calls IS NULL"),
        5
    );
}

#[test]
fn counters_follow_python() {
    let (_d, s) = store();
    session(&s, "s1", "cli");
    s.append_message("s1", &Message::user("q")).unwrap();
    let calls = vec![call("a", "t", "{}"), call("b", "t", "{}")];
    s.append_message("s1", &Message::assistant(None, calls.clone()))
        .unwrap();
    s.append_message("s1", &Message::tool_result(&calls[0], "x"))
        .unwrap();
    let usage = Usage {
        input_tokens: 100,
        output_tokens: 20,
        cache_read_tokens: 5,
        cache_write_tokens: 3,
        reasoning_tokens: 7,
    };
    s.add_usage("s1", &usage, 1).unwrap();
    s.add_usage("s1", &usage, 2).unwrap();
    let row = s.session("s1").unwrap().unwrap();
    assert_eq!((row.message_count, row.tool_call_count), (3, 2));
    assert_eq!(
        (row.input_tokens, row.output_tokens, row.cache_read_tokens),
        (200, 40, 10)
    );
    assert_eq!(
        (
            row.cache_write_tokens,
            row.reasoning_tokens,
            row.api_call_count
        ),
        (6, 14, 3)
    );
    assert_eq!(
        raw(
            &s,
            "SELECT input_tokens * 10 + api_call_count FROM session_model_usage WHERE session_id='s1' AND model='m1'"
        ),
        2003
    );
}

#[test]
fn missing_session_is_reported() {
    let (_d, s) = store();
    for r in [
        s.append_message("nope", &Message::user("x")).map(|_| ()),
        s.add_usage("nope", &Usage::default(), 1),
        s.end_session("nope", "x"),
        s.reopen_session("nope"),
        s.set_model("nope", "m"),
        s.set_system_prompt("nope", "p"),
    ] {
        assert!(
            matches!(r, Err(StoreError::SessionNotFound(ref id)) if id == "nope"),
            "{r:?}"
        );
    }
    let orphan = NewSession {
        id: "c".into(),
        source: "cli".into(),
        parent_session_id: Some("ghost".into()),
        ..Default::default()
    };
    assert!(
        matches!(s.create_session(&orphan), Err(StoreError::SessionNotFound(id)) if id == "ghost")
    );
    assert!(!s.delete_session("nope").unwrap());
    assert_eq!(s.rewind_last_user_turn("nope").unwrap(), 0);
    assert!(s.session("nope").unwrap().is_none());
}

#[test]
fn lifecycle_and_metadata() {
    let (_d, s) = store();
    session(&s, "s1", "cli");
    // A second create fills only what is still empty.
    s.create_session(&NewSession {
        id: "s1".into(),
        source: "other".into(),
        model: Some("m2".into()),
        cwd: Some("/w".into()),
        ..Default::default()
    })
    .unwrap();
    let row = s.session("s1").unwrap().unwrap();
    assert_eq!(
        (
            row.source.as_str(),
            row.model.as_deref(),
            row.cwd.as_deref()
        ),
        ("cli", Some("m1"), Some("/w"))
    );
    s.set_model("s1", "m3").unwrap();
    s.set_system_prompt("s1", "frozen").unwrap();
    s.end_session("s1", "user_exit").unwrap();
    s.end_session("s1", "later").unwrap();
    let row = s.session("s1").unwrap().unwrap();
    assert_eq!(
        row.end_reason.as_deref(),
        Some("user_exit"),
        "first end reason wins"
    );
    assert!(row.ended_at.is_some());
    assert_eq!(
        (row.model.as_deref(), row.system_prompt.as_deref()),
        (Some("m3"), Some("frozen"))
    );
    s.reopen_session("s1").unwrap();
    let row = s.session("s1").unwrap().unwrap();
    assert!(row.ended_at.is_none() && row.end_reason.is_none());
}

#[test]
fn find_latest_and_list() {
    let (_d, s) = store();
    for (id, source, at) in [
        ("20250101_000000_aaaaaa", "cli", 1.0),
        ("20250102_000000_bbbbbb", "telegram", 2.0),
        ("20250103_000000_cccccc", "subagent", 3.0),
        ("20250102_000000_bbbbbc", "cli", 1.5),
    ] {
        session(&s, id, source);
        s.lock()
            .execute(
                "UPDATE sessions SET started_at = ?1 WHERE id = ?2",
                rusqlite::params![at, id],
            )
            .unwrap();
    }
    s.lock()
        .execute(
            "UPDATE sessions SET title = 'My 100%_title' WHERE id = '20250101_000000_aaaaaa'",
            [],
        )
        .unwrap();
    let find = |q: &str| s.find_session(q).unwrap().map(|r| r.id);
    assert_eq!(
        find("20250101_000000_aaaaaa").as_deref(),
        Some("20250101_000000_aaaaaa")
    );
    assert_eq!(
        find("My 100%_title").as_deref(),
        Some("20250101_000000_aaaaaa")
    );
    assert_eq!(find("20250101").as_deref(), Some("20250101_000000_aaaaaa"));
    assert_eq!(find("20250102"), None, "ambiguous prefix");
    assert_eq!(find("2025010_"), None, "LIKE wildcards are literal");
    assert_eq!(find("%"), None);
    assert_eq!(find(""), None);
    assert_eq!(
        s.latest_session(&["cli"]).unwrap().unwrap().id,
        "20250102_000000_bbbbbc"
    );
    assert_eq!(
        s.latest_session(&["cli", "telegram"]).unwrap().unwrap().id,
        "20250102_000000_bbbbbb"
    );
    assert_eq!(
        s.latest_session(&[]).unwrap().unwrap().id,
        "20250102_000000_bbbbbb",
        "subagent is hidden"
    );
    assert!(s.latest_session(&["discord"]).unwrap().is_none());
    let listed: Vec<String> = s
        .list_sessions(10)
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(
        listed,
        [
            "20250102_000000_bbbbbb",
            "20250102_000000_bbbbbc",
            "20250101_000000_aaaaaa"
        ]
    );
    assert_eq!(s.list_sessions(1).unwrap().len(), 1);
    assert!(s.list_sessions(0).unwrap().is_empty());
}

#[test]
fn undo_hides_the_last_turn() {
    let (_d, s) = store();
    session(&s, "s1", "cli");
    s.append_message("s1", &Message::user("first question"))
        .unwrap();
    s.append_message(
        "s1",
        &Message::assistant(Some("first answer".into()), vec![]),
    )
    .unwrap();
    s.append_message("s1", &Message::user("second zebra"))
        .unwrap();
    let c = call("c", "t", "{}");
    s.append_message("s1", &Message::assistant(None, vec![c.clone()]))
        .unwrap();
    s.append_message("s1", &Message::tool_result(&c, "zebra tool output"))
        .unwrap();
    assert_eq!(s.rewind_last_user_turn("s1").unwrap(), 3);
    let left: Vec<_> = s
        .messages("s1")
        .unwrap()
        .into_iter()
        .map(|m| m.message.content)
        .collect();
    assert_eq!(
        left,
        [
            Some("first question".to_string()),
            Some("first answer".to_string())
        ]
    );
    assert!(
        s.search("zebra", 10).unwrap().is_empty(),
        "undone rows are not searchable"
    );
    assert_eq!(raw(&s, "SELECT rewind_count FROM sessions"), 1);
    assert_eq!(
        raw(
            &s,
            "SELECT COUNT(*) FROM messages WHERE active = 0 AND compacted = 0"
        ),
        3
    );
    assert_eq!(s.rewind_last_user_turn("s1").unwrap(), 2);
    assert_eq!(s.rewind_last_user_turn("s1").unwrap(), 0);
    assert_eq!(raw(&s, "SELECT rewind_count FROM sessions"), 2);
}

#[test]
fn delete_takes_messages_fts_and_delegates_but_keeps_branches() {
    let (_d, s) = store();
    session(&s, "p", "cli");
    s.append_message("p", &Message::user("platypus")).unwrap();
    s.add_usage(
        "p",
        &Usage {
            input_tokens: 1,
            ..Default::default()
        },
        1,
    )
    .unwrap();
    let child = |id: &str, cfg: Option<&str>| NewSession {
        id: id.into(),
        source: "subagent".into(),
        parent_session_id: Some("p".into()),
        model_config: cfg.map(str::to_string),
        ..Default::default()
    };
    s.create_session(&child("delegate", Some(r#"{"_delegate_from": "p"}"#)))
        .unwrap();
    s.append_message("delegate", &Message::user("platypus again"))
        .unwrap();
    s.create_session(&child("branch", Some("not json at all")))
        .unwrap();
    assert!(s.delete_session("p").unwrap());
    assert!(s.session("p").unwrap().is_none());
    assert!(s.session("delegate").unwrap().is_none());
    let branch = s.session("branch").unwrap().unwrap();
    assert_eq!(branch.parent_session_id, None);
    assert_eq!(raw(&s, "SELECT COUNT(*) FROM messages"), 0);
    assert_eq!(raw(&s, "SELECT COUNT(*) FROM messages_fts"), 0);
    assert_eq!(raw(&s, "SELECT COUNT(*) FROM messages_fts_trigram"), 0);
    assert_eq!(raw(&s, "SELECT COUNT(*) FROM session_model_usage"), 0);
    assert!(!s.delete_session("p").unwrap());
}

#[test]
fn search_english_chinese_and_hostile() {
    let (_d, s) = store();
    session(&s, "s1", "cli");
    session(&s, "hidden", "subagent");
    s.append_message(
        "s1",
        &Message::user("How do I deploy the kubernetes cluster?"),
    )
    .unwrap();
    s.append_message("s1", &Message::user("我们明天去北京看长城吧"))
        .unwrap();
    s.append_message(
        "s1",
        &Message::assistant(None, vec![call("c", "web_search", r#"{"q":"zeppelin"}"#)]),
    )
    .unwrap();
    s.append_message("hidden", &Message::user("kubernetes secret subagent work"))
        .unwrap();

    let hits = s.search("kubernetes", 10).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(
        (
            hits[0].session_id.as_str(),
            hits[0].role.as_str(),
            hits[0].source.as_str()
        ),
        ("s1", "user", "cli")
    );
    assert!(
        hits[0].snippet.contains(">>>kubernetes<<<"),
        "{}",
        hits[0].snippet
    );
    assert_eq!(s.search("deplo*", 10).unwrap().len(), 1, "prefix query");
    assert_eq!(
        s.search("zeppelin", 10).unwrap()[0].role,
        "assistant",
        "tool call arguments are indexed"
    );
    assert_eq!(
        s.search("web_search", 10).unwrap().len(),
        1,
        "tool names are indexed"
    );
    assert_eq!(
        s.search("ubernete", 10).unwrap().len(),
        1,
        "substring via the trigram fallback"
    );
    assert_eq!(s.search("kubernetes NOT cluster", 10).unwrap().len(), 0);
    assert_eq!(s.search("zeppelin OR cluster", 10).unwrap().len(), 2);

    let zh = s.search("北京看长城", 10).unwrap();
    assert_eq!(zh.len(), 1);
    assert!(
        zh[0].snippet.contains(">>>北京看长城<<<"),
        "{}",
        zh[0].snippet
    );
    let short = s.search("北京", 10).unwrap();
    assert_eq!(short.len(), 1, "two CJK chars go through LIKE");
    assert_eq!(short[0].snippet, "我们明天去>>>北京<<<看长城吧");
    assert_eq!(
        s.search("北京 kubernetes", 10).unwrap().len(),
        0,
        "terms are ANDed"
    );
    assert_eq!(s.search("北京 OR kubernetes", 10).unwrap().len(), 2);
    assert_eq!(s.search("长城 NOT 北京", 10).unwrap().len(), 0);

    for q in [
        "\"foo AND (",
        "*",
        "NEAR(",
        "col:x",
        "",
        "   ",
        "AND",
        "\"",
        "%",
        "_",
        "'; DROP TABLE messages; --",
        "北\"京(",
        "\\",
    ] {
        assert!(s.search(q, 10).is_ok(), "{q:?}");
    }
    assert!(s.search("kubernetes", 0).unwrap().is_empty());
    assert_eq!(raw(&s, "SELECT COUNT(*) FROM messages"), 4);
}

#[test]
fn compacted_rows_stay_searchable() {
    let (_d, s) = store();
    session(&s, "s1", "cli");
    s.append_message("s1", &Message::user("archived walrus"))
        .unwrap();
    s.lock()
        .execute("UPDATE messages SET active = 0, compacted = 1", [])
        .unwrap();
    assert!(s.messages("s1").unwrap().is_empty());
    assert_eq!(s.search("walrus", 5).unwrap().len(), 1);
}

#[test]
fn malformed_rows_do_not_break_loading() {
    let (_d, s) = store();
    session(&s, "s1", "cli");
    s.append_message("s1", &Message::user("ok")).unwrap();
    let id = s
        .append_message(
            "s1",
            &Message::assistant(Some("text kept".into()), vec![call("c", "t", "{}")]),
        )
        .unwrap();
    {
        let c = s.lock();
        c.execute(
            "UPDATE messages SET tool_calls = '{broken' WHERE id = ?1",
            [id],
        )
        .unwrap();
        c.execute(
            "INSERT INTO messages (session_id, role, content, timestamp) VALUES ('s1', 'alien', 'x', 'not a time')",
            [],
        )
        .unwrap();
        c.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('s1', 'user', 42, 1)", [])
            .unwrap();
    }
    let msgs = s.messages("s1").unwrap();
    assert_eq!(msgs.len(), 3, "unknown role skipped, others kept");
    assert_eq!(msgs[1].message.content.as_deref(), Some("text kept"));
    assert!(msgs[1].message.tool_calls.is_empty());
    assert_eq!(msgs[2].message.role, Role::User);
    assert_eq!(msgs[2].message.content.as_deref(), Some("42"));
}

#[test]
fn wal_and_pragmas_are_on() {
    let (dir, s) = store();
    let c = s.lock();
    let mode: String = c
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let fk: i64 = c
        .query_row("PRAGMA foreign_keys", [], |r| r.get(0))
        .unwrap();
    assert_eq!(fk, 1);
    drop(c);
    // A second handle on the same file sees WAL in the file header too.
    let other = Connection::open(dir.path().join("state.db")).unwrap();
    let mode: String = other
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[test]
fn appended_message_is_visible_to_another_connection_at_once() {
    let (dir, s) = store();
    session(&s, "s1", "cli");
    s.append_message("s1", &Message::user("durable")).unwrap();
    let other = Connection::open(dir.path().join("state.db")).unwrap();
    let n: i64 = other
        .query_row("SELECT COUNT(*) FROM messages", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 1);
}

#[test]
fn reopening_is_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/deeper/state.db");
    {
        let s = SessionStore::open(&path).unwrap();
        session(&s, "s1", "cli");
        s.append_message("s1", &Message::user("kept")).unwrap();
    }
    let s = SessionStore::open_with_timeout(&path, Duration::from_millis(100)).unwrap();
    assert_eq!(s.messages("s1").unwrap().len(), 1);
    assert_eq!(raw(&s, "SELECT COUNT(*) FROM schema_version"), 1);
    assert_eq!(raw(&s, "SELECT COUNT(*) FROM messages_fts"), 1);
}

#[test]
fn bad_paths_give_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain-file");
    std::fs::write(&file, b"x").unwrap();
    let err = SessionStore::open(&file.join("state.db")).err().unwrap();
    assert!(matches!(err, StoreError::CreateDir { .. }), "{err}");
    assert!(err.to_string().contains("plain-file"), "{err}");

    let err = SessionStore::open(dir.path()).err().unwrap();
    assert!(matches!(err, StoreError::CannotOpen { .. }), "{err}");

    let garbage = dir.path().join("garbage.db");
    std::fs::write(&garbage, vec![0x42u8; 8192]).unwrap();
    let err = SessionStore::open(&garbage).err().unwrap();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("garbage.db"), "{err}");
}
