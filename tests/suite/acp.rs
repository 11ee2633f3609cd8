//! `hermes acp` driven as an editor drives it: JSON-RPC lines over the child's stdin/stdout,
//! against the scripted mock LLM. initialize → session/new → session/prompt with its streamed
//! updates (text, tool calls with locations, the plan) → result; cancel mid-turn; a dangerous
//! command asked through session/request_permission and denied (it does not run); a session
//! listed and loaded again by a second process; stdout carries nothing but protocol frames.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::acp_editor::{Editor, WAIT, agent_text, kinds, prompt};
use crate::support::harness::TestEnv;
use crate::support::mock_llm::{MockLlm, Reply};

/// Produced at run time: the classifier cannot say what it runs, so it must ask.
const GENERATED: &str = "$(printf rm) -rf build";

#[test]
fn a_prompt_streams_text_tool_calls_and_the_plan_then_the_session_loads_again() {
    let env = TestEnv::new();
    env.write("notes.txt", "the notes\n");
    let mock = MockLlm::with_script([
        Reply::tool_call(
            "t1",
            "todo",
            json!({"todos": [{"id": "1", "content": "read the notes", "status": "in_progress"},
                             {"id": "2", "content": "answer", "status": "pending"}]}),
        ),
        Reply::tool_call("r1", "read_file", json!({"path": "notes.txt"})),
        Reply::text("The notes say hello.").with_reasoning("Looking at the notes."),
    ]);
    let mut editor = Editor::start(&env, &mock);
    let init = editor.initialize();
    assert_eq!(init["protocolVersion"], 1, "{init}");
    assert_eq!(init["agentCapabilities"]["loadSession"], true, "{init}");
    assert_eq!(
        init["authMethods"],
        json!([]),
        "a provider is configured: {init}"
    );
    assert_eq!(
        editor.call("authenticate", json!({"methodId": "none"}))["result"],
        json!({})
    );

    let r = editor.call(
        "session/new",
        json!({"cwd": env.cwd.path(), "mcpServers": []}),
    );
    let session = r["result"]["sessionId"].as_str().unwrap().to_string();
    let model = &r["result"]["configOptions"][0];
    assert_eq!(model["id"], "model", "{r}");
    assert_eq!(model["currentValue"], "test-model", "{r}");

    let mut updates = Vec::new();
    let done = editor.call_with(
        "session/prompt",
        prompt(&session, "what do my notes say?"),
        &mut updates,
        &mut |_, req| panic!("unexpected request {req}"),
    );
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert_eq!(agent_text(&updates), "The notes say hello.");
    let thought: String = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_thought_chunk")
        .filter_map(|u| u["content"]["text"].as_str())
        .collect();
    assert_eq!(thought, "Looking at the notes.", "{:?}", kinds(&updates));
    let plan = updates
        .iter()
        .find(|u| u["sessionUpdate"] == "plan")
        .unwrap_or_else(|| panic!("no plan in {:?}", kinds(&updates)));
    assert_eq!(plan["entries"][0]["content"], "read the notes");
    assert_eq!(plan["entries"][0]["status"], "in_progress");
    let read = updates
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call" && u["toolCallId"] == "r1")
        .unwrap_or_else(|| panic!("no read_file call in {updates:#?}"));
    assert_eq!(read["kind"], "read");
    assert_eq!(read["status"], "in_progress");
    let expected = env.cwd.path().join("notes.txt");
    assert_eq!(read["locations"][0]["path"], json!(expected));
    assert!(
        updates
            .iter()
            .any(|u| u["sessionUpdate"] == "tool_call_update"
                && u["toolCallId"] == "r1"
                && u["status"] == "completed"),
        "{updates:#?}"
    );
    // The tool's output went back to the model.
    let last = mock.requests().last().cloned().unwrap();
    assert!(last.to_string().contains("the notes"), "{last}");

    let listed = editor.call("session/list", json!({}));
    let sessions = listed["result"]["sessions"].as_array().unwrap().clone();
    assert_eq!(sessions.len(), 1, "{listed}");
    assert_eq!(sessions[0]["sessionId"], json!(session));
    assert_eq!(sessions[0]["cwd"], json!(env.cwd.path()));
    editor.finish();

    let source: String = env
        .db()
        .query_row(
            "SELECT source FROM sessions WHERE id = ?1",
            [&session],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(source, "acp");

    // A new connection (the editor restarted) lists and loads the stored session.
    let mut editor = Editor::start(&env, &mock);
    editor.initialize();
    let listed = editor.call("session/list", json!({"cwd": env.cwd.path()}));
    assert_eq!(listed["result"]["sessions"][0]["sessionId"], json!(session));
    let mut replay = Vec::new();
    let loaded = editor.call_with(
        "session/load",
        json!({"sessionId": session, "cwd": env.cwd.path(), "mcpServers": []}),
        &mut replay,
        &mut |_, req| panic!("unexpected request {req}"),
    );
    assert!(loaded.get("error").is_none(), "{loaded}");
    assert_eq!(
        replay[0]["sessionUpdate"], "user_message_chunk",
        "{replay:#?}"
    );
    assert_eq!(replay[0]["content"]["text"], "what do my notes say?");
    assert_eq!(agent_text(&replay), "The notes say hello.");
    assert!(
        replay.iter().any(|u| u["toolCallId"] == "r1"),
        "{replay:#?}"
    );

    // And the loaded session goes on: its next prompt carries the earlier turn.
    mock.push(Reply::text("Still here."));
    let mut updates = Vec::new();
    let done = editor.call_with(
        "session/prompt",
        prompt(&session, "and now?"),
        &mut updates,
        &mut |_, req| panic!("unexpected request {req}"),
    );
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let last = mock.requests().last().cloned().unwrap().to_string();
    assert!(
        last.contains("what do my notes say?") && last.contains("and now?"),
        "{last}"
    );
    editor.finish();
}

#[test]
fn cancel_stops_the_turn_mid_stream() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script([Reply::text("word ".repeat(200))
        .chunk_chars(5)
        .chunk_interval(Duration::from_millis(100))]);
    let mut editor = Editor::start(&env, &mock);
    editor.initialize();
    let session = editor.new_session(env.cwd.path());
    let id = editor.request_id("session/prompt", prompt(&session, "talk for a long time"));
    let deadline = Instant::now() + WAIT;
    // Wait until the answer is streaming, then cancel.
    loop {
        let msg = editor.next(deadline);
        if msg["method"] == "session/update"
            && msg["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
        {
            break;
        }
    }
    let asked = Instant::now();
    editor.send(
        json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}),
    );
    let mut updates = Vec::new();
    let done = editor.wait_response(id, &mut updates, &mut |_, req| {
        panic!("unexpected request {req}")
    });
    assert_eq!(done["result"]["stopReason"], "cancelled", "{done}");
    // 200 chunks at 100 ms would take 20 s; the cancel ended it long before.
    assert!(asked.elapsed() < Duration::from_secs(15));
    // The session still works after a cancelled turn.
    mock.push(Reply::text("back"));
    let mut updates = Vec::new();
    let again = editor.call_with(
        "session/prompt",
        prompt(&session, "still there?"),
        &mut updates,
        &mut |_, req| panic!("unexpected request {req}"),
    );
    assert_eq!(again["result"]["stopReason"], "end_turn", "{again}");
    assert_eq!(agent_text(&updates), "back");
    editor.finish();
}

