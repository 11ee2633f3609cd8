//! Spend and usage read-outs over state.db: spend since a time (for daily caps) and the
//! `hermes insights` summary (sessions, tokens, cost, by model, by source, top tools).

use rusqlite::params;
use serde::Serialize;

use super::{HIDDEN_SOURCES, SessionStore, StoreError};

/// Usage of one model over a period.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelUsage {
    pub model: String,
    pub provider: String,
    pub api_calls: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cache_read_tokens: i64,
    pub estimated_cost_usd: f64,
    /// Of these tokens, how many hermes counted itself (the provider reported no usage).
    pub estimated_tokens: i64,
}

/// `session_model_usage.billing_mode` of calls whose tokens hermes estimated because the
/// provider reported none (a value Python Hermes stores and groups by without interpreting).
pub const ESTIMATED_BILLING_MODE: &str = "estimated_tokens";

/// What `hermes insights` reports for a period.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Insights {
    pub since: f64,
    pub sessions: i64,
    pub messages: i64,
    pub tool_calls: i64,
    pub api_calls: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cache_read_tokens: i64,
    pub cache_write_tokens: i64,
    pub estimated_cost_usd: f64,
    /// Of the tokens above, how many hermes estimated (providers that report no usage).
    pub estimated_tokens: i64,
    pub by_model: Vec<ModelUsage>,
    /// `(source, sessions)`, most sessions first.
    pub by_source: Vec<(String, i64)>,
    /// `(tool, calls)`, most used first (at most 10).
    pub top_tools: Vec<(String, i64)>,
    /// Delegated children of the period, each with its parent (their usage is included in the
    /// totals above, though their sessions are not counted as sessions).
    pub children: Vec<ChildUsage>,
}

/// Usage of one delegated child session.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChildUsage {
    pub session_id: String,
    pub parent_session_id: String,
    pub api_calls: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub estimated_cost_usd: f64,
}

impl SessionStore {
    /// Tokens of the session that hermes estimated because the provider reported none.
    pub fn estimated_tokens(&self, session_id: &str) -> Result<i64, StoreError> {
        self.read("read estimated usage", |conn| {
            conn.query_row(
                &format!(
                    "SELECT COALESCE(SUM(input_tokens + output_tokens), 0) FROM session_model_usage
                     WHERE session_id = ?1 AND billing_mode = '{ESTIMATED_BILLING_MODE}'"
                ),
                params![session_id],
                |r| r.get(0),
            )
        })
    }

    /// The sessions whose `parent_session_id` is `parent` (delegated children), oldest first.
    pub fn child_sessions(&self, parent: &str) -> Result<Vec<super::SessionRow>, StoreError> {
        self.read("read child sessions", |conn| {
            let mut stmt = conn.prepare(&format!(
                "SELECT {} FROM sessions WHERE parent_session_id = ?1 AND source = 'subagent'
                 ORDER BY started_at, id",
                super::rows::SESSION_COLUMNS
            ))?;
            stmt.query_map([parent], super::rows::session_row)?
                .collect()
        })
    }

    /// Estimated spend (USD) of the sessions started at or after `since` (unix seconds).
    pub fn spend_since(&self, since: f64) -> Result<f64, StoreError> {
        self.read("sum recent spend", |conn| {
            conn.query_row(
                "SELECT COALESCE(SUM(estimated_cost_usd), 0.0) FROM sessions WHERE started_at >= ?1",
                params![since],
                |r| r.get(0),
            )
        })
    }

