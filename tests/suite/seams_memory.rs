//! The memory-provider seam keeps its promise: a test-only provider registered in this one file
//! is chosen by `memory.provider` in config.yaml, and its recall reaches the model in a real
//! turn; an unknown name runs without one.

use std::sync::Arc;

use hermes::agent::{Agent, AgentOptions, Services};
use hermes::config::{Config, EnvVars, HermesHome};
use hermes::memory::MemoryManager;
use hermes::memory::provider::{MemoryProvider, MemoryProviderRegistration, ProviderError};
use tokio_util::sync::CancellationToken;

use crate::support::mock_llm::{MockLlm, Reply};

/// Defined and registered here only: no manager arm or other file names it.
struct Parrot {
    limit: usize,
}

#[async_trait::async_trait]
impl MemoryProvider for Parrot {
    fn name(&self) -> &str {
        "parrot"
    }
    async fn prefetch(&self, query: &str, _session: &str) -> Result<Option<String>, ProviderError> {
        Ok(Some(format!(
            "parrot remembers (limit {}): {query}",
            self.limit
        )))
    }
}

hermes::register_memory_provider!(MemoryProviderRegistration {
    names: &["parrot", "polly"],
    build: |_config, settings| Arc::new(Parrot {
        limit: settings.recall_limit
    }),
});

fn config(home: &std::path::Path, yaml: &str) -> Config {
    Config::from_yaml(
        HermesHome::new(home),
        EnvVars::default(),
        yaml,
        &home.join("config.yaml"),
    )
    .unwrap()
}

#[test]
fn a_provider_registered_in_one_file_is_chosen_by_name() {
    let home = tempfile::tempdir().unwrap();
    let m = MemoryManager::from_config(&config(home.path(), "memory:\n  provider: polly\n"));
    assert_eq!(m.provider_name(), Some("parrot"));
    assert!(hermes::memory::provider::registered_names().contains(&"parrot"));
    let m = MemoryManager::from_config(&config(home.path(), "memory:\n  provider: parot\n"));
    assert_eq!(m.provider_name(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn its_recall_reaches_the_model_in_a_turn() {
    let home = tempfile::tempdir().unwrap();
    let cfg = config(
        home.path(),
        "memory:\n  provider: parrot\n  recall_limit: 4\n  nudge_interval: 0\n",
    );
    let store =
        Arc::new(hermes::sessions::SessionStore::open(&home.path().join("state.db")).unwrap());
    let mut services = Services::new(Arc::new(cfg), store);
    let manager = MemoryManager::from_config(&services.config);
    services.extensions.push(Arc::new(manager));
    let mock = MockLlm::with_script([Reply::text("noted")]);
    let client = hermes::llm::client_for(&hermes::llm::Provider::new(
        "custom",
        "m",
        &mock.base_url(),
        None,
    ))
    .unwrap();
    let options = AgentOptions {
        source: "cli".into(),
        cwd: home.path().to_path_buf(),
        toolsets: vec!["todo".into()],
        max_iterations: 3,
        yolo: false,
        interactive: false,
        ephemeral: false,
    };
    let mut agent = Agent::start(Arc::new(services), client, options)
        .await
        .unwrap();
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let out = agent
        .run_turn("my cat is called Miso", &tx, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(out.text, "noted");
    let sent = mock.requests()[0].to_string();
    assert!(
        sent.contains("memory-context")
            && sent.contains("parrot remembers (limit 4): my cat is called Miso"),
        "{sent}"
    );
}
