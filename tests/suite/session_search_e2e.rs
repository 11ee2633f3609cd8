//! session_search end to end: a word said in session 1 is found from session 3 with its window
//! (the current session excluded), a Chinese phrase through the trigram index, FTS5 operators
//! never become errors, `hermes sessions search|stats|prune`, and a state.db written by Python
//! Hermes 0.19 is searchable by ours.

use std::path::Path;

use serde_json::{Value, json};

use crate::support::harness::{TestEnv, stderr, stdout};
use crate::support::mock_llm::{MockLlm, Reply};

fn run(env: &TestEnv, mock: &MockLlm, prompt: &str) {
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", prompt])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

/// The parsed tool results of request `i`.
fn tool_results(mock: &MockLlm, i: usize) -> Vec<Value> {
    mock.requests()[i]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            let text = m["content"].as_str().unwrap_or_default();
            serde_json::from_str(text).unwrap_or_else(|_| json!({"raw": text}))
        })
        .collect()
}

#[test]
fn finds_earlier_sessions_but_not_the_current_one() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script([
        Reply::text("The release goes out on Friday."),
        Reply::text("Noted, lunch at noon."),
        Reply::text("好的，长城很壮观。"),
        Reply::tool_calls([
            ("s1", "session_search", json!({"query": "capybara"})),
            ("s2", "session_search", json!({"query": "北京看长城"})),
            ("s3", "session_search", json!({"query": "\"foo AND ("})),
            ("s4", "session_search", json!({"query": "* NEAR capybara"})),
        ]),
        Reply::text("Found it."),
    ]);
    run(&env, &mock, "When does the capybara release go out?");
    run(&env, &mock, "Lunch is at noon");
    run(&env, &mock, "我们明天去北京看长城吧");
    run(&env, &mock, "what did we say about capybara?");
    let sessions = env.session_ids();
    assert_eq!(sessions.len(), 4);
    let results = tool_results(&mock, 4);
    assert_eq!(results.len(), 4);

    let en = &results[0];
    assert_eq!(en["mode"], "discover");
    assert_eq!(en["count"], 1, "{en}");
    let hit = &en["results"][0];
    assert_eq!(hit["session_id"], sessions[0].as_str());
    assert_eq!(hit["matched_role"], "user");
    assert!(
        hit["snippet"].as_str().unwrap().contains(">>>capybara<<<"),
        "{hit}"
    );
    let window: Vec<&str> = hit["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        window,
        [
            "When does the capybara release go out?",
            "The release goes out on Friday."
        ]
    );
    assert_eq!(hit["messages"][0]["anchor"], true);

    let zh = &results[1];
    assert_eq!(zh["count"], 1, "{zh}");
    assert_eq!(zh["results"][0]["session_id"], sessions[2].as_str());

    // Operator soup: a result list (maybe empty), never an error.
    for r in &results[2..] {
        assert_eq!(r["success"], true, "{r}");
        assert!(r["results"].is_array(), "{r}");
    }
    assert_eq!(results[3]["count"], 1, "{}", results[3]);
}

