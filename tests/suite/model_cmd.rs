//! `hermes model [NAME] [--list] [--force]` through the real binary against the mock LLMs: where
//! the default comes from, the endpoint's list (OpenAI and Anthropic wire), switching with the
//! config's comments kept, refusing a name the endpoint does not serve, and an endpoint that has
//! no list.

use crate::support::harness::{TestEnv, stderr, stdout};
use crate::support::mock_llm::{MockLlm, Reply};

fn configured(base_url: &str) -> TestEnv {
    let env = TestEnv::new();
    env.config(&format!(
        "# my settings\nmodel:\n  provider: custom\n  base_url: {base_url}\n  # the one I use\n  default: model-a\nagent:\n  max_turns: 7  # keep\n"
    ));
    env
}

fn config_text(env: &TestEnv) -> String {
    std::fs::read_to_string(env.home_path().join("config.yaml")).unwrap()
}

#[test]
fn shows_the_default_and_where_it_comes_from() {
    let mock = MockLlm::start();
    let env = configured(&mock.base_url());
    let out = env.bare_cmd().arg("model").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let config = env.home_path().join("config.yaml");
    assert!(
        text.contains(&format!(
            "model     model-a  ({}: model.default)",
            config.display()
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("provider  custom  {}", mock.base_url())),
        "{text}"
    );
    assert!(text.contains("model.provider / model.base_url"), "{text}");

    let out = env
        .bare_cmd()
        .args(["-m", "other", "model"])
        .output()
        .unwrap();
    assert!(stdout(&out).contains("model     other  (the -m flag)"));

    // From the environment, nothing in config.yaml.
    let env = TestEnv::new();
    let out = env
        .bare_cmd()
        .env("OPENAI_BASE_URL", mock.base_url())
        .env("OPENAI_API_KEY", "sk-test")
        .arg("model")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("(environment: OPENAI_"), "{text}");
    assert!(
        text.contains("model     mock-model  (the first model the endpoint lists"),
        "{text}"
    );
}

#[test]
fn lists_the_endpoints_models_on_both_wires() {
    let mock = MockLlm::start();
    mock.set_models(&["model-a", "model-b", "model-c"]);
    let env = configured(&mock.base_url());
    let out = env.bare_cmd().args(["model", "--list"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "model-a\nmodel-b\nmodel-c\n");

    let anthropic = crate::support::mock_anthropic::MockAnthropic::start();
    let env = TestEnv::new();
    env.config(&format!(
        "model:\n  provider: anthropic\n  base_url: {}\n  default: claude-x\n",
        anthropic.base_url()
    ));
    let out = env
        .bare_cmd()
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .args(["model", "--list"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "claude-mock\n");
}

#[test]
fn switches_the_default_keeping_comments_and_the_next_run_uses_it() {
    let mock = MockLlm::with_script([Reply::text("from b")]);
    mock.set_models(&["model-a", "model-b"]);
    let env = configured(&mock.base_url());
    let before = config_text(&env);
    let out = env.bare_cmd().args(["model", "model-b"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("default model: model-b (was model-a"),
        "{}",
        stdout(&out)
    );
    assert_eq!(
        config_text(&env),
        before.replace("default: model-a", "default: model-b")
    );
    let out = env.bare_cmd().args(["-z", "hi"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "from b\n");
    assert_eq!(mock.requests()[0]["model"], "model-b");
}

#[test]
fn a_name_the_endpoint_does_not_serve_is_refused_unless_forced() {
    let mock = MockLlm::start();
    mock.set_models(&["model-a", "model-b"]);
    let env = configured(&mock.base_url());
    let before = config_text(&env);
    let out = env.bare_cmd().args(["model", "model-z"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("does not serve `model-z`") && err.contains("model-a, model-b"),
        "{err}"
    );
    assert!(err.contains("--force"), "{err}");
    assert_eq!(config_text(&env), before, "nothing changed");

    let out = env
        .bare_cmd()
        .args(["model", "model-z", "--force"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(config_text(&env).contains("  default: model-z\n"));
}

#[test]
fn an_endpoint_without_a_list_gets_a_warning() {
    let mock = MockLlm::start();
    // `/v1/nolist/models` is no route of the mock: the endpoint has no list.
    let env = configured(&format!("{}/nolist", mock.base_url()));
    let out = env.bare_cmd().args(["model", "model-q"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("does not list its models"),
        "{}",
        stderr(&out)
    );
    assert!(config_text(&env).contains("  default: model-q\n"));

    let out = env.bare_cmd().args(["model", "--list"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("did not list its models"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_python_hermes_config_with_an_empty_model_can_be_switched() {
    let mock = MockLlm::start();
    mock.set_models(&["model-a"]);
    let env = TestEnv::new();
    env.config(include_str!("../fixtures/python-hermes-0.19-config.yaml"));
    let out = env
        .bare_cmd()
        .env("CUSTOM_BASE_URL", mock.base_url())
        .args(["--provider", "custom", "model", "model-a"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = config_text(&env);
    assert!(text.contains("model:\n  default: model-a\n"), "{text}");
    assert!(text.contains("_config_version: 33"), "{text}");
}

#[test]
fn on_a_terminal_the_user_picks_from_the_list() {
    let mock = MockLlm::start();
    mock.set_models(&["model-a", "model-b"]);
    let env = configured(&mock.base_url());
    // `script` (util-linux) gives the command a terminal on both ends; the answer goes in
    // through it.
    let out = std::process::Command::new("script")
        .args([
            "-qec",
            &format!("{} model", env!("CARGO_BIN_EXE_hermes")),
            "/dev/null",
        ])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", env.home_path())
        .env("HERMES_HOME", env.home_path())
        .env("TERM", "dumb")
        .current_dir(env.cwd.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(b"2\n")?;
            child.wait_with_output()
        })
        .unwrap();
    let text = stdout(&out);
    assert!(out.status.success(), "{text}\n{}", stderr(&out));
    assert!(
        text.contains("*  1) model-a") && text.contains("   2) model-b"),
        "{text}"
    );
    assert!(
        text.contains("default model: model-b (was model-a"),
        "{text}"
    );
    assert!(config_text(&env).contains("  default: model-b\n"));
}
