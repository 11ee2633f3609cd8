//! The exactly-once records (rows of state.db's gateway tables) and delivery through the
//! outbound ledger: an answer is written as `pending` in the same transaction that closes its
//! inbound update, then sent chunk by chunk, each chunk's platform message id recorded as it
//! goes, then marked `sent`. After a crash, pending entries resume at the first unsent chunk, so
//! an answer is neither lost nor sent twice (the one unavoidable window is between the
//! platform's OK and the ledger write for that chunk: a few milliseconds).

use std::sync::Arc;
use std::time::Duration;

use crate::gateway::delivery::split_message;
use crate::gateway::platform::{AdapterError, PlatformAdapter, SendOptions, SendResult};
use crate::sessions::{SessionStore, StoreError};

/// How many times one chunk is retried on rate limits or transient failures.
const SEND_ATTEMPTS: u32 = 6;
/// A platform asking for more than this is treated as a failure (we would block the chat).
const MAX_RETRY_AFTER: Duration = Duration::from_secs(120);

/// One accepted inbound update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboundRecord {
    pub platform: String,
    pub update_id: i64,
    pub chat_id: String,
    pub session_key: String,
    /// The `MessageEvent` as JSON, so a queued message survives a restart.
    pub event_json: String,
}

/// An answer to deliver.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutboundNew {
    pub platform: String,
    pub chat_id: String,
    pub thread_id: Option<String>,
    pub reply_to: Option<String>,
    pub session_key: String,
    pub update_id: Option<i64>,
    pub text: String,
    /// The message a streamed answer was previewed in: the first chunk edits it instead of
    /// sending a new message (an edit is idempotent, so recovery can safely repeat it).
    pub stream_message_id: Option<String>,
}

/// A ledger entry not yet fully delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboundRow {
    pub id: i64,
    pub new: OutboundNew,
    pub chunks_sent: usize,
    pub message_ids: Vec<String>,
}

/// Why an entry of the delivery ledger was not delivered.
#[derive(Debug, thiserror::Error)]
pub enum DeliveryError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("delivery {id} to chat {chat_id} failed: {source}")]
    Platform {
        id: i64,
        chat_id: String,
        #[source]
        source: AdapterError,
    },
}

/// Sends one message, honouring rate limits (`retry_after`) and retrying transient failures.
pub async fn send_with_retry(
    adapter: &dyn PlatformAdapter,
    chat_id: &str,
    text: &str,
    options: &SendOptions,
) -> Result<SendResult, AdapterError> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        match adapter.send(chat_id, text, options).await {
            Ok(r) => return Ok(r),
            Err(AdapterError::RateLimited { retry_after, .. })
                if attempt < SEND_ATTEMPTS && retry_after <= MAX_RETRY_AFTER =>
            {
                tracing::info!(
                    chat_id,
                    ?retry_after,
                    "rate limited; waiting before resending"
                );
                tokio::time::sleep(retry_after).await;
            }
            Err(AdapterError::Retryable { message, .. }) if attempt < SEND_ATTEMPTS => {
                let delay = Duration::from_millis(250 * (1 << attempt.min(5)));
                tracing::warn!(chat_id, %message, ?delay, "send failed; retrying");
                tokio::time::sleep(delay).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Edits a message, honouring rate limits like [`send_with_retry`].
pub async fn edit_with_retry(
    adapter: &dyn PlatformAdapter,
    chat_id: &str,
    message_id: &str,
    text: &str,
) -> Result<(), AdapterError> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        match adapter.edit(chat_id, message_id, text).await {
            Ok(()) => return Ok(()),
            Err(AdapterError::RateLimited { retry_after, .. })
                if attempt < SEND_ATTEMPTS && retry_after <= MAX_RETRY_AFTER =>
            {
                tokio::time::sleep(retry_after).await;
            }
            Err(AdapterError::Retryable { .. }) if attempt < SEND_ATTEMPTS => {
                tokio::time::sleep(Duration::from_millis(250 * (1 << attempt.min(5)))).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Delivers a ledger entry from its first unsent chunk; closes it as `sent` or `failed`.
pub async fn deliver(
    adapter: &dyn PlatformAdapter,
    store: &Arc<SessionStore>,
    row: OutboundRow,
) -> Result<(), DeliveryError> {
    let len = |s: &str| adapter.message_len(s);
    let chunks = split_message(&row.new.text, adapter.max_message_len(), &len);
    let mut ids = row.message_ids.clone();
    for (i, chunk) in chunks.iter().enumerate().skip(row.chunks_sent) {
        let options = SendOptions {
            thread_id: row.new.thread_id.clone(),
            // Only the first chunk quotes the user's message.
            reply_to: if i == 0 {
                row.new.reply_to.clone()
            } else {
                None
            },
        };
        let streamed = row.new.stream_message_id.as_deref().filter(|_| i == 0);
        let result = match streamed {
            Some(mid) => edit_with_retry(adapter, &row.new.chat_id, mid, chunk)
                .await
                .map(|()| SendResult {
                    message_id: mid.to_string(),
                }),
            None => send_with_retry(adapter, &row.new.chat_id, chunk, &options).await,
        };
        match result {
            Ok(sent) => {
                ids.push(sent.message_id);
                let (id, n, list) = (row.id, i + 1, ids.clone());
                store
                    .call(move |s| s.gateway_chunk_sent(id, n, &list))
                    .await?;
            }
            Err(e) => {
                if e.is_terminal() {
                    // Retrying cannot help (chat gone, bot blocked): close the entry.
                    let (id, m) = (row.id, e.to_string());
                    store
                        .call(move |s| s.gateway_finish_outbound(id, "failed", Some(&m)))
                        .await?;
                }
                return Err(DeliveryError::Platform {
                    id: row.id,
                    chat_id: row.new.chat_id,
                    source: e,
                });
            }
        }
    }
    let id = row.id;
    store
        .call(move |s| s.gateway_finish_outbound(id, "sent", None))
        .await?;
    Ok(())
}
