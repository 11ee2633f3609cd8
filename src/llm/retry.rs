//! Retry policy for failed model calls: how many attempts each `FailoverReason` gets and how long
//! to wait between them. The agent loop counts attempts and asks; clients never retry by themselves.
//!
//! Rate limits and overload get more patience than other transient failures (they clear on their
//! own); a server's `Retry-After` wins over our own backoff, capped so a hostile or buggy header
//! cannot park the session for hours.

use std::time::Duration;

use rand::Rng;

use crate::config::Config;
use crate::llm::{FailoverReason, LlmError};

/// Environment knob (from `config.env`, i.e. `.env` or the process environment) overriding the
/// backoff base in milliseconds. Tests set it to keep retries fast.
pub const BASE_DELAY_ENV: &str = "HERMES_RETRY_BASE_DELAY_MS";

/// Retries granted to rate limits and overload, whatever `agent.api_max_retries` says.
const MIN_RATE_LIMIT_RETRIES: u32 = 5;

/// A loopback address that refuses the connection has nothing listening (a wrong port, a local
/// server not started): three attempts in all, a short wait between them, then the error — not
/// seventeen seconds of backoff for a mistake the user has to fix.
const REFUSED_LOCALLY_RETRIES: u32 = 2;
const REFUSED_LOCALLY_DELAY: Duration = Duration::from_millis(500);

/// How many attempts each failure reason gets and how long to wait between them.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// First backoff step; doubles per attempt.
    pub base_delay: Duration,
    /// Ceiling of the exponential part (jitter comes on top).
    pub max_delay: Duration,
    /// Retries for server errors, timeouts and unknown transport failures
    /// (`agent.api_max_retries`).
    pub max_retries: u32,
    /// Retries for rate limits and overload (at least 5).
    pub rate_limit_retries: u32,
    /// Upper bound applied to a server-provided `Retry-After`.
    pub retry_after_cap: Duration,
}

impl RetryPolicy {
    /// The policy for a loaded config: `agent.api_max_retries` and, when set,
    /// `HERMES_RETRY_BASE_DELAY_MS` from `config.env`.
    pub fn from_config(config: &Config) -> Self {
        let mut policy = RetryPolicy {
            max_retries: config.agent.api_max_retries,
            rate_limit_retries: config.agent.api_max_retries.max(MIN_RATE_LIMIT_RETRIES),
            ..RetryPolicy::default()
        };
        if let Some(ms) = config
            .env
            .get(BASE_DELAY_ENV)
            .and_then(|v| v.trim().parse::<u64>().ok())
        {
            policy.base_delay = Duration::from_millis(ms);
        }
        policy
    }

    /// How many retries (not attempts) `reason` gets; 0 for failures that retrying cannot fix.
    pub fn retries_for(&self, reason: FailoverReason) -> u32 {
        match reason {
            FailoverReason::RateLimit | FailoverReason::Overloaded => self.rate_limit_retries,
            FailoverReason::ServerError | FailoverReason::Timeout | FailoverReason::Unknown => {
                self.max_retries
            }
            FailoverReason::Auth
            | FailoverReason::AuthPermanent
            | FailoverReason::Billing
            | FailoverReason::ContextOverflow
            | FailoverReason::ModelNotFound
            | FailoverReason::FormatError => 0,
        }
    }

    /// `Some(delay)` to try again after `attempt` failed attempts (1-based), `None` to give up.
    pub fn next_delay(&self, error: &LlmError, attempt: u32) -> Option<Duration> {
        if error.refused_locally {
            let retries = self.retries_for(error.reason).min(REFUSED_LOCALLY_RETRIES);
            return (attempt > 0 && attempt <= retries)
                .then(|| self.backoff_step(attempt).min(REFUSED_LOCALLY_DELAY));
        }
        if attempt == 0 || attempt > self.retries_for(error.reason) {
            return None;
        }
        if let Some(server_says) = error.retry_after {
            return Some(server_says.min(self.retry_after_cap));
        }
        let step = self.backoff_step(attempt);
        let jitter = step.mul_f64(rand::rng().random_range(0.0..=0.5));
        Some(step + jitter)
    }

    /// `min(base · 2^(attempt-1), max)`, without jitter.
    fn backoff_step(&self, attempt: u32) -> Duration {
        // 2^20 already exceeds any sane max_delay / base_delay ratio; clamping the exponent keeps
        // the multiplication from overflowing.
        let factor = 1u32 << attempt.saturating_sub(1).min(20);
        self.base_delay
            .checked_mul(factor)
            .unwrap_or(self.max_delay)
            .min(self.max_delay)
    }
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            base_delay: Duration::from_secs(2),
            max_delay: Duration::from_secs(60),
            max_retries: 3,
            rate_limit_retries: MIN_RATE_LIMIT_RETRIES,
            retry_after_cap: Duration::from_secs(600),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{EnvVars, HermesHome};

    fn err(reason: FailoverReason) -> LlmError {
        LlmError::new(reason, "boom")
    }

