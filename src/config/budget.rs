//! `budget:` (hermes's own section): spend caps per session and per day, a token cap per
//! session, and the price table (USD per million tokens; `name*` matches by prefix).

use std::collections::BTreeMap;

use serde::Deserialize;

use super::file::{num, or_default};

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct BudgetFile {
    #[serde(deserialize_with = "num")]
    pub session_usd: Option<f64>,
    #[serde(deserialize_with = "num")]
    pub daily_usd: Option<f64>,
    #[serde(deserialize_with = "num")]
    pub session_tokens: Option<u64>,
    #[serde(deserialize_with = "or_default")]
    pub prices: BTreeMap<String, PriceFile>,
}

/// One model's prices; unset cache prices are charged like input.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct PriceFile {
    #[serde(deserialize_with = "num")]
    pub input: Option<f64>,
    #[serde(deserialize_with = "num")]
    pub output: Option<f64>,
    #[serde(deserialize_with = "num")]
    pub cache_read: Option<f64>,
    #[serde(deserialize_with = "num")]
    pub cache_write: Option<f64>,
}
