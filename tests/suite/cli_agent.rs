//! The agent loop end to end: the real binary against the scripted mock LLM.
//! Assertions look at stdout, at the *next* request the mock received, and at state.db.

use serde_json::{Value, json};

use crate::support::harness::{TestEnv, stderr, stdout};
use crate::support::mock_llm::{MockLlm, Reply};

/// The messages array of request `i`.
fn messages(mock: &MockLlm, i: usize) -> Vec<Value> {
    mock.requests()[i]["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The tool result messages of request `i`, in order.
fn tool_results(mock: &MockLlm, i: usize) -> Vec<Value> {
    messages(mock, i)
        .into_iter()
        .filter(|m| m["role"] == "tool")
        .collect()
}

fn last_tool_result(mock: &MockLlm, i: usize) -> String {
    tool_results(mock, i)
        .last()
        .and_then(|m| m["content"].as_str().map(str::to_string))
        .unwrap_or_default()
}

#[test]
fn one_tool_then_answer() {
    let env = TestEnv::new();
    env.write("hello.txt", "greetings from the file\n");
    let mock = MockLlm::with_script([
        Reply::tool_call("call_1", "read_file", json!({"path": "hello.txt"})),
        Reply::text("The file says: greetings from the file"),
    ]);
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "Read hello.txt and tell me what it says"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "The file says: greetings from the file\n");
    assert_eq!(mock.request_count(), 2);
    // The tool output was fed back, answering the call by id.
    let results = tool_results(&mock, 1);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["tool_call_id"], "call_1");
    assert!(
        results[0]["content"]
            .as_str()
            .unwrap()
            .contains("1|greetings from the file"),
        "{results:?}"
    );
    // Tools are offered, system prompt first, user message persisted and sent.
    let first = &mock.requests()[0];
    assert!(
        first["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["function"]["name"] == "read_file")
    );
    assert_eq!(first["messages"][0]["role"], "system");
    assert_eq!(
        first["messages"][1]["content"],
        "Read hello.txt and tell me what it says"
    );
}

#[test]
fn state_db_rows_match_the_conversation() {
    let env = TestEnv::new();
    env.write("a.txt", "alpha\n");
    let mock = MockLlm::with_script([
        Reply::tool_call("call_a", "read_file", json!({"path": "a.txt"})).with_usage(120, 7, 100),
        Reply::text("It says alpha.").with_usage(150, 5, 120),
    ]);
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "what is in a.txt?"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let rows = env.rows();
    let roles: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"]);
    assert_eq!(rows[0].1.as_deref(), Some("what is in a.txt?"));
    let calls: Value = serde_json::from_str(rows[1].2.as_deref().unwrap()).unwrap();
    assert_eq!(calls[0]["id"], "call_a");
    assert_eq!(calls[0]["type"], "function");
    assert_eq!(calls[0]["function"]["name"], "read_file");
    let args: Value =
        serde_json::from_str(calls[0]["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"path": "a.txt"}));
    assert_eq!(rows[2].3.as_deref(), Some("call_a"));
    assert_eq!(rows[2].4.as_deref(), Some("read_file"));
    assert!(rows[2].1.as_deref().unwrap().contains("alpha"));
    assert_eq!(rows[3].1.as_deref(), Some("It says alpha."));
    // Session row: counters, tokens, frozen prompt equal to what was sent.
    let db = env.db();
    let (count, tools, input, output, cached, calls_n, prompt, source): (i64, i64, i64, i64, i64, i64, String, String) = db
        .query_row(
            "SELECT message_count, tool_call_count, input_tokens, output_tokens, cache_read_tokens, api_call_count, system_prompt, source FROM sessions",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?)),
        )
        .unwrap();
    assert_eq!((count, tools), (4, 1));
    assert_eq!((input, output, cached, calls_n), (270, 12, 220, 2));
    assert_eq!(source, "cli");
    assert_eq!(
        prompt,
        mock.requests()[0]["messages"][0]["content"]
            .as_str()
            .unwrap()
    );
}

#[test]
fn ten_tool_rounds() {
    let env = TestEnv::new();
    // Only the conversation's own requests are scripted: keep the skill-review nudge out of it.
    env.config("skills:\n  creation_nudge_interval: 1000\n");
    let mut script: Vec<Reply> = (0..10)
        .map(|i| {
            env.write(&format!("f{i}.txt"), &format!("content {i}\n"));
            Reply::tool_call(
                &format!("call_{i}"),
                "read_file",
                json!({"path": format!("f{i}.txt")}),
            )
        })
        .collect();
    script.push(Reply::text("Read all ten."));
    let mock = MockLlm::with_script(script);
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "read them all"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Read all ten.\n");
    assert_eq!(mock.request_count(), 11);
    // Every request carries every earlier call and its result; the last one has all ten.
    let results = tool_results(&mock, 10);
    assert_eq!(results.len(), 10);
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r["tool_call_id"], format!("call_{i}"));
        assert!(
            r["content"]
                .as_str()
                .unwrap()
                .contains(&format!("content {i}"))
        );
    }
    // The prefix is stable: request 10 starts with exactly request 1's messages.
    let early = messages(&mock, 1);
    assert_eq!(&messages(&mock, 10)[..early.len()], &early[..]);
}

