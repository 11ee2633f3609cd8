//! The rough edges a new user hit (issue 14), each through the real binary: `-c` with nothing to
//! continue, `sessions delete` without a terminal, `insights` without prices, a wrong port in `-z`,
//! `pairing list` without a platform.

use crate::support::harness::{TestEnv, stderr, stdout};
use crate::support::mock_llm::{MockLlm, Reply};

#[test]
fn continue_without_sessions_says_how_to_start_one() {
    let env = TestEnv::new();
    let out = env
        .cmd("http://127.0.0.1:9/v1")
        .args(["-c", "-z", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("no previous CLI session to continue; start one with `hermes`"),
        "{err}"
    );
    assert!(!err.contains("no session matches"), "{err}");
}

#[test]
fn sessions_delete_without_a_terminal_needs_yes() {
    let mock = MockLlm::with_script([Reply::text("hello")]);
    let env = TestEnv::new();
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "hi"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let id = env.session_ids().remove(0);

    // assert_cmd gives the child no terminal: nobody can answer "Delete?".
    let out = env
        .bare_cmd()
        .args(["sessions", "delete", &id])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("add -y"), "{err}");
    assert_eq!(env.session_ids(), vec![id.clone()], "nothing deleted");

    let out = env
        .bare_cmd()
        .args(["sessions", "delete", &id, "-y"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(env.session_ids().is_empty());
}

#[test]
fn insights_without_prices_says_so_instead_of_zero_dollars() {
    let mock = MockLlm::with_script([Reply::text("hello").with_usage(100, 20, 0)]);
    let env = TestEnv::new();
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "hi"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));

    let text = stdout(&env.bare_cmd().arg("insights").output().unwrap());
    assert!(text.contains("no prices are configured"), "{text}");
    assert!(!text.contains("$0.0000"), "{text}");
    let json: serde_json::Value = serde_json::from_str(&stdout(
        &env.bare_cmd()
            .args(["insights", "--json"])
            .output()
            .unwrap(),
    ))
    .unwrap();
    assert_eq!(json["prices_configured"], false);
    assert_eq!(json["input_tokens"], 100);

    env.config("budget:\n  prices:\n    test-model: {input: 1000000, output: 0}\n");
    let text = stdout(&env.bare_cmd().arg("insights").output().unwrap());
    assert!(text.contains("estimated spend $"), "{text}");
}

#[test]
fn wrong_local_port_gives_up_after_three_tries_saying_each_retry() {
    // A loopback port that refuses connections, held for the whole test: a dropped listener's
    // port can be handed to another test's mock.
    let closed = crate::support::closed_port::ClosedPort::new();
    let port = closed.addr().port();
    let env = TestEnv::new();
    let out = env
        .cmd(&format!("http://127.0.0.1:{port}/v1"))
        .env_remove("HERMES_RETRY_BASE_DELAY_MS")
        .args(["-z", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let err = stderr(&out);
    let retries: Vec<&str> = err.lines().filter(|l| l.contains("retrying in")).collect();
    assert_eq!(retries.len(), 2, "{err}");
    assert!(retries[0].contains("(attempt 2)") && retries[1].contains("(attempt 3)"));
    assert!(err.contains("Connection refused"), "{err}");
    assert!(
        err.lines()
            .last()
            .unwrap_or("")
            .starts_with("hermes: error:"),
        "{err}"
    );
}

/// The README's "Home" paragraph: what the first run creates, and what only `hermes setup` (or
/// the user) writes.
#[test]
fn first_run_creates_the_home_the_readme_describes() {
    let mock = MockLlm::with_script([Reply::text("hello")]);
    let env = TestEnv::new();
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "hi"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let home = env.home_path();
    assert!(home.join("SOUL.md").is_file());
    for dir in [
        "memories", "skills", "hooks", "cron", "logs", "sessions", "cache",
    ] {
        assert!(home.join(dir).is_dir(), "{dir} missing");
    }
    assert!(home.join("state.db").is_file(), "the first conversation");
    for file in ["config.yaml", ".env", "auth.json"] {
        assert!(!home.join(file).exists(), "{file} written on first run");
    }
}

#[test]
fn pairing_list_without_a_platform_lists_every_platform() {
    let env = TestEnv::new();
    let out = env.bare_cmd().args(["pairing", "list"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("no pending pairing codes and no paired users on any platform"),
        "{}",
        stdout(&out)
    );
    let store = hermes::sessions::SessionStore::open(&env.home_path().join("state.db")).unwrap();
    store.gateway_init().unwrap();
    store
        .pairing_request("telegram", "11", Some("ann"), "AAAA2222")
        .unwrap();
    store
        .pairing_request("discord", "22", Some("bob"), "BBBB3333")
        .unwrap();
    store.pairing_approve("discord", "BBBB3333").unwrap();
    drop(store);
    let out = env.bare_cmd().args(["pairing", "list"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for line in [
        "pending codes (discord): 0",
        "paired users (discord): 1",
        "  22 bob",
        "pending codes (telegram): 1",
        "  AAAA2222  user 11 ann",
        "paired users (telegram): 0",
    ] {
        assert!(text.contains(line), "missing {line:?} in:\n{text}");
    }
    // Naming one platform shows only that one.
    let out = env
        .bare_cmd()
        .args(["pairing", "list", "telegram"])
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(
        text.contains("AAAA2222") && !text.contains("discord"),
        "{text}"
    );
}
