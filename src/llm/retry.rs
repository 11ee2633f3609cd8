//! Retry policy for failed model calls (being written by the LLM helper; this is the agreed API).

use std::time::Duration;

use crate::llm::LlmError;

/// How many attempts each failure reason gets and how long to wait between them.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    pub base_delay: Duration,
    pub max_delay: Duration,
}

impl RetryPolicy {
    /// `Some(delay)` to try again after `attempt` failed attempts (1-based), `None` to give up.
    pub fn next_delay(&self, _error: &LlmError, _attempt: u32) -> Option<Duration> {
        None
    }
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            base_delay: Duration::from_secs(2),
            max_delay: Duration::from_secs(60),
        }
    }
}