#[test]
fn two_parallel_read_only_calls_keep_call_order() {
    let env = TestEnv::new();
    env.write("one.txt", "first file\n");
    env.write("two.txt", "second file\n");
    let mock = MockLlm::with_script([
        Reply::tool_calls([
            ("call_x", "read_file", json!({"path": "one.txt"})),
            (
                "call_y",
                "search_files",
                json!({"pattern": "second", "path": "."}),
            ),
        ]),
        Reply::text("done"),
    ]);
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "read both"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let results = tool_results(&mock, 1);
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["tool_call_id"], "call_x");
    assert!(
        results[0]["content"]
            .as_str()
            .unwrap()
            .contains("first file")
    );
    assert_eq!(results[1]["tool_call_id"], "call_y");
    assert!(results[1]["content"].as_str().unwrap().contains("two.txt"));
}

#[test]
fn unknown_tool_is_reported_to_the_model() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script([
        Reply::tool_call("call_1", "teleport", json!({"to": "mars"})),
        Reply::text("I cannot teleport."),
    ]);
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "go"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "I cannot teleport.\n");
    let result = last_tool_result(&mock, 1);
    assert!(
        result.contains("unknown tool `teleport`") && result.contains("read_file"),
        "{result}"
    );
}

#[test]
fn malformed_arguments_are_reported_to_the_model() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script([
        Reply::tool_calls([(
            "call_1",
            "read_file",
            Value::String("{\"path\": \"a.txt\"".into()),
        )]),
        Reply::tool_call("call_2", "read_file", json!({"file": "a.txt"})),
        Reply::text("Gave up."),
    ]);
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "go"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let bad_json = last_tool_result(&mock, 1);
    assert!(bad_json.contains("not valid JSON"), "{bad_json}");
    let bad_field = last_tool_result(&mock, 2);
    assert!(
        bad_field.contains("invalid arguments for read_file") && bad_field.contains("path"),
        "{bad_field}"
    );
}

