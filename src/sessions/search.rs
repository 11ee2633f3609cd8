//! FTS5 search over messages (being written).

/// One matching message.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    pub session_id: String,
    pub message_id: i64,
    pub role: String,
    pub snippet: String,
}
