//! `hermes insights [--days N] [--json]`: sessions, tokens, estimated spend, models, sources and
//! the most used tools over a period. `--json` is a contract for scripts.

use crate::cli::{CliError, exit};
use crate::sessions::{Insights, SessionStore};

/// Whether `budget.prices` names any model: without it every spend figure would be a
/// meaningless $0.
pub fn prices_configured(config: &crate::config::Config) -> bool {
    !config.file.budget.prices.is_empty()
}

pub fn run(store: &SessionStore, priced: bool, days: u32, json: bool) -> Result<u8, CliError> {
    let now = chrono::Utc::now().timestamp() as f64;
    let since = now - f64::from(days) * 86_400.0;
    let insights = store.insights(since)?;
    if json {
        let mut value = serde_json::to_value(&insights)
            .map_err(|e| CliError::Setup(format!("cannot encode insights: {e}")))?;
        value["prices_configured"] = serde_json::Value::Bool(priced);
        println!("{value}");
    } else {
        print!("{}", render(&insights, priced, days));
    }
    Ok(exit::OK)
}

fn render(i: &Insights, priced: bool, days: u32) -> String {
    let money = |usd: f64| {
        if priced {
            format!("${usd:.4}")
        } else {
            "-".to_string()
        }
    };
    let spend = if priced {
        format!("estimated spend {}", money(i.estimated_cost_usd))
    } else {
        "spend not estimated: no prices are configured (budget.prices in config.yaml)".to_string()
    };
    let mut out = format!(
        "Last {days} days: {} sessions · {} messages · {} tool calls · {} model calls\n\
         tokens: {} in ({} from cache) · {} out · {spend}\n",
        i.sessions,
        i.messages,
        i.tool_calls,
        i.api_calls,
        i.input_tokens,
        i.cache_read_tokens,
        i.output_tokens,
    );
    if i.estimated_tokens > 0 {
        out.push_str(&format!(
            "({} of these tokens are estimated by hermes: the provider reported no usage)\n",
            i.estimated_tokens
        ));
    }
    if !i.by_model.is_empty() {
        out.push_str("\nby model:\n");
        for m in &i.by_model {
            let provider = if m.provider.is_empty() {
                "-"
            } else {
                &m.provider
            };
            out.push_str(&format!(
                "  {:<32} {:<12} {:>6} calls  {:>10} in  {:>9} out  {}\n",
                m.model,
                provider,
                m.api_calls,
                m.input_tokens,
                m.output_tokens,
                money(m.estimated_cost_usd)
            ));
        }
    }
    if !i.by_source.is_empty() {
        let sources: Vec<String> = i
            .by_source
            .iter()
            .map(|(s, n)| format!("{s} {n}"))
            .collect();
        out.push_str(&format!("\nby source: {}\n", sources.join(" · ")));
    }
    if !i.children.is_empty() {
        out.push_str(&format!(
            "\ndelegated children ({}, included in the totals):\n",
            i.children.len()
        ));
        for c in &i.children {
            out.push_str(&format!(
                "  {} (parent {})  {:>4} calls  {:>9} in  {:>8} out  {}\n",
                c.session_id,
                c.parent_session_id,
                c.api_calls,
                c.input_tokens,
                c.output_tokens,
                money(c.estimated_cost_usd)
            ));
        }
    }
    if !i.top_tools.is_empty() {
        let tools: Vec<String> = i
            .top_tools
            .iter()
            .map(|(t, n)| format!("{t} {n}"))
            .collect();
        out.push_str(&format!("top tools: {}\n", tools.join(" · ")));
    }
    out
}
