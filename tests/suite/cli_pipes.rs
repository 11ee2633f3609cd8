//! `hermes … | head -1`: every listing command ends quietly when its reader goes away — exit 0
//! (or death by SIGPIPE, the shell convention), nothing on stderr, no backtrace — with far more
//! output than a pipe buffer holds, so the write after the close really fails.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

use hermes::sessions::{NewSession, SessionStore};

use crate::support::harness::TestEnv;

/// Sessions with a searchable message each.
const SESSIONS: usize = 1500;

fn seeded() -> TestEnv {
    let env = TestEnv::new();
    let path = env.home_path().join("state.db");
    // The store creates the schema; the bulk rows go in one transaction (one per row is slow).
    SessionStore::open(&path)
        .unwrap()
        .create_session(&NewSession {
            id: "20250101_000000_first".into(),
            source: "cli".into(),
            ..Default::default()
        })
        .unwrap();
    let mut db = rusqlite::Connection::open(&path).unwrap();
    let tx = db.transaction().unwrap();
    for i in 0..SESSIONS {
        let id = format!("20250101_000000_{i:06}");
        let started = 1_735_689_600.0 + i as f64;
        tx.execute(
            "INSERT INTO sessions (id, source, model, started_at, message_count) \
             VALUES (?1, 'cli', ?2, ?3, 1)",
            rusqlite::params![id, format!("test/model-{}", i % 7), started],
        )
        .unwrap();
        let text = format!(
            "tell me about zeppelins, part {i}: {}",
            "airships and dirigibles ".repeat(4)
        );
        tx.execute(
            "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?1, 'user', ?2, ?3)",
            rusqlite::params![id, text, started],
        )
        .unwrap();
    }
    tx.commit().unwrap();
    // Many skills and a long memory for `skills list` and `memory show`.
    for i in 0..400 {
        let dir = env.home_path().join(format!("skills/bulk/skill-{i:03}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            format!(
                "---\nname: skill-{i:03}\ndescription: Bulk skill number {i} used to fill a listing well past one pipe buffer of output.\n---\nBody {i}.\n"
            ),
        )
        .unwrap();
    }
    let entries: Vec<String> = (0..150)
        .map(|i| format!("Memory entry {i}: the user likes zeppelins."))
        .collect();
    let memories = env.home_path().join("memories");
    std::fs::create_dir_all(&memories).unwrap();
    std::fs::write(memories.join("MEMORY.md"), entries.join("\n§\n")).unwrap();
    env
}

/// Runs `hermes args`, reads one line, closes the pipe, and checks the quiet ending.
fn first_line_then_close(env: &TestEnv, args: &[&str]) {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_hermes"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", env.home_path())
        .env("HERMES_HOME", env.home_path())
        .env("LANG", "C.UTF-8")
        .current_dir(env.cwd.path())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    assert!(!first.trim().is_empty(), "{args:?} printed nothing");
    drop(out); // `head -1` exits here
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{args:?} hangs after its reader left"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let quiet = status.code() == Some(0) || status.signal() == Some(libc::SIGPIPE);
    assert!(quiet, "{args:?} ended with {status:?}; stderr: {err}");
    assert!(err.is_empty(), "{args:?} wrote to stderr: {err}");
}

#[test]
fn listing_commands_end_quietly_when_the_reader_leaves() {
    let env = seeded();
    for args in [
        &["sessions", "list", "--limit", "100000"][..],
        &["sessions", "list", "--json", "--limit", "100000"],
        &["sessions", "search", "zeppelins", "--limit", "10"],
        &["skills", "list"],
        &["skills", "list", "--json"],
        &["insights"],
        &["memory", "show"],
        &["sessions", "stats"],
    ] {
        first_line_then_close(&env, args);
    }
}

#[test]
fn model_list_ends_quietly_when_the_reader_leaves() {
    let mock = crate::support::mock_llm::MockLlm::start();
    let names: Vec<String> = (0..6000)
        .map(|i| format!("vendor/a-rather-long-model-name-number-{i:05}"))
        .collect();
    mock.set_models(&names.iter().map(String::as_str).collect::<Vec<_>>());
    let env = TestEnv::new();
    env.config(&format!(
        "model:\n  provider: custom\n  base_url: {}\n  default: x\n",
        mock.base_url()
    ));
    first_line_then_close(&env, &["model", "--list"]);
}