    /// Usage of the visible sessions started at or after `since`.
    pub fn insights(&self, since: f64) -> Result<Insights, StoreError> {
        let hidden = format!("('{}', '{}')", HIDDEN_SOURCES[0], HIDDEN_SOURCES[1]);
        self.read("summarise usage", |conn| {
            let mut out = conn.query_row(
                &format!(
                    "SELECT COUNT(*), COALESCE(SUM(message_count),0), COALESCE(SUM(tool_call_count),0),
                        COALESCE(SUM(api_call_count),0), COALESCE(SUM(input_tokens),0),
                        COALESCE(SUM(output_tokens),0), COALESCE(SUM(cache_read_tokens),0),
                        COALESCE(SUM(cache_write_tokens),0), COALESCE(SUM(estimated_cost_usd),0.0)
                     FROM sessions WHERE started_at >= ?1 AND source NOT IN {hidden}"
                ),
                params![since],
                |r| {
                    Ok(Insights {
                        since,
                        sessions: r.get(0)?,
                        messages: r.get(1)?,
                        tool_calls: r.get(2)?,
                        api_calls: r.get(3)?,
                        input_tokens: r.get(4)?,
                        output_tokens: r.get(5)?,
                        cache_read_tokens: r.get(6)?,
                        cache_write_tokens: r.get(7)?,
                        estimated_cost_usd: r.get(8)?,
                        ..Insights::default()
                    })
                },
            )?;
            let mut stmt = conn.prepare(&format!(
                "SELECT u.model, u.billing_provider, SUM(u.api_call_count), SUM(u.input_tokens),
                    SUM(u.output_tokens), SUM(u.cache_read_tokens), COALESCE(SUM(u.estimated_cost_usd), 0.0),
                    SUM(CASE WHEN u.billing_mode = '{ESTIMATED_BILLING_MODE}'
                             THEN u.input_tokens + u.output_tokens ELSE 0 END)
                 FROM session_model_usage u JOIN sessions s ON s.id = u.session_id
                 WHERE s.started_at >= ?1 AND s.source NOT IN {hidden}
                 GROUP BY u.model, u.billing_provider ORDER BY SUM(u.api_call_count) DESC"
            ))?;
            out.by_model = stmt
                .query_map(params![since], |r| {
                    Ok(ModelUsage {
                        model: r.get(0)?,
                        provider: r.get(1)?,
                        api_calls: r.get(2)?,
                        input_tokens: r.get(3)?,
                        output_tokens: r.get(4)?,
                        cache_read_tokens: r.get(5)?,
                        estimated_cost_usd: r.get(6)?,
                        estimated_tokens: r.get(7)?,
                    })
                })?
                .collect::<Result<_, _>>()?;
            out.estimated_tokens = conn.query_row(
                &format!(
                    "SELECT COALESCE(SUM(u.input_tokens + u.output_tokens), 0)
                     FROM session_model_usage u JOIN sessions s ON s.id = u.session_id
                     WHERE s.started_at >= ?1 AND u.billing_mode = '{ESTIMATED_BILLING_MODE}'
                       AND (s.source NOT IN {hidden} OR (s.source = 'subagent'
                            AND s.parent_session_id IS NOT NULL AND s.parent_session_id != ''))"
                ),
                params![since],
                |r| r.get(0),
            )?;
            let mut stmt = conn.prepare(&format!(
                "SELECT source, COUNT(*) FROM sessions WHERE started_at >= ?1 AND source NOT IN {hidden}
                 GROUP BY source ORDER BY COUNT(*) DESC, source"
            ))?;
            out.by_source = stmt
                .query_map(params![since], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<_, _>>()?;
            let mut stmt = conn.prepare(&format!(
                "SELECT m.tool_name, COUNT(*) FROM messages m JOIN sessions s ON s.id = m.session_id
                 WHERE m.role = 'tool' AND m.tool_name IS NOT NULL AND s.started_at >= ?1
                   AND s.source NOT IN {hidden}
                 GROUP BY m.tool_name ORDER BY COUNT(*) DESC, m.tool_name LIMIT 10"
            ))?;
            out.top_tools = stmt
                .query_map(params![since], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<_, _>>()?;
            let mut stmt = conn.prepare(
                "SELECT id, parent_session_id, COALESCE(api_call_count,0), COALESCE(input_tokens,0),
                    COALESCE(output_tokens,0), COALESCE(estimated_cost_usd,0.0)
                 FROM sessions WHERE started_at >= ?1 AND source = 'subagent'
                   AND parent_session_id IS NOT NULL AND parent_session_id != ''
                 ORDER BY started_at, id",
            )?;
            out.children = stmt
                .query_map(params![since], |r| {
                    Ok(ChildUsage {
                        session_id: r.get(0)?,
                        parent_session_id: r.get(1)?,
                        api_calls: r.get(2)?,
                        input_tokens: r.get(3)?,
                        output_tokens: r.get(4)?,
                        estimated_cost_usd: r.get(5)?,
                    })
                })?
                .collect::<Result<_, _>>()?;
            // Children's spend rolls up into the totals.
            for c in &out.children {
                out.api_calls += c.api_calls;
                out.input_tokens += c.input_tokens;
                out.output_tokens += c.output_tokens;
                out.estimated_cost_usd += c.estimated_cost_usd;
            }
            Ok(out)
        })
    }
}
