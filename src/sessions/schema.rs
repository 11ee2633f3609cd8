//! The state.db schema, compatible with Python Hermes 0.19 (`SCHEMA_VERSION` 22), and the
//! open-time reconciliation that brings any existing database (ours or Python's) up to it.
//!
//! Compatibility contract: the tables, columns (name, order, type, NOT NULL, default), indexes,
//! FTS5 tables and triggers are equivalent to what Python Hermes creates, so when Python opens a
//! database we created its own column reconciliation has nothing to add, and vice versa.
//! `tests/fixtures/python-hermes-0.19-schema.sql` is the ground truth the tests compare against.
//!
//! Reconciliation is additive only: missing tables, columns, indexes and triggers are created;
//! nothing is ever dropped or rewritten. Python's version-gated *data* migrations (FTS re-index at
//! v11, delegate tagging at v16, ...) are left to Python: an older database keeps its recorded
//! version so that Python still runs them the next time it opens the file.

use rusqlite::{Connection, OptionalExtension};

/// The schema version Python Hermes 0.19 records in `schema_version`.
pub const SCHEMA_VERSION: i64 = 22;

/// The tables. Column order matters: Python compares by name, but keeping its order makes `SELECT *` rows and
/// `PRAGMA table_info` identical between the two programs.
pub(crate) const TABLES_SQL: &str = r"
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);

CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    user_id TEXT,
    session_key TEXT,
    chat_id TEXT,
    chat_type TEXT,
    thread_id TEXT,
    display_name TEXT,
    origin_json TEXT,
    expiry_finalized INTEGER DEFAULT 0,
    model TEXT,
    model_config TEXT,
    system_prompt TEXT,
    parent_session_id TEXT,
    started_at REAL NOT NULL,
    ended_at REAL,
    end_reason TEXT,
    message_count INTEGER DEFAULT 0,
    tool_call_count INTEGER DEFAULT 0,
    input_tokens INTEGER DEFAULT 0,
    output_tokens INTEGER DEFAULT 0,
    cache_read_tokens INTEGER DEFAULT 0,
    cache_write_tokens INTEGER DEFAULT 0,
    reasoning_tokens INTEGER DEFAULT 0,
    cwd TEXT,
    git_branch TEXT,
    git_repo_root TEXT,
    billing_provider TEXT,
    billing_base_url TEXT,
    billing_mode TEXT,
    estimated_cost_usd REAL,
    actual_cost_usd REAL,
    cost_status TEXT,
    cost_source TEXT,
    pricing_version TEXT,
    title TEXT,
    api_call_count INTEGER DEFAULT 0,
    handoff_state TEXT,
    handoff_platform TEXT,
    handoff_error TEXT,
    compression_failure_cooldown_until REAL,
    compression_failure_error TEXT,
    compression_fallback_streak INTEGER NOT NULL DEFAULT 0,
    profile_name TEXT,
    rewind_count INTEGER NOT NULL DEFAULT 0,
    archived INTEGER NOT NULL DEFAULT 0,
    FOREIGN KEY (parent_session_id) REFERENCES sessions(id)
);

CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL,
    content TEXT,
    tool_call_id TEXT,
    tool_calls TEXT,
    tool_name TEXT,
    effect_disposition TEXT,
    timestamp REAL NOT NULL,
    token_count INTEGER,
    finish_reason TEXT,
    reasoning TEXT,
    reasoning_content TEXT,
    reasoning_details TEXT,
    codex_reasoning_items TEXT,
    codex_message_items TEXT,
    platform_message_id TEXT,
    observed INTEGER DEFAULT 0,
    active INTEGER NOT NULL DEFAULT 1,
    compacted INTEGER NOT NULL DEFAULT 0,
    api_content TEXT
);

CREATE TABLE IF NOT EXISTS session_model_usage (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    model TEXT NOT NULL,
    billing_provider TEXT NOT NULL DEFAULT '',
    billing_base_url TEXT NOT NULL DEFAULT '',
    billing_mode TEXT NOT NULL DEFAULT '',
    task TEXT NOT NULL DEFAULT '',
    api_call_count INTEGER NOT NULL DEFAULT 0,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens INTEGER NOT NULL DEFAULT 0,
    estimated_cost_usd REAL NOT NULL DEFAULT 0,
    actual_cost_usd REAL NOT NULL DEFAULT 0,
    cost_status TEXT,
    cost_source TEXT,
    first_seen REAL,
    last_seen REAL,
    PRIMARY KEY (session_id, model, billing_provider, billing_base_url, billing_mode, task)
);

CREATE TABLE IF NOT EXISTS state_meta (key TEXT PRIMARY KEY, value TEXT);