#[test]
fn budget_exhaustion_asks_for_a_summary_without_tools() {
    let env = TestEnv::new();
    env.write("x.txt", "x\n");
    let mock = MockLlm::with_script([
        Reply::tool_call("c1", "read_file", json!({"path": "x.txt"})),
        Reply::tool_call("c2", "read_file", json!({"path": "x.txt"})),
        Reply::text("Summary: I read x.txt twice."),
    ]);
    let out = env
        .cmd(&mock.base_url())
        .args(["--max-turns", "2", "-z", "loop"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Summary: I read x.txt twice.\n");
    assert_eq!(mock.request_count(), 3);
    let last = &mock.requests()[2];
    assert!(
        last.get("tools")
            .is_none_or(|t| t.as_array().is_none_or(Vec::is_empty)),
        "{last}"
    );
    let final_user = messages(&mock, 2).last().cloned().unwrap();
    assert_eq!(final_user["role"], "user");
    assert!(final_user["content"].as_str().unwrap().contains("budget"));
    // Both tool calls were answered before the summary was requested.
    assert_eq!(tool_results(&mock, 2).len(), 2);
}

#[test]
fn rate_limit_then_success() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script([
        Reply::error(
            429,
            r#"{"error":{"message":"Rate limit reached","type":"rate_limit_error"}}"#,
        )
        .header("retry-after", "0"),
        Reply::error(429, r#"{"error":{"message":"Rate limit reached"}}"#)
            .header("retry-after", "0.05"),
        Reply::text("Finally."),
    ]);
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "hi"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Finally.\n");
    assert_eq!(mock.request_count(), 3);
}

#[test]
fn rate_limit_storm_exits_non_zero_with_the_provider_message() {
    let env = TestEnv::new();
    let storm: Vec<Reply> = (0..10)
        .map(|_| {
            Reply::error(
                429,
                r#"{"error":{"message":"You are being rate limited by ACME"}}"#,
            )
            .header("retry-after", "0")
        })
        .collect();
    let mock = MockLlm::with_script(storm);
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "hi"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(out.stdout.is_empty(), "no answer, nothing on stdout");
    let err = stderr(&out);
    assert!(
        err.contains("You are being rate limited by ACME") && err.contains("429"),
        "{err}"
    );
    // At least 5 retries for rate limits.
    assert!(mock.request_count() >= 6, "{}", mock.request_count());
}

#[test]
fn stream_cut_then_retry_stores_one_answer() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script([Reply::cut_after(3), Reply::text("Complete answer.")]);
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "hi"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Complete answer.\n");
    let rows = env.rows();
    let roles: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(
        roles,
        ["user", "assistant"],
        "no duplicated or partial message"
    );
    assert_eq!(rows[1].1.as_deref(), Some("Complete answer."));
}

#[test]
fn auth_error_body_reaches_the_user_without_retries() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script([Reply::error(
        401,
        r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}"#,
    )]);
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "hi"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("Incorrect API key provided") && err.contains("auth"),
        "{err}"
    );
    assert_eq!(mock.request_count(), 1, "auth errors are not retried");
}

#[test]
fn dangerous_command_refused_in_oneshot_and_allowed_with_yolo() {
    for yolo in [false, true] {
        let env = TestEnv::new();
        let victim = env.write("build/keep.txt", "precious\n");
        let mock = MockLlm::with_script([
            Reply::tool_call("c1", "terminal", json!({"command": "rm -rf build"})),
            Reply::text("ok"),
        ]);
        let mut cmd = env.cmd(&mock.base_url());
        if yolo {
            cmd.arg("--yolo");
        }
        let out = cmd.args(["-z", "clean up"]).output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let result = last_tool_result(&mock, 1);
        if yolo {
            assert!(!victim.exists(), "with --yolo the command runs: {result}");
        } else {
            assert!(victim.exists(), "refused without --yolo: {result}");
            assert!(result.contains("--yolo"), "{result}");
        }
    }
}

