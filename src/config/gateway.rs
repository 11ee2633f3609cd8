//! The `gateway:` section of config.yaml as written; `gateway::settings` and the API server read
//! it. (Python Hermes keeps some gateway knobs at the top level; those are in `file.rs`.)

use serde::Deserialize;

use super::file::{flag, num, or_default};

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct GatewayFile {
    /// Idle session agents are dropped from memory after this many seconds (default 600).
    #[serde(deserialize_with = "num")]
    pub session_idle_seconds: Option<f64>,
    #[serde(deserialize_with = "flag")]
    pub group_sessions_per_user: Option<bool>,
    #[serde(deserialize_with = "flag")]
    pub require_mention: Option<bool>,
    /// Preview answers by editing one message.
    #[serde(deserialize_with = "flag")]
    pub streaming: Option<bool>,
    #[serde(deserialize_with = "num")]
    pub stream_interval_ms: Option<f64>,
    #[serde(deserialize_with = "num")]
    pub ledger_retention_days: Option<f64>,
    #[serde(deserialize_with = "num")]
    pub max_queued_per_chat: Option<f64>,
    #[serde(deserialize_with = "or_default")]
    pub api_server: ApiServerFile,
}

/// `gateway.api_server:` limits (each a positive number).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ApiServerFile {
    #[serde(deserialize_with = "num")]
    pub max_concurrent: Option<f64>,
    /// Python Hermes' name for `max_concurrent`.
    #[serde(deserialize_with = "num")]
    pub max_concurrent_runs: Option<f64>,
    #[serde(deserialize_with = "num")]
    pub max_connections: Option<f64>,
    #[serde(deserialize_with = "num")]
    pub max_connections_per_ip: Option<f64>,
    #[serde(deserialize_with = "num")]
    pub header_timeout: Option<f64>,
}
