//! The platform boundary: the `PlatformAdapter` trait every chat platform implements, the inbound
//! `MessageEvent` / `SessionSource` model (reference §12.2) and session keys (§12.3).
//!
//! Adding a platform is one file (plus its `mod` line) implementing [`PlatformAdapter`] and
//! registering it with `register_platform!` (its name, how to configure it, its constructor);
//! the gateway's configuration, errors and hints come from those registrations. Routing, ordering, chunking,
//! the delivery ledger and hooks live in the runner, not in adapters.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Kind of chat a message came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ChatType {
    #[default]
    Dm,
    Group,
    Channel,
    Thread,
}

impl ChatType {
    pub fn as_str(self) -> &'static str {
        match self {
            ChatType::Dm => "dm",
            ChatType::Group => "group",
            ChatType::Channel => "channel",
            ChatType::Thread => "thread",
        }
    }
}

/// Where a message came from (the subset of Python's `SessionSource` that applies here).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct SessionSource {
    pub platform: String,
    pub chat_id: String,
    #[serde(default)]
    pub chat_name: Option<String>,
    #[serde(default)]
    pub chat_type: ChatType,
    #[serde(default)]
    pub user_id: Option<String>,
    #[serde(default)]
    pub user_name: Option<String>,
    /// Forum topic / thread id (Telegram `message_thread_id`).
    #[serde(default)]
    pub thread_id: Option<String>,
    #[serde(default)]
    pub is_bot: bool,
}

/// One inbound message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct MessageEvent {
    pub text: String,
    pub source: SessionSource,
    /// The platform's message id (replies quote it).
    #[serde(default)]
    pub message_id: Option<String>,
    /// The platform's delivery id (Telegram `update_id`): the exactly-once key.
    pub platform_update_id: i64,
    #[serde(default)]
    pub reply_to_message_id: Option<String>,
    /// Unix seconds.
    #[serde(default)]
    pub timestamp: f64,
    /// Addressed to the bot: a DM, a mention of the bot, or a reply to one of its messages.
    /// In groups with `require_mention`, other messages are not for us.
    #[serde(default)]
    pub addressed: bool,
}

impl MessageEvent {
    /// `/cmd@bot args` → `Some(("cmd", "args"))`, command lower-cased, `@bot` suffix removed.
    pub fn command(&self) -> Option<(String, String)> {
        let rest = self.text.trim_start().strip_prefix('/')?;
        let (head, args) = match rest.split_once(char::is_whitespace) {
            Some((h, a)) => (h, a.trim()),
            None => (rest, ""),
        };
        let name = head.split('@').next().unwrap_or("").to_lowercase();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return None;
        }
        Some((name, args.to_string()))
    }
}

/// Options for one outbound message.
#[derive(Debug, Clone, Default)]
pub struct SendOptions {
    pub thread_id: Option<String>,
    pub reply_to: Option<String>,
}

/// What a successful send returns: the platform's id of the new message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendResult {
    pub message_id: String,
}

/// Why an adapter call failed; the runner decides what to do from the variant alone.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AdapterError {
    /// The platform asked us to slow down (HTTP 429); retry after the delay.
    #[error("{platform} rate limit: retry after {retry_after:?}")]
    RateLimited {
        platform: String,
        retry_after: Duration,
    },
    /// Network trouble, 5xx, conflicts: worth retrying with backoff.
    #[error("{platform}: {message}")]
    Retryable { platform: String, message: String },
    /// Bad token, forbidden, chat not found: retrying cannot help.
    #[error("{platform}: {message}")]
    Terminal { platform: String, message: String },
}

impl AdapterError {
    pub fn is_terminal(&self) -> bool {
        matches!(self, AdapterError::Terminal { .. })
    }
}

/// A chat platform. Implementations hold no routing state: the runner passes the receive cursor
/// (persisted in state.db) and owns everything above the wire.
///
/// Two rules every adapter must follow (the runner enforces what it can, `runner.rs`):
/// 1. **Update ids are unique across restarts**, or the adapter names their epoch. Inbound
///    updates are de-duplicated by `(platform, platform_update_id)` and the cursor is saved per
///    platform, so ids that restart at 0 would be taken for old ones (or never asked for). Ids
///    the platform keeps (Telegram's `update_id`) need nothing more. Otherwise implement
///    [`PlatformAdapter::id_epoch`]: a name for the current id sequence that changes whenever
///    the ids restart (the platform server's boot id, a random value drawn when the adapter's
///    own counter starts). When it differs from the recorded one, the runner starts the cursor
///    afresh and shifts the new sequence's ids above every id recorded for the platform, so
///    nothing is lost and nothing is answered twice. Ids going below the cursor without a new
///    epoch are logged as a broken rule.
/// 2. **`receive` waits** for messages (long polling) rather than returning an empty batch at
///    once; an empty batch after a wait is normal. Empty batches returned without waiting are
///    logged as a broken rule and backed off, so a broken adapter cannot spin a core.
#[async_trait::async_trait]
pub trait PlatformAdapter: Send + Sync {
    /// Platform name as in config and session keys (`telegram`).
    fn platform(&self) -> &str;
    /// Longest message the platform accepts, in its own unit (see [`Self::message_len`]).
    fn max_message_len(&self) -> usize;
    /// Length of `text` in the platform's unit (Telegram: UTF-16 code units).
    fn message_len(&self, text: &str) -> usize {
        text.chars().count()
    }
    /// Whether sent messages can be edited (streaming by edits).
    fn can_edit(&self) -> bool {
        false
    }
    /// Checks credentials / opens connections.
    async fn connect(&self) -> Result<(), AdapterError>;
    async fn disconnect(&self) {}
    /// Waits for the next batch of messages after `cursor` (long polling). An empty batch after
    /// a wait is normal; an immediate one breaks rule 2.
    async fn receive(&self, cursor: Option<i64>) -> Result<Vec<MessageEvent>, AdapterError>;
    /// Rule 1: the name of the sequence `platform_update_id`s are drawn from, for a platform
    /// whose ids restart (`None`, the default: ids are unique across restarts). Read after
    /// `connect` and before every `receive`; the batch a `receive` returns belongs to the epoch
    /// read just before it.
    fn id_epoch(&self) -> Option<String> {
        None
    }
    /// The cursor to pass after having durably recorded `event`.
    fn cursor_after(&self, event: &MessageEvent) -> i64 {
        event.platform_update_id + 1
    }
    async fn send(
        &self,
        chat_id: &str,
        text: &str,
        options: &SendOptions,
    ) -> Result<SendResult, AdapterError>;
    async fn edit(&self, chat_id: &str, message_id: &str, text: &str) -> Result<(), AdapterError>;
    async fn delete(&self, chat_id: &str, message_id: &str) -> Result<(), AdapterError>;
    /// Shows "typing…" for a few seconds.
    async fn typing(&self, chat_id: &str) -> Result<(), AdapterError>;
}