#[test]
fn a_dangerous_command_is_asked_through_the_editor_and_a_denial_keeps_it_from_running() {
    for (answer, runs) in [("reject", false), ("allow_once", true)] {
        let env = TestEnv::new();
        let victim = env.write("build/keep.txt", "precious\n");
        let mock = MockLlm::with_script([
            Reply::tool_call("c1", "terminal", json!({"command": GENERATED})),
            Reply::text("finished"),
        ]);
        let mut editor = Editor::start(&env, &mock);
        editor.initialize();
        let session = editor.new_session(env.cwd.path());
        let turn = editor.prompt_answering(&session, "clean up", |_, _| Some(answer));
        let (done, updates, asked) = (turn.response, turn.updates, turn.asked);
        assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
        assert_eq!(asked.len(), 1, "one question: {asked:#?}");
        let question = &asked[0];
        assert_eq!(question["sessionId"], json!(session));
        assert_eq!(question["toolCall"]["toolCallId"], "c1", "{question}");
        assert!(
            question["toolCall"]["title"]
                .as_str()
                .unwrap()
                .contains(GENERATED),
            "{question}"
        );
        let options: Vec<&str> = question["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["optionId"].as_str().unwrap())
            .collect();
        assert!(options.contains(&"reject") && options.contains(&"allow_once"));
        assert_eq!(!victim.exists(), runs, "answer {answer}");
        let call_end = updates
            .iter()
            .find(|u| u["sessionUpdate"] == "tool_call_update" && u["toolCallId"] == "c1")
            .unwrap_or_else(|| panic!("no end of c1 in {updates:#?}"));
        assert_eq!(
            call_end["status"],
            if runs { "completed" } else { "failed" },
            "{call_end}"
        );
        editor.finish();
    }
}

#[test]
fn a_permission_question_shows_no_secret_and_a_bounded_title() {
    const TOKEN: &str = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    let env = TestEnv::new();
    let victim = env.write("build/keep.txt", "precious\n");
    // The token straddles where a progress line is cut (80 characters): a cut that came
    // before redaction would show its first half.
    let command = format!(
        "{GENERATED}; echo {} {TOKEN}; curl https://example.invalid/{}",
        "p".repeat(32),
        "x".repeat(2000)
    );
    let mock = MockLlm::with_script([
        Reply::tool_call("c1", "terminal", json!({"command": command})),
        Reply::text("finished"),
    ]);
    let mut editor = Editor::start(&env, &mock);
    editor.initialize();
    let session = editor.new_session(env.cwd.path());
    let turn = editor.prompt_answering(&session, "clean up", |_, _| Some("reject"));
    assert_eq!(turn.response["result"]["stopReason"], "end_turn");
    assert_eq!(turn.asked.len(), 1, "{:#?}", turn.asked);
    let call = &turn.asked[0]["toolCall"];
    let title = call["title"].as_str().unwrap();
    assert!(title.contains("$(printf rm) -rf build"), "{title}");
    assert!(!title.contains(&TOKEN[..12]), "{title}");
    assert!(
        title.chars().count() < 400,
        "{} chars",
        title.chars().count()
    );
    let raw = call["rawInput"].to_string();
    assert!(
        !raw.contains(TOKEN) && raw.contains("rm) -rf build"),
        "{raw}"
    );
    // Nor the tool call's own title, nor anything else sent to the editor.
    let everything = serde_json::to_string(&turn.updates).unwrap();
    assert!(!everything.contains(&TOKEN[..12]), "{everything}");
    assert!(victim.exists());
    editor.finish();
}

#[test]
fn without_a_provider_the_editor_is_told_what_to_configure() {
    let env = TestEnv::new();
    // No provider: the bare environment without the mock's settings.
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_hermes"));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", env.home.path())
        .env("HERMES_HOME", env.home.path())
        .current_dir(env.cwd.path())
        .arg("acp")
        .stderr(Stdio::piped());
    let mut editor = Editor::spawn(cmd);
    let init = editor.initialize();
    let method = &init["authMethods"][0];
    assert_eq!(method["id"], "hermes-setup", "{init}");
    assert!(
        method["description"]
            .as_str()
            .unwrap()
            .contains("hermes setup"),
        "{init}"
    );
    let auth = editor.call("authenticate", json!({"methodId": "hermes-setup"}));
    assert!(
        auth["error"]["message"]
            .as_str()
            .unwrap()
            .contains("hermes setup"),
        "{auth}"
    );
    let new = editor.call(
        "session/new",
        json!({"cwd": env.cwd.path(), "mcpServers": []}),
    );
    assert!(
        new["error"]["message"]
            .as_str()
            .unwrap()
            .contains("authentication required"),
        "{new}"
    );
    editor.finish();
}

