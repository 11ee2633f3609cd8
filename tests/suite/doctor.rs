//! `hermes doctor [--fix] [--json]` through the real binary: a healthy home, a search index out of
//! step with the messages (then repaired by `--fix`), a dead provider, a broken config.

use std::os::unix::fs::PermissionsExt;

use serde_json::{Value, json};

use crate::support::harness::{TestEnv, stderr, stdout};
use crate::support::mock_llm::{MockLlm, Reply};

fn doctor(env: &TestEnv, base_url: &str, extra: &[&str]) -> (Option<i32>, Value) {
    let out = env
        .cmd(base_url)
        .args(["doctor", "--json"])
        .args(extra)
        .output()
        .unwrap();
    let report: Value = serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("{e}: {} / {}", stdout(&out), stderr(&out)));
    (out.status.code(), report)
}

fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no {name} check in {report}"))
}

/// One conversation, so state.db has messages.
fn converse(env: &TestEnv, mock: &MockLlm) {
    mock.push(Reply::text("the zebra answer"));
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "tell me about zebras"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn healthy_home_passes_with_a_timed_tool_round_trip() {
    let mock = MockLlm::start();
    let env = TestEnv::new();
    converse(&env, &mock);
    mock.push(Reply::tool_call("p1", "ping", json!({})));
    mock.push(Reply::text("pong-7"));

    let (code, report) = doctor(&env, &mock.base_url(), &[]);
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(report["healthy"], true);
    for key in ["version", "home", "checks", "fixed", "sections"] {
        assert!(report.get(key).is_some(), "missing {key}: {report}");
    }
    for name in [
        "config",
        "permissions",
        "state.db",
        "skills",
        "gateway",
        "disk",
    ] {
        let status = check(&report, name)["status"].as_str().unwrap();
        assert!(matches!(status, "ok" | "info"), "{name}: {report}");
    }
    let provider = check(&report, "provider");
    assert_eq!(provider["status"], "ok", "{provider}");
    assert!(
        provider["summary"]
            .as_str()
            .unwrap()
            .contains("tool call and answer in")
    );
    assert!(provider["details"][0].as_str().unwrap().contains("pong-7"));
    // The second request carried the tool's result back.
    let requests = mock.requests();
    let last = requests.last().unwrap().to_string();
    assert!(
        last.contains("pong-7") && last.contains("\"tool\""),
        "{last}"
    );
    assert!(
        check(&report, "state.db")["summary"]
            .as_str()
            .unwrap()
            .contains("in step with 2 messages")
    );
}

#[test]
fn search_index_out_of_step_fails_then_fix_rebuilds_it() {
    let mock = MockLlm::start();
    let env = TestEnv::new();
    converse(&env, &mock);
    // Damage: the index loses its rows (as after a crash with triggers missing), and .env is
    // world-readable.
    env.db()
        .execute_batch("DELETE FROM messages_fts; DROP TRIGGER messages_fts_trigram_insert;")
        .unwrap();
    let dotenv = env.home_path().join(".env");
    std::fs::write(&dotenv, "SOME_TOKEN=abc\n").unwrap();
    std::fs::set_permissions(&dotenv, std::fs::Permissions::from_mode(0o644)).unwrap();
    let dead = "http://127.0.0.1:9/v1";

    let (code, report) = doctor(&env, dead, &[]);
    assert_eq!(code, Some(1));
    let db = check(&report, "state.db");
    assert_eq!(db["status"], "fail", "{db}");
    let details = db["details"].to_string();
    assert!(
        details.contains("messages_fts holds 0 rows for 2 messages"),
        "{details}"
    );
    assert!(details.contains("triggers are missing"), "{details}");
    assert!(details.contains("--fix"), "{details}");
    assert_eq!(check(&report, "permissions")["status"], "warn");
    assert_eq!(report["fixed"], json!([]));

    let (_, report) = doctor(&env, dead, &["--fix"]);
    assert_eq!(check(&report, "state.db")["status"], "ok", "{report}");
    assert_eq!(check(&report, "permissions")["status"], "ok", "{report}");
    let fixed = report["fixed"].to_string();
    assert!(
        fixed.contains("search index rebuilt") && fixed.contains("0600"),
        "{fixed}"
    );
    let mode = std::fs::metadata(&dotenv).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    // Search finds the old conversation again, and new messages are indexed.
    let out = env
        .bare_cmd()
        .args(["sessions", "search", "zebras", "--json"])
        .output()
        .unwrap();
    assert!(stdout(&out).contains("zebra"), "{}", stdout(&out));
    let (_, report) = doctor(&env, dead, &[]);
    assert_eq!(check(&report, "state.db")["status"], "ok", "{report}");
}

#[test]
fn dead_provider_fails_with_the_connection_error() {
    // Held for the whole test: a dropped listener's port can be handed to another test's mock.
    let closed = crate::support::closed_port::ClosedPort::new();
    let port = closed.addr().port();
    let env = TestEnv::new();
    let (code, report) = doctor(&env, &format!("http://127.0.0.1:{port}/v1"), &[]);
    assert_eq!(code, Some(1));
    assert_eq!(report["healthy"], false);
    let provider = check(&report, "provider");
    assert_eq!(provider["status"], "fail", "{provider}");
    assert!(
        provider["details"]
            .to_string()
            .contains("Connection refused"),
        "{provider}"
    );
    // Text mode says the same, readably.
    let out = env
        .cmd(&format!("http://127.0.0.1:{port}/v1"))
        .arg("doctor")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("FAIL provider"), "{}", stdout(&out));
}

#[test]
fn broken_config_is_reported_not_refused() {
    let env = TestEnv::new();
    env.config("agent:\n  max_turn: 5\n");
    let out = env.bare_cmd().args(["doctor", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let config = check(&report, "config");
    assert_eq!(config["status"], "fail");
    assert!(
        config["details"].to_string().contains("max_turns"),
        "{config}"
    );
    // The other checks still ran.
    assert!(report["checks"].as_array().unwrap().len() >= 6);
}
