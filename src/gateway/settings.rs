//! Gateway settings: the knobs from config.yaml (`gateway:`, Python's top-level
//! `max_concurrent_sessions`, `max_live_sessions`, ...) and who may talk to the agent on a
//! platform (`<PLATFORM>_ALLOWED_USERS`, allow-all flags).

use std::collections::HashSet;
use std::time::Duration;

/// Gateway knobs from config.yaml `gateway:` and `approvals.timeout`.
#[derive(Debug, Clone)]
pub struct GatewaySettings {
    pub approval_timeout: Duration,
    /// Idle session agents are dropped from memory after this long.
    pub idle_evict: Duration,
    pub group_sessions_per_user: bool,
    /// Agents kept in memory between turns (`max_live_sessions`, Python's default 16).
    pub max_live_sessions: usize,
    /// Turns running at once across all chats (`max_concurrent_sessions`, default 32).
    pub max_concurrent_turns: usize,
    /// In groups, only messages that mention the bot, reply to it, or are commands are for us.
    pub require_mention: bool,
    /// Unknown users in a DM get a pairing code (`unauthorized_dm_behavior: ignore` turns the
    /// reply off entirely).
    pub dm_pairing: bool,
    /// Preview answers by editing one message (platforms that can edit).
    pub streaming: bool,
    pub stream_interval: Duration,
    /// Answered updates and closed deliveries are forgotten after this long
    /// (`gateway.ledger_retention_days`, default 7).
    pub ledger_keep: Duration,
    /// Messages one chat may have waiting behind its running turn
    /// (`gateway.max_queued_per_chat`, default 100); past it they are refused with a notice.
    pub max_queued_per_chat: usize,
}

impl GatewaySettings {
    pub fn from_config(config: &crate::config::Config) -> Self {
        let f = &config.file;
        let gw = &f.gateway;
        GatewaySettings {
            approval_timeout: Duration::from_secs(config.approvals.timeout.max(1)),
            idle_evict: Duration::from_secs_f64(gw.session_idle_seconds.unwrap_or(600.0).max(1.0)),
            // Python's top-level keys, with `gateway.<key>` accepted too.
            group_sessions_per_user: f
                .group_sessions_per_user
                .or(gw.group_sessions_per_user)
                .unwrap_or(true),
            require_mention: f.require_mention.or(gw.require_mention).unwrap_or(true),
            max_live_sessions: f.max_live_sessions.unwrap_or(16).max(1),
            max_concurrent_turns: f.max_concurrent_sessions.unwrap_or(32).max(1),
            dm_pairing: f.unauthorized_dm_behavior.as_deref() != Some("ignore"),
            streaming: gw.streaming.unwrap_or(false),
            stream_interval: Duration::from_millis(
                gw.stream_interval_ms.unwrap_or(1000.0).max(50.0) as u64,
            ),
            // At least a day: Telegram may offer an unconfirmed update for 24 hours.
            ledger_keep: Duration::from_secs_f64(
                gw.ledger_retention_days.unwrap_or(7.0).max(1.0) * 86_400.0,
            ),
            max_queued_per_chat: gw.max_queued_per_chat.unwrap_or(100.0).max(1.0) as usize,
        }
    }
}

/// Who may talk to the agent on one platform.
#[derive(Debug, Clone, Default)]
pub struct Authorizer {
    pub allow_all: bool,
    pub users: HashSet<String>,
}

impl Authorizer {
    /// `<PLATFORM>_ALLOWED_USERS` (comma list), `<PLATFORM>_ALLOW_ALL_USERS`,
    /// `GATEWAY_ALLOW_ALL_USERS`. With none of them set nobody is allowed (deny by default).
    pub fn from_config(config: &crate::config::Config, platform: &str) -> Self {
        let up = crate::gateway::platform::env_prefix(platform);
        let truthy = |k: &str| {
            config
                .env
                .get(k)
                .is_some_and(|v| matches!(v.trim().to_lowercase().as_str(), "1" | "true" | "yes"))
        };
        let users = config
            .env
            .get(&format!("{up}_ALLOWED_USERS"))
            .unwrap_or("")
            .split(',')
            .map(|u| u.trim().to_string())
            .filter(|u| !u.is_empty())
            .collect();
        Authorizer {
            allow_all: truthy(&format!("{up}_ALLOW_ALL_USERS"))
                || truthy("GATEWAY_ALLOW_ALL_USERS"),
            users,
        }
    }

    pub fn allows(&self, user_id: Option<&str>) -> bool {
        self.allow_all || user_id.is_some_and(|u| self.users.contains(u))
    }
}
