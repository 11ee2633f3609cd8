//! Telegram adapter: the Bot API over HTTPS with long polling (`getUpdates`), `sendMessage`,
//! `editMessageText`, `deleteMessage` and `sendChatAction`.
//!
//! Configured from `TELEGRAM_BOT_TOKEN`, `TELEGRAM_API_BASE_URL` (default the public Bot API;
//! tests point it at a fake) and `TELEGRAM_POLL_TIMEOUT` (seconds, default 25). The token is part
//! of every URL, so reqwest errors are stripped of their URL and never logged with it.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::config::Config;
use crate::gateway::delivery::utf16_len;
use crate::gateway::platform::{
    AdapterError, ChatType, MessageEvent, PlatformAdapter, SendOptions, SendResult, SessionSource,
};

const PLATFORM: &str = "telegram";
const DEFAULT_BASE: &str = "https://api.telegram.org";
/// Telegram's limit for one text message, in UTF-16 code units.
pub const MAX_MESSAGE_LEN: usize = 4096;

pub struct TelegramAdapter {
    http: reqwest::Client,
    base: String,
    token: String,
    poll_timeout: u64,
    /// The bot's @username, learnt at connect (mentions in groups).
    bot_username: std::sync::Mutex<Option<String>>,
}

/// The Bot API envelope: `{ok, result}` or `{ok: false, error_code, description, parameters}`.
#[derive(Debug, Deserialize)]
struct Envelope {
    ok: bool,
    #[serde(default)]
    result: Value,
    #[serde(default)]
    error_code: Option<u16>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    parameters: Option<ErrorParameters>,
}

#[derive(Debug, Deserialize)]
struct ErrorParameters {
    #[serde(default)]
    retry_after: Option<u64>,
}

impl TelegramAdapter {
    /// The adapter when `TELEGRAM_BOT_TOKEN` is set (env or `.env`), else `None`.
    pub fn from_config(config: &Config) -> Option<Result<Self, AdapterError>> {
        let token = config.env.get("TELEGRAM_BOT_TOKEN")?.trim().to_string();
        let base = config
            .env
            .get("TELEGRAM_API_BASE_URL")
            .unwrap_or(DEFAULT_BASE)
            .trim_end_matches('/')
            .to_string();
        let poll_timeout = config
            .env
            .get("TELEGRAM_POLL_TIMEOUT")
            .and_then(|v| v.parse().ok())
            .unwrap_or(25u64)
            .min(50);
        Some(Self::new(base, token, poll_timeout))
    }

    pub fn new(base: String, token: String, poll_timeout: u64) -> Result<Self, AdapterError> {
        let http = crate::llm::http::client_builder(Duration::from_secs(10))
            // Long polls hold the request open for `poll_timeout`; leave room on top.
            .timeout(Duration::from_secs(poll_timeout + 15))
            .build()
            .map_err(|e| terminal(format!("cannot build the HTTP client: {}", e.without_url())))?;
        Ok(TelegramAdapter {
            http,
            base,
            token,
            poll_timeout,
            bot_username: std::sync::Mutex::new(None),
        })
    }

    async fn call(&self, method: &str, body: Value) -> Result<Value, AdapterError> {
        let url = format!("{}/bot{}/{method}", self.base, self.token);
        let response = self
            .http
            .post(&url)
            .json(&body)
            .send()
            .await
            .map_err(|e| retryable(format!("{method} failed: {}", e.without_url())))?;
        let status = response.status();
        let text = response.text().await.map_err(|e| {
            retryable(format!(
                "{method}: reading the reply failed: {}",
                e.without_url()
            ))
        })?;
        let envelope: Envelope = match serde_json::from_str(&text) {
            Ok(e) => e,
            Err(_) if status.is_server_error() => {
                return Err(retryable(format!("{method}: HTTP {status}")));
            }
            Err(e) => return Err(retryable(format!("{method}: unreadable reply ({e})"))),
        };
        if envelope.ok {
            return Ok(envelope.result);
        }
        let code = envelope.error_code.unwrap_or(status.as_u16());
        let description = envelope.description.unwrap_or_default();
        let description = crate::security::redact::redact(&description);
        if code == 429 {
            let secs = envelope.parameters.and_then(|p| p.retry_after).unwrap_or(1);
            return Err(AdapterError::RateLimited {
                platform: PLATFORM.into(),
                retry_after: Duration::from_secs(secs),
            });
        }
        let message = format!("{method} refused ({code}): {description}");
        Err(match code {
            401 | 403 | 404 => terminal(if code == 401 || code == 404 {
                format!("{message}; check TELEGRAM_BOT_TOKEN")
            } else {
                message
            }),
            // 400 on a send (chat not found, message too long) will not improve on retry.
            400 => terminal(message),
            _ => retryable(message),
        })
    }
}

fn retryable(message: String) -> AdapterError {
    AdapterError::Retryable {
        platform: PLATFORM.into(),
        message,
    }
}

fn terminal(message: String) -> AdapterError {
    AdapterError::Terminal {
        platform: PLATFORM.into(),
        message,
    }
}