CREATE TABLE IF NOT EXISTS gateway_routing (
    scope TEXT NOT NULL DEFAULT '',
    session_key TEXT NOT NULL,
    entry_json TEXT NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (scope, session_key)
);

CREATE TABLE IF NOT EXISTS compression_locks (
    session_id TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    acquired_at REAL NOT NULL,
    expires_at REAL NOT NULL
);

CREATE TABLE IF NOT EXISTS async_delegations (
    delegation_id TEXT PRIMARY KEY,
    origin_session TEXT NOT NULL,
    origin_ui_session_id TEXT NOT NULL DEFAULT '',
    parent_session_id TEXT,
    state TEXT NOT NULL,
    dispatched_at REAL NOT NULL,
    completed_at REAL,
    updated_at REAL NOT NULL,
    event_json TEXT,
    result_json TEXT,
    delivery_state TEXT NOT NULL DEFAULT 'pending',
    delivery_attempts INTEGER NOT NULL DEFAULT 0,
    delivered_at REAL,
    owner_pid INTEGER,
    owner_started_at INTEGER,
    task_json TEXT,
    delivery_claim TEXT,
    delivery_claimed_at REAL
);

";

/// All indexes but the title one. They run after column reconciliation: on an old database an
/// index over a column that a later version added would otherwise fail before the column exists.
const INDEX_SQL: &str = r"
CREATE INDEX IF NOT EXISTS idx_sessions_source ON sessions(source);
CREATE INDEX IF NOT EXISTS idx_sessions_source_id ON sessions(source, id);
CREATE INDEX IF NOT EXISTS idx_sessions_parent ON sessions(parent_session_id);
CREATE INDEX IF NOT EXISTS idx_sessions_started ON sessions(started_at DESC);
CREATE INDEX IF NOT EXISTS idx_messages_session ON messages(session_id, timestamp);
CREATE INDEX IF NOT EXISTS idx_compression_locks_expires ON compression_locks(expires_at);
CREATE INDEX IF NOT EXISTS idx_session_model_usage_session ON session_model_usage(session_id);
CREATE INDEX IF NOT EXISTS idx_session_model_usage_model ON session_model_usage(model);
CREATE INDEX IF NOT EXISTS idx_async_delegations_delivery
    ON async_delegations(delivery_state, completed_at);
CREATE INDEX IF NOT EXISTS idx_messages_platform_msg_id
    ON messages(session_id, platform_message_id) WHERE platform_message_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS idx_messages_session_active ON messages(session_id, active, timestamp);
CREATE INDEX IF NOT EXISTS idx_messages_active_null ON messages(active) WHERE active IS NULL;
CREATE INDEX IF NOT EXISTS idx_sessions_session_key ON sessions(session_key, started_at DESC);
CREATE INDEX IF NOT EXISTS idx_sessions_gateway_peer
    ON sessions(source, user_id, chat_id, chat_type, thread_id, started_at DESC);
CREATE INDEX IF NOT EXISTS idx_sessions_handoff_state ON sessions(handoff_state, started_at);
";

/// Titles are unique when set. Kept apart because old databases may hold duplicates.
const TITLE_INDEX_SQL: &str = "CREATE UNIQUE INDEX IF NOT EXISTS idx_sessions_title_unique ON sessions(title) WHERE title IS NOT NULL";

/// What both FTS tables index for a message: its text, the tool name and the raw tool-call JSON.
const FTS_DOC: &str = "COALESCE(new.content, '') || ' ' || COALESCE(new.tool_name, '') || ' ' || COALESCE(new.tool_calls, '')";

/// The names of the six triggers that keep the FTS tables in step with `messages`.
pub const FTS_TRIGGERS: [&str; 6] = [
    "messages_fts_insert",
    "messages_fts_delete",
    "messages_fts_update",
    "messages_fts_trigram_insert",
    "messages_fts_trigram_delete",
    "messages_fts_trigram_update",
];

/// DDL for one FTS5 table (`tokenize` is the extra argument, if any) and its three triggers.
fn fts_sql(table: &str, tokenize: Option<&str>) -> String {
    let args = match tokenize {
        Some(t) => format!("content, tokenize='{t}'"),
        None => "content".to_string(),
    };
    format!(
        "CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING fts5({args});\n\
         CREATE TRIGGER IF NOT EXISTS {table}_insert AFTER INSERT ON messages BEGIN\n\
         \x20   INSERT INTO {table}(rowid, content) VALUES (new.id, {FTS_DOC});\n\
         END;\n\
         CREATE TRIGGER IF NOT EXISTS {table}_delete AFTER DELETE ON messages BEGIN\n\
         \x20   DELETE FROM {table} WHERE rowid = old.id;\n\
         END;\n\
         CREATE TRIGGER IF NOT EXISTS {table}_update AFTER UPDATE ON messages BEGIN\n\
         \x20   DELETE FROM {table} WHERE rowid = old.id;\n\
         \x20   INSERT INTO {table}(rowid, content) VALUES (new.id, {FTS_DOC});\n\
         END;\n"
    )
}

