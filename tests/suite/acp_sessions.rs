//! `hermes acp` session operations beyond new/load: `session/fork` (a new session with a copy of
//! the conversation, its parent recorded, from an open session and from a stored one) and
//! `session/set_mode` (what a session does without asking; no mode passes the hardline floor or
//! the protected paths; a mode set is kept when the session is opened again by a later connection).

use serde_json::{Value, json};

use crate::support::acp_editor::{Editor, prompt};
use crate::support::harness::TestEnv;
use crate::support::mock_llm::{MockLlm, Reply};

/// Produced at run time: the classifier cannot say what it runs, so it must ask.
const GENERATED: &str = "$(printf rm) -rf build";

fn ids(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect()
}

fn parent_of(env: &TestEnv, id: &str) -> (Option<String>, String) {
    env.db()
        .query_row(
            "SELECT parent_session_id, source FROM sessions WHERE id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap()
}

#[test]
fn a_fork_carries_the_conversation_and_names_its_parent() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script([Reply::text("noted")]);
    let mut editor = Editor::start(&env, &mock);
    let init = editor.initialize();
    assert_eq!(
        init["agentCapabilities"]["sessionCapabilities"]["fork"],
        json!({}),
        "{init}"
    );
    let parent = editor.new_session(env.cwd.path());
    editor.call(
        "session/prompt",
        prompt(&parent, "remember the word kumquat"),
    );
    let r = editor.call(
        "session/set_mode",
        json!({"sessionId": parent, "modeId": "accept_edits"}),
    );
    assert!(r.get("error").is_none(), "{r}");

    let forked = editor.call(
        "session/fork",
        json!({"sessionId": parent, "cwd": env.cwd.path(), "mcpServers": []}),
    );
    assert!(forked.get("error").is_none(), "{forked}");
    let fork = forked["result"]["sessionId"].as_str().unwrap().to_string();
    assert_ne!(fork, parent);
    // In the original's mode.
    assert_eq!(forked["result"]["modes"]["currentModeId"], "accept_edits");
    assert_eq!(forked["result"]["configOptions"][0]["id"], "model");

    // The fork knows the earlier turn; the parent does not learn the fork's.
    mock.push(Reply::text("kumquat"));
    editor.call("session/prompt", prompt(&fork, "which word?"));
    let body = mock.requests().last().unwrap().to_string();
    assert!(body.contains("remember the word kumquat"), "{body}");
    mock.push(Reply::text("still here"));
    editor.call("session/prompt", prompt(&parent, "and the parent?"));
    let body = mock.requests().last().unwrap().to_string();
    assert!(
        body.contains("kumquat") && !body.contains("which word?"),
        "{body}"
    );
    let missing = editor.call(
        "session/fork",
        json!({"sessionId": "no-such-session", "cwd": env.cwd.path()}),
    );
    let message = missing["error"]["message"].as_str().unwrap();
    assert!(message.contains("no session"), "{missing}");
    editor.finish();
    assert_eq!(parent_of(&env, &fork), (Some(parent.clone()), "acp".into()));

    // A stored session is forked by a later connection without being opened first.
    let mut editor = Editor::start(&env, &mock);
    editor.initialize();
    let forked = editor.call(
        "session/fork",
        json!({"sessionId": fork, "cwd": env.cwd.path()}),
    );
    let grandchild = forked["result"]["sessionId"].as_str().unwrap().to_string();
    assert_eq!(forked["result"]["modes"]["currentModeId"], "accept_edits");
    mock.push(Reply::text("yes"));
    editor.call("session/prompt", prompt(&grandchild, "still kumquat?"));
    let body = mock.requests().last().unwrap().to_string();
    assert!(
        body.contains("remember the word kumquat") && body.contains("which word?"),
        "{body}"
    );
    editor.finish();
    assert_eq!(parent_of(&env, &grandchild).0, Some(fork));
}

