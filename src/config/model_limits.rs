//! How long and how much one model call may take: `agent.request_timeout` (seconds, the whole
//! call, default 600), `agent.stream_idle_timeout` (seconds of silence between two stream
//! chunks — SSE keep-alive comments are silence — default 180) and `agent.max_answer_mb`
//! (answer text + reasoning + tool arguments read from one response, default 16 MiB). They end
//! a model that never answers, one that only sends keep-alives, and one that streams forever.

use std::path::Path;
use std::time::Duration;

use crate::config::ConfigError;
use crate::config::file::AgentFile;
use crate::llm::Provider;

pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(600);
pub const DEFAULT_STREAM_IDLE_TIMEOUT: Duration = Duration::from_secs(180);
pub const DEFAULT_MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;

/// The limits of one model call (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelLimits {
    pub request_timeout: Duration,
    pub stream_idle_timeout: Duration,
    pub max_answer_bytes: usize,
}

impl Default for ModelLimits {
    fn default() -> Self {
        ModelLimits {
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            stream_idle_timeout: DEFAULT_STREAM_IDLE_TIMEOUT,
            max_answer_bytes: DEFAULT_MAX_ANSWER_BYTES,
        }
    }
}

impl ModelLimits {
    /// Reads the keys from config.yaml's `agent:` section; absent keys keep their defaults.
    pub fn from_agent(agent: &AgentFile, path: &Path) -> Result<Self, ConfigError> {
        let positive = |key: &str, value: Option<f64>| -> Result<Option<f64>, ConfigError> {
            match value {
                None => Ok(None),
                Some(n) if n.is_finite() && n > 0.0 => Ok(Some(n)),
                Some(_) => Err(ConfigError::Type {
                    path: path.to_path_buf(),
                    key: format!("agent.{key}"),
                    message: "expected a positive number".into(),
                }),
            }
        };
        let mut limits = ModelLimits::default();
        let secs = |n: f64| Duration::try_from_secs_f64(n).unwrap_or(Duration::MAX);
        if let Some(n) = positive("request_timeout", agent.request_timeout)? {
            limits.request_timeout = secs(n);
        }
        if let Some(n) = positive("stream_idle_timeout", agent.stream_idle_timeout)? {
            limits.stream_idle_timeout = secs(n);
        }
        if let Some(n) = positive("max_answer_mb", agent.max_answer_mb)? {
            limits.max_answer_bytes = (n * 1024.0 * 1024.0).max(1.0) as usize;
        }
        Ok(limits)
    }

    /// Puts the limits on a resolved provider.
    pub fn apply(&self, provider: &mut Provider) {
        provider.request_timeout = self.request_timeout;
        provider.stream_idle_timeout = self.stream_idle_timeout;
        provider.max_answer_bytes = self.max_answer_bytes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, EnvVars, HermesHome};

    fn parse(agent: &str) -> Result<ModelLimits, ConfigError> {
        let c = Config::from_yaml(
            HermesHome::new("/h"),
            EnvVars::default(),
            &format!("agent:\n{agent}"),
            Path::new("config.yaml"),
        )?;
        Ok(c.model_limits)
    }

    #[test]
    fn keys_are_read_and_defaults_kept() {
        assert_eq!(parse("  max_turns: 3\n").unwrap(), ModelLimits::default());
        let l = parse("  request_timeout: 1.5\n  stream_idle_timeout: '2'\n  max_answer_mb: 0.5\n")
            .unwrap();
        assert_eq!(l.request_timeout, Duration::from_millis(1500));
        assert_eq!(l.stream_idle_timeout, Duration::from_secs(2));
        assert_eq!(l.max_answer_bytes, 512 * 1024);
    }

    #[test]
    fn bad_values_are_clear_errors() {
        for bad in [
            "  request_timeout: 0\n",
            "  stream_idle_timeout: -1\n",
            "  max_answer_mb: lots\n",
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains("agent."), "{e}");
        }
    }
}