/// What a platform's constructor returns: `None` when it is not configured, `Some(Err)` when it
/// is, wrongly.
pub type Configured = Option<Result<std::sync::Arc<dyn PlatformAdapter>, AdapterError>>;

/// One platform the gateway can run; collected from every adapter file by `inventory`.
pub struct PlatformRegistration {
    /// As in config, session keys and `hermes gateway run --platform NAME`.
    pub name: &'static str,
    /// What to set to enable it (shown when no platform is configured).
    pub setup_hint: &'static str,
    /// `None` when it is not configured; `Some(Err)` when it is, wrongly.
    pub from_config: fn(&crate::config::Config) -> Configured,
}

inventory::collect!(PlatformRegistration);

/// Registers a platform adapter from its own file.
#[macro_export]
macro_rules! register_platform {
    ($registration:expr) => {
        inventory::submit! { $registration }
    };
}

/// Every registered platform, sorted by name.
pub fn registered() -> Vec<&'static PlatformRegistration> {
    let mut all: Vec<&'static PlatformRegistration> = inventory::iter::<PlatformRegistration>
        .into_iter()
        .collect();
    all.sort_by_key(|r| r.name);
    all
}

/// The prefix of a platform's environment variables (`<PREFIX>_ALLOWED_USERS`): upper case,
/// anything a shell cannot have in a name (`-`, `.`) as `_`.
pub fn env_prefix(platform: &str) -> String {
    platform
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// Session key rules (reference §12.3), namespace `agent:main`.
pub fn build_session_key(source: &SessionSource, group_sessions_per_user: bool) -> String {
    let ns = "agent:main";
    let p = &source.platform;
    let mut key = match source.chat_type {
        ChatType::Dm => {
            let id = if !source.chat_id.is_empty() {
                Some(source.chat_id.as_str())
            } else {
                source.user_id.as_deref()
            };
            match id {
                Some(id) => format!("{ns}:{p}:dm:{id}"),
                None => format!("{ns}:{p}:dm"),
            }
        }
        other => {
            let mut k = format!("{ns}:{p}:{}", other.as_str());
            if !source.chat_id.is_empty() {
                k.push(':');
                k.push_str(&source.chat_id);
            }
            k
        }
    };
    if let Some(thread) = &source.thread_id {
        key.push(':');
        key.push_str(thread);
    }
    // Threads are shared by default; per-user sessions only in un-threaded groups.
    if source.chat_type != ChatType::Dm
        && group_sessions_per_user
        && source.thread_id.is_none()
        && let Some(user) = &source.user_id
    {
        key.push(':');
        key.push_str(user);
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(
        chat_type: ChatType,
        chat: &str,
        user: Option<&str>,
        thread: Option<&str>,
    ) -> SessionSource {
        SessionSource {
            platform: "telegram".into(),
            chat_id: chat.into(),
            chat_type,
            user_id: user.map(String::from),
            thread_id: thread.map(String::from),
            ..SessionSource::default()
        }
    }

    #[test]
    fn session_keys_follow_the_reference_rules() {
        let dm = src(ChatType::Dm, "42", Some("42"), None);
        assert_eq!(build_session_key(&dm, true), "agent:main:telegram:dm:42");
        let dm_thread = src(ChatType::Dm, "42", Some("42"), Some("7"));
        assert_eq!(
            build_session_key(&dm_thread, true),
            "agent:main:telegram:dm:42:7"
        );
        let dm_no_chat = src(ChatType::Dm, "", Some("9"), None);
        assert_eq!(
            build_session_key(&dm_no_chat, true),
            "agent:main:telegram:dm:9"
        );
        let group = src(ChatType::Group, "-100", Some("5"), None);
        assert_eq!(
            build_session_key(&group, true),
            "agent:main:telegram:group:-100:5"
        );
        assert_eq!(
            build_session_key(&group, false),
            "agent:main:telegram:group:-100"
        );
        let topic = src(ChatType::Group, "-100", Some("5"), Some("3"));
        assert_eq!(
            build_session_key(&topic, true),
            "agent:main:telegram:group:-100:3"
        );
    }

    #[test]
    fn commands_are_parsed_like_python() {
        let mut e = MessageEvent {
            text: "/New@MyBot  now please".into(),
            ..MessageEvent::default()
        };
        assert_eq!(e.command(), Some(("new".into(), "now please".into())));
        e.text = "hello /new".into();
        assert_eq!(e.command(), None);
        e.text = "/".into();
        assert_eq!(e.command(), None);
        e.text = "/../etc".into();
        assert_eq!(e.command(), None);
    }
}
