//! Credential rotation and provider fallback through the real binary: keys in auth.json, their
//! cooldowns and dead marks persisted across restarts, a fallback provider for the turn.

use std::path::Path;

use serde_json::{Value, json};

use crate::support::harness::{TestEnv, stderr, stdout};
use crate::support::mock_llm::{MockLlm, Reply};

fn write_pool(home: &Path, base_url: &str, keys: &[&str]) {
    let entries: Vec<Value> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| json!({"access_token": k, "label": format!("key{}", i + 1), "priority": i}))
        .collect();
    let doc = json!({"credential_pool": {format!("custom:{base_url}"): entries}});
    std::fs::write(home.join("auth.json"), doc.to_string()).unwrap();
}

fn auth(mock: &MockLlm, i: usize) -> String {
    mock.header(i, "authorization").unwrap_or_default()
}

const RATE_LIMITED: &str =
    r#"{"error":{"message":"Rate limit reached for requests","type":"rate_limit_error"}}"#;

#[test]
fn rate_limited_key_rotates_and_the_cooldown_survives_a_restart() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script([
        Reply::error(429, RATE_LIMITED).header("retry-after", "0"),
        // The cooldown that rotates the key: long enough that the second process, however
        // slowly a loaded machine starts it, still sees the key at rest.
        Reply::error(429, RATE_LIMITED).header("retry-after", "120"),
        Reply::text("answered with the second key"),
        Reply::text("second run"),
    ]);
    write_pool(
        env.home_path(),
        &mock.base_url(),
        &["sk-first-1111", "sk-second-2222"],
    );
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "hi"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "answered with the second key\n");
    assert_eq!(auth(&mock, 0), "Bearer sk-first-1111");
    assert_eq!(
        auth(&mock, 1),
        "Bearer sk-first-1111",
        "a first 429 retries the same key"
    );
    assert_eq!(auth(&mock, 2), "Bearer sk-second-2222");

    // The cooldown is in auth.json: a new process starts on the second key.
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "again"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(mock.request_count(), 4);
    assert_eq!(auth(&mock, 3), "Bearer sk-second-2222");
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(env.home_path().join("auth.json")).unwrap())
            .unwrap();
    let pool = doc["credential_pool"][format!("custom:{}", mock.base_url())]
        .as_array()
        .unwrap()
        .clone();
    let first = pool
        .iter()
        .find(|e| e["access_token"] == "sk-first-1111")
        .unwrap();
    assert_eq!(first["last_status"], "exhausted");
    assert_eq!(first["last_error_reason"], "rate_limit");
}

#[test]
fn revoked_key_is_dead_across_restarts_and_named() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script([Reply::error(
        401,
        r#"{"error":{"message":"This API key has been revoked","code":"token_revoked"}}"#,
    )]);
    write_pool(env.home_path(), &mock.base_url(), &["sk-revoked-9999"]);
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "hi"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("revoked") && err.contains("…9999") && err.contains("dead"),
        "{err}"
    );
    assert!(
        !err.contains("sk-revoked-9999"),
        "the key itself is never printed: {err}"
    );
    assert_eq!(mock.request_count(), 1);

    // Restart: no request is sent with a key known to be dead.
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "hi again"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("no usable API key"),
        "{}",
        stderr(&out)
    );
    assert_eq!(mock.request_count(), 1);
}

#[test]
fn exhausted_primary_falls_back_for_the_turn_only() {
    let env = TestEnv::new();
    let fallback = MockLlm::with_script([Reply::text("from the fallback model")]);
    let mut primary_script: Vec<Reply> = (0..6)
        .map(|_| Reply::error(429, RATE_LIMITED).header("retry-after", "0"))
        .collect();
    primary_script.push(Reply::text("the primary is back"));
    let primary = MockLlm::with_script(primary_script);
    env.config(&format!(
        "fallback_providers:\n  - provider: custom\n    base_url: {}\n    model: fallback-model\n",
        fallback.base_url()
    ));
    let out = env
        .cmd(&primary.base_url())
        .write_stdin("first question\nsecond question\n/quit\n")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("from the fallback model"), "{text}");
    assert!(text.contains("falling back to fallback-model"), "{text}");
    assert!(text.contains("the primary is back"), "{text}");
    assert_eq!(fallback.request_count(), 1);
    assert_eq!(fallback.requests()[0]["model"], "fallback-model");
    assert_eq!(
        primary.request_count(),
        7,
        "six 429s, then the next turn starts on the primary"
    );
}

#[test]
fn single_key_rides_out_a_short_rate_limit_storm() {
    let env = TestEnv::new();
    let mut script: Vec<Reply> = (0..3)
        .map(|_| Reply::error(429, RATE_LIMITED).header("retry-after", "0.2"))
        .collect();
    script.push(Reply::text("made it"));
    script.push(Reply::text("next run"));
    let mock = MockLlm::with_script(script);
    write_pool(env.home_path(), &mock.base_url(), &["sk-single-7777"]);
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "hi"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "made it\n");
    assert_eq!(mock.request_count(), 4);
    // The key was not put to rest: the next run uses it at once.
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "again"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(auth(&mock, 4), "Bearer sk-single-7777");
}

#[test]
fn pooled_key_storm_falls_back_after_its_retries() {
    let env = TestEnv::new();
    let fallback = MockLlm::with_script([Reply::text("fallback answered")]);
    let primary = MockLlm::with_script(
        (0..6).map(|_| Reply::error(429, RATE_LIMITED).header("retry-after", "0")),
    );
    write_pool(env.home_path(), &primary.base_url(), &["sk-pooled-5555"]);
    env.config(&format!(
        "fallback_providers:\n  - provider: custom\n    base_url: {}\n    model: fallback-model\n",
        fallback.base_url()
    ));
    let out = env
        .cmd(&primary.base_url())
        .args(["-z", "hi"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "fallback answered\n");
    assert_eq!(primary.request_count(), 6);
    assert_eq!(fallback.request_count(), 1);
}

#[test]
fn keys_from_dotenv_form_a_pool() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script([
        Reply::error(429, RATE_LIMITED).header("retry-after", "0"),
        Reply::error(429, RATE_LIMITED).header("retry-after", "0"),
        Reply::text("second key from .env"),
    ]);
    std::fs::write(
        env.home_path().join(".env"),
        "CUSTOM_API_KEY=sk-env-one-1111\nCUSTOM_API_KEY_2=sk-env-two-2222\n",
    )
    .unwrap();
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "hi"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "second key from .env\n");
    assert_eq!(auth(&mock, 0), "Bearer sk-env-one-1111");
    assert_eq!(auth(&mock, 2), "Bearer sk-env-two-2222");
}