#[test]
fn file_edits_are_asked_and_a_rejected_edit_is_not_written() {
    let env = TestEnv::new();
    let existing = env.write("src/lib.rs", "fn main() {}\n");
    let mock = MockLlm::with_script([
        Reply::tool_call(
            "w1",
            "write_file",
            json!({"path": "new.txt", "content": "hello\n"}),
        ),
        Reply::tool_call(
            "p1",
            "patch",
            json!({"path": "src/lib.rs", "old_string": "main", "new_string": "start"}),
        ),
        Reply::text("done"),
    ]);
    let mut editor = Editor::start(&env, &mock);
    editor.initialize();
    let session = editor.new_session(env.cwd.path());
    // Reject the new file, allow the patch.
    let turn = editor.prompt_answering(&session, "write and patch", |n, _| {
        Some(if n == 0 { "reject" } else { "allow_once" })
    });
    let (done, asked) = (turn.response, turn.asked);
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert_eq!(asked.len(), 2, "{asked:#?}");
    assert_eq!(asked[0]["toolCall"]["toolCallId"], "w1");
    assert_eq!(asked[0]["toolCall"]["kind"], "edit");
    assert!(
        asked[0]["toolCall"]["title"]
            .as_str()
            .unwrap()
            .contains("new.txt"),
        "{asked:#?}"
    );
    assert!(
        !env.cwd.path().join("new.txt").exists(),
        "a rejected edit was written"
    );
    assert_eq!(
        std::fs::read_to_string(&existing).unwrap(),
        "fn start() {}\n"
    );
    let rejected = mock.requests()[1].to_string();
    assert!(rejected.contains("rejected this edit"), "{rejected}");
    editor.finish();
}

