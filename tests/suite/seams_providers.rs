//! The provider seam keeps its promise: a row added in one place (here, with
//! `register_provider!`) resolves with its own key variable; a `custom_providers:` entry in
//! config.yaml (Python Hermes's format) answers a one-shot through the real binary; the pooled
//! keys of a non-default provider come from its own variables.

use std::time::Duration;

use hermes::config::{Config, EnvVars, HermesHome};
use hermes::llm::provider::{self, Detect, ProviderFlags, ProviderSpec, ResolveInputs};

use crate::support::harness::{TestEnv, stderr, stdout};
use crate::support::mock_llm::{MockLlm, Reply};

hermes::register_provider!(ProviderSpec {
    name: "acme-test",
    aliases: &["acme"],
    label: "Acme (test only)",
    base_url: "http://127.0.0.1:9/v1",
    key_env: Some("ACME_TEST_API_KEY"),
    base_env: None,
    key_required: true,
    detect: Detect::Never,
    env_base_means_custom: false,
    wire_api: None,
});

const RATE_LIMITED: &str =
    r#"{"error":{"message":"Rate limit reached for requests","type":"rate_limit_error"}}"#;

fn config(env: &[(&str, &str)], yaml: &str) -> Config {
    let mut vars = EnvVars::default();
    for (k, v) in env {
        vars.set(*k, *v);
    }
    let home = tempfile::tempdir().unwrap();
    Config::from_yaml(
        HermesHome::new(home.path()),
        vars,
        yaml,
        &home.path().join("config.yaml"),
    )
    .unwrap()
}

async fn resolve(flags: ProviderFlags, config: &Config) -> Result<provider::Provider, String> {
    provider::resolve(ResolveInputs {
        flags: &flags,
        config,
        probe_timeout: Duration::from_millis(50),
    })
    .await
    .map_err(|e| e.to_string())
}

#[tokio::test]
async fn a_row_registered_in_one_file_resolves_with_its_own_key_variable() {
    let cfg = config(&[("ACME_TEST_API_KEY", "acme-key")], "");
    let flags = ProviderFlags {
        provider: Some("Acme".into()),
        model: Some("m".into()),
        ..Default::default()
    };
    let p = resolve(flags.clone(), &cfg).await.unwrap();
    assert_eq!(p.name, "acme-test");
    assert_eq!(p.base_url, "http://127.0.0.1:9/v1");
    assert_eq!(p.api_key.as_deref(), Some("acme-key"));
    assert_eq!(p.key_env.as_deref(), Some("ACME_TEST_API_KEY"));
    // Its key requirement comes from the row too.
    let err = resolve(flags, &config(&[], "")).await.unwrap_err();
    assert!(err.contains("ACME_TEST_API_KEY"), "{err}");
    // And an unknown name lists it.
    let err = resolve(
        ProviderFlags {
            provider: Some("nope".into()),
            ..Default::default()
        },
        &cfg,
    )
    .await
    .unwrap_err();
    assert!(err.contains("acme-test"), "{err}");
}

fn gateway_config(env: &TestEnv, base_url: &str) {
    env.config(&format!(
        "custom_providers:\n  - name: Mock Gateway\n    base_url: {base_url}\n    key_env: MOCK_GW_KEY\n    model: gw-model\n    extra_headers:\n      X-Team: blue\n    context_length: 32000\n"
    ));
}

#[test]
fn a_custom_provider_from_config_answers_a_one_shot() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script([Reply::text("hello from the gateway")]);
    gateway_config(&env, &mock.base_url());
    let out = env
        .bare_cmd()
        .env("MOCK_GW_KEY", "sk-gw-1111")
        .args(["--provider", "mock-gateway", "-z", "hi"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "hello from the gateway\n");
    assert_eq!(mock.requests()[0]["model"], "gw-model");
    assert_eq!(
        mock.header(0, "authorization").as_deref(),
        Some("Bearer sk-gw-1111")
    );
    assert_eq!(mock.header(0, "x-team").as_deref(), Some("blue"));

    // Without its key, the error names the variable to set.
    let out = env
        .bare_cmd()
        .args(["--provider", "custom:mock-gateway", "-z", "hi"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("MOCK_GW_KEY"), "{}", stderr(&out));
    assert_eq!(mock.request_count(), 1);
}

#[test]
fn a_broken_custom_providers_entry_is_a_readable_error() {
    let env = TestEnv::new();
    env.config("custom_providers:\n  - name: Half Done\n");
    let out = env
        .bare_cmd()
        .args(["--provider", "half-done", "-z", "hi"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("custom_providers entry 1") && err.contains("base_url"),
        "{err}"
    );
}

#[test]
fn pooled_keys_of_a_non_default_provider_come_from_its_own_variables() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script([
        Reply::error(429, RATE_LIMITED).header("retry-after", "0"),
        Reply::error(429, RATE_LIMITED).header("retry-after", "0"),
        Reply::text("second gateway key"),
    ]);
    gateway_config(&env, &mock.base_url());
    std::fs::write(
        env.home_path().join(".env"),
        "MOCK_GW_KEY=sk-gw-one-1111\nMOCK_GW_KEY_2=sk-gw-two-2222\nCUSTOM_API_KEY_2=sk-wrong-3333\n",
    )
    .unwrap();
    let out = env
        .bare_cmd()
        .args(["--provider", "mock-gateway", "-z", "hi"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "second gateway key\n");
    let auths: Vec<String> = (0..mock.request_count())
        .map(|i| mock.header(i, "authorization").unwrap_or_default())
        .collect();
    assert_eq!(auths[0], "Bearer sk-gw-one-1111");
    assert_eq!(auths.last().unwrap(), "Bearer sk-gw-two-2222");
    assert!(!auths.iter().any(|a| a.contains("wrong")), "{auths:?}");
}
