//! Spend: prices from config (`budget.prices`, USD per million tokens) and the caps
//! `budget.session_usd`, `budget.daily_usd` and `budget.session_tokens`, checked before every
//! model call so a turn stops *before* the call that would pass a cap.

use std::collections::BTreeMap;

use crate::config::budget::BudgetFile;
use crate::llm::Usage;
use crate::sessions::{SessionRow, SessionStore, StoreError};

/// USD per million tokens for one model.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

/// Prices by model name; a key ending in `*` matches by prefix (longest prefix wins).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PriceTable {
    prices: BTreeMap<String, Price>,
}

impl PriceTable {
    /// From `budget.prices` (negative prices count as 0).
    pub fn from_config(budget: &BudgetFile) -> Self {
        let prices = budget
            .prices
            .iter()
            .map(|(model, p)| {
                let input = p.input.unwrap_or(0.0).max(0.0);
                let price = Price {
                    input,
                    output: p.output.unwrap_or(0.0).max(0.0),
                    // Unpriced cache traffic is charged like ordinary input.
                    cache_read: p.cache_read.unwrap_or(input).max(0.0),
                    cache_write: p.cache_write.unwrap_or(input).max(0.0),
                };
                (model.clone(), price)
            })
            .collect();
        PriceTable { prices }
    }

    pub fn price(&self, model: &str) -> Option<Price> {
        if let Some(p) = self.prices.get(model) {
            return Some(*p);
        }
        self.prices
            .iter()
            .filter_map(|(k, p)| k.strip_suffix('*').map(|prefix| (prefix, p)))
            .filter(|(prefix, _)| model.starts_with(prefix))
            .max_by_key(|(prefix, _)| prefix.len())
            .map(|(_, p)| *p)
    }

    /// Cost of one call's usage. `input_tokens` counts the whole prompt, cached parts included.
    pub fn cost(&self, model: &str, usage: &Usage) -> Option<f64> {
        let p = self.price(model)?;
        let cached = usage.cache_read_tokens + usage.cache_write_tokens;
        let fresh = usage.input_tokens.saturating_sub(cached);
        let m = 1_000_000.0;
        Some(
            (fresh as f64 * p.input
                + usage.cache_read_tokens as f64 * p.cache_read
                + usage.cache_write_tokens as f64 * p.cache_write
                + usage.output_tokens as f64 * p.output)
                / m,
        )
    }
}

/// The caps, each optional.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SpendCaps {
    pub session_usd: Option<f64>,
    pub daily_usd: Option<f64>,
    pub session_tokens: Option<u64>,
}

impl SpendCaps {
    /// From `budget.{session_usd,daily_usd,session_tokens}` (0 or less means no cap).
    pub fn from_config(budget: &BudgetFile) -> Self {
        SpendCaps {
            session_usd: budget.session_usd.filter(|v| *v > 0.0),
            daily_usd: budget.daily_usd.filter(|v| *v > 0.0),
            session_tokens: budget.session_tokens.filter(|v| *v > 0),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.session_usd.is_none() && self.daily_usd.is_none() && self.session_tokens.is_none()
    }

    /// `Err(message)` when the next call — projected at `next_prompt_tokens` input tokens —
    /// would take the session or the day past a cap.
    pub fn check(
        &self,
        store: &SessionStore,
        session: &SessionRow,
        prices: &PriceTable,
        model: &str,
        next_prompt_tokens: u64,
    ) -> Result<Result<(), String>, StoreError> {
        let projected = prices
            .cost(
                model,
                &Usage {
                    input_tokens: next_prompt_tokens,
                    ..Usage::default()
                },
            )
            .unwrap_or(0.0);
        let spent = session_cost(session);
        if let Some(cap) = self.session_usd
            && spent + projected > cap
        {
            return Ok(Err(format!(
                "Stopped before the next model call: this session has spent ${spent:.4} and the next call (≈${projected:.4}) would pass the session cap of ${cap:.2} (budget.session_usd in config.yaml). Raise the cap or start a new session."
            )));
        }
        if let Some(cap) = self.session_tokens {
            let used = u64::try_from(session.input_tokens + session.output_tokens).unwrap_or(0);
            if used + next_prompt_tokens > cap {
                return Ok(Err(format!(
                    "Stopped before the next model call: this session has used {used} tokens and the next call (≈{next_prompt_tokens} input tokens) would pass the cap of {cap} (budget.session_tokens in config.yaml). Raise the cap or start a new session."
                )));
            }
        }
        if let Some(cap) = self.daily_usd {
            let today = start_of_today();
            let spent_today = store.spend_since(today)?;
            if spent_today + projected > cap {
                return Ok(Err(format!(
                    "Stopped before the next model call: ${spent_today:.4} spent today and the next call (≈${projected:.4}) would pass the daily cap of ${cap:.2} (budget.daily_usd in config.yaml)."
                )));
            }
        }
        Ok(Ok(()))
    }
}

/// A rough size of a request in tokens (4 characters per token), for projecting its cost
/// against the caps. (Recorded usage that the provider did not report is estimated more
/// finely, by `llm::usage_estimate`; the projection keeps its long-standing scale.)
pub fn estimate_prompt_tokens(request: &crate::llm::ChatRequest) -> u64 {
    let mut chars = request.system.len();
    for m in &request.messages {
        chars += m.wire_content().map_or(0, str::len);
        chars += m
            .tool_calls
            .iter()
            .map(|c| c.name.len() + c.arguments.len())
            .sum::<usize>();
    }
    for t in &request.tools {
        chars += t.name.len() + t.description.len() + t.parameters.to_string().len();
    }
    (chars / 4) as u64
}

fn session_cost(session: &SessionRow) -> f64 {
    session.estimated_cost_usd.unwrap_or(0.0)
}

/// Local midnight as unix seconds.
fn start_of_today() -> f64 {
    use chrono::{Local, TimeZone};
    let now = Local::now();
    now.date_naive()
        .and_hms_opt(0, 0, 0)
        .and_then(|t| Local.from_local_datetime(&t).earliest())
        .map(|t| t.timestamp() as f64)
        .unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(yaml: &str) -> BudgetFile {
        serde_saphyr::from_str(yaml).unwrap()
    }

    fn table() -> PriceTable {
        PriceTable::from_config(&budget(
            "prices:\n  gpt-4o: {input: 2.5, output: 10.0, cache_read: 1.25}\n  claude-*: {input: 3.0, output: 15.0}\n  claude-opus-*: {input: 15.0, output: 75.0}\n",
        ))
    }

    #[test]
    fn costs_follow_the_table() {
        let t = table();
        let u = Usage {
            input_tokens: 1_000_000,
            output_tokens: 100_000,
            cache_read_tokens: 400_000,
            ..Usage::default()
        };
        // 600k fresh × 2.5 + 400k cached × 1.25 + 100k out × 10, per million.
        let c = t.cost("gpt-4o", &u).unwrap();
        assert!((c - (1.5 + 0.5 + 1.0)).abs() < 1e-9, "{c}");
        assert_eq!(t.price("claude-opus-4").unwrap().input, 15.0);
        assert_eq!(t.price("claude-sonnet-4").unwrap().input, 3.0);
        assert!(t.cost("unknown", &u).is_none());
    }

    #[test]
    fn caps_parse() {
        let caps = SpendCaps::from_config(&budget("session_usd: 0.01\nsession_tokens: 500\n"));
        assert_eq!(caps.session_usd, Some(0.01));
        assert_eq!(caps.session_tokens, Some(500));
        assert!(caps.daily_usd.is_none());
        assert!(SpendCaps::from_config(&BudgetFile::default()).is_empty());
    }
}
