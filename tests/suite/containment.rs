//! Issue 11 attacks through the real binary with a scripted model: protected control files
//! (write_file/patch/read_file refuse them whatever --yolo says, symlinks included) and secret
//! redaction (no secret value in state.db, the provider's requests, `sessions export` or logs).

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::support::harness::{TestEnv, stderr};
use crate::support::mock_llm::{MockLlm, Reply};

/// The tool results the model received in request `i`.
fn tool_results(mock: &MockLlm, i: usize) -> Vec<String> {
    mock.requests()[i]["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// A user home apart from HERMES_HOME, so `~/.ssh` and `~/.bashrc` are the test's own.
fn user_home() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
    std::fs::write(
        home.path().join(".ssh/authorized_keys"),
        "ssh-ed25519 AAAA user\n",
    )
    .unwrap();
    std::fs::write(home.path().join(".bashrc"), "# rc\n").unwrap();
    home
}

#[test]
fn approval_cannot_be_switched_off_through_the_file_tools() {
    let env = TestEnv::new();
    let original = "approvals:\n  mode: manual\n";
    env.config(original);
    let cfg = env.home_path().join("config.yaml");
    let cfg_s = cfg.to_str().unwrap();
    let mock = MockLlm::with_script([
        Reply::tool_calls([
            (
                "c1",
                "write_file",
                json!({"path": cfg_s, "content": "approvals:\n  mode: off\n"}),
            ),
            (
                "c2",
                "patch",
                json!({"path": cfg_s, "old_string": "manual", "new_string": "off"}),
            ),
        ]),
        Reply::text("tried"),
    ]);
    let out = env
        .cmd(&mock.base_url())
        .args(["--yolo", "-z", "turn approvals off"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let results = tool_results(&mock, 1);
    assert_eq!(results.len(), 2, "{results:?}");
    for r in &results {
        assert!(
            r.contains("refused") && r.contains("hermes config set"),
            "{r}"
        );
    }
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), original);

    // The next run, without --yolo, still does not delete a directory unasked.
    let victim = tempfile::tempdir().unwrap();
    std::fs::write(victim.path().join("keep.txt"), "precious").unwrap();
    let command = format!("rm -rf {}", victim.path().display());
    let mock = MockLlm::with_script([
        Reply::tool_call("c3", "terminal", json!({"command": command})),
        Reply::text("done"),
    ]);
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "clean up"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        victim.path().join("keep.txt").exists(),
        "the directory was deleted"
    );
}