#[test]
fn resume_opens_a_stored_session_without_replaying_it() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script([Reply::text("first answer")]);
    let mut editor = Editor::start(&env, &mock);
    let init = editor.initialize();
    assert_eq!(
        init["agentCapabilities"]["sessionCapabilities"]["resume"],
        json!({}),
        "{init}"
    );
    let session = editor.new_session(env.cwd.path());
    editor.call(
        "session/prompt",
        prompt(&session, "remember the word kumquat"),
    );
    editor.finish();

    let mut editor = Editor::start(&env, &mock);
    editor.initialize();
    let mut updates = Vec::new();
    let resumed = editor.call_with(
        "session/resume",
        json!({"sessionId": session, "cwd": env.cwd.path(), "mcpServers": []}),
        &mut updates,
        &mut |_, req| panic!("unexpected request {req}"),
    );
    assert!(resumed.get("error").is_none(), "{resumed}");
    assert!(updates.is_empty(), "resume does not replay: {updates:#?}");
    mock.push(Reply::text("kumquat"));
    let done = editor.call("session/prompt", prompt(&session, "which word?"));
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let last = mock.requests().last().cloned().unwrap().to_string();
    assert!(last.contains("remember the word kumquat"), "{last}");
    let unknown = editor.call(
        "session/resume",
        json!({"sessionId": "no-such-session", "cwd": env.cwd.path(), "mcpServers": []}),
    );
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no session"),
        "{unknown}"
    );
    editor.finish();
}

#[test]
fn an_editor_that_never_answers_is_a_denial() {
    let env = TestEnv::new();
    env.config("approvals:\n  timeout: 1\n");
    let victim = env.write("build/keep.txt", "precious\n");
    let mock = MockLlm::with_script([
        Reply::tool_call("c1", "terminal", json!({"command": GENERATED})),
        Reply::text("gave up"),
    ]);
    let mut editor = Editor::start(&env, &mock);
    editor.initialize();
    let session = editor.new_session(env.cwd.path());
    // The question is received and left unanswered.
    let turn = editor.prompt_answering(&session, "clean up", |_, _| None);
    let done = turn.response;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert_eq!(turn.asked.len(), 1);
    assert!(victim.exists(), "an unanswered question ran the command");
    let result = mock.requests()[1].to_string();
    assert!(result.contains("no answer"), "{result}");
    editor.finish();
}

#[test]
fn the_model_option_switches_the_model_for_later_turns() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script([Reply::text("from b")]);
    mock.set_models(&["test-model", "model-b"]);
    let mut editor = Editor::start(&env, &mock);
    editor.initialize();
    let r = editor.call(
        "session/new",
        json!({"cwd": env.cwd.path(), "mcpServers": []}),
    );
    let session = r["result"]["sessionId"].as_str().unwrap().to_string();
    let values: Vec<&str> = r["result"]["configOptions"][0]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["value"].as_str().unwrap())
        .collect();
    assert_eq!(values, ["test-model", "model-b"], "{r}");
    let set = editor.call(
        "session/set_config_option",
        json!({"sessionId": session, "configId": "model", "value": "model-b"}),
    );
    assert_eq!(
        set["result"]["configOptions"][0]["currentValue"], "model-b",
        "{set}"
    );
    let done = editor.call("session/prompt", prompt(&session, "hi"));
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert_eq!(mock.requests().last().unwrap()["model"], "model-b");
    let bad = editor.call(
        "session/set_config_option",
        json!({"sessionId": session, "configId": "mode", "value": "x"}),
    );
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown option"),
        "{bad}"
    );
    editor.finish();
}