/// What [`reconcile`] did to the database; useful for logs and tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReconcileReport {
    /// `table.column` for every column that had to be added.
    pub added_columns: Vec<String>,
    /// True when the FTS tables were re-filled because triggers had been missing.
    pub rebuilt_fts: bool,
    /// The version recorded in `schema_version` after reconciliation.
    pub version: i64,
}

/// Creates the schema on an empty database, or completes an existing one. Run inside a write
/// transaction so a failure leaves the file untouched.
pub fn reconcile(conn: &Connection) -> rusqlite::Result<ReconcileReport> {
    let mut report = ReconcileReport::default();
    conn.execute_batch(TABLES_SQL)?;
    report.added_columns = add_missing_columns(conn)?;
    conn.execute_batch(INDEX_SQL)?;
    // Rows written by old builds whose reconciled `active` column lacked its default are hidden
    // from every transcript load; Python repairs them on each open and so do we.
    conn.execute("UPDATE messages SET active = 1 WHERE active IS NULL", [])?;

    let recorded: Option<i64> = conn
        .query_row("SELECT version FROM schema_version LIMIT 1", [], |r| {
            r.get(0)
        })
        .optional()?;
    report.version = match recorded {
        Some(v) => {
            if v < SCHEMA_VERSION {
                tracing::info!(
                    recorded = v,
                    current = SCHEMA_VERSION,
                    "state.db has an older schema version; columns were completed, the data \
                     migrations are left for Python Hermes"
                );
            }
            v
        }
        None => {
            conn.execute(
                "INSERT INTO schema_version (version) VALUES (?1)",
                [SCHEMA_VERSION],
            )?;
            SCHEMA_VERSION
        }
    };

    if let Err(e) = conn.execute(TITLE_INDEX_SQL, []) {
        // Duplicate titles from old builds make the unique index impossible. Python clears the
        // older duplicates; we never rewrite user data at open, so we just go without the index.
        tracing::warn!(error = %e, "state.db: unique title index not created (duplicate titles?)");
    }

    let triggers_before: i64 = conn.query_row(
        &format!(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'trigger' AND name IN ({})",
            FTS_TRIGGERS
                .iter()
                .map(|t| format!("'{t}'"))
                .collect::<Vec<_>>()
                .join(",")
        ),
        [],
        |r| r.get(0),
    )?;
    conn.execute_batch(&fts_sql("messages_fts", None))?;
    conn.execute_batch(&fts_sql("messages_fts_trigram", Some("trigram")))?;
    // Missing triggers mean the FTS tables missed some writes: re-fill them from `messages`.
    // Before v11 the FTS tables had another layout that Python migrates itself; leave those.
    if triggers_before < FTS_TRIGGERS.len() as i64 && report.version >= 11 {
        rebuild_fts(conn)?;
        report.rebuilt_fts = true;
    }
    Ok(report)
}

/// Re-fills both FTS tables from `messages`.
fn rebuild_fts(conn: &Connection) -> rusqlite::Result<()> {
    for table in ["messages_fts", "messages_fts_trigram"] {
        conn.execute_batch(&format!(
            "DELETE FROM {table};
             INSERT INTO {table}(rowid, content)
             SELECT id, COALESCE(content, '') || ' ' || COALESCE(tool_name, '') || ' ' ||
                        COALESCE(tool_calls, '')
             FROM messages;"
        ))?;
    }
    Ok(())
}

/// One column as `PRAGMA table_info` describes it.
struct ColumnDecl {
    name: String,
    decl: String,
}

