//! The `auxiliary:` section: which model does side tasks (smart approval, compaction summaries,
//! session-search summaries). Each task has Python Hermes' keys; a task we do not run is
//! reported as not supported yet by the loader.

use serde::Deserialize;

use super::file::{num, or_default, text};

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
}

impl AuxTask {
    /// The provider name, lower-cased, `None` for `auto`/`main`/unset.
    pub fn own_provider(&self) -> Option<String> {
        self.provider
            .as_deref()
            .map(|p| p.to_ascii_lowercase())
            .filter(|p| p != "auto" && p != "main")
    }
}
