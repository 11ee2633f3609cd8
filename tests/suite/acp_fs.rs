//! The editor's file system over ACP: when the editor offers `fs.readTextFile` /
//! `fs.writeTextFile`, the file tools read its buffers and write through it — after the path
//! policy, the edit question and the checkpoint, which still run in hermes. A protected path is
//! refused before any `fs/*` request reaches the editor.

use serde_json::{Value, json};

use crate::support::acp_editor::{Editor, prompt};
use crate::support::harness::{TestEnv, stdout};
use crate::support::mock_llm::{MockLlm, Reply};

#[test]
fn file_tools_use_the_editors_buffers_and_protected_paths_never_reach_it() {
    let env = TestEnv::new();
    let notes = env.write("notes.txt", "saved on disk\n");
    env.write(".env", "API_KEY=on-disk-secret\n");
    let cwd = std::fs::canonicalize(env.cwd.path()).unwrap();
    let mock = MockLlm::with_script([
        Reply::tool_call("r1", "read_file", json!({"path": "notes.txt"})),
        Reply::tool_call(
            "w1",
            "write_file",
            json!({"path": "new.txt", "content": "written by the model\n"}),
        ),
        Reply::tool_call(
            "p1",
            "patch",
            json!({"path": "notes.txt", "old_string": "unsaved", "new_string": "patched"}),
        ),
        Reply::tool_call("r2", "read_file", json!({"path": ".env"})),
        Reply::tool_call(
            "w2",
            "write_file",
            json!({"path": env.home.path().join("config.yaml"), "content": "x: 1\n"}),
        ),
        Reply::text("done"),
    ]);
    let mut editor = Editor::start(&env, &mock);
    editor.initialize_with(json!({"fs": {"readTextFile": true, "writeTextFile": true}}));
    let session = editor.new_session(env.cwd.path());

    // The editor holds an unsaved buffer of notes.txt.
    let mut buffer = String::from("unsaved in the editor\n");
    let mut fs_requests: Vec<Value> = Vec::new();
    let mut asked = 0;
    let mut updates = Vec::new();
    let done = editor.call_with(
        "session/prompt",
        prompt(&session, "work on my notes"),
        &mut updates,
        &mut |ed, req| {
            let params = &req["params"];
            match req["method"].as_str().unwrap() {
                "session/request_permission" => {
                    asked += 1;
                    ed.choose(req, "allow_once");
                }
                "fs/read_text_file" => {
                    assert_eq!(params["sessionId"], json!(session), "{req}");
                    assert_eq!(params["path"], json!(cwd.join("notes.txt")), "{req}");
                    fs_requests.push(req.clone());
                    ed.reply(req, json!({"content": buffer}));
                }
                "fs/write_text_file" => {
                    if params["path"] == json!(cwd.join("notes.txt")) {
                        buffer = params["content"].as_str().unwrap().to_string();
                    }
                    fs_requests.push(req.clone());
                    ed.reply(req, json!({}));
                }
                other => panic!("unexpected request {other}: {req}"),
            }
        },
    );
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let methods: Vec<(&str, &str)> = fs_requests
        .iter()
        .map(|r| {
            let path = r["params"]["path"].as_str().unwrap();
            let name = path.rsplit('/').next().unwrap();
            (r["method"].as_str().unwrap(), name)
        })
        .collect();
    assert_eq!(
        methods,
        [
            ("fs/read_text_file", "notes.txt"),
            ("fs/write_text_file", "new.txt"),
            ("fs/read_text_file", "notes.txt"),
            ("fs/write_text_file", "notes.txt"),
        ],
        "the refused paths never reached the editor"
    );
    assert_eq!(asked, 2, "write_file and patch were still asked about");

    // The read showed the buffer, not the disk.
    let after_read = mock.requests()[1].to_string();
    assert!(
        after_read.contains("1|unsaved in the editor"),
        "{after_read}"
    );
    assert!(!after_read.contains("saved on disk"), "{after_read}");
    // Edits went to the editor; the disk is untouched.
    assert_eq!(
        fs_requests[1]["params"]["content"],
        "written by the model\n"
    );
    assert!(!env.cwd.path().join("new.txt").exists());
    assert_eq!(buffer, "patched in the editor\n");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "saved on disk\n");
    // The secrets file and the control file were refused with a reason.
    let last = mock.requests().last().unwrap().to_string();
    assert!(!last.contains("on-disk-secret"), "{last}");
    assert!(!env.home.path().join("config.yaml").exists());
    editor.finish();

    // The checkpoint before the turn's first change was still taken.
    let out = env
        .bare_cmd()
        .args(["checkpoints", "list"])
        .output()
        .unwrap();
    assert!(
        stdout(&out).contains("work on my notes"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn an_editor_offering_only_reads_keeps_writes_on_the_disk() {
    let env = TestEnv::new();
    env.write("a.txt", "disk\n");
    let mock = MockLlm::with_script([
        Reply::tool_call("r1", "read_file", json!({"path": "a.txt"})),
        Reply::tool_call(
            "w1",
            "write_file",
            json!({"path": "b.txt", "content": "to disk\n"}),
        ),
        Reply::text("done"),
    ]);
    let mut editor = Editor::start(&env, &mock);
    editor.initialize_with(json!({"fs": {"readTextFile": true, "writeTextFile": false}}));
    let session = editor.new_session(env.cwd.path());
    let mut reads = 0;
    let mut updates = Vec::new();
    editor.call_with(
        "session/prompt",
        prompt(&session, "copy"),
        &mut updates,
        &mut |ed, req| match req["method"].as_str().unwrap() {
            "fs/read_text_file" => {
                reads += 1;
                ed.reply(req, json!({"content": "buffer\n"}));
            }
            "session/request_permission" => ed.choose(req, "allow_once"),
            other => panic!("unexpected request {other}: {req}"),
        },
    );
    assert_eq!(reads, 1);
    assert!(mock.requests()[1].to_string().contains("1|buffer"));
    assert_eq!(
        std::fs::read_to_string(env.cwd.path().join("b.txt")).unwrap(),
        "to disk\n"
    );
    editor.finish();
}