#[test]
fn hardline_command_refused_even_with_yolo() {
    // Chosen so that a broken gate still cannot hurt the machine: GNU rm refuses `/` on its own
    // (--preserve-root) and the mkfs target does not exist. The assertions tell the two apart.
    let env = TestEnv::new();
    let commands = [
        "rm -rf /",
        "bash -c 'r\"\"m -r\"\"f /'",
        "mkfs.ext4 /dev/hermes-test-nonexistent",
    ];
    let mut script: Vec<Reply> = commands
        .iter()
        .enumerate()
        .map(|(i, c)| Reply::tool_call(&format!("c{i}"), "terminal", json!({"command": c})))
        .collect();
    script.push(Reply::text("refused"));
    let mock = MockLlm::with_script(script);
    let out = env
        .cmd(&mock.base_url())
        .args(["--yolo", "-z", "wipe the disk"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    for (i, command) in commands.iter().enumerate() {
        let r = last_tool_result(&mock, i + 1);
        assert!(r.to_lowercase().contains("block"), "{command}: {r}");
        assert!(!r.contains("exit code"), "{command} ran: {r}");
    }
}

#[test]
fn resume_reuses_the_identical_system_prompt() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script([Reply::text("first answer"), Reply::text("second answer")]);
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "first question"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let id = env.session_ids().pop().unwrap();
    // Change what a fresh prompt would contain: a project context file and SOUL.md.
    env.write("AGENTS.md", "New project rules that did not exist before.");
    std::fs::write(env.home_path().join("SOUL.md"), "You are someone else now.").unwrap();
    let out = env
        .cmd(&mock.base_url())
        .args(["-r", &id, "-z", "second question"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "second answer\n");
    let first_system = mock.requests()[0]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    let second = messages(&mock, 1);
    assert_eq!(
        second[0]["content"].as_str().unwrap().as_bytes(),
        first_system.as_bytes()
    );
    // The earlier exchange is replayed before the new question.
    let texts: Vec<&str> = second
        .iter()
        .skip(1)
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(texts, ["first question", "first answer", "second question"]);
    assert_eq!(
        env.session_ids().len(),
        1,
        "resume does not create a session"
    );
}

#[test]
fn chat_query_prints_answer_and_session_id() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script([Reply::text("Paris.")]);
    let out = env
        .cmd(&mock.base_url())
        .args(["chat", "-q", "Capital of France?"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let id = env.session_ids().pop().unwrap();
    let text = stdout(&out);
    assert!(text.starts_with("Paris.\n"), "{text}");
    assert!(text.contains(&format!("session_id: {id}")), "{text}");
}

#[test]
fn continue_picks_the_latest_session() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script([Reply::text("one"), Reply::text("two")]);
    assert!(
        env.cmd(&mock.base_url())
            .args(["-z", "q1"])
            .output()
            .unwrap()
            .status
            .success()
    );
    let out = env
        .cmd(&mock.base_url())
        .args(["-c", "-z", "q2"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(env.session_ids().len(), 1);
    assert_eq!(messages(&mock, 1).len(), 4, "system + q1 + one + q2");
}

#[test]
fn fts_indexes_find_words_and_cjk_phrases() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script([Reply::text(
        "天气很好，我们去公园散步吧 and the zebra agrees",
    )]);
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "tell me about xylophones"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let db = env.db();
    let count = |sql: &str, q: &str| -> i64 { db.query_row(sql, [q], |r| r.get(0)).unwrap() };
    assert_eq!(
        count(
            "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?1",
            "xylophones"
        ),
        1
    );
    assert_eq!(
        count(
            "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?1",
            "zebra"
        ),
        1
    );
    assert_eq!(
        count(
            "SELECT count(*) FROM messages_fts_trigram WHERE messages_fts_trigram MATCH ?1",
            "xylophones"
        ),
        1
    );
    assert_eq!(
        count(
            "SELECT count(*) FROM messages_fts_trigram WHERE messages_fts_trigram MATCH ?1",
            "\"去公园散步\""
        ),
        1
    );
}

#[test]
fn sessions_commands_list_show_export_delete() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script([Reply::text("An answer about owls.")]);
    assert!(
        env.cmd(&mock.base_url())
            .args(["-z", "owls?"])
            .output()
            .unwrap()
            .status
            .success()
    );
    let id = env.session_ids().pop().unwrap();

    let out = env
        .bare_cmd()
        .args(["sessions", "list", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list[0]["id"], id);
    assert_eq!(list[0]["message_count"], 2);

    let out = env
        .bare_cmd()
        .args(["sessions", "show", &id])
        .output()
        .unwrap();
    assert!(stdout(&out).contains("An answer about owls."));

    let out = env
        .bare_cmd()
        .args(["sessions", "export", &id, "--format", "jsonl"])
        .output()
        .unwrap();
    let line: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(line["id"], id);
    assert_eq!(line["messages"][1]["content"], "An answer about owls.");

    let out = env
        .bare_cmd()
        .args(["sessions", "export", &id, "--format", "md"])
        .output()
        .unwrap();
    assert!(stdout(&out).contains("## Assistant"), "{}", stdout(&out));

    let out = env
        .bare_cmd()
        .args(["sessions", "delete", &id, "--yes"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(env.session_ids().is_empty());
    let n: i64 = env
        .db()
        .query_row("SELECT count(*) FROM messages", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 0);
}

#[test]
fn text_only_tool_calls_are_executed() {
    let env = TestEnv::new();
    env.write("notes.txt", "remember the milk\n");
    let mock = MockLlm::with_script([
        Reply::text_raw_content(
            "Let me look.\n<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.txt\"}}</tool_call>",
        ),
        Reply::text("It says to remember the milk."),
    ]);
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "what do my notes say?"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "It says to remember the milk.\n");
    assert!(last_tool_result(&mock, 1).contains("remember the milk"));
}

#[test]
fn toolsets_flag_limits_the_offered_tools() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script([Reply::text("ok")]);
    let out = env
        .cmd(&mock.base_url())
        .args(["-t", "file", "-z", "hi"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let names: Vec<String> = mock.requests()[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect();
    // Containment, not an exact list: a new file tool joins by its own TOOLSET.
    for t in ["patch", "read_file", "search_files", "write_file"] {
        assert!(names.iter().any(|n| n == t), "{t} missing from {names:?}");
    }
    for t in ["terminal", "todo", "memory", "delegate_task"] {
        assert!(
            !names.iter().any(|n| n == t),
            "{t} offered by -t file: {names:?}"
        );
    }
}

#[test]
fn html_error_pages_are_retried_then_shown() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script((0..4).map(|_| Reply::html_error(502)));
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "hi"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    let err = stderr(&out);
    assert!(
        err.contains("502 Bad Gateway") && err.contains("server_error"),
        "{err}"
    );
    assert_eq!(mock.request_count(), 4, "one try and three retries");
}

#[test]
fn request_prefix_is_byte_stable_across_rounds() {
    let env = TestEnv::new();
    env.config("skills:\n  creation_nudge_interval: 1000\n");
    let mut script: Vec<Reply> = (0..10)
        .map(|i| {
            env.write(&format!("p{i}.txt"), &format!("page {i}\n"));
            Reply::tool_call(
                &format!("call_{i}"),
                "read_file",
                json!({"path": format!("p{i}.txt")}),
            )
        })
        .collect();
    script.push(Reply::text("done"));
    let mock = MockLlm::with_script(script);
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "read the pages"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = mock.requests();
    assert_eq!(requests.len(), 11);
    let bytes = |v: &Value| serde_json::to_vec(v).unwrap();
    for pair in requests.windows(2) {
        let (before, after) = (&pair[0], &pair[1]);
        assert_eq!(
            bytes(&before["tools"]),
            bytes(&after["tools"]),
            "tools changed"
        );
        let (mb, ma) = (
            before["messages"].as_array().unwrap(),
            after["messages"].as_array().unwrap(),
        );
        assert!(ma.len() > mb.len());
        for (x, y) in mb.iter().zip(ma) {
            assert_eq!(bytes(x), bytes(y), "an earlier message changed");
        }
    }
}
