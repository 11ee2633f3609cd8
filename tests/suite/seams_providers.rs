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

#[test]
fn typos_in_the_provider_paths_are_errors_with_did_you_mean() {
    for (yaml, key, hint) in [
        (
            "providers:\n  openrouter:\n    api_kyes: [sk-a]\n",
            "providers.openrouter.api_kyes",
            "api_keys",
        ),
        (
            "fallback_providers:\n  - {provider: openrouter, modle: m}\n",
            "fallback_providers.0.modle",
            "model",
        ),
        (
            "fallback_model:\n  provider: openrouter\n  modle: m\n",
            "fallback_model.modle",
            "model",
        ),
        (
            "custom_providers:\n  - name: a\n    base_url: http://h/v1\n    key_evn: A_KEY\n",
            "custom_providers.0.key_evn",
            "key_env",
        ),
        (
            "api_server:\n  aprovals: allow\n",
            "api_server.aprovals",
            "approvals",
        ),
    ] {
        let env = TestEnv::new();
        env.config(yaml);
        let out = env.bare_cmd().args(["sessions", "list"]).output().unwrap();
        assert!(!out.status.success(), "{yaml} was accepted");
        let err = stderr(&out);
        assert!(err.contains(&format!("`{key}`")), "{yaml}: {err}");
        assert!(
            err.contains(&format!("did you mean `{hint}`")),
            "{yaml}: {err}"
        );
    }
    let env = TestEnv::new();
    env.config("credential_pool_strategies:\n  openrouter: round_robbin\n");
    let out = env.bare_cmd().args(["sessions", "list"]).output().unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("credential_pool_strategies") && err.contains("did you mean `round_robin`"),
        "{err}"
    );
}

#[test]
fn python_shaped_provider_paths_load_without_warnings() {
    let env = TestEnv::new();
    env.config(
        "providers:\n  my-llm:\n    base_url: http://h/v1\n    apiKey: k\n    models: [a]\n    api_keys: [sk-b]\n\
         fallback_providers:\n  - provider: openrouter\n    model: m\n    api_key_env: OR_KEY\n\
         fallback_model: {provider: openrouter, model: n}\n\
         credential_pool_strategies: {openrouter: least_used}\n\
         custom_providers:\n  - name: gw\n    url: http://g/v1\n    models: [x]\n    ssl_verify: false\n\
         platforms:\n  telegram:\n    enabled: true\n    reply_to_mode: all\n  api_server:\n    approvals: deny\n",
    );
    let out = env.bare_cmd().args(["sessions", "list"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("config.yaml"), "{}", stderr(&out));
}

#[test]
fn a_provider_in_pythons_keyed_form_answers_a_one_shot() {
    // Python Hermes' newer `providers:` mapping: an entry with a base_url is a provider too.
    let env = TestEnv::new();
    let mock = MockLlm::with_script([Reply::text("keyed hello")]);
    env.config(&format!(
        "providers:\n  team-llm:\n    baseUrl: {}\n    apiKeyEnv: TEAM_LLM_KEY\n    default_model: team-model\n",
        mock.base_url()
    ));
    let out = env
        .bare_cmd()
        .env("TEAM_LLM_KEY", "sk-team-2222")
        .args(["--provider", "team-llm", "-z", "hi"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "keyed hello\n");
    assert_eq!(mock.requests()[0]["model"], "team-model");
    assert_eq!(
        mock.header(0, "authorization").as_deref(),
        Some("Bearer sk-team-2222")
    );
}
