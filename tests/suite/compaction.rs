//! Compaction through the real binary: a context-overflow error compacts and retries on the same
//! model; when the summary call fails a fallback summary is used; no row is ever deleted and the
//! originals stay searchable.

use serde_json::Value;

use crate::support::harness::{TestEnv, stderr, stdout};
use crate::support::mock_llm::{MockLlm, Reply};

const CONFIG: &str = "model:\n  context_length: 2000\ncompression:\n  threshold: 0.95\n  protect_first_n: 1\n  protect_last_n: 3\n";

fn count(env: &TestEnv, sql: &str) -> i64 {
    env.db().query_row(sql, [], |r| r.get(0)).unwrap()
}

#[test]
fn overflow_compacts_with_fallback_summary_and_loses_nothing() {
    let env = TestEnv::new();
    env.config(CONFIG);
    let filler =
        "This is a fairly long answer that takes up room in the context window. ".repeat(11);
    let mut script: Vec<Reply> = (0..4)
        .map(|i| Reply::text(format!("answer {i}: {filler}")))
        .collect();
    script.push(Reply::error(
        400,
        r#"{"error":{"message":"This model's maximum context length is 2000 tokens","code":"context_length_exceeded"}}"#,
    ));
    script.push(Reply::error(
        500,
        r#"{"error":{"message":"summariser is down"}}"#,
    ));
    script.push(Reply::text("the final answer"));
    let mock = MockLlm::with_script(script);

    let questions = [
        "tell me about the quokka",
        "and the wombat?",
        "and the numbat?",
        "and the bilby?",
    ];
    for (i, q) in questions.iter().enumerate() {
        let mut cmd = env.cmd(&mock.base_url());
        cmd.args(["-t", "todo"]);
        if i > 0 {
            cmd.arg("-c");
        }
        let out = cmd.args(["-z", q]).output().unwrap();
        assert!(out.status.success(), "turn {i}: {}", stderr(&out));
    }
    let rows_before = count(&env, "SELECT count(*) FROM messages");
    assert_eq!(rows_before, 8);

    let out = env
        .cmd(&mock.base_url())
        .args(["-t", "todo", "-c", "-z", "and the echidna?"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "the final answer\n");
    assert_eq!(mock.request_count(), 7, "overflow, summary attempt, retry");

    // The retry went to the same model with a shorter, summarised history.
    let requests = mock.requests();
    let (overflowed, retried) = (&requests[4], &requests[6]);
    assert_eq!(retried["model"], overflowed["model"]);
    let len = |r: &Value| r["messages"].as_array().unwrap().len();
    assert!(
        len(retried) < len(overflowed),
        "{} vs {}",
        len(retried),
        len(overflowed)
    );
    let retried_text = retried["messages"].to_string();
    assert!(
        retried_text.to_lowercase().contains("summar"),
        "{retried_text}"
    );
    assert!(retried_text.contains("and the echidna?"));

    // Nothing was deleted: every original row is still there, archived and searchable.
    let rows_after = count(&env, "SELECT count(*) FROM messages");
    assert!(
        rows_after >= rows_before + 2,
        "{rows_before} -> {rows_after}"
    );
    assert!(
        count(
            &env,
            "SELECT count(*) FROM messages WHERE active = 0 AND compacted = 1"
        ) > 0
    );
    assert_eq!(
        count(
            &env,
            "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'quokka'"
        ),
        count(
            &env,
            "SELECT count(*) FROM messages m WHERE m.content LIKE '%quokka%'"
        ),
    );
    assert!(
        count(
            &env,
            "SELECT count(*) FROM messages WHERE content LIKE '%quokka%' AND active = 0"
        ) >= 1
    );
}

#[test]
fn manual_compress_in_the_repl() {
    let env = TestEnv::new();
    env.config(CONFIG);
    let filler = "Room-filling words for the context window. ".repeat(19);
    let mut script: Vec<Reply> = (0..4)
        .map(|i| Reply::text(format!("reply {i}: {filler}")))
        .collect();
    script.push(Reply::text(
        "## Goal\nTalk about animals.\n## Completed Actions\n1. answered four questions",
    ));
    let mock = MockLlm::with_script(script);
    let out = env
        .cmd(&mock.base_url())
        .args(["-t", "todo"])
        .write_stdin("one\ntwo\nthree\nfour\n/compress animals\n/quit\n")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("compacted"), "{text}");
    // The summary request carried the focus topic and offered no tools.
    let summary_request = &mock.requests()[4];
    assert!(
        summary_request
            .get("tools")
            .is_none_or(|t| t.as_array().is_none_or(Vec::is_empty))
    );
    assert!(summary_request["messages"].to_string().contains("animals"));
}
