//! Bad input through the real binary: each ends in a readable message and a non-zero exit.

use crate::support::harness::{TestEnv, stderr};

#[test]
fn version_is_printed() {
    let env = TestEnv::new();
    let out = env.bare_cmd().arg("--version").output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains(env!("CARGO_PKG_VERSION")));
}

#[test]
fn no_provider_tells_what_to_set() {
    let env = TestEnv::new();
    let out = env.bare_cmd().args(["-z", "hi"]).output().unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    for needle in [
        "no LLM provider",
        "OPENAI_API_KEY",
        "CUSTOM_BASE_URL",
        "OPENROUTER_API_KEY",
        "config.yaml",
    ] {
        assert!(err.contains(needle), "missing {needle:?} in: {err}");
    }
    assert!(out.stdout.is_empty(), "nothing on stdout without an answer");
}

#[test]
fn config_that_is_not_yaml_is_named() {
    let env = TestEnv::new();
    env.config("model: [unclosed\n  - : :\n\t");
    let out = env.bare_cmd().args(["-z", "hi"]).output().unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("config.yaml") && err.contains("not valid YAML"),
        "{err}"
    );
}

#[test]
fn unknown_config_key_is_named() {
    let env = TestEnv::new();
    env.config("agent:\n  max_turn: 5\n");
    let out = env.bare_cmd().args(["-z", "hi"]).output().unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("agent.max_turn") && err.contains("max_turns"),
        "{err}"
    );
}

#[test]
fn unwritable_home_is_a_clear_error() {
    let env = TestEnv::new();
    let out = env
        .bare_cmd()
        .env("HERMES_HOME", "/proc/hermes-cannot-exist")
        .args(["-z", "hi"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("/proc/hermes-cannot-exist") && err.contains("cannot create"),
        "{err}"
    );
}

#[test]
fn unreachable_endpoint_fails_with_the_url() {
    let env = TestEnv::new();
    // Port 9 on loopback: nothing listens there.
    let out = env
        .cmd("http://127.0.0.1:9/v1")
        .args(["-z", "hi"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("127.0.0.1:9"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn locked_state_db_is_a_clear_error() {
    let env = TestEnv::new();
    // Create the database, then hold an exclusive lock on it from this process.
    let first = env.bare_cmd().args(["sessions", "list"]).output().unwrap();
    assert!(first.status.success(), "{}", stderr(&first));
    let db = env.db();
    db.execute_batch("BEGIN EXCLUSIVE; CREATE TABLE IF NOT EXISTS t_lock(x);")
        .unwrap();
    let out = env
        .cmd("http://127.0.0.1:9/v1")
        .args(["-z", "hi"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("state.db") && err.to_lowercase().contains("lock"),
        "{err}"
    );
    db.execute_batch("ROLLBACK").unwrap();
}

#[test]
fn unknown_session_for_resume() {
    let env = TestEnv::new();
    let out = env
        .cmd("http://127.0.0.1:9/v1")
        .args(["-r", "nope", "-z", "hi"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("no session matches `nope`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn sessions_show_unknown_id() {
    let env = TestEnv::new();
    let out = env
        .bare_cmd()
        .args(["sessions", "show", "missing"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("missing"));
}

#[test]
fn toolset_cycle_is_a_config_error() {
    let env = TestEnv::new();
    env.config(
        "custom_toolsets:\n  a:\n    includes: [b]\n  b:\n    includes: [a]\ntoolsets: [a]\n",
    );
    let out = env
        .cmd("http://127.0.0.1:9/v1")
        .args(["-z", "hi"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("cycle") && err.contains("a -> b -> a"),
        "{err}"
    );
}