/// The columns [`TABLES_SQL`] declares, per table, read back from a scratch in-memory database
/// so SQLite itself parses the DDL (defaults with commas, inline REFERENCES, ...).
fn declared_columns() -> rusqlite::Result<Vec<(String, Vec<ColumnDecl>)>> {
    let scratch = Connection::open_in_memory()?;
    scratch.execute_batch(TABLES_SQL)?;
    let tables: Vec<String> = scratch
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
        )?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    let mut out = Vec::new();
    for table in tables {
        let mut stmt = scratch
            .prepare("SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info(?1)")?;
        let cols = stmt
            .query_map([&table], |r| {
                let name: String = r.get(0)?;
                let ty: String = r.get(1)?;
                let notnull: bool = r.get(2)?;
                let default: Option<String> = r.get(3)?;
                let pk: i64 = r.get(4)?;
                let mut parts = Vec::new();
                if !ty.is_empty() {
                    parts.push(ty);
                }
                if notnull && pk == 0 {
                    parts.push("NOT NULL".to_string());
                }
                if let Some(d) = default {
                    parts.push(format!("DEFAULT {d}"));
                }
                Ok(ColumnDecl {
                    name,
                    decl: parts.join(" "),
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        out.push((table, cols));
    }
    Ok(out)
}

/// `ALTER TABLE ADD COLUMN` for every declared column the live table lacks.
fn add_missing_columns(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut added = Vec::new();
    for (table, cols) in declared_columns()? {
        let live: Vec<String> = conn
            .prepare("SELECT name FROM pragma_table_info(?1)")?
            .query_map([&table], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        for col in cols.iter().filter(|c| !live.contains(&c.name)) {
            let sql = format!(
                "ALTER TABLE \"{}\" ADD COLUMN \"{}\" {}",
                table.replace('"', "\"\""),
                col.name.replace('"', "\"\""),
                col.decl
            );
            conn.execute(&sql, [])?;
            added.push(format!("{table}.{}", col.name));
        }
    }
    if !added.is_empty() {
        tracing::info!(columns = ?added, "state.db: added missing columns");
    }
    Ok(added)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        reconcile(&conn).unwrap();
        conn
    }

    fn count(conn: &Connection, sql: &str) -> i64 {
        conn.query_row(sql, [], |r| r.get(0)).unwrap()
    }

    #[test]
    fn fresh_schema_records_version_22_once() {
        let conn = fresh();
        assert_eq!(count(&conn, "SELECT COUNT(*) FROM schema_version"), 1);
        assert_eq!(count(&conn, "SELECT version FROM schema_version"), 22);
        let again = reconcile(&conn).unwrap();
        assert!(again.added_columns.is_empty());
        assert!(!again.rebuilt_fts);
        assert_eq!(count(&conn, "SELECT COUNT(*) FROM schema_version"), 1);
    }

    #[test]
    fn all_objects_exist() {
        let conn = fresh();
        for trigger in FTS_TRIGGERS {
            let n = count(
                &conn,
                &format!(
                    "SELECT COUNT(*) FROM sqlite_master WHERE type='trigger' AND name='{trigger}'"
                ),
            );
            assert_eq!(n, 1, "{trigger}");
        }
        let indexes = count(
            &conn,
            "SELECT COUNT(*) FROM sqlite_master WHERE type='index' AND name LIKE 'idx_%'",
        );
        assert_eq!(indexes, 16);
    }

    #[test]
    fn missing_columns_are_added_without_losing_rows() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, started_at REAL NOT NULL);
             CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL,
                 role TEXT NOT NULL, content TEXT, timestamp REAL NOT NULL);
             CREATE TABLE schema_version (version INTEGER NOT NULL);
             INSERT INTO schema_version VALUES (22);
             INSERT INTO sessions VALUES ('s1', 'cli', 1.0);
             INSERT INTO messages (session_id, role, content, timestamp) VALUES ('s1', 'user', 'old words', 1.0);",
        )
        .unwrap();
        let report = reconcile(&conn).unwrap();
        assert!(
            report
                .added_columns
                .contains(&"messages.active".to_string())
        );
        assert!(
            report
                .added_columns
                .contains(&"sessions.rewind_count".to_string())
        );
        assert!(
            report.rebuilt_fts,
            "triggers were missing, so the FTS tables must be filled"
        );
        assert_eq!(count(&conn, "SELECT active FROM messages"), 1);
        assert_eq!(
            count(
                &conn,
                "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'words'"
            ),
            1
        );
        assert_eq!(count(&conn, "SELECT COUNT(*) FROM sessions"), 1);
    }

    #[test]
    fn older_version_is_left_for_python_migrations() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (18);",
        )
        .unwrap();
        let report = reconcile(&conn).unwrap();
        assert_eq!(report.version, 18);
        assert_eq!(count(&conn, "SELECT version FROM schema_version"), 18);
    }

    #[test]
    fn duplicate_titles_do_not_block_open() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, started_at REAL NOT NULL, title TEXT);
             INSERT INTO sessions VALUES ('a', 'cli', 1.0, 'same'), ('b', 'cli', 2.0, 'same');",
        )
        .unwrap();
        reconcile(&conn).unwrap();
        assert_eq!(
            count(&conn, "SELECT COUNT(*) FROM sessions WHERE title = 'same'"),
            2
        );
    }
}