#[test]
fn modes_widen_what_goes_unasked_but_never_past_the_floor_or_protected_paths() {
    let env = TestEnv::new();
    // Edits elsewhere: a directory outside the workspace and outside the child's temp dir.
    let tmp = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let victim = env.write("build/keep.txt", "precious\n");
    let config = env.home.path().join("config.yaml");
    let mock = MockLlm::with_script([
        // accept_edits
        Reply::tool_call(
            "w1",
            "write_file",
            json!({"path": "inside.txt", "content": "a\n"}),
        ),
        Reply::tool_call(
            "w2",
            "write_file",
            json!({"path": elsewhere.path().join("out.txt"), "content": "b\n"}),
        ),
        Reply::tool_call("c1", "terminal", json!({"command": GENERATED})),
        Reply::text("accept_edits done"),
        // dont_ask
        Reply::tool_call(
            "w3",
            "write_file",
            json!({"path": elsewhere.path().join("two.txt"), "content": "c\n"}),
        ),
        Reply::tool_call(
            "w4",
            "write_file",
            json!({"path": config, "content": "model: evil\n"}),
        ),
        Reply::text("dont_ask done"),
        // yolo
        Reply::tool_call("c2", "terminal", json!({"command": GENERATED})),
        Reply::tool_call("c3", "terminal", json!({"command": "rm -rf ~"})),
        Reply::text("yolo done"),
    ]);
    let mut cmd = env.spawnable(&mock.base_url(), &["acp"]);
    cmd.env("TMPDIR", tmp.path());
    let mut editor = Editor::spawn(cmd);
    editor.initialize();
    let r = editor.call(
        "session/new",
        json!({"cwd": env.cwd.path(), "mcpServers": []}),
    );
    let session = r["result"]["sessionId"].as_str().unwrap().to_string();
    let modes = &r["result"]["modes"];
    assert_eq!(modes["currentModeId"], "default", "{r}");
    assert_eq!(
        ids(&modes["availableModes"]),
        ["default", "accept_edits", "dont_ask", "yolo"]
    );
    let set_mode = |editor: &mut Editor, mode: &str| {
        let mut updates = Vec::new();
        let r = editor.call_with(
            "session/set_mode",
            json!({"sessionId": session, "modeId": mode}),
            &mut updates,
            &mut |_, req| panic!("unexpected request {req}"),
        );
        assert!(r.get("error").is_none(), "{r}");
        assert_eq!(updates[0]["sessionUpdate"], "current_mode_update");
        assert_eq!(updates[0]["currentModeId"], mode);
    };

    set_mode(&mut editor, "accept_edits");
    let turn = editor.prompt_answering(&session, "edit", |n, _| {
        Some(if n == 0 { "allow_once" } else { "reject" })
    });
    let asked: Vec<&Value> = turn
        .asked
        .iter()
        .map(|a| &a["toolCall"]["toolCallId"])
        .collect();
    assert_eq!(asked, [&json!("w2"), &json!("c1")], "{:#?}", turn.asked);
    assert!(env.cwd.path().join("inside.txt").exists());
    assert!(elsewhere.path().join("out.txt").exists());
    assert!(victim.exists(), "a rejected command ran");

    set_mode(&mut editor, "dont_ask");
    let turn = editor.prompt_answering(&session, "edit more", |_, q| {
        panic!("dont_ask asked about {q}")
    });
    assert_eq!(turn.response["result"]["stopReason"], "end_turn");
    assert!(elsewhere.path().join("two.txt").exists());
    let config_text = std::fs::read_to_string(&config).unwrap_or_default();
    assert!(
        !config_text.contains("evil"),
        "a protected file was written"
    );

    set_mode(&mut editor, "yolo");
    let turn = editor.prompt_answering(&session, "clean", |_, q| panic!("yolo asked about {q}"));
    assert_eq!(turn.response["result"]["stopReason"], "end_turn");
    assert!(!victim.exists(), "yolo runs a dangerous command unasked");
    assert!(env.home.path().join("state.db").exists(), "the floor held");
    let last = mock.requests().last().unwrap().to_string();
    assert!(last.contains("hardline"), "{last}");

    let bad = editor.call(
        "session/set_mode",
        json!({"sessionId": session, "modeId": "bypass"}),
    );
    let message = bad["error"]["message"].as_str().unwrap();
    assert!(message.contains("unknown mode `bypass`"), "{bad}");
    editor.finish();
}

#[test]
fn a_mode_set_by_the_editor_is_kept_when_the_session_is_opened_again() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script([]);
    let mut editor = Editor::start(&env, &mock);
    editor.initialize();
    let session = editor.new_session(env.cwd.path());
    let r = editor.call(
        "session/set_mode",
        json!({"sessionId": session, "modeId": "dont_ask"}),
    );
    assert!(r.get("error").is_none(), "{r}");
    editor.finish();

    // A later connection opens it in that mode, and it acts in it: the edit is not asked.
    let opened = json!({"sessionId": session, "cwd": env.cwd.path(), "mcpServers": []});
    mock.push(Reply::tool_call(
        "w1",
        "write_file",
        json!({"path": "notes.txt", "content": "kept\n"}),
    ));
    mock.push(Reply::text("written"));
    let mut editor = Editor::start(&env, &mock);
    editor.initialize();
    let r = editor.call("session/load", opened.clone());
    assert_eq!(r["result"]["modes"]["currentModeId"], "dont_ask", "{r}");
    let turn = editor.prompt_answering(&session, "write it", |_, q| {
        panic!("dont_ask asked about {q}")
    });
    assert_eq!(turn.response["result"]["stopReason"], "end_turn");
    assert!(env.cwd.path().join("notes.txt").exists());
    editor.finish();

    let mut editor = Editor::start(&env, &mock);
    editor.initialize();
    let r = editor.call("session/resume", opened);
    assert_eq!(r["result"]["modes"]["currentModeId"], "dont_ask", "{r}");
    // A session never given a mode opens in the default one.
    let other = editor.new_session(env.cwd.path());
    editor.finish();
    let mut editor = Editor::start(&env, &mock);
    editor.initialize();
    let r = editor.call(
        "session/resume",
        json!({"sessionId": other, "cwd": env.cwd.path(), "mcpServers": []}),
    );
    assert_eq!(r["result"]["modes"]["currentModeId"], "default", "{r}");
    editor.finish();
}
