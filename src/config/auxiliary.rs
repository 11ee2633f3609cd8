//! The `auxiliary:` section: which model does side tasks (smart approval, compaction summaries,
//! session-search summaries, session titles). Each task has Python Hermes' keys; a task we do not run is
//! reported as not supported yet by the loader.

use serde::Deserialize;

use super::file::{flag, num, or_default, text};

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct AuxiliaryFile {
    #[serde(deserialize_with = "or_default")]
    pub approval: AuxTask,
    #[serde(deserialize_with = "or_default")]
    pub compression: AuxTask,
    /// Ours: summaries of past sessions found by `session_search`.
    #[serde(deserialize_with = "or_default")]
    pub session_search: AuxTask,
    /// Session titles after the first exchange.
    #[serde(deserialize_with = "or_default")]
    pub title_generation: AuxTask,
}

impl AuxiliaryFile {
    /// The task called `name` (`session_search`, `title_generation`, ...), if we run it.
    pub fn task(&self, name: &str) -> Option<&AuxTask> {
        match name {
            "approval" => Some(&self.approval),
            "compression" => Some(&self.compression),
            "session_search" => Some(&self.session_search),
            "title_generation" => Some(&self.title_generation),
            _ => None,
        }
    }
}

/// One task's model (`provider: auto` or `main` means the main provider).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct AuxTask {
    #[serde(deserialize_with = "text")]
    pub provider: Option<String>,
    #[serde(deserialize_with = "text")]
    pub model: Option<String>,
    #[serde(deserialize_with = "text")]
    pub base_url: Option<String>,
    #[serde(deserialize_with = "text")]
    pub api_key: Option<String>,
    /// Seconds the call may take.
    #[serde(deserialize_with = "num")]
    pub timeout: Option<f64>,
    /// `false` turns the task off (title generation).
    #[serde(deserialize_with = "flag")]
    pub enabled: Option<bool>,
}

impl AuxTask {
    /// The timeout when set to a sensible number of seconds (0 < t ≤ 600).
    pub fn timeout(&self) -> Option<std::time::Duration> {
        self.timeout
            .filter(|t| t.is_finite() && *t > 0.0 && *t <= 600.0)
            .map(std::time::Duration::from_secs_f64)
    }

    /// The provider name, lower-cased, `None` for `auto`/`main`/unset.
    pub fn own_provider(&self) -> Option<String> {
        self.provider
            .as_deref()
            .map(|p| p.to_ascii_lowercase())
            .filter(|p| p != "auto" && p != "main")
    }
}
