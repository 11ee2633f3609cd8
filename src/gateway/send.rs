//! Sending one text to a chat outside a conversation: `PLATFORM:CHAT_ID` parsed, the platform's
//! adapter built from configuration, the text chunked to the platform's size and each chunk sent
//! with the ledger's retry. The one path behind `hermes send` and the MCP server's
//! `messages_send`.

use crate::config::Config;
use crate::gateway::delivery::split_message;
use crate::gateway::ledger::send_with_retry;
use crate::gateway::platform::SendOptions;

/// Why a text could not be sent.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    #[error("bad target `{0}`: use PLATFORM:CHAT_ID, e.g. telegram:123456")]
    BadTarget(String),
    #[error("nothing to send: the text is empty")]
    EmptyText,
    #[error("{0}")]
    Gateway(#[from] crate::gateway::GatewayError),
    /// The platform is known but not configured; the hint says what enables it.
    #[error("platform `{platform}` has no chats to send to{hint}")]
    NotConfigured { platform: String, hint: String },
    #[error("send to {target} failed: {error}")]
    Failed { target: String, error: String },
}

/// Splits `PLATFORM:CHAT_ID` (both parts non-empty; the chat id may itself contain `:`).
pub fn parse_target(target: &str) -> Result<(&str, &str), SendError> {
    target
        .split_once(':')
        .filter(|(p, c)| !p.is_empty() && !c.is_empty())
        .ok_or_else(|| SendError::BadTarget(target.to_string()))
}

/// Sends `text` to `target` (`PLATFORM:CHAT_ID`); returns how many chunks were sent.
pub async fn send_text(config: &Config, target: &str, text: &str) -> Result<usize, SendError> {
    let (platform, chat) = parse_target(target)?;
    if text.trim().is_empty() {
        return Err(SendError::EmptyText);
    }
    let platforms = crate::gateway::configured(config, Some(platform))?;
    let Some(adapter) = platforms.adapters.into_iter().next() else {
        let hint = crate::gateway::platform::registered()
            .into_iter()
            .find(|r| r.name == platform)
            .map(|r| format!(" (configure {})", r.setup_hint))
            .unwrap_or_default();
        return Err(SendError::NotConfigured {
            platform: platform.to_string(),
            hint,
        });
    };
    let len = |s: &str| adapter.message_len(s);
    let chunks = split_message(text, adapter.max_message_len(), &len);
    for chunk in &chunks {
        send_with_retry(adapter.as_ref(), chat, chunk, &SendOptions::default())
            .await
            .map_err(|e| SendError::Failed {
                target: target.to_string(),
                error: e.to_string(),
            })?;
    }
    Ok(chunks.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_need_both_parts() {
        assert_eq!(parse_target("telegram:42").unwrap(), ("telegram", "42"));
        assert_eq!(parse_target("slack:C1:T2").unwrap(), ("slack", "C1:T2"));
        for bad in ["telegram", ":42", "telegram:", ""] {
            assert!(matches!(parse_target(bad), Err(SendError::BadTarget(_))));
        }
    }
}
