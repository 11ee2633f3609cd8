//! The platform seam keeps its promise: a test-only platform registered in this one file is
//! served by `hermes gateway`'s configuration, named in its errors, and its environment variables
//! have names a shell can set (`ECHO_CHAT_…` for `echo-chat`).

use std::sync::Arc;

use hermes::config::{Config, EnvVars, HermesHome};
use hermes::gateway::platform::{
    AdapterError, MessageEvent, PlatformAdapter, PlatformRegistration, SendOptions, SendResult,
    env_prefix,
};

struct EchoChat;

#[async_trait::async_trait]
impl PlatformAdapter for EchoChat {
    fn platform(&self) -> &str {
        "echo-chat"
    }
    fn max_message_len(&self) -> usize {
        100
    }
    async fn connect(&self) -> Result<(), AdapterError> {
        Ok(())
    }
    async fn receive(&self, _cursor: Option<i64>) -> Result<Vec<MessageEvent>, AdapterError> {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        Ok(Vec::new())
    }
    async fn send(&self, _: &str, _: &str, _: &SendOptions) -> Result<SendResult, AdapterError> {
        Ok(SendResult {
            message_id: "1".into(),
        })
    }
    async fn edit(&self, _: &str, _: &str, _: &str) -> Result<(), AdapterError> {
        Ok(())
    }
    async fn delete(&self, _: &str, _: &str) -> Result<(), AdapterError> {
        Ok(())
    }
    async fn typing(&self, _: &str) -> Result<(), AdapterError> {
        Ok(())
    }
}

hermes::register_platform!(PlatformRegistration {
    name: "echo-chat",
    setup_hint: "ECHO_CHAT_TOKEN",
    from_config: |config| {
        config
            .env
            .get("ECHO_CHAT_TOKEN")
            .map(|_| Ok(Arc::new(EchoChat) as Arc<dyn PlatformAdapter>))
    },
});

fn config(env: &[(&str, &str)]) -> Config {
    let mut vars = EnvVars::default();
    for (k, v) in env {
        vars.set(*k, *v);
    }
    Config::defaults(HermesHome::new("/nonexistent-hermes-home"), vars)
}

#[test]
fn a_platform_registered_in_one_file_is_served_and_named() {
    let served = hermes::gateway::configured(&config(&[("ECHO_CHAT_TOKEN", "t")]), None).unwrap();
    assert_eq!(served.names(), ["echo-chat"]);
    let only = hermes::gateway::configured(&config(&[("ECHO_CHAT_TOKEN", "t")]), Some("echo-chat"))
        .unwrap();
    assert_eq!(only.adapters.len(), 1);

    let err = hermes::gateway::configured(&config(&[]), None)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("ECHO_CHAT_TOKEN") && err.contains("TELEGRAM_BOT_TOKEN"),
        "{err}"
    );
    let err = hermes::gateway::configured(&config(&[]), Some("nope"))
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("echo-chat") && err.contains("telegram") && err.contains("api_server"),
        "{err}"
    );
}

#[test]
fn platform_env_variables_are_names_a_shell_can_set() {
    assert_eq!(env_prefix("echo-chat"), "ECHO_CHAT");
    assert_eq!(env_prefix("telegram"), "TELEGRAM");
    // The allow-list of a hyphenated platform is read from that name.
    let access = hermes::gateway::settings::Authorizer::from_config(
        &config(&[("ECHO_CHAT_ALLOWED_USERS", "42")]),
        "echo-chat",
    );
    assert!(
        access.allows(Some("42")) && !access.allows(Some("7")),
        "{access:?}"
    );
}
