//! The `memory:` section of config.yaml as written (Python Hermes names); `memory::settings`
//! turns it into the settings the memory subsystem uses.

use serde::Deserialize;

use super::file::{flag, num, text};

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct MemoryFile {
    #[serde(deserialize_with = "flag")]
    pub memory_enabled: Option<bool>,
    #[serde(deserialize_with = "flag")]
    pub user_profile_enabled: Option<bool>,
    #[serde(deserialize_with = "num")]
    pub memory_char_limit: Option<usize>,
    #[serde(deserialize_with = "num")]
    pub user_char_limit: Option<usize>,
    /// User turns without a memory write before a background review (0 = off).
    #[serde(deserialize_with = "num")]
    pub nudge_interval: Option<u32>,
    /// The external memory provider (`local` is the one we ship; `''` = none).
    #[serde(deserialize_with = "text")]
    pub provider: Option<String>,
    /// Seconds an external provider may take to recall (ours).
    #[serde(deserialize_with = "num")]
    pub prefetch_timeout: Option<f64>,
    /// Most past messages the local provider recalls per turn (ours).
    #[serde(deserialize_with = "num")]
    pub recall_limit: Option<usize>,
}
