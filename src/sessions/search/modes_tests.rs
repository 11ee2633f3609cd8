//! Tests of discover / browse / read / scroll on a real state.db.

use super::*;
use crate::llm::Message;
use crate::sessions::search::read::{display_text, excerpt};
use crate::sessions::search::{read, scroll};
use crate::sessions::{NewSession, SessionStore};

struct Db {
    _dir: tempfile::TempDir,
    store: SessionStore,
    path: std::path::PathBuf,
}

fn db() -> Db {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let store = SessionStore::open(&path).unwrap();
    Db {
        _dir: dir,
        store,
        path,
    }
}

impl Db {
    fn session(&self, id: &str, source: &str, parent: Option<&str>, texts: &[&str]) -> Vec<i64> {
        self.store
            .create_session(&NewSession {
                id: id.into(),
                source: source.into(),
                parent_session_id: parent.map(str::to_string),
                ..NewSession::default()
            })
            .unwrap();
        texts
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let m = if i % 2 == 0 {
                    Message::user(*t)
                } else {
                    Message::assistant(Some(t.to_string()), Vec::new())
                };
                self.store.append_message(id, &m).unwrap()
            })
            .collect()
    }

    fn conn(&self) -> Connection {
        open_read(&self.path).unwrap()
    }
}

fn opts(current: Option<&str>) -> DiscoverOptions {
    DiscoverOptions {
        current_session: current.map(str::to_string),
        ..DiscoverOptions::default()
    }
}

#[test]
fn discover_finds_the_word_with_a_quarter_before_window() {
    let d = db();
    let texts: Vec<String> = (0..20).map(|i| format!("message number {i}")).collect();
    let mut refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    refs[10] = "we chose the zanzibar deployment plan";
    let ids = d.session("s1", "cli", None, &refs);
    d.session("s2", "cli", None, &["unrelated", "talk"]);
    d.session("s3", "cli", None, &["where was zanzibar again?"]);
    let r = discover(&d.conn(), "zanzibar", &opts(Some("s3"))).unwrap();
    assert_eq!(r.count, 1, "{r:?}");
    let hit = &r.results[0];
    assert_eq!(hit.session.session_id, "s1");
    assert_eq!(hit.match_message_id, ids[10]);
    assert_eq!(hit.matched_role, "user");
    assert!(hit.snippet.contains(">>>zanzibar<<<"), "{}", hit.snippet);
    // window 8: 2 before, the hit, 6 after.
    let shown: Vec<i64> = hit.messages.iter().map(|m| m.id).collect();
    assert_eq!(shown, ids[8..17].to_vec());
    assert!(hit.messages[2].anchor && !hit.messages[1].anchor);
    assert_eq!(hit.messages_before, 8);
    assert_eq!(hit.messages_after, 3);
}

#[test]
fn and_query_falls_back_to_or() {
    let d = db();
    d.session("a", "cli", None, &["apples are red"]);
    d.session("b", "cli", None, &["bananas are yellow"]);
    let r = discover(&d.conn(), "apples bananas", &opts(None)).unwrap();
    assert!(r.broadened);
    assert_eq!(r.count, 2);
    let r = discover(&d.conn(), "apples red", &opts(None)).unwrap();
    assert!(!r.broadened);
    assert_eq!(r.count, 1);
}

#[test]
fn chinese_phrase_found_through_trigram() {
    let d = db();
    d.session("zh", "cli", None, &["我们明天去北京看长城吧", "好的"]);
    let r = discover(&d.conn(), "北京看长城", &opts(None)).unwrap();
    assert_eq!(r.count, 1, "{r:?}");
    assert!(r.results[0].snippet.contains(">>>北京看长城<<<"));
    // Two characters: shorter than a trigram, found by LIKE.
    let r = discover(&d.conn(), "北京", &opts(None)).unwrap();
    assert_eq!(r.count, 1);
}

#[test]
fn hostile_queries_never_fail() {
    let d = db();
    d.session("s", "cli", None, &["foo bar baz"]);
    for q in [
        "\"foo AND (",
        "*",
        "NEAR",
        "NEAR(foo bar)",
        "foo\"",
        ")))",
        "-",
        "^",
        "AND OR NOT",
        "",
    ] {
        let r = discover(&d.conn(), q, &opts(None));
        assert!(r.is_ok(), "{q:?}: {r:?}");
    }
}

#[test]
fn lineage_is_reported_and_current_lineage_excluded() {
    let d = db();
    d.session("root", "cli", None, &["first part about quokkas"]);
    d.session("child", "cli", Some("root"), &["more quokkas here"]);
    d.session("other", "cli", None, &["quokkas elsewhere"]);
    d.session("sub", "subagent", None, &["quokkas in a subagent"]);
    let r = discover(&d.conn(), "quokkas", &opts(None)).unwrap();
    // root and child are one conversation; subagent is hidden.
    assert_eq!(r.count, 2, "{r:?}");
    let child_hit = r
        .results
        .iter()
        .find(|h| h.session.session_id != "other")
        .unwrap();
    if child_hit.session.session_id == "child" {
        assert_eq!(child_hit.session.lineage, vec!["root".to_string()]);
    }
    let r = discover(&d.conn(), "quokkas", &opts(Some("child"))).unwrap();
    let ids: Vec<&str> = r
        .results
        .iter()
        .map(|h| h.session.session_id.as_str())
        .collect();
    assert_eq!(ids, ["other"]);
}

#[test]
fn browse_read_and_scroll() {
    let d = db();
    d.session("old", "cli", None, &["hello"]);
    let texts: Vec<String> = (0..40).map(|i| format!("line {i}")).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let ids = d.session("long", "telegram", None, &refs);
    d.session("t", "tool", None, &["internal"]);
    let conn = d.conn();
    let list = browse(&conn, 10, Some("old")).unwrap();
    let names: Vec<&str> = list.iter().map(|s| s.session_id.as_str()).collect();
    assert_eq!(names, ["long"]);

    let r = read(&conn, "@session:default/long").unwrap().unwrap();
    assert_eq!(r.messages.len(), 30);
    assert_eq!(r.omitted, 10);
    assert_eq!(r.messages[29].content, "line 39");
    assert!(read(&conn, "nope").unwrap().is_none());
    // Unique prefix works.
    assert_eq!(
        read(&conn, "lon").unwrap().unwrap().session.session_id,
        "long"
    );

    let s = scroll(&conn, "long", ids[20], 2).unwrap().unwrap();
    let got: Vec<&str> = s.messages.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(got, ["line 18", "line 19", "line 20", "line 21", "line 22"]);
    assert_eq!((s.messages_before, s.messages_after), (18, 17));
}

#[test]
fn excerpt_centres_on_the_needle() {
    let text = format!("{}NEEDLE{}", "a".repeat(1000), "b".repeat(1000));
    let e = excerpt(&text, "needle", 100);
    assert!(
        e.contains("NEEDLE") && e.starts_with('…') && e.ends_with('…'),
        "{e}"
    );
    assert_eq!(excerpt("short", "x", 100), "short");
    assert_eq!(
        display_text(
            None,
            Some(
                r#"[{"id":"1","type":"function","function":{"name":"terminal","arguments":"{}"}}]"#
            )
        ),
        "[called terminal]"
    );
}
