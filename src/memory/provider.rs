//! `MemoryProvider`: an external memory that takes part in every turn beside the built-in
//! MEMORY.md/USER.md (reference §7.5). At most one is active, chosen by `memory.provider`.
//!
//! Lifecycle, as the `MemoryManager` drives it: `initialize` once per session (lazily, on its
//! first turn) → per turn `prefetch` (before the first model call, under a short timeout; its
//! text goes to the API copy of the user message) and `sync_turn` (after the answer, in the
//! background) → `on_memory_write` when the built-in memory tool changed something →
//! `on_pre_compress` before the conversation is compacted → `on_session_end` when the manager
//! sees the next session start or the process ends. Every hook may fail; a failure is logged
//! and never reaches the user's turn.
//!
//! A provider joins in one place: its own file implements `MemoryProvider` and registers with
//! `register_memory_provider!` (the names `memory.provider` accepts, and a constructor). The
//! manager finds it by name among the registrations; no list elsewhere names it.

use std::path::PathBuf;
use std::sync::Arc;

use crate::config::Config;
use crate::memory::MemorySettings;

use crate::llm::{Message, ToolSchema};
use crate::memory::Target;

#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("memory provider {provider}: {message}")]
    Failed { provider: String, message: String },
}

impl ProviderError {
    pub fn new(provider: &str, message: impl Into<String>) -> Self {
        ProviderError::Failed {
            provider: provider.to_string(),
            message: message.into(),
        }
    }
}

/// Who is running the session (providers may store differently for background agents).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentContext {
    Primary,
    Subagent,
    Cron,
}

/// What a provider learns when a session starts.
#[derive(Debug, Clone)]
pub struct SessionContext {
    pub session_id: String,
    pub hermes_home: PathBuf,
    /// `sessions.source`: `cli`, `telegram`, ...
    pub platform: String,
    pub agent_context: AgentContext,
}

/// One finished exchange, for `sync_turn`.
#[derive(Debug, Clone)]
pub struct TurnRecord {
    pub session_id: String,
    pub user: String,
    pub assistant: String,
}

#[async_trait::async_trait]
pub trait MemoryProvider: Send + Sync {
    fn name(&self) -> &str;

    /// False when a requirement (a key, a service) is missing; the manager then skips it.
    fn is_available(&self) -> bool {
        true
    }

    async fn initialize(&self, _session: &SessionContext) -> Result<(), ProviderError> {
        Ok(())
    }

    /// Extra tools the provider offers. (The tool registry is static today, so these are
    /// reported in logs but not yet offered to the model.)
    fn tool_schemas(&self) -> Vec<ToolSchema> {
        Vec::new()
    }

    /// Text recalled for `query` (the user's message), or `None`. Must be quick: the manager
    /// gives up after `memory.prefetch_timeout`.
    async fn prefetch(
        &self,
        query: &str,
        session_id: &str,
    ) -> Result<Option<String>, ProviderError>;

    async fn sync_turn(&self, _turn: &TurnRecord) -> Result<(), ProviderError> {
        Ok(())
    }

    /// The built-in memory changed (`action` is add/replace/remove).
    fn on_memory_write(&self, _action: &str, _target: Target, _content: &str) {}

    /// Before compaction drops `messages` from the live context: text worth keeping, if any.
    async fn on_pre_compress(&self, _messages: &[Message]) -> Option<String> {
        None
    }

    async fn on_session_end(&self, _session_id: &str) {}

    async fn shutdown(&self) {}
}

/// One memory provider hermes can run; collected from every provider file by `inventory`.
pub struct MemoryProviderRegistration {
    /// The names `memory.provider` accepts for it; the first is the one shown in messages.
    pub names: &'static [&'static str],
    /// Builds it for this configuration (`settings` is the `memory:` section, resolved).
    pub build: fn(&Config, &MemorySettings) -> Arc<dyn MemoryProvider>,
}

inventory::collect!(MemoryProviderRegistration);

/// Registers a memory provider from its own file.
#[macro_export]
macro_rules! register_memory_provider {
    ($registration:expr) => {
        inventory::submit! { $registration }
    };
}

/// The first name of every registered provider, sorted.
pub fn registered_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = inventory::iter::<MemoryProviderRegistration>
        .into_iter()
        .filter_map(|r| r.names.first().copied())
        .collect();
    names.sort_unstable();
    names
}

/// The provider registered under `name` (any of its names), built for `config`.
pub fn build(
    name: &str,
    config: &Config,
    settings: &MemorySettings,
) -> Option<Arc<dyn MemoryProvider>> {
    inventory::iter::<MemoryProviderRegistration>
        .into_iter()
        .find(|r| r.names.contains(&name))
        .map(|r| (r.build)(config, settings))
}
