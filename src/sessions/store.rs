//! SessionStore (being written by the sessions helper; this is the agreed API).
#![allow(clippy::unused_self, unused_variables)]

use std::path::Path;
use std::time::Duration;

use crate::llm::{Message, Usage};
use crate::sessions::SearchHit;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("state.db error: {0}")]
    Sqlite(String),
}

#[derive(Debug, Clone, Default)]
pub struct NewSession {
    pub id: String,
    pub source: String,
    pub model: Option<String>,
    pub model_config: Option<String>,
    pub billing_provider: Option<String>,
    pub billing_base_url: Option<String>,
    pub cwd: Option<String>,
    pub parent_session_id: Option<String>,
    pub system_prompt: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct SessionRow {
    pub id: String,
    pub source: String,
    pub model: Option<String>,
    pub system_prompt: Option<String>,
    pub parent_session_id: Option<String>,
    pub title: Option<String>,
    pub cwd: Option<String>,
    pub billing_provider: Option<String>,
    pub billing_base_url: Option<String>,
    pub started_at: f64,
    pub ended_at: Option<f64>,
    pub end_reason: Option<String>,
    pub message_count: i64,
    pub tool_call_count: i64,
    pub api_call_count: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cache_read_tokens: i64,
    pub cache_write_tokens: i64,
    pub reasoning_tokens: i64,
}

#[derive(Debug, Clone)]
pub struct StoredMessage {
    pub id: i64,
    pub session_id: String,
    pub timestamp: f64,
    pub active: bool,
    pub message: Message,
}

pub fn new_session_id() -> String {
    unimplemented!()
}

pub struct SessionStore {}

impl SessionStore {
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        unimplemented!()
    }
    pub fn open_with_timeout(path: &Path, busy_timeout: Duration) -> Result<Self, StoreError> {
        unimplemented!()
    }
    pub fn create_session(&self, s: &NewSession) -> Result<(), StoreError> {
        unimplemented!()
    }
    pub fn set_system_prompt(&self, session_id: &str, prompt: &str) -> Result<(), StoreError> {
        unimplemented!()
    }
    pub fn set_model(&self, session_id: &str, model: &str) -> Result<(), StoreError> {
        unimplemented!()
    }
    pub fn append_message(&self, session_id: &str, msg: &Message) -> Result<i64, StoreError> {
        unimplemented!()
    }
    pub fn add_usage(&self, session_id: &str, usage: &Usage, api_calls: u32) -> Result<(), StoreError> {
        unimplemented!()
    }
    pub fn end_session(&self, session_id: &str, reason: &str) -> Result<(), StoreError> {
        unimplemented!()
    }
    pub fn reopen_session(&self, session_id: &str) -> Result<(), StoreError> {
        unimplemented!()
    }
    pub fn session(&self, id: &str) -> Result<Option<SessionRow>, StoreError> {
        unimplemented!()
    }
    pub fn find_session(&self, id_or_title: &str) -> Result<Option<SessionRow>, StoreError> {
        unimplemented!()
    }
    pub fn latest_session(&self, sources: &[&str]) -> Result<Option<SessionRow>, StoreError> {
        unimplemented!()
    }
    pub fn list_sessions(&self, limit: usize) -> Result<Vec<SessionRow>, StoreError> {
        unimplemented!()
    }
    pub fn messages(&self, session_id: &str) -> Result<Vec<StoredMessage>, StoreError> {
        unimplemented!()
    }
    pub fn delete_session(&self, session_id: &str) -> Result<bool, StoreError> {
        unimplemented!()
    }
    pub fn rewind_last_user_turn(&self, session_id: &str) -> Result<usize, StoreError> {
        unimplemented!()
    }
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<SearchHit>, StoreError> {
        unimplemented!()
    }
}