#[test]
fn sessions_search_stats_and_prune_commands() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script([Reply::text("The answer is 42.")]);
    run(&env, &mock, "What is the ultimate answer about marmots?");
    let out = env
        .bare_cmd()
        .args(["sessions", "search", "marmots", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["count"], 1, "{v}");
    let out = env
        .bare_cmd()
        .args(["sessions", "search", "marmots"])
        .output()
        .unwrap();
    assert!(stdout(&out).contains(">>>marmots<<<"), "{}", stdout(&out));

    let out = env
        .bare_cmd()
        .args(["sessions", "stats", "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["sessions"], 1);
    assert_eq!(v["messages"], 2);

    let out = env
        .bare_cmd()
        .args(["sessions", "prune", "--older-than", "1s", "--dry-run"])
        .output()
        .unwrap();
    // Freshly written: nothing is a second old yet, or it is listed but kept.
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(env.session_ids().len(), 1);
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let out = env
        .bare_cmd()
        .args(["sessions", "prune", "--older-than", "1s"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("deleted 1 sessions"),
        "{}",
        stdout(&out)
    );
    assert!(env.session_ids().is_empty());
    let out = env
        .bare_cmd()
        .args(["sessions", "prune", "--older-than", "soon"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("90d"), "{}", stderr(&out));
}

#[test]
fn python_written_state_db_is_searchable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/python-hermes-0.19-state.db"),
        &path,
    )
    .unwrap();
    let conn = hermes::sessions::search::open_read(&path).unwrap();
    let opts = hermes::sessions::search::DiscoverOptions::default();
    let found = hermes::sessions::search::discover(&conn, "docker", &opts).unwrap();
    assert_eq!(found.count, 1, "{found:?}");
    let hit = &found.results[0];
    assert_eq!(hit.session.source, "cli");
    assert!(
        hit.snippet.to_lowercase().contains(">>>docker<<<"),
        "{}",
        hit.snippet
    );
    // Tool output is searchable too, and reports its role.
    let found = hermes::sessions::search::discover(&conn, "compose.yaml", &opts).unwrap();
    assert_eq!(found.count, 1);
    let cjk = hermes::sessions::search::discover(&conn, "北京看长城", &opts).unwrap();
    assert_eq!(cjk.count, 1, "{cjk:?}");
    let read = hermes::sessions::search::read(&conn, &hit.session.session_id)
        .unwrap()
        .unwrap();
    assert!(read.messages.len() >= 5, "{read:?}");
}

#[test]
fn auxiliary_model_summarises_hits_when_configured() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script([
        Reply::text("Noted: the llamas arrive on Tuesday."),
        Reply::tool_call("q", "session_search", json!({"query": "llamas"})),
        Reply::text("One earlier conversation: the llamas arrive on Tuesday."),
        Reply::text("They arrive Tuesday."),
    ]);
    run(&env, &mock, "The llamas arrive on Tuesday");
    env.config(&format!(
            "auxiliary:\n  session_search:\n    provider: custom\n    model: aux-model\n    base_url: {}\n",
            mock.base_url()
        ));
    run(&env, &mock, "when do the llamas come?");
    assert_eq!(mock.request_count(), 4);
    let aux = &mock.requests()[2];
    assert_eq!(aux["model"], "aux-model");
    assert!(
        aux.get("tools")
            .is_none_or(|t| t.as_array().is_none_or(Vec::is_empty))
    );
    let prompt = aux["messages"].to_string();
    assert!(
        prompt.contains("The agent searched for: llamas"),
        "{prompt}"
    );
    let result = &tool_results(&mock, 3)[0];
    assert_eq!(result["count"], 1, "{result}");
    assert_eq!(
        result["summary"],
        "One earlier conversation: the llamas arrive on Tuesday."
    );
}

#[test]
fn reading_commands_answer_while_another_process_holds_the_write_lock() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script([Reply::text("Noted about the okapi.")]);
    run(&env, &mock, "remember the okapi plan");
    // Another writer (a running gateway, Python Hermes) in the middle of a write transaction.
    let writer = env.db();
    writer
        .execute_batch(
            "BEGIN IMMEDIATE; UPDATE sessions SET title = 'busy' WHERE title IS NULL OR title <> 'busy';",
        )
        .unwrap();
    for args in [
        &["sessions", "search", "okapi"][..],
        &["sessions", "list"],
        &["sessions", "stats"],
    ] {
        let out = env.bare_cmd().args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert!(
            !stderr(&out).contains("locked"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    let out = env
        .bare_cmd()
        .args(["sessions", "search", "okapi"])
        .output()
        .unwrap();
    assert!(stdout(&out).contains("okapi"), "{}", stdout(&out));
    writer.execute_batch("ROLLBACK;").unwrap();
}

/// Writes sessions and messages straight into `env`'s state.db (our schema and triggers, so the
/// FTS tables follow): `sessions` are (id, started_at, [message text]) in insertion order.
fn seed(env: &TestEnv, sessions: &[(&str, f64, Vec<String>)]) {
    let path = env.home_path().join("state.db");
    drop(hermes::sessions::SessionStore::open(&path).unwrap());
    let mut conn = rusqlite::Connection::open(&path).unwrap();
    let tx = conn.transaction().unwrap();
    for (id, started, messages) in sessions {
        tx.execute(
            "INSERT INTO sessions (id, source, started_at, message_count) VALUES (?1, 'cli', ?2, ?3)",
            rusqlite::params![id, started, messages.len() as i64],
        )
        .unwrap();
        for (i, text) in messages.iter().enumerate() {
            tx.execute(
                "INSERT INTO messages (session_id, role, content, timestamp, active) VALUES (?1, 'user', ?2, ?3, 1)",
                rusqlite::params![id, text, started + i as f64],
            )
            .unwrap();
        }
    }
    tx.commit().unwrap();
}

/// Session ids of `hermes sessions search QUERY --json`, best first.
fn searched(env: &TestEnv, query: &str) -> Vec<String> {
    let out = env
        .bare_cmd()
        .args(["sessions", "search", query, "--json", "--limit", "5"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["session_id"].as_str().unwrap().to_string())
        .collect()
}

/// The ranking rule (issue 14, search at scale): bm25 decides between matches; equal scores
/// keep FTS5's bm25 order (the older message first), as Python Hermes shows them.
#[test]
fn better_matches_first_and_equal_ones_oldest_first() {
    let env = TestEnv::new();
    let said = |s: &str| vec![s.to_string(), "nothing else to add".to_string()];
    seed(
        &env,
        &[
            ("old", 1.0e9, said("we moor at the blue harbour")),
            (
                "strong",
                1.1e9,
                said("blue harbour, blue harbour: the blue harbour"),
            ),
            ("new", 1.2e9, said("we moor at the blue harbour")),
            ("other", 1.3e9, said("the harbour is blue today")),
        ],
    );
    assert_eq!(searched(&env, "\"blue harbour\""), ["strong", "old", "new"]);
    // OR: the rarer word weighs more (its IDF), then equal matches oldest first.
    assert_eq!(searched(&env, "moor OR today"), ["other", "old", "new"]);
}

/// Bounded work: when a query matches more than the ranking window, only the newest window of
/// matches is ranked, so an old message — however well it matches — is not shown.
#[test]
fn only_the_newest_window_of_matches_is_ranked() {
    let env = TestEnv::new();
    let window = hermes::sessions::search::RANK_WINDOW as usize;
    let filler: Vec<String> = (0..window)
        .map(|i| format!("note {i}: we moor at the blue harbour"))
        .collect();
    seed(
        &env,
        &[
            (
                "ancient",
                1.0e9,
                vec!["blue harbour blue harbour blue harbour".to_string()],
            ),
            ("busy", 1.1e9, filler),
            (
                "latest",
                1.2e9,
                vec!["moor at the blue harbour".to_string()],
            ),
        ],
    );
    // "latest" is shorter than the filler, so it scores better; "ancient" would beat both.
    let found = searched(&env, "\"blue harbour\"");
    assert_eq!(found, ["latest", "busy"]);
    // The old message is still found by what only it says.
    assert_eq!(searched(&env, "\"harbour blue harbour\""), ["ancient"]);
}
