//! `SessionStore`: sessions and messages in state.db, byte-compatible with Python Hermes 0.19.
//!
//! One SQLite connection behind a mutex serves every call, so the store is `Send + Sync` and all
//! writes are serialised in this process. Each write is its own `BEGIN IMMEDIATE` transaction and
//! is committed (WAL, `synchronous=FULL`) before the call returns: a message is on disk once
//! `append_message` returns. Other processes (another hermes, Python Hermes) are waited for up to
//! the busy timeout, then the call fails with [`StoreError::Locked`].
//!
//! rusqlite is blocking: async callers run these methods on a blocking thread.

mod compact;
mod error;
mod feed;
mod gateway;
mod ledger;
mod listing;
mod queue;
mod read_only;
mod rows;
mod settings;
#[cfg(test)]
mod tests;
mod titles;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{
    Connection, ErrorCode, OptionalExtension, Transaction, TransactionBehavior, params,
};

use crate::llm::{Message, ToolCall, Usage};
use crate::sessions::{SearchHit, schema, search};

pub use compact::CompressionFailure;
pub use error::StoreError;
use error::{classify, is_foreign_key_error};
pub use ledger::{ChildUsage, ESTIMATED_BILLING_MODE, Insights, ModelUsage};
pub use listing::SessionSummary;

/// Sources whose sessions are internal (delegated children, tool runs) and hidden from browsing.
pub const HIDDEN_SOURCES: [&str; 2] = ["subagent", "tool"];

/// How long to wait for another process's lock when the caller does not say.
const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, Default)]
pub struct NewSession {
    pub id: String,
    pub source: String,
    pub model: Option<String>,
    /// JSON object text, stored as is in `sessions.model_config`.
    pub model_config: Option<String>,
    pub billing_provider: Option<String>,
    pub billing_base_url: Option<String>,
    pub cwd: Option<String>,
    pub parent_session_id: Option<String>,
    pub system_prompt: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct SessionRow {
    pub id: String,
    pub source: String,
    pub model: Option<String>,
    pub system_prompt: Option<String>,
    pub parent_session_id: Option<String>,
    pub title: Option<String>,
    pub cwd: Option<String>,
    pub billing_provider: Option<String>,
    pub billing_base_url: Option<String>,
    pub started_at: f64,
    pub ended_at: Option<f64>,
    pub end_reason: Option<String>,
    pub message_count: i64,
    pub tool_call_count: i64,
    pub api_call_count: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cache_read_tokens: i64,
    pub cache_write_tokens: i64,
    pub reasoning_tokens: i64,
    /// Estimated spend in USD (from the configured price table), if any was recorded.
    pub estimated_cost_usd: Option<f64>,
}

#[derive(Debug, Clone)]
pub struct StoredMessage {
    pub id: i64,
    pub session_id: String,
    pub timestamp: f64,
    pub active: bool,
    pub message: Message,
}

/// A new session id in Python Hermes' format: `YYYYmmdd_HHMMSS_<6 hex>`, local time.
pub fn new_session_id() -> String {
    let stamp = chrono::Local::now().format("%Y%m%d_%H%M%S");
    format!("{stamp}_{:06x}", rand::random::<u32>() & 0x00ff_ffff)
}

/// Seconds since the Unix epoch as a float, like Python's `time.time()`.
fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Escapes `%`, `_` and `\` for a `LIKE ... ESCAPE '\'` pattern.
pub(crate) fn like_escape(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_")
}

pub struct SessionStore {
    conn: Mutex<Connection>,
    path: PathBuf,
    busy_timeout: Duration,
    /// Whether `session_model_usage` has the v22 primary key including `task` (an older Python
    /// database may not, until Python migrates it); per-model usage is only recorded when it has.
    usage_by_model: bool,
    /// Turns on the connection for async callers (see `queue.rs`).
    queue: std::sync::Arc<tokio::sync::Semaphore>,
}

impl SessionStore {
    /// Opens (creating if needed) the database at `path`, waiting up to 5 s for other processes.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        Self::open_with_timeout(path, DEFAULT_BUSY_TIMEOUT)
    }

