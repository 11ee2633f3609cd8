//! `hermes setup` through the real binary against the mock LLM: non-interactive with flags, then
//! a plain `hermes -z` that uses what it saved; interactive with answers on stdin.

use std::os::unix::fs::PermissionsExt;

use crate::support::harness::{TestEnv, stderr, stdout};
use crate::support::mock_llm::{MockLlm, Reply};

#[test]
fn setup_yes_saves_key_and_config_then_plain_hermes_works() {
    let mock = MockLlm::with_script([
        Reply::text("Hello, I am the mock."),
        Reply::text("second answer"),
    ]);
    let env = TestEnv::new();
    env.config("# my settings\nagent:\n  max_turns: 7  # keep me\n");
    let out = env
        .bare_cmd()
        .args(["setup", "--yes", "--provider", "custom", "--base-url"])
        .arg(mock.base_url())
        .args(["--model", "test-model", "--api-key", "sk-setup-key-123"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("Hello, I am the mock."), "{text}");
    assert!(
        !text.contains("sk-setup-key-123"),
        "the key is never printed: {text}"
    );

    let dotenv = env.home_path().join(".env");
    let mode = std::fs::metadata(&dotenv).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert_eq!(
        std::fs::read_to_string(&dotenv).unwrap(),
        "CUSTOM_API_KEY=sk-setup-key-123\n"
    );
    let config = std::fs::read_to_string(env.home_path().join("config.yaml")).unwrap();
    assert!(
        config.starts_with("# my settings\nagent:\n  max_turns: 7  # keep me\n"),
        "{config}"
    );
    assert!(config.contains("  default: test-model\n") && config.contains("  provider: custom\n"));

    // No flags, no environment: the saved settings are enough.
    let out = env.bare_cmd().args(["-z", "hi"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "second answer\n");
    assert_eq!(
        mock.header(1, "authorization").as_deref(),
        Some("Bearer sk-setup-key-123")
    );
    assert_eq!(mock.requests()[1]["model"], "test-model");
}

#[test]
fn setup_reads_answers_from_stdin() {
    let mock = MockLlm::with_script([Reply::text("hi from b")]);
    mock.set_models(&["model-a", "model-b"]);
    let env = TestEnv::new();
    // provider by name, its base URL, no key (Enter), the second listed model.
    let answers = format!("custom\n{}\n\n2\n", mock.base_url());
    let out = env
        .bare_cmd()
        .arg("setup")
        .write_stdin(answers)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("2) model-b") && text.contains("hi from b"),
        "{text}"
    );
    let config = std::fs::read_to_string(env.home_path().join("config.yaml")).unwrap();
    assert!(config.contains("default: model-b"), "{config}");
    assert!(!env.home_path().join(".env").exists(), "no key, no .env");
    assert_eq!(mock.requests()[0]["model"], "model-b");
}

#[test]
fn setup_yes_refuses_what_it_cannot_choose() {
    let env = TestEnv::new();
    let out = env
        .bare_cmd()
        .args(["setup", "--yes", "--provider", "openrouter", "-m", "x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("needs an API key"),
        "{}",
        stderr(&out)
    );
    let out = env
        .bare_cmd()
        .args(["setup", "--yes", "--provider", "nosuch"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("unknown provider `nosuch`"),
        "{}",
        stderr(&out)
    );
    assert!(
        !env.home_path().join("config.yaml").exists(),
        "nothing written"
    );
}

#[test]
fn failed_test_call_keeps_the_settings_and_says_so() {
    // Held for the whole test: a dropped listener's port can be handed to another test's mock.
    let closed = crate::support::closed_port::ClosedPort::new();
    let port = closed.addr().port();
    let env = TestEnv::new();
    let out = env
        .bare_cmd()
        .args([
            "setup",
            "--yes",
            "--provider",
            "custom",
            "-m",
            "m1",
            "--base-url",
        ])
        .arg(format!("http://127.0.0.1:{port}/v1"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("the test call failed") && err.contains("settings are saved"),
        "{err}"
    );
    assert!(env.home_path().join("config.yaml").exists());
}
