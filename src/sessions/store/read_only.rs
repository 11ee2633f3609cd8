//! Opening state.db for a command that only reads (`hermes sessions search|list|show|export|
//! stats`): no write transaction, no WAL switch, no schema reconciliation. On a large archive
//! reconciliation is most of such a command's time — it takes the write lock and its repair of
//! legacy rows (`active IS NULL`) reads every message — and a read changes nothing it would fix.
//! So this open is only for a file that is already complete: the current schema version and every
//! search-index trigger present. Anything else (a new home, an older or Python-migrating file)
//! gets `None`, and the caller uses [`SessionStore::open_with_timeout`], which completes it.

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension};

use super::{SessionStore, StoreError, classify};
use crate::sessions::schema::{FTS_TRIGGERS, SCHEMA_VERSION};

impl SessionStore {
    /// A store on a read-only connection when `path` holds a complete current database, else
    /// `None`. Every write through it fails with [`StoreError::ReadOnly`].
    pub fn open_existing_read_only(
        path: &Path,
        busy_timeout: Duration,
    ) -> Result<Option<Self>, StoreError> {
        if !path.is_file() {
            return Ok(None);
        }
        let fail = |op: &'static str| move |e: rusqlite::Error| classify(path, busy_timeout, op, e);
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(fail("open the database for reading"))?;
        conn.busy_timeout(busy_timeout)
            .map_err(fail("set the busy timeout"))?;
        let complete = is_complete(&conn);
        match complete {
            Ok(true) => {}
            Ok(false) => return Ok(None),
            Err(e) => {
                // A file that cannot even answer these (no schema_version table, ...) is for the
                // full open to create or report.
                tracing::debug!(path = %path.display(), error = %e, "state.db: read-only open declined");
                return Ok(None);
            }
        }
        let usage_by_model: bool = conn
            .query_row(
                "SELECT COUNT(*) > 0 FROM pragma_table_info('session_model_usage') WHERE name = 'task' AND pk > 0",
                [],
                |r| r.get(0),
            )
            .map_err(fail("inspect the schema"))?;
        Ok(Some(SessionStore {
            conn: Mutex::new(conn),
            path: path.to_path_buf(),
            busy_timeout,
            usage_by_model,
            queue: std::sync::Arc::new(tokio::sync::Semaphore::new(1)),
        }))
    }
}

/// The current schema version and every FTS trigger: what `schema::reconcile` would leave.
fn is_complete(conn: &Connection) -> rusqlite::Result<bool> {
    let version: Option<i64> = conn
        .query_row("SELECT version FROM schema_version LIMIT 1", [], |r| {
            r.get(0)
        })
        .optional()?;
    if version != Some(SCHEMA_VERSION) {
        return Ok(false);
    }
    let names = FTS_TRIGGERS
        .iter()
        .map(|t| format!("'{t}'"))
        .collect::<Vec<_>>()
        .join(",");
    let triggers: i64 = conn.query_row(
        &format!("SELECT COUNT(*) FROM sqlite_master WHERE type = 'trigger' AND name IN ({names})"),
        [],
        |r| r.get(0),
    )?;
    Ok(triggers == FTS_TRIGGERS.len() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sessions::NewSession;

    #[test]
    fn complete_files_open_read_only_others_decline() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        let timeout = Duration::from_secs(1);
        assert!(
            SessionStore::open_existing_read_only(&path, timeout)
                .unwrap()
                .is_none(),
            "no file"
        );
        {
            let store = SessionStore::open(&path).unwrap();
            store
                .create_session(&NewSession {
                    id: "s1".into(),
                    source: "cli".into(),
                    ..Default::default()
                })
                .unwrap();
        }
        let ro = SessionStore::open_existing_read_only(&path, timeout)
            .unwrap()
            .unwrap();
        assert!(ro.find_session("s1").unwrap().is_some());
        let e = ro
            .create_session(&NewSession {
                id: "s2".into(),
                source: "cli".into(),
                ..Default::default()
            })
            .unwrap_err();
        assert!(matches!(e, StoreError::ReadOnly { .. }), "{e}");

        // A missing trigger (the index may be behind): the full open must repair it first.
        Connection::open(&path)
            .unwrap()
            .execute_batch("DROP TRIGGER messages_fts_insert;")
            .unwrap();
        assert!(
            SessionStore::open_existing_read_only(&path, timeout)
                .unwrap()
                .is_none()
        );
        std::fs::write(dir.path().join("junk.db"), b"not a database at all").unwrap();
        let junk = SessionStore::open_existing_read_only(&dir.path().join("junk.db"), timeout);
        assert!(!matches!(junk, Ok(Some(_))));
    }
}