    /// Opens (creating if needed) the database at `path`; `busy_timeout` bounds every wait for a
    /// lock held by another process, at open and on each later call.
    pub fn open_with_timeout(path: &Path, busy_timeout: Duration) -> Result<Self, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDir {
                dir: dir.to_path_buf(),
                source,
            })?;
        }
        if path.is_dir() {
            return Err(StoreError::CannotOpen {
                path: path.to_path_buf(),
                detail: "it is a directory".into(),
            });
        }
        let fail = |op: &'static str| move |e: rusqlite::Error| classify(path, busy_timeout, op, e);
        let mut conn = Connection::open(path).map_err(fail("open the database"))?;
        conn.busy_timeout(busy_timeout)
            .map_err(fail("set the busy timeout"))?;
        set_wal(&conn, path).map_err(fail("switch to WAL journal mode"))?;
        conn.execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = FULL;")
            .map_err(fail("configure the connection"))?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(fail("create or update the schema"))?;
        let report = schema::reconcile(&tx).map_err(fail("create or update the schema"))?;
        tx.commit().map_err(fail("create or update the schema"))?;
        let usage_by_model: bool = conn
            .query_row(
                "SELECT COUNT(*) > 0 FROM pragma_table_info('session_model_usage') WHERE name = 'task' AND pk > 0",
                [],
                |r| r.get(0),
            )
            .map_err(fail("inspect the schema"))?;
        tracing::debug!(path = %path.display(), version = report.version, "state.db opened");
        Ok(SessionStore {
            conn: Mutex::new(conn),
            path: path.to_path_buf(),
            busy_timeout,
            usage_by_model,
            queue: std::sync::Arc::new(tokio::sync::Semaphore::new(1)),
        })
    }

    /// The file this store writes to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave a transaction open (it rolls back on drop),
        // so the connection is still sound.
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn err(&self, op: &'static str, e: rusqlite::Error) -> StoreError {
        classify(&self.path, self.busy_timeout, op, e)
    }

    /// Runs `f` in its own `BEGIN IMMEDIATE` transaction and commits before returning.
    fn write<T>(
        &self,
        op: &'static str,
        f: impl FnOnce(&Transaction<'_>) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        let mut conn = self.lock();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.err(op, e))?;
        let out = f(&tx).map_err(|e| self.err(op, e))?;
        tx.commit().map_err(|e| self.err(op, e))?;
        Ok(out)
    }

    /// Runs a read-only query on the shared connection.
    fn read<T>(
        &self,
        op: &'static str,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        let conn = self.lock();
        f(&conn).map_err(|e| self.err(op, e))
    }

    /// Whether `sql` (a `SELECT 1 ...`) finds a row.
    fn row_exists(
        &self,
        op: &'static str,
        sql: &str,
        params: impl rusqlite::Params,
    ) -> Result<bool, StoreError> {
        self.read(op, |conn| {
            conn.query_row(sql, params, |_| Ok(()))
                .optional()
                .map(|r| r.is_some())
        })
    }

    /// Inserts the session; if the id exists, only fills its still-empty metadata (Python's upsert).
    pub fn create_session(&self, s: &NewSession) -> Result<(), StoreError> {
        let result = self.write("create a session", |tx| {
            tx.execute(
                "INSERT INTO sessions (id, source, model, model_config, system_prompt, parent_session_id,
                     cwd, billing_provider, billing_base_url, started_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
                 ON CONFLICT(id) DO UPDATE SET
                     model = COALESCE(sessions.model, excluded.model),
                     model_config = COALESCE(sessions.model_config, excluded.model_config),
                     system_prompt = COALESCE(sessions.system_prompt, excluded.system_prompt),
                     parent_session_id = COALESCE(sessions.parent_session_id, excluded.parent_session_id),
                     cwd = COALESCE(sessions.cwd, excluded.cwd),
                     billing_provider = COALESCE(sessions.billing_provider, excluded.billing_provider),
                     billing_base_url = COALESCE(sessions.billing_base_url, excluded.billing_base_url)",
                params![
                    s.id,
                    s.source,
                    s.model,
                    s.model_config,
                    s.system_prompt,
                    s.parent_session_id,
                    s.cwd,
                    s.billing_provider,
                    s.billing_base_url,
                    now()
                ],
            )
        });
        match result {
            Err(e) if is_foreign_key_error(&e) => Err(StoreError::SessionNotFound(
                s.parent_session_id.clone().unwrap_or_default(),
            )),
            other => other.map(|_| ()),
        }
    }

    /// Runs an `UPDATE sessions ... WHERE id = ?` and reports a missing session.
    fn update_session(
        &self,
        op: &'static str,
        session_id: &str,
        sql: &str,
        value: &dyn rusqlite::ToSql,
    ) -> Result<(), StoreError> {
        let changed = self.write(op, |tx| tx.execute(sql, params![value, session_id]))?;
        if changed == 0 {
            return Err(StoreError::SessionNotFound(session_id.to_string()));
        }
        Ok(())
    }

    pub fn set_system_prompt(&self, session_id: &str, prompt: &str) -> Result<(), StoreError> {
        self.update_session(
            "store the system prompt",
            session_id,
            "UPDATE sessions SET system_prompt = ?1 WHERE id = ?2",
            &prompt,
        )
    }

    pub fn set_model(&self, session_id: &str, model: &str) -> Result<(), StoreError> {
        self.update_session(
            "store the model",
            session_id,
            "UPDATE sessions SET model = ?1 WHERE id = ?2",
            &model,
        )
    }

    /// Appends `msg` as an active row and bumps the session's `message_count` and (by the number
    /// of tool calls) `tool_call_count`. Returns the row id. Durable when this returns.
    pub fn append_message(&self, session_id: &str, msg: &Message) -> Result<i64, StoreError> {
        let tool_calls =
            (!msg.tool_calls.is_empty()).then(|| ToolCall::list_to_json(&msg.tool_calls));
        let calls = msg.tool_calls.len() as i64;
        let result = self.write("append a message", |tx| {
            tx.execute(
                "INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name,
                     timestamp, finish_reason, reasoning, observed, active, api_content,
                     platform_message_id)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 0, 1, ?10, ?11)",
                params![
                    session_id,
                    msg.role.as_str(),
                    msg.content,
                    msg.tool_call_id,
                    tool_calls,
                    msg.tool_name,
                    now(),
                    msg.finish_reason,
                    msg.reasoning,
                    msg.api_content,
                    msg.platform_message_id
                ],
            )?;
            let id = tx.last_insert_rowid();
            tx.execute(
                "UPDATE sessions SET message_count = COALESCE(message_count, 0) + 1,
                     tool_call_count = COALESCE(tool_call_count, 0) + ?1 WHERE id = ?2",
                params![calls, session_id],
            )?;
            Ok(id)
        });
        match result {
            Err(e) if is_foreign_key_error(&e) => {
                Err(StoreError::SessionNotFound(session_id.to_string()))
            }
            other => other,
        }
    }

    /// Sets the wire copy of a stored message (e.g. a user message plus recalled memory), so a
    /// resumed session replays the identical bytes.
    pub fn set_api_content(&self, message_id: i64, api_content: &str) -> Result<(), StoreError> {
        self.write("store the API copy of a message", |tx| {
            tx.execute(
                "UPDATE messages SET api_content = ?1 WHERE id = ?2",
                params![api_content, message_id],
            )
        })?;
        Ok(())
    }

    /// Adds one or more API calls' token counts to the session totals and, like Python, to the
    /// per-model breakdown in `session_model_usage` (keyed by the session's model and provider).
    pub fn add_usage(
        &self,
        session_id: &str,
        usage: &Usage,
        api_calls: u32,
    ) -> Result<(), StoreError> {
        self.add_usage_with_cost(session_id, usage, api_calls, None)
    }

    /// [`SessionStore::add_usage`] plus the estimated cost of those calls (USD), added to
    /// `sessions.estimated_cost_usd` and the per-model row.
    pub fn add_usage_with_cost(
        &self,
        session_id: &str,
        usage: &Usage,
        api_calls: u32,
        cost_usd: Option<f64>,
    ) -> Result<(), StoreError> {
        self.record_usage(session_id, usage, api_calls, cost_usd, false)
    }

    /// Records usage; `estimated` marks tokens hermes counted itself (the provider reported
    /// none): they count everywhere (totals, caps) and their per-model row carries
    /// [`ledger::ESTIMATED_BILLING_MODE`], so `/usage` and `insights` can say so.
    pub fn record_usage(
        &self,
        session_id: &str,
        usage: &Usage,
        api_calls: u32,
        cost_usd: Option<f64>,
        estimated: bool,
    ) -> Result<(), StoreError> {
        let mode = estimated.then_some(ledger::ESTIMATED_BILLING_MODE);
        let cost = cost_usd
            .filter(|c| c.is_finite() && *c > 0.0)
            .unwrap_or(0.0);
        let status: Option<&str> = cost_usd.map(|_| "estimated");
        let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        let vals = [
            n(usage.input_tokens),
            n(usage.output_tokens),
            n(usage.cache_read_tokens),
            n(usage.cache_write_tokens),
            n(usage.reasoning_tokens),
            i64::from(api_calls),
        ];
        let record_per_model = self.usage_by_model && vals.iter().any(|v| *v != 0);
        let changed = self.write("record token usage", |tx| {
            let changed = tx.execute(
                "UPDATE sessions SET
                     input_tokens = COALESCE(input_tokens, 0) + ?1,
                     output_tokens = COALESCE(output_tokens, 0) + ?2,
                     cache_read_tokens = COALESCE(cache_read_tokens, 0) + ?3,
                     cache_write_tokens = COALESCE(cache_write_tokens, 0) + ?4,
                     reasoning_tokens = COALESCE(reasoning_tokens, 0) + ?5,
                     api_call_count = COALESCE(api_call_count, 0) + ?6,
                     estimated_cost_usd = COALESCE(estimated_cost_usd, 0) + ?8,
                     cost_status = COALESCE(?9, cost_status),
                     cost_source = CASE WHEN ?9 IS NULL THEN cost_source ELSE 'config_price_table' END
                 WHERE id = ?7",
                params![vals[0], vals[1], vals[2], vals[3], vals[4], vals[5], session_id, cost, status],
            )?;
            if changed > 0 && record_per_model {
                let t = now();
                tx.execute(
                    "INSERT INTO session_model_usage (session_id, model, billing_provider, billing_base_url,
                         billing_mode, task, api_call_count, input_tokens, output_tokens, cache_read_tokens,
                         cache_write_tokens, reasoning_tokens, estimated_cost_usd, actual_cost_usd,
                         first_seen, last_seen)
                     SELECT id, COALESCE(NULLIF(model, ''), 'unknown'), COALESCE(billing_provider, ''),
                         COALESCE(billing_base_url, ''), COALESCE(?10, billing_mode, ''), '',
                         ?2, ?3, ?4, ?5, ?6, ?7, ?9, 0.0, ?8, ?8
                     FROM sessions WHERE id = ?1
                     ON CONFLICT(session_id, model, billing_provider, billing_base_url, billing_mode, task)
                     DO UPDATE SET
                         api_call_count = api_call_count + excluded.api_call_count,
                         input_tokens = input_tokens + excluded.input_tokens,
                         output_tokens = output_tokens + excluded.output_tokens,
                         cache_read_tokens = cache_read_tokens + excluded.cache_read_tokens,
                         cache_write_tokens = cache_write_tokens + excluded.cache_write_tokens,
                         reasoning_tokens = reasoning_tokens + excluded.reasoning_tokens,
                         estimated_cost_usd = COALESCE(estimated_cost_usd, 0) + excluded.estimated_cost_usd,
                         last_seen = excluded.last_seen",
                    params![session_id, vals[5], vals[0], vals[1], vals[2], vals[3], vals[4], t, cost, mode],
                )?;
            }
            Ok(changed)
        })?;
        if changed == 0 {
            return Err(StoreError::SessionNotFound(session_id.to_string()));
        }
        Ok(())
    }

    /// Marks the session ended. The first reason wins: ending an ended session changes nothing.
    pub fn end_session(&self, session_id: &str, reason: &str) -> Result<(), StoreError> {
        let exists = self.write("end a session", |tx| {
            tx.execute(
                "UPDATE sessions SET ended_at = ?1, end_reason = ?2 WHERE id = ?3 AND ended_at IS NULL",
                params![now(), reason, session_id],
            )?;
            tx.query_row("SELECT COUNT(*) FROM sessions WHERE id = ?1", [session_id], |r| r.get::<_, i64>(0))
        })?;
        if exists == 0 {
            return Err(StoreError::SessionNotFound(session_id.to_string()));
        }
        Ok(())
    }

    /// Clears `ended_at`/`end_reason` so the session can be resumed.
    pub fn reopen_session(&self, session_id: &str) -> Result<(), StoreError> {
        let changed = self.write("reopen a session", |tx| {
            tx.execute(
                "UPDATE sessions SET ended_at = NULL, end_reason = NULL WHERE id = ?1",
                [session_id],
            )
        })?;
        if changed == 0 {
            return Err(StoreError::SessionNotFound(session_id.to_string()));
        }
        Ok(())
    }

    pub fn session(&self, id: &str) -> Result<Option<SessionRow>, StoreError> {
        self.read("read a session", |c| {
            c.query_row(
                &format!(
                    "SELECT {} FROM sessions WHERE id = ?1",
                    rows::SESSION_COLUMNS
                ),
                [id],
                rows::session_row,
            )
            .optional()
        })
    }

    /// Exact id, then exact title (newest if duplicated), then a unique id prefix.
    pub fn find_session(&self, id_or_title: &str) -> Result<Option<SessionRow>, StoreError> {
        let wanted = id_or_title.trim();
        if wanted.is_empty() {
            return Ok(None);
        }
        if let Some(row) = self.session(wanted)? {
            return Ok(Some(row));
        }
        self.read("find a session", |c| {
            let cols = rows::SESSION_COLUMNS;
            let by_title = c
                .query_row(
                    &format!("SELECT {cols} FROM sessions WHERE title = ?1 ORDER BY started_at DESC LIMIT 1"),
                    [wanted],
                    rows::session_row,
                )
                .optional()?;
            if by_title.is_some() {
                return Ok(by_title);
            }
            let mut stmt = c.prepare(&format!(
                "SELECT {cols} FROM sessions WHERE id LIKE ?1 ESCAPE '\\' ORDER BY started_at DESC LIMIT 2"
            ))?;
            let mut found = stmt
                .query_map([format!("{}%", like_escape(wanted))], rows::session_row)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(if found.len() == 1 { found.pop() } else { None })
        })
    }

    /// The most recently started session among `sources` (any visible source when empty).
    pub fn latest_session(&self, sources: &[&str]) -> Result<Option<SessionRow>, StoreError> {
        self.read("find the latest session", |c| {
            let cols = rows::SESSION_COLUMNS;
            let (filter, values): (&str, Vec<&str>) = if sources.is_empty() {
                ("NOT IN", HIDDEN_SOURCES.to_vec())
            } else {
                ("IN", sources.to_vec())
            };
            let marks = vec!["?"; values.len()].join(",");
            c.query_row(
                &format!(
                    "SELECT {cols} FROM sessions WHERE source {filter} ({marks})
                     ORDER BY started_at DESC, rowid DESC LIMIT 1"
                ),
                rusqlite::params_from_iter(values),
                rows::session_row,
            )
            .optional()
        })
    }

    /// Newest first, without internal (`subagent`, `tool`) sessions.
    pub fn list_sessions(&self, limit: usize) -> Result<Vec<SessionRow>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read("list sessions", |c| {
            c.prepare(&format!(
                "SELECT {} FROM sessions WHERE source NOT IN ('subagent', 'tool')
                 ORDER BY started_at DESC, rowid DESC LIMIT ?1",
                rows::SESSION_COLUMNS
            ))?
            .query_map([limit], rows::session_row)?
            .collect()
        })
    }

    /// Active messages in insertion order. Rows that cannot be fully understood are kept as far
    /// as possible (text without tool calls) or skipped with a warning, never failing the load.
    pub fn messages(&self, session_id: &str) -> Result<Vec<StoredMessage>, StoreError> {
        self.read("load messages", |c| {
            let mut stmt = c.prepare(&format!(
                "SELECT {} FROM messages WHERE session_id = ?1 AND active = 1 ORDER BY id",
                rows::MESSAGE_COLUMNS
            ))?;
            let loaded = stmt
                .query_map([session_id], rows::stored_message)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(loaded.into_iter().flatten().collect())
        })
    }

    /// Deletes the session, its messages (their FTS rows go with them through the triggers) and
    /// its delegated subagent sessions; other child sessions are kept and detached. One
    /// transaction. `false` when there was no such session.
    pub fn delete_session(&self, session_id: &str) -> Result<bool, StoreError> {
        self.write("delete a session", |tx| {
            let exists: i64 = tx.query_row("SELECT COUNT(*) FROM sessions WHERE id = ?1", [session_id], |r| r.get(0))?;
            if exists == 0 {
                return Ok(false);
            }
            // Delegated children carry `_delegate_from` in model_config (Python's marker); they are
            // part of the parent's work and go with it, recursively.
            let delegate = "CASE WHEN json_valid(s.model_config)
                                 THEN json_extract(s.model_config, '$._delegate_from') END";
            let mut doomed: Vec<String> = tx
                .prepare(&format!(
                    "WITH RECURSIVE doomed(id) AS (
                         SELECT ?1
                         UNION
                         SELECT s.id FROM sessions s JOIN doomed d
                           ON {delegate} = d.id OR (s.parent_session_id = d.id AND {delegate} IS NOT NULL)
                     )
                     SELECT id FROM doomed WHERE id <> ?1"
                ))?
                .query_map([session_id], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            doomed.push(session_id.to_string());
            for id in &doomed {
                tx.execute("UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id = ?1", [id])?;
                tx.execute("DELETE FROM messages WHERE session_id = ?1", [id])?;
            }
            for id in &doomed {
                tx.execute("DELETE FROM sessions WHERE id = ?1", [id])?;
            }
            Ok(true)
        })
    }

    /// `/undo`: hides the last active user message and everything after it (`active = 0`,
    /// `compacted = 0`, so search skips them too), bumps `rewind_count`. Returns rows hidden.
    pub fn rewind_last_user_turn(&self, session_id: &str) -> Result<usize, StoreError> {
        self.write("undo the last turn", |tx| {
            let target: Option<i64> = tx.query_row(
                "SELECT MAX(id) FROM messages WHERE session_id = ?1 AND role = 'user' AND active = 1",
                [session_id],
                |r| r.get(0),
            )?;
            let Some(target) = target else {
                return Ok(0);
            };
            let hidden = tx.execute(
                "UPDATE messages SET active = 0, compacted = 0 WHERE session_id = ?1 AND id >= ?2 AND active = 1",
                params![session_id, target],
            )?;
            tx.execute(
                "UPDATE sessions SET rewind_count = COALESCE(rewind_count, 0) + 1 WHERE id = ?1",
                [session_id],
            )?;
            Ok(hidden)
        })
    }

    /// Full-text search over live and compaction-archived messages; see [`search`].
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<SearchHit>, StoreError> {
        self.read("search messages", |c| search::search(c, query, limit))
    }
}

/// Switches to WAL unless already there. Like Python, falls back to the rollback journal on file
/// systems that cannot do WAL (NFS, SMB, some FUSE mounts), with one warning.
fn set_wal(conn: &Connection, path: &Path) -> rusqlite::Result<()> {
    let current: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
    if current.eq_ignore_ascii_case("wal") {
        return Ok(());
    }
    match conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0)) {
        Ok(_) => Ok(()),
        Err(e)
            if matches!(
                e.sqlite_error_code(),
                Some(
                    ErrorCode::FileLockingProtocolFailed
                        | ErrorCode::AuthorizationForStatementDenied
                )
            ) =>
        {
            tracing::warn!(path = %path.display(), error = %e, "WAL unsupported on this file system; using journal_mode=DELETE");
            conn.query_row("PRAGMA journal_mode = DELETE", [], |r| {
                r.get::<_, String>(0)
            })
            .map(|_| ())
        }
        Err(e) => Err(e),
    }
}