#[test]
fn control_files_and_credentials_are_refused_and_unchanged() {
    let env = TestEnv::new();
    let home = user_home();
    let h = env.home_path();
    std::fs::create_dir_all(h.join("skills")).unwrap();
    std::fs::create_dir_all(h.join("hooks")).unwrap();
    std::fs::write(
        h.join(".env"),
        "OPENAI_API_KEY=sk-env-abcdefghijklmnopqrst\n",
    )
    .unwrap();
    std::fs::write(h.join("auth.json"), "{}\n").unwrap();
    std::fs::write(h.join("SOUL.md"), "You are careful.\n").unwrap();
    // A symlink in the cwd pointing into $HERMES_HOME.
    std::os::unix::fs::symlink(h, env.cwd.path().join("hlink")).unwrap();
    let targets: Vec<PathBuf> = vec![
        home.path().join(".ssh/authorized_keys"),
        home.path().join(".bashrc"),
        h.join(".env"),
        h.join("auth.json"),
        h.join("hooks/evil/HOOK.yaml"),
        h.join("skills/evil/SKILL.md"),
        env.cwd.path().join("hlink/SOUL.md"),
    ];
    let before: Vec<Option<Vec<u8>>> = targets.iter().map(|p| std::fs::read(p).ok()).collect();
    let calls: Vec<(String, String, serde_json::Value)> = targets
        .iter()
        .enumerate()
        .map(|(i, p)| {
            (
                format!("w{i}"),
                "write_file".to_string(),
                json!({"path": p.to_str().unwrap(), "content": "ssh-ed25519 ATTACKER\n"}),
            )
        })
        .chain([(
            "r1".to_string(),
            "read_file".to_string(),
            json!({"path": h.join(".env").to_str().unwrap()}),
        )])
        .collect();
    let mock = MockLlm::with_script([Reply::tool_calls(calls), Reply::text("done")]);
    let out = env
        .cmd(&mock.base_url())
        .env("HOME", home.path())
        .args(["--yolo", "-z", "plant things"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let results = tool_results(&mock, 1);
    assert_eq!(results.len(), targets.len() + 1);
    for (r, p) in results.iter().zip(&targets) {
        assert!(r.contains("refused"), "{}: {r}", p.display());
    }
    assert!(
        results[targets.len()].contains("may not read"),
        "{results:?}"
    );
    assert!(
        !results.iter().any(|r| r.contains("sk-env-")),
        "{results:?}"
    );
    let after: Vec<Option<Vec<u8>>> = targets.iter().map(|p| std::fs::read(p).ok()).collect();
    assert_eq!(before, after, "a protected file changed");
    assert!(!h.join("hooks/evil").exists() && !h.join("skills/evil").exists());
}

/// Every file under `dir` (recursively), as bytes.
fn all_bytes(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    walk(dir)
        .into_iter()
        .filter_map(|p| std::fs::read(&p).ok().map(|b| (p, b)))
        .collect()
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = entry.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[test]
fn secrets_never_reach_state_db_requests_export_or_logs() {
    let env = TestEnv::new();
    // Values without a well-known shape: only the exact-value redaction can catch them.
    let from_env = "plain-env-secret-4711-qwerty";
    let from_dotenv = "dotenv-secret-0815-asdfgh";
    let from_config = "config-secret-1234-zxcvbn";
    let shaped = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    std::fs::write(
        env.home_path().join(".env"),
        format!("TELEGRAM_BOT_TOKEN={from_dotenv}\n"),
    )
    .unwrap();
    env.config(&format!(
        "platforms:\n  webhook:\n    secret: {from_config}\n"
    ));
    env.write(
        "notes.txt",
        &format!("a={from_env}\nb={from_dotenv}\nc={from_config}\nd={shaped}\n"),
    );
    let mock = MockLlm::with_script([
        Reply::tool_calls([
            ("t1", "terminal", json!({"command": "env"})),
            ("t2", "terminal", json!({"command": "cat notes.txt"})),
            ("t3", "read_file", json!({"path": "notes.txt"})),
        ]),
        Reply::text(format!("I saw {from_env} and {shaped}")),
    ]);
    let out = env
        .cmd(&mock.base_url())
        .env("MY_SERVICE_TOKEN", from_env)
        .env("HERMES_LOG", "debug")
        .args(["--yolo", "-z", "show me the environment"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let secrets = [from_env, from_dotenv, from_config, shaped];

    // The tool results were fed back with the values hidden.
    let results = tool_results(&mock, 1);
    assert!(results[1].contains("[REDACTED]"), "{results:?}");
    // Nothing the provider received holds a value.
    let sent = serde_json::to_string(&mock.requests()).unwrap();
    for s in secrets {
        assert!(!sent.contains(s), "{s} sent to the provider");
    }
    // state.db (with its WAL) and the logs, scanned as bytes.
    let mut files = all_bytes(env.home_path());
    files.retain(|(p, _)| {
        let name = p.to_string_lossy();
        name.contains("state.db") || name.contains("/logs/")
    });
    assert!(files.iter().any(|(p, _)| p.ends_with("state.db")));
    for (path, bytes) in &files {
        for s in secrets {
            assert!(!contains(bytes, s), "{s} found in {}", path.display());
        }
    }
    // The export, including a row stored before redaction existed (a secret in the clear).
    env.db()
        .execute(
            "UPDATE messages SET content = ?1 WHERE id = (SELECT MIN(id) FROM messages WHERE role = 'assistant')",
            [format!("old transcript with {from_dotenv}")],
        )
        .unwrap();
    let id = env.session_ids().pop().unwrap();
    for format in ["jsonl", "md"] {
        let out = env
            .bare_cmd()
            .args(["sessions", "export", &id, "--format", format])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("old transcript with [REDACTED]"), "{text}");
        for s in secrets {
            assert!(!text.contains(s), "{s} in the {format} export");
        }
    }
}

#[test]
fn rollback_restores_the_files_of_a_turn_and_leaves_the_users_git_alone() {
    let env = TestEnv::new();
    // The user's own repository, with one commit.
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(env.cwd.path())
            .env("HOME", env.home_path())
            .env("GIT_AUTHOR_NAME", "u")
            .env("GIT_AUTHOR_EMAIL", "u@x")
            .env("GIT_COMMITTER_NAME", "u")
            .env("GIT_COMMITTER_EMAIL", "u@x")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
    };
    env.write("a.txt", "alpha\n");
    env.write("b.txt", "beta\n");
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&["commit", "-qm", "init"]);
    let dot_git = snapshot_dir(&env.cwd.path().join(".git"));

    let mock = MockLlm::with_script([
        Reply::tool_calls([
            (
                "w1",
                "write_file",
                json!({"path": "a.txt", "content": "ALPHA\n"}),
            ),
            (
                "p1",
                "patch",
                json!({"path": "b.txt", "old_string": "beta", "new_string": "BETA"}),
            ),
            (
                "w2",
                "write_file",
                json!({"path": "new/c.txt", "content": "new\n"}),
            ),
        ]),
        Reply::text("changed three files"),
    ]);
    let out = env
        .cmd(&mock.base_url())
        .write_stdin("change the files\n/rollback\n/quit\n")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = crate::support::harness::stdout(&out);
    assert!(text.contains("changed three files"), "{text}");
    assert!(text.contains("Restored checkpoint 1"), "{text}");
    assert!(
        text.contains("restored a.txt") && text.contains("restored b.txt"),
        "{text}"
    );
    assert!(text.contains("removed  new/c.txt"), "{text}");
    let read = |rel: &str| std::fs::read_to_string(env.cwd.path().join(rel)).ok();
    assert_eq!(read("a.txt").as_deref(), Some("alpha\n"));
    assert_eq!(read("b.txt").as_deref(), Some("beta\n"));
    assert_eq!(read("new/c.txt"), None);
    assert_eq!(
        snapshot_dir(&env.cwd.path().join(".git")),
        dot_git,
        "the user's .git changed"
    );

    // The CLI sees the same store: the rollback can itself be undone.
    let out = env
        .bare_cmd()
        .args(["checkpoints", "list"])
        .output()
        .unwrap();
    let list = crate::support::harness::stdout(&out);
    assert!(
        list.contains("before restoring checkpoint 1") && list.contains("change the files"),
        "{list}"
    );
    let out = env
        .bare_cmd()
        .args(["checkpoints", "restore", "1"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(read("a.txt").as_deref(), Some("ALPHA\n"));
    assert_eq!(read("new/c.txt").as_deref(), Some("new\n"));
    let out = env
        .bare_cmd()
        .args(["checkpoints", "restore", "9"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("no checkpoint 9"), "{}", stderr(&out));
}

/// Every file under `dir` with its bytes.
fn snapshot_dir(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut v = all_bytes(dir);
    v.sort();
    v
}

/// A project's `.env`, a private key and an `.npmrc` in the working directory are refused to
/// read_file and skipped by search_files (the values reach no request); `.env.example` stays
/// readable, and `security.readable_paths` lets the user allow one.
#[test]
fn project_secrets_files_are_refused_unless_the_user_allows_them() {
    let env = TestEnv::new();
    let cwd = env.cwd.path();
    std::fs::write(cwd.join(".env"), "DB_PASSWORD=hunter2-project-db\n").unwrap();
    std::fs::write(cwd.join(".env.example"), "DB_PASSWORD=\n").unwrap();
    std::fs::write(cwd.join("id_ed25519"), "PRIVATE-project-key-material\n").unwrap();
    std::fs::write(
        cwd.join(".npmrc"),
        "//registry/:_authToken=npm-project-token\n",
    )
    .unwrap();
    let mock = MockLlm::with_script([
        Reply::tool_calls([
            ("r1", "read_file", json!({"path": ".env"})),
            ("r2", "read_file", json!({"path": "id_ed25519"})),
            ("r3", "read_file", json!({"path": ".npmrc"})),
            ("r4", "read_file", json!({"path": ".env.example"})),
            ("s1", "search_files", json!({"pattern": "project"})),
        ]),
        Reply::text("done"),
    ]);
    let out = env
        .cmd(&mock.base_url())
        .args(["--yolo", "-z", "read the secrets"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let results = tool_results(&mock, 1);
    assert_eq!(results.len(), 5, "{results:?}");
    for r in &results[..3] {
        assert!(
            r.contains("may not read") && r.contains("security.readable_paths"),
            "{r}"
        );
    }
    assert!(results[3].contains("DB_PASSWORD="), "{}", results[3]);
    assert!(
        results[4].contains("protected file(s) skipped"),
        "{}",
        results[4]
    );
    let sent = serde_json::to_string(&mock.requests()).unwrap();
    for secret in [
        "hunter2-project-db",
        "PRIVATE-project-key",
        "npm-project-token",
    ] {
        assert!(!sent.contains(secret), "{secret} reached the model");
    }

    // The user allows the project's .env: now it is read.
    env.config(&format!(
        "security:\n  readable_paths: [{}]\n",
        cwd.join(".env").display()
    ));
    let mock = MockLlm::with_script([
        Reply::tool_call("r1", "read_file", json!({"path": ".env"})),
        Reply::text("done"),
    ]);
    let out = env
        .cmd(&mock.base_url())
        .args(["--yolo", "-z", "read it"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let results = tool_results(&mock, 1);
    assert!(results[0].contains("DB_PASSWORD="), "{results:?}");
}

/// A secret value hermes loaded (from `$HERMES_HOME/.env`), as the model streams it.
const STREAMED_SECRET: &str = "svc-Zx9q7PwL-4242-loaded";

/// An answer that quotes the loaded secret bare (found by value, not by shape), long enough that
/// the stream redactor lets text out before the end.
fn answer_with_secret() -> String {
    let filler = "The service answered normally and everything looks fine. ".repeat(6);
    format!("{filler}The key you asked about is {STREAMED_SECRET} and nothing else. {filler}")
}

/// No piece of the secret long enough to mean anything appears in `text`.
fn assert_no_secret_piece(text: &str, what: &str) {
    for piece in ["Zx9q7PwL", "PwL-4242", "4242-loaded", "svc-Zx9"] {
        assert!(!text.contains(piece), "{what} shows `{piece}`: {text}");
    }
}

/// Streamed answer deltas are redacted before the REPL prints them, also when the secret
/// arrives split across chunks.
#[test]
fn a_secret_streamed_in_pieces_never_reaches_the_repl_terminal() {
    let env = TestEnv::new();
    std::fs::write(
        env.home_path().join(".env"),
        format!("SERVICE_API_KEY={STREAMED_SECRET}\n"),
    )
    .unwrap();
    let mock = MockLlm::with_script([Reply::text(answer_with_secret()).chunk_chars(5)]);
    let out = env
        .cmd(&mock.base_url())
        .write_stdin("what is the key?\n/quit\n")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = crate::support::harness::stdout(&out);
    assert!(
        text.contains("The key you asked about is [REDACTED] and nothing else."),
        "{text}"
    );
    assert!(text.contains("everything looks fine."), "{text}");
    assert_no_secret_piece(&text, "the REPL");
}

/// The same through the Telegram gateway with streaming previews: neither the first message nor
/// any edit of it holds the secret.
#[test]
fn a_secret_streamed_in_pieces_never_reaches_telegram() {
    use crate::suite::gateway_support::Gw;
    let mut gw = Gw::new([Reply::text(answer_with_secret())
        .chunk_chars(7)
        .chunk_interval(std::time::Duration::from_millis(5))]);
    std::fs::write(
        gw.env.home_path().join(".env"),
        format!("SERVICE_API_KEY={STREAMED_SECRET}\n"),
    )
    .unwrap();
    gw.config("gateway:\n  streaming: true\n  stream_interval_ms: 20\n");
    gw.start();
    gw.tg.push_text(42, "what is the key?");
    gw.wait_ledger(|l| l == ["sent"]);
    let mut shown: Vec<String> = gw.tg.sends().into_iter().map(|s| s.text).collect();
    shown.extend(
        gw.tg
            .calls("editMessageText")
            .iter()
            .map(|e| e["text"].as_str().unwrap_or_default().to_string()),
    );
    assert!(shown.len() >= 2, "{shown:#?}");
    for text in &shown {
        assert_no_secret_piece(text, "a Telegram message");
    }
    assert!(
        shown
            .last()
            .unwrap()
            .contains("is [REDACTED] and nothing else."),
        "{shown:#?}"
    );
    assert!(gw.stop().success());
}