    #[test]
    fn rate_limits_get_six_attempts_server_errors_four() {
        let p = RetryPolicy::default();
        for attempt in 1..=5 {
            assert!(
                p.next_delay(&err(FailoverReason::RateLimit), attempt)
                    .is_some()
            );
            assert!(
                p.next_delay(&err(FailoverReason::Overloaded), attempt)
                    .is_some()
            );
        }
        assert!(p.next_delay(&err(FailoverReason::RateLimit), 6).is_none());
        for attempt in 1..=3 {
            assert!(
                p.next_delay(&err(FailoverReason::ServerError), attempt)
                    .is_some()
            );
            assert!(
                p.next_delay(&err(FailoverReason::Timeout), attempt)
                    .is_some()
            );
            assert!(
                p.next_delay(&err(FailoverReason::Unknown), attempt)
                    .is_some()
            );
        }
        assert!(p.next_delay(&err(FailoverReason::ServerError), 4).is_none());
    }

    #[test]
    fn permanent_failures_are_never_retried() {
        let p = RetryPolicy::default();
        for reason in [
            FailoverReason::Auth,
            FailoverReason::AuthPermanent,
            FailoverReason::Billing,
            FailoverReason::ContextOverflow,
            FailoverReason::ModelNotFound,
            FailoverReason::FormatError,
        ] {
            assert_eq!(p.next_delay(&err(reason), 1), None, "{reason}");
        }
        assert_eq!(p.next_delay(&err(FailoverReason::ServerError), 0), None);
    }

    #[test]
    fn backoff_doubles_with_bounded_jitter_and_caps() {
        let p = RetryPolicy::default();
        for (attempt, step) in [(1u32, 2u64), (2, 4), (3, 8)] {
            for _ in 0..50 {
                let d = p
                    .next_delay(&err(FailoverReason::RateLimit), attempt)
                    .unwrap();
                let step = Duration::from_secs(step);
                assert!(
                    d >= step && d <= step.mul_f64(1.5),
                    "attempt {attempt}: {d:?}"
                );
            }
        }
        let wide = RetryPolicy {
            rate_limit_retries: 40,
            ..RetryPolicy::default()
        };
        let d = wide
            .next_delay(&err(FailoverReason::RateLimit), 40)
            .unwrap();
        assert!(
            d >= Duration::from_secs(60) && d <= Duration::from_secs(90),
            "{d:?}"
        );
    }

    #[test]
    fn retry_after_wins_and_is_capped() {
        let p = RetryPolicy::default();
        let mut e = LlmError::from_http(429, "slow down", Some(Duration::from_millis(1500)));
        assert_eq!(p.next_delay(&e, 1), Some(Duration::from_millis(1500)));
        e.retry_after = Some(Duration::from_secs(86_400));
        assert_eq!(p.next_delay(&e, 1), Some(Duration::from_secs(600)));
        e.retry_after = Some(Duration::ZERO);
        assert_eq!(p.next_delay(&e, 2), Some(Duration::ZERO));
    }

    #[test]
    fn from_config_reads_max_retries_and_env_knob() {
        let dir = tempfile::tempdir().unwrap();
        let mut env = EnvVars::default();
        env.set(BASE_DELAY_ENV, "10");
        let mut config = Config::defaults(HermesHome::new(dir.path()), env);
        config.agent.api_max_retries = 1;
        let p = RetryPolicy::from_config(&config);
        assert_eq!(p.base_delay, Duration::from_millis(10));
        assert!(p.next_delay(&err(FailoverReason::ServerError), 1).is_some());
        assert!(p.next_delay(&err(FailoverReason::ServerError), 2).is_none());
        // Rate limits keep their floor of five retries.
        assert!(p.next_delay(&err(FailoverReason::RateLimit), 5).is_some());
        let d = p.next_delay(&err(FailoverReason::Timeout), 1).unwrap();
        assert!(d <= Duration::from_millis(15), "{d:?}");

        config.agent.api_max_retries = 8;
        let p = RetryPolicy::from_config(&config);
        assert!(p.next_delay(&err(FailoverReason::RateLimit), 8).is_some());
        assert!(p.next_delay(&err(FailoverReason::RateLimit), 9).is_none());
    }

    #[test]
    fn refused_loopback_connection_gets_three_quick_attempts() {
        let p = RetryPolicy::default();
        let mut e = err(FailoverReason::Unknown);
        e.refused_locally = true;
        for attempt in 1..=2 {
            let d = p.next_delay(&e, attempt).unwrap();
            assert!(d <= REFUSED_LOCALLY_DELAY, "{d:?}");
        }
        assert_eq!(p.next_delay(&e, 3), None);
        // A refused remote host keeps the ordinary patience.
        assert!(p.next_delay(&err(FailoverReason::Unknown), 3).is_some());
    }

    #[test]
    fn refused_is_recognised_on_loopback_only() {
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        let other = std::io::Error::from(std::io::ErrorKind::TimedOut);
        use crate::llm::error::refused_on_loopback as r;
        assert!(r(&refused, "http://127.0.0.1:9/v1"));
        assert!(r(&refused, "http://localhost:8080/v1"));
        assert!(r(&refused, "http://[::1]:8080/v1"));
        assert!(!r(&refused, "https://api.openai.com/v1"));
        assert!(!r(&refused, "http://10.0.0.5:8080/v1"));
        assert!(!r(&other, "http://127.0.0.1:9/v1"));
    }

    #[test]
    fn garbage_env_knob_keeps_default() {
        let dir = tempfile::tempdir().unwrap();
        let mut env = EnvVars::default();
        env.set(BASE_DELAY_ENV, "fast please");
        let config = Config::defaults(HermesHome::new(dir.path()), env);
        assert_eq!(
            RetryPolicy::from_config(&config).base_delay,
            Duration::from_secs(2)
        );
    }
}
