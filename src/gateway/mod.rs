//! The messaging gateway: `hermes gateway run` connects platform adapters and gives each chat its
//! own agent session, with exactly-once intake and delivery (state.db), a FIFO inbox per session,
//! chunked delivery and event hooks.
//!
//! Files: `platform.rs` (adapter trait, events, session keys), `telegram.rs` (Bot API),
//! `runner.rs` (supervision, intake, routing, the per-chat inbox cap) with `runner_rules.rs`
//! (the adapter rules: id epochs, no empty batches without a wait), `settings.rs` (knobs and
//! who is allowed), `session.rs` (per-session worker; a panic in a turn stays in its chat),
//! `ledger.rs` (exactly-once records and delivery), `delivery.rs` (chunking), `hooks.rs`,
//! `api_server.rs` (OpenAI-compatible HTTP front end) on `api_listener.rs` (accept loop with
//! timeouts and connection caps), `memory_trim.rs` and `retention.rs` (long-run upkeep).

pub mod api_listener;
pub mod api_server;
pub mod delivery;
pub mod hooks;
pub mod ledger;
pub mod memory_trim;
pub mod pairing;
pub mod platform;
pub mod retention;
pub mod runner;
mod runner_rules;
pub mod send;
pub mod session;
pub mod settings;
pub mod telegram;

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::agent::{AgentOptions, Services};
use crate::llm::LlmClient;
use platform::{AdapterError, PlatformAdapter};

/// Why the gateway could not run.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// The hint names what enables each registered platform.
    #[error(
        "no platform is configured: set {0}, or API_SERVER_KEY, in the environment or $HERMES_HOME/.env"
    )]
    NoPlatform(String),
    #[error("unknown platform `{0}` (available: {1})")]
    UnknownPlatform(String, String),
    #[error("{0}")]
    Adapter(#[from] AdapterError),
    #[error("state.db: {0}")]
    Store(#[from] crate::sessions::StoreError),
    #[error("{0}")]
    ApiServer(String),
}

/// What `hermes gateway run` serves.
pub struct Platforms {
    pub adapters: Vec<Arc<dyn PlatformAdapter>>,
    pub api_server: Option<api_server::ApiServerConfig>,
}

impl Platforms {
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .adapters
            .iter()
            .map(|a| a.platform().to_string())
            .collect();
        if self.api_server.is_some() {
            names.push("api_server".into());
        }
        names
    }
}

/// Everything enabled by configuration, optionally only `only`.
pub fn configured(
    config: &crate::config::Config,
    only: Option<&str>,
) -> Result<Platforms, GatewayError> {
    let platforms = platform::registered();
    if let Some(p) = only
        && p != "api_server"
        && !platforms.iter().any(|r| r.name == p)
    {
        let mut names: Vec<&str> = platforms.iter().map(|r| r.name).collect();
        names.push("api_server");
        return Err(GatewayError::UnknownPlatform(
            p.to_string(),
            names.join(", "),
        ));
    }
    let wants = |p: &str| only.is_none_or(|o| o == p);
    let mut adapters: Vec<Arc<dyn PlatformAdapter>> = Vec::new();
    for registration in platforms.iter().filter(|r| wants(r.name)) {
        if let Some(adapter) = (registration.from_config)(config) {
            adapters.push(adapter?);
        }
    }
    let api_server =
        match api_server::ApiServerConfig::from_config(config).filter(|_| wants("api_server")) {
            Some(r) => Some(r.map_err(GatewayError::ApiServer)?),
            None => None,
        };
    if adapters.is_empty() && api_server.is_none() {
        let hints: Vec<&str> = platforms.iter().map(|r| r.setup_hint).collect();
        return Err(GatewayError::NoPlatform(hints.join(", or ")));
    }
    Ok(Platforms {
        adapters,
        api_server,
    })
}

pub(crate) fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Runs the gateway until `shutdown` is cancelled. Returns an error only when every platform
/// stopped on a terminal error (e.g. a revoked token).
pub async fn run(
    services: Arc<Services>,
    client: Arc<dyn LlmClient>,
    agent_options: AgentOptions,
    platforms: Platforms,
    shutdown: CancellationToken,
) -> Result<(), GatewayError> {
    let names = platforms.names();
    let Platforms {
        adapters,
        api_server,
    } = platforms;
    let store = services.store.clone();
    store.call(|s| s.gateway_init()).await?;
    let hooks = Arc::new(hooks::Hooks::load(&services.config.home.hooks_dir()));
    hooks.emit("gateway:startup", json!({ "platforms": names }));
    let trimmer = Arc::new(memory_trim::Trimmer::default());
    tokio::spawn(
        trimmer
            .clone()
            .run(memory_trim::PERIOD, memory_trim::SETTLE, shutdown.clone()),
    );
    tokio::spawn(retention::run(
        store.clone(),
        runner::GatewaySettings::from_config(&services.config).ledger_keep,
        retention::PERIOD,
        shutdown.clone(),
    ));
    let mut tasks = Vec::new();
    for adapter in adapters {
        let ctx = Arc::new(runner::PlatformCtx::new(
            adapter,
            services.clone(),
            client.clone(),
            agent_options.clone(),
            hooks.clone(),
            trimmer.clone(),
            shutdown.clone(),
        ));
        tasks.push(tokio::spawn(runner::supervise(ctx)));
    }
    let api = api_server.map(|config| {
        let (services, client, options) = (services.clone(), client.clone(), agent_options.clone());
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            let result =
                api_server::serve(config, services, client, options, shutdown.clone()).await;
            if result.is_err() {
                // Without its listener the gateway is not what the user asked for: stop it all.
                shutdown.cancel();
            }
            result
        })
    });
    let mut last_err = None;
    let mut ok = 0;
    for t in tasks {
        match t.await {
            Ok(Ok(())) => ok += 1,
            Ok(Err(e)) => last_err = Some(e),
            Err(e) => tracing::error!(error = %e, "platform task panicked"),
        }
    }
    if let Some(api) = api {
        match api.await {
            Ok(Ok(())) => ok += 1,
            Ok(Err(e)) => return Err(GatewayError::ApiServer(e)),
            Err(e) => tracing::error!(error = %e, "API server task panicked"),
        }
    }
    match (ok, last_err) {
        (0, Some(e)) => Err(e.into()),
        _ => Ok(()),
    }
}
