//! state.db: the Python Hermes schema (v22), the session store, and full-text search.

pub mod schema;
pub mod search;
pub mod store;
pub mod title;

pub use search::SearchHit;
pub use store::{
    Insights, ModelUsage, NewSession, SessionRow, SessionStore, SessionSummary, StoreError,
    StoredMessage, new_session_id,
};