fn id_string(v: &Value) -> Option<String> {
    match v {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => Some(s.clone()),
        _ => None,
    }
}

/// Turns one `Update` into an event; updates we do not handle (edits, joins, stickers) give `None`
/// but still advance the cursor through `update_id`. `bot` is the bot's username (from `getMe`):
/// a `@bot` mention marks the message as addressed to us and is removed from the text.
pub fn parse_update(update: &Value, bot: Option<&str>) -> Option<MessageEvent> {
    let update_id = update.get("update_id")?.as_i64()?;
    let msg = update.get("message")?;
    let mut text = msg
        .get("text")
        .or_else(|| msg.get("caption"))?
        .as_str()?
        .to_string();
    let mut mentioned = false;
    if let Some(bot) = bot.filter(|b| !b.is_empty()) {
        // ASCII lower-casing keeps byte offsets, so `pos` indexes the original text too.
        let tag = format!("@{}", bot.to_ascii_lowercase());
        if let Some(pos) = text.to_ascii_lowercase().find(&tag) {
            mentioned = true;
            // Commands keep their `@bot` suffix (the command parser drops it).
            if !text.starts_with('/') {
                text.replace_range(pos..pos + tag.len(), "");
                text = text.trim().to_string();
            }
        }
    }
    let replied_to_bot = msg
        .get("reply_to_message")
        .and_then(|r| r.get("from"))
        .and_then(|f| f.get("is_bot"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let chat = msg.get("chat")?;
    let chat_type = match chat.get("type").and_then(Value::as_str) {
        Some("private") => ChatType::Dm,
        Some("channel") => ChatType::Channel,
        _ => ChatType::Group,
    };
    let from = msg.get("from");
    let source = SessionSource {
        platform: PLATFORM.into(),
        chat_id: id_string(chat.get("id")?)?,
        chat_name: chat
            .get("title")
            .or_else(|| chat.get("username"))
            .and_then(Value::as_str)
            .map(String::from),
        chat_type,
        user_id: from.and_then(|f| f.get("id")).and_then(id_string),
        user_name: from
            .and_then(|f| f.get("username").or_else(|| f.get("first_name")))
            .and_then(Value::as_str)
            .map(String::from),
        // Only forum topics carry a thread id worth keying sessions on.
        thread_id: msg
            .get("message_thread_id")
            .filter(|_| msg.get("is_topic_message").and_then(Value::as_bool) == Some(true))
            .and_then(id_string),
        is_bot: from
            .and_then(|f| f.get("is_bot"))
            .and_then(Value::as_bool)
            .unwrap_or(false),
    };
    Some(MessageEvent {
        text,
        source,
        message_id: msg.get("message_id").and_then(id_string),
        platform_update_id: update_id,
        reply_to_message_id: msg
            .get("reply_to_message")
            .and_then(|r| r.get("message_id"))
            .and_then(id_string),
        timestamp: msg.get("date").and_then(Value::as_f64).unwrap_or(0.0),
        addressed: chat_type == ChatType::Dm || mentioned || replied_to_bot,
    })
}

fn chat_value(chat_id: &str) -> Value {
    chat_id
        .parse::<i64>()
        .map(Value::from)
        .unwrap_or_else(|_| Value::from(chat_id))
}

#[async_trait::async_trait]
impl PlatformAdapter for TelegramAdapter {
    fn platform(&self) -> &str {
        PLATFORM
    }
    fn max_message_len(&self) -> usize {
        MAX_MESSAGE_LEN
    }
    fn message_len(&self, text: &str) -> usize {
        utf16_len(text)
    }
    fn can_edit(&self) -> bool {
        true
    }

    async fn connect(&self) -> Result<(), AdapterError> {
        let me = self.call("getMe", json!({})).await?;
        let name = me.get("username").and_then(Value::as_str).map(String::from);
        *self
            .bot_username
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = name;
        Ok(())
    }

    async fn receive(&self, cursor: Option<i64>) -> Result<Vec<MessageEvent>, AdapterError> {
        let mut body = json!({ "timeout": self.poll_timeout, "allowed_updates": ["message"] });
        if let Some(offset) = cursor {
            body["offset"] = Value::from(offset);
        }
        let result = self.call("getUpdates", body).await?;
        let bot = self
            .bot_username
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let updates = result.as_array().cloned().unwrap_or_default();
        let mut events = Vec::with_capacity(updates.len());
        for update in &updates {
            match parse_update(update, bot.as_deref()) {
                Some(e) => events.push(e),
                None => {
                    // Keep the cursor moving past updates we ignore, as an event with no text
                    // that the runner records and skips.
                    if let Some(id) = update.get("update_id").and_then(Value::as_i64) {
                        events.push(MessageEvent {
                            platform_update_id: id,
                            source: SessionSource {
                                platform: PLATFORM.into(),
                                ..SessionSource::default()
                            },
                            ..MessageEvent::default()
                        });
                    }
                }
            }
        }
        Ok(events)
    }

    async fn send(
        &self,
        chat_id: &str,
        text: &str,
        options: &SendOptions,
    ) -> Result<SendResult, AdapterError> {
        let mut body = json!({ "chat_id": chat_value(chat_id), "text": text });
        if let Some(thread) = options
            .thread_id
            .as_deref()
            .and_then(|t| t.parse::<i64>().ok())
        {
            body["message_thread_id"] = Value::from(thread);
        }
        if let Some(reply) = options
            .reply_to
            .as_deref()
            .and_then(|r| r.parse::<i64>().ok())
        {
            body["reply_parameters"] =
                json!({ "message_id": reply, "allow_sending_without_reply": true });
        }
        let result = self.call("sendMessage", body).await?;
        let message_id = result
            .get("message_id")
            .and_then(id_string)
            .ok_or_else(|| retryable("sendMessage: the reply has no message_id".into()))?;
        Ok(SendResult { message_id })
    }

    async fn edit(&self, chat_id: &str, message_id: &str, text: &str) -> Result<(), AdapterError> {
        let id: i64 = message_id
            .parse()
            .map_err(|_| terminal(format!("editMessageText: bad message id `{message_id}`")))?;
        let body = json!({ "chat_id": chat_value(chat_id), "message_id": id, "text": text });
        match self.call("editMessageText", body).await {
            Ok(_) => Ok(()),
            // Editing to the same text is a no-op for us (e.g. a repeated recovery edit).
            Err(AdapterError::Terminal { message, .. })
                if message.contains("message is not modified") =>
            {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    async fn delete(&self, chat_id: &str, message_id: &str) -> Result<(), AdapterError> {
        let id: i64 = message_id
            .parse()
            .map_err(|_| terminal(format!("deleteMessage: bad message id `{message_id}`")))?;
        let body = json!({ "chat_id": chat_value(chat_id), "message_id": id });
        self.call("deleteMessage", body).await.map(|_| ())
    }

    async fn typing(&self, chat_id: &str) -> Result<(), AdapterError> {
        let body = json!({ "chat_id": chat_value(chat_id), "action": "typing" });
        self.call("sendChatAction", body).await.map(|_| ())
    }
}

crate::register_platform!(crate::gateway::platform::PlatformRegistration {
    name: "telegram",
    setup_hint: "TELEGRAM_BOT_TOKEN (and TELEGRAM_ALLOWED_USERS)",
    from_config: |config| {
        TelegramAdapter::from_config(config).map(|r| {
            r.map(|a| {
                std::sync::Arc::new(a)
                    as std::sync::Arc<dyn crate::gateway::platform::PlatformAdapter>
            })
        })
    },
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_private_group_and_topic_messages() {
        let dm = json!({"update_id": 10, "message": {"message_id": 3, "date": 1,
            "from": {"id": 42, "is_bot": false, "first_name": "Ann"},
            "chat": {"id": 42, "type": "private"}, "text": "hi"}});
        let e = parse_update(&dm, None).unwrap();
        assert_eq!((e.platform_update_id, e.text.as_str()), (10, "hi"));
        assert_eq!(e.source.chat_type, ChatType::Dm);
        assert_eq!(e.source.user_id.as_deref(), Some("42"));
        let topic = json!({"update_id": 11, "message": {"message_id": 4,
            "from": {"id": 5}, "chat": {"id": -100, "type": "supergroup", "title": "T"},
            "message_thread_id": 9, "is_topic_message": true, "text": "yo"}});
        let e = parse_update(&topic, None).unwrap();
        assert_eq!(e.source.chat_type, ChatType::Group);
        assert_eq!(e.source.thread_id.as_deref(), Some("9"));
        assert_eq!(e.source.chat_id, "-100");
    }

    #[test]
    fn group_messages_are_addressed_by_mention_or_reply() {
        let group = |text: &str, reply_from_bot: bool| {
            let mut m = json!({"update_id": 1, "message": {"message_id": 2, "from": {"id": 5},
                "chat": {"id": -1, "type": "group"}, "text": text}});
            if reply_from_bot {
                m["message"]["reply_to_message"] =
                    json!({"message_id": 1, "from": {"id": 9, "is_bot": true}});
            }
            parse_update(&m, Some("HermesBot")).unwrap()
        };
        let e = group("hey @hermesbot what's up", false);
        assert!(e.addressed);
        assert_eq!(e.text, "hey  what's up");
        assert!(!group("just chatting", false).addressed);
        assert!(group("sure", true).addressed);
        let cmd = group("/new@HermesBot", false);
        assert_eq!(cmd.command().map(|c| c.0).as_deref(), Some("new"));
        // Multi-byte text around the mention must not break slicing.
        assert!(group("ÄÖÜ @hermesbot ß", false).addressed);
    }

    #[test]
    fn hostile_or_unsupported_updates_are_skipped() {
        for bad in [
            json!({}),
            json!({"update_id": "x"}),
            json!({"update_id": 1, "edited_message": {}}),
            json!({"update_id": 1, "message": {"chat": {"id": 1}}}),
            json!({"update_id": 1, "message": {"text": 5, "chat": {"id": 1}}}),
            json!({"update_id": 1, "message": {"text": "t", "chat": {"id": [1]}}}),
        ] {
            assert!(parse_update(&bad, Some("bot")).is_none(), "{bad}");
        }
    }
}
