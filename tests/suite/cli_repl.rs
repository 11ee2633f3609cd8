//! The interactive REPL driven through a pipe: answers, slash commands, approval questions.

use serde_json::json;

use crate::support::harness::{TestEnv, stderr, stdout};
use crate::support::mock_llm::{MockLlm, Reply};

#[test]
fn repl_answers_and_runs_slash_commands() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script([Reply::text("Hello from the model.")]);
    let out = env
        .cmd(&mock.base_url())
        .write_stdin("hi there\n/tools\n/usage\n/frobnicate\n/quit\n")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("Hello from the model."), "{text}");
    assert!(
        text.contains("read_file") && text.contains("terminal"),
        "{text}"
    );
    assert!(text.contains("model calls"), "{text}");
    assert!(text.contains("unknown command /frobnicate"), "{text}");
    assert!(text.contains("resume with: hermes -r"), "{text}");
    let rows = env.rows();
    assert_eq!(rows.len(), 2);
}

#[test]
fn repl_approval_once_runs_and_deny_refuses() {
    for (answer, should_run) in [("o", true), ("d", false), ("", false)] {
        let env = TestEnv::new();
        let victim = env.write("build/keep.txt", "precious\n");
        let mock = MockLlm::with_script([
            Reply::tool_call("c1", "terminal", json!({"command": "rm -rf build"})),
            Reply::text("finished"),
        ]);
        // An empty answer line means "default", which is deny; EOF is also deny.
        let input = format!("clean the build dir\n{answer}\n/quit\n");
        let out = env
            .cmd(&mock.base_url())
            .write_stdin(input)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let text = stdout(&out);
        assert!(text.contains("DANGEROUS COMMAND"), "{text}");
        assert_eq!(!victim.exists(), should_run, "answer {answer:?}: {text}");
        let result = mock.requests()[1]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .rfind(|m| m["role"] == "tool")
            .unwrap()["content"]
            .as_str()
            .unwrap()
            .to_string();
        if !should_run {
            assert!(result.to_lowercase().contains("denied"), "{result}");
        }
    }
}

#[test]
fn approval_prompt_at_end_of_input_denies() {
    let env = TestEnv::new();
    let victim = env.write("build/keep.txt", "precious\n");
    let mock = MockLlm::with_script([
        Reply::tool_call("c1", "terminal", json!({"command": "rm -rf build"})),
        Reply::text("finished"),
    ]);
    let out = env
        .cmd(&mock.base_url())
        .write_stdin("clean up\n")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(victim.exists());
}

#[test]
fn retry_and_undo_rewrite_the_conversation() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script([Reply::text("first try"), Reply::text("second try")]);
    let out = env
        .cmd(&mock.base_url())
        .write_stdin("question one\n/retry\n/undo\n/quit\n")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // The retried request no longer carries the first answer.
    let retried = mock.requests()[1]["messages"].as_array().unwrap().clone();
    let texts: Vec<&str> = retried
        .iter()
        .skip(1)
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(texts, ["question one"]);
    // After /undo nothing is active, but the rows are still in state.db.
    assert!(env.rows().is_empty());
    let all: i64 = env
        .db()
        .query_row("SELECT count(*) FROM messages", [], |r| r.get(0))
        .unwrap();
    assert_eq!(all, 4);
}

#[test]
fn new_starts_a_second_session() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script([Reply::text("a"), Reply::text("b")]);
    let out = env
        .cmd(&mock.base_url())
        .write_stdin("one\n/new\ntwo\n/quit\n")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(env.session_ids().len(), 2);
    assert_eq!(mock.requests()[1]["messages"].as_array().unwrap().len(), 2);
}
