//! The `skills:` section of config.yaml as written (Python Hermes names; read by the skill store
//! and the skill-learning loop).

use std::collections::BTreeMap;

use serde::Deserialize;

use super::file::num;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct SkillsFile {
    /// More skill directories, searched after `$HERMES_HOME/skills` (`~/` expanded).
    pub external_dirs: Option<Vec<String>>,
    /// Skills hidden everywhere.
    pub disabled: Option<Vec<String>>,
    /// Skills hidden per platform (`cli`, `telegram`, ...).
    pub platform_disabled: Option<BTreeMap<String, Vec<String>>>,
    /// User turns between skill reviews (0 = off; default 10).
    #[serde(deserialize_with = "num")]
    pub creation_nudge_interval: Option<u64>,
    /// Successful uses that end a new agent-made skill's probation (ours; default 3, 0 = none).
    #[serde(deserialize_with = "num")]
    pub probation_uses: Option<u64>,
}
