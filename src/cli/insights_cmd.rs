//! `hermes insights [--days N] [--json]`: sessions, tokens, estimated spend, models, sources and
//! the most used tools over a period. `--json` is a contract for scripts.

use crate::cli::{CliError, exit};
use crate::sessions::{Insights, SessionStore};

pub fn run(store: &SessionStore, days: u32, json: bool) -> Result<u8, CliError> {
    let now = chrono::Utc::now().timestamp() as f64;
    let since = now - f64::from(days) * 86_400.0;
    let insights = store.insights(since)?;
    if json {
        let text = serde_json::to_string(&insights)
            .map_err(|e| CliError::Setup(format!("cannot encode insights: {e}")))?;
        println!("{text}");
    } else {
        print!("{}", render(&insights, days));
    }
    Ok(exit::OK)
}

fn render(i: &Insights, days: u32) -> String {
    let mut out = format!(
        "Last {days} days: {} sessions · {} messages · {} tool calls · {} model calls\n\
         tokens: {} in ({} from cache) · {} out · estimated spend ${:.4}\n",
        i.sessions,
        i.messages,
        i.tool_calls,
        i.api_calls,
        i.input_tokens,
        i.cache_read_tokens,
        i.output_tokens,
        i.estimated_cost_usd
    );
    if !i.by_model.is_empty() {
        out.push_str("\nby model:\n");
        for m in &i.by_model {
            let provider = if m.provider.is_empty() {
                "-"
            } else {
                &m.provider
            };
            out.push_str(&format!(
                "  {:<32} {:<12} {:>6} calls  {:>10} in  {:>9} out  ${:.4}\n",
                m.model,
                provider,
                m.api_calls,
                m.input_tokens,
                m.output_tokens,
                m.estimated_cost_usd
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
                "  {} (parent {})  {:>4} calls  {:>9} in  {:>8} out  ${:.4}\n",
                c.session_id,
                c.parent_session_id,
                c.api_calls,
                c.input_tokens,
                c.output_tokens,
                c.estimated_cost_usd
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
