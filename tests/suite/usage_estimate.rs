//! A provider that reports no usage (llama.cpp-style servers ignore
//! `stream_options.include_usage`): hermes counts the tokens itself, marks them as estimated
//! (state.db, `/usage`, `insights`) and the token cap still stops a session (issue 14).

use serde_json::{Value, json};

use crate::support::harness::{TestEnv, stderr, stdout};
use crate::support::mock_llm::{MockLlm, Reply};

fn session_tokens(env: &TestEnv) -> (i64, i64) {
    env.db()
        .query_row(
            "SELECT input_tokens, output_tokens FROM sessions",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap()
}

#[test]
fn no_usage_from_the_server_is_estimated_and_marked() {
    let env = TestEnv::new();
    env.write("notes.txt", "the meeting moved to thursday\n");
    let mock = MockLlm::with_script([
        Reply::tool_call("c1", "read_file", json!({"path": "notes.txt"})).without_usage(),
        Reply::text("The meeting is on Thursday.").without_usage(),
    ]);
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "when is the meeting?"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // The mock really sent none although it was asked to.
    assert_eq!(mock.requests()[0]["stream_options"]["include_usage"], true);
    let (input, output) = session_tokens(&env);
    assert!(
        input > 100,
        "the system prompt and tools alone are more: {input}"
    );
    assert!(output > 0, "{output}");
    // Marked in the ledger: the per-model row says the tokens were estimated.
    let (mode, calls, tokens): (String, i64, i64) = env
        .db()
        .query_row(
            "SELECT billing_mode, api_call_count, input_tokens + output_tokens FROM session_model_usage",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(mode, "estimated_tokens");
    assert_eq!(calls, 2);
    assert_eq!(tokens, input + output);

    let out = env.bare_cmd().args(["insights"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("estimated by hermes"),
        "{}",
        stdout(&out)
    );
    let out = env
        .bare_cmd()
        .args(["insights", "--json"])
        .output()
        .unwrap();
    let insights: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(insights["estimated_tokens"], input + output);
    assert_eq!(insights["by_model"][0]["estimated_tokens"], input + output);
}

#[test]
fn reported_usage_is_not_marked_estimated() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script([Reply::text("hello").with_usage(1234, 56, 0)]);
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "hi"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(session_tokens(&env), (1234, 56));
    let mode: String = env
        .db()
        .query_row("SELECT billing_mode FROM session_model_usage", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(mode, "");
}

#[test]
fn estimated_tokens_count_toward_the_session_cap_and_usage_says_so() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script([Reply::text("first answer").without_usage()]);
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "remember: the code word is heron"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let id = env.session_ids().pop().unwrap();
    let (input, output) = session_tokens(&env);
    let used = input + output;

    // /usage in the REPL says which tokens are estimates.
    let mock = MockLlm::start();
    let out = env
        .cmd(&mock.base_url())
        .args(["-r", &id])
        .write_stdin("/usage\n/quit\n")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(&format!("{used} of these tokens are estimated")),
        "{}",
        stdout(&out)
    );

    // A cap one token above what was used: the next call (a prompt about the size of the first
    // one, far below the cap alone) would pass it only because the estimated tokens count.
    env.config(&format!("budget:\n  session_tokens: {}\n", used + 1));
    let mock = MockLlm::with_script([Reply::text("never sent").without_usage()]);
    let out = env
        .cmd(&mock.base_url())
        .args(["-r", &id, "-z", "what was the code word?"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains(&format!("this session has used {used} tokens")),
        "{}",
        stderr(&out)
    );
    assert_eq!(mock.request_count(), 0);
}
