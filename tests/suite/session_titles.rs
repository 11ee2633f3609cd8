//! Session titles and the session list (issue 14): a title after the first exchange (from the
//! first message, or from `auxiliary.title_generation.model`), `/title`, `sessions rename`,
//! `-r TITLE`, and `sessions list` with title, count, last active and preview — its `--json`
//! lean (no system prompt).

use serde_json::Value;

use crate::support::harness::{TestEnv, stderr, stdout};
use crate::support::mock_llm::{MockLlm, Reply};

fn one_shot(env: &TestEnv, mock: &MockLlm, args: &[&str]) -> std::process::Output {
    let out = env.cmd(&mock.base_url()).args(args).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    out
}

fn list_json(env: &TestEnv) -> Vec<Value> {
    let out = env
        .bare_cmd()
        .args(["sessions", "list", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_str::<Value>(&stdout(&out))
        .unwrap()
        .as_array()
        .cloned()
        .unwrap()
}

#[test]
fn first_exchange_titles_the_session_and_list_shows_it() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script([Reply::text("Spring is lovely there.")]);
    one_shot(
        &env,
        &mock,
        &["-z", "Plan a trip to Kyoto next spring\nwith details"],
    );
    let list = list_json(&env);
    assert_eq!(list.len(), 1);
    let s = &list[0];
    assert_eq!(s["title"], "Plan a trip to Kyoto next spring");
    assert_eq!(s["message_count"], 2);
    assert_eq!(
        s["preview"],
        "Plan a trip to Kyoto next spring with details"
    );
    assert!(s["last_active"].as_f64().unwrap() >= s["started_at"].as_f64().unwrap());
    // Lean: no system prompt, no message bodies.
    assert!(s.get("system_prompt").is_none(), "{s}");
    assert!(
        !stdout_of_list(&env).contains("You are"),
        "system prompt leaked"
    );

    let table = stdout_of_list(&env);
    let header = table.lines().next().unwrap();
    for col in ["ID", "TITLE", "MSGS", "LAST ACTIVE", "PREVIEW"] {
        assert!(header.contains(col), "{table}");
    }
    assert!(
        table.contains("Plan a trip to Kyoto next spring"),
        "{table}"
    );

    // The same first message in a new session gets a numbered title (titles are unique).
    let mock = MockLlm::with_script([Reply::text("Again.")]);
    one_shot(&env, &mock, &["-z", "Plan a trip to Kyoto next spring"]);
    let titles: Vec<String> = list_json(&env)
        .iter()
        .map(|s| s["title"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(
        titles.contains(&"Plan a trip to Kyoto next spring #2".to_string()),
        "{titles:?}"
    );
}

fn stdout_of_list(env: &TestEnv) -> String {
    let out = env.bare_cmd().args(["sessions", "list"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
}

#[test]
fn rename_then_resume_by_title() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script([Reply::text("noted"), Reply::text("still here")]);
    one_shot(&env, &mock, &["-z", "remember the number 42"]);
    let id = env.session_ids().pop().unwrap();

    let out = env
        .bare_cmd()
        .args(["sessions", "rename", &id, "Number", "notes"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("\"Number notes\""),
        "{}",
        stdout(&out)
    );

    one_shot(&env, &mock, &["-r", "Number notes", "-z", "what number?"]);
    assert_eq!(
        env.session_ids(),
        vec![id.clone()],
        "resumed, not a new session"
    );
    // The earlier exchange was sent along: the session really was resumed.
    let msgs = mock.requests()[1]["messages"].to_string();
    assert!(msgs.contains("remember the number 42"), "{msgs}");
    // A manual title is not replaced by the automatic one.
    assert_eq!(list_json(&env)[0]["title"], "Number notes");

    // A title another session holds is refused, clearly, and nothing changes.
    let mock = MockLlm::with_script([Reply::text("ok")]);
    one_shot(&env, &mock, &["-z", "another conversation"]);
    let other = env.session_ids().into_iter().find(|s| *s != id).unwrap();
    let out = env
        .bare_cmd()
        .args(["sessions", "rename", &other, "Number notes"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("already used by session"),
        "{}",
        stderr(&out)
    );
    let out = env
        .bare_cmd()
        .args(["sessions", "rename", "no-such-session", "x"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("no session matches"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn slash_title_shows_and_sets() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script([Reply::text("Hello.")]);
    let out = env
        .cmd(&mock.base_url())
        .write_stdin("hi there, how are you\n/title\n/title My greeting chat\n/title\n/quit\n")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("title: hi there, how are you"), "{text}");
    assert!(text.contains("title set: My greeting chat"), "{text}");
    assert!(text.contains("title: My greeting chat"), "{text}");
    assert_eq!(list_json(&env)[0]["title"], "My greeting chat");
}

#[test]
fn auxiliary_model_writes_the_title() {
    let env = TestEnv::new();
    env.config("auxiliary:\n  title_generation:\n    model: tiny-titler\n    timeout: 10\n");
    let mock = MockLlm::with_script([
        Reply::text("Take the train from Tokyo."),
        Reply::text("Title: \"Kyoto Travel Plans\""),
    ]);
    one_shot(&env, &mock, &["-z", "how do I get to kyoto"]);
    assert_eq!(mock.request_count(), 2);
    let title_request = &mock.requests()[1];
    assert_eq!(title_request["model"], "tiny-titler");
    assert!(
        title_request["messages"]
            .to_string()
            .contains("how do I get to kyoto"),
        "{title_request}"
    );
    assert_eq!(list_json(&env)[0]["title"], "Kyoto Travel Plans");
}
