//! Gateway bookkeeping in state.db: inbound update ids (exactly-once intake and the durable inbox),
//! the outbound delivery ledger (pending → sent, with platform message ids), chat → session
//! routing (Python's `gateway_routing` table) and small key/value state (poll cursors, health).
//!
//! Our own tables are created idempotently by [`SessionStore::gateway_init`]; Python Hermes
//! ignores tables it does not know. DM pairing lives in the child module `pairing`.

mod pairing;

use rusqlite::{OptionalExtension, params};

use super::{SessionRow, SessionStore, StoreError, now};
use crate::gateway::ledger::{InboundRecord, OutboundNew, OutboundRow};

const GATEWAY_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS gateway_inbound (
    platform TEXT NOT NULL,
    update_id INTEGER NOT NULL,
    chat_id TEXT NOT NULL,
    session_key TEXT NOT NULL,
    event_json TEXT NOT NULL,
    status TEXT NOT NULL,
    received_at REAL NOT NULL,
    done_at REAL,
    PRIMARY KEY (platform, update_id)
);
CREATE INDEX IF NOT EXISTS idx_gateway_inbound_status ON gateway_inbound(platform, status);
CREATE TABLE IF NOT EXISTS gateway_outbound (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    platform TEXT NOT NULL,
    chat_id TEXT NOT NULL,
    thread_id TEXT,
    reply_to TEXT,
    stream_message_id TEXT,
    session_key TEXT NOT NULL,
    update_id INTEGER,
    text TEXT NOT NULL,
    status TEXT NOT NULL,
    chunks_sent INTEGER NOT NULL DEFAULT 0,
    message_ids TEXT NOT NULL DEFAULT '[]',
    error TEXT,
    created_at REAL NOT NULL,
    sent_at REAL
);
CREATE INDEX IF NOT EXISTS idx_gateway_outbound_status ON gateway_outbound(platform, status);
CREATE TABLE IF NOT EXISTS gateway_state (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    updated_at REAL NOT NULL
);
";

/// Inbound rows whose turn has not finished.
const QUEUED: &str = "queued";
const DONE: &str = "done";
const PENDING: &str = "pending";

impl SessionStore {
    /// The `gateway_state` key of a platform's poll cursor.
    pub fn gateway_cursor_key(platform: &str) -> String {
        format!("{platform}.cursor")
    }

    /// Creates the gateway tables if missing (safe to call on every start).
    pub fn gateway_init(&self) -> Result<(), StoreError> {
        self.write("create the gateway tables", |tx| {
            tx.execute_batch(GATEWAY_SCHEMA)?;
            tx.execute_batch(pairing::PAIRING_SCHEMA)
        })
    }

    /// Records an inbound update before anything acts on it. Returns false when the update was
    /// already recorded (a redelivery), in which case the caller must ignore it. `queued` says
    /// whether a turn still has to run for it (false for refusals and control commands).
    pub fn gateway_record_inbound(
        &self,
        rec: &InboundRecord,
        queued: bool,
    ) -> Result<bool, StoreError> {
        let status = if queued { QUEUED } else { DONE };
        self.write("record an inbound gateway message", |tx| {
            let n = tx.execute(
                "INSERT OR IGNORE INTO gateway_inbound
                     (platform, update_id, chat_id, session_key, event_json, status, received_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    rec.platform,
                    rec.update_id,
                    rec.chat_id,
                    rec.session_key,
                    rec.event_json,
                    status,
                    now()
                ],
            )?;
            Ok(n == 1)
        })
    }

    /// Whether an inbound update was already recorded (a redelivery).
    pub fn gateway_inbound_seen(&self, platform: &str, update_id: i64) -> Result<bool, StoreError> {
        self.row_exists(
            "look up an inbound gateway message",
            "SELECT 1 FROM gateway_inbound WHERE platform = ?1 AND update_id = ?2",
            params![platform, update_id],
        )
    }

    /// Inbound messages accepted but not yet answered (after a crash), oldest first.
    pub fn gateway_queued_inbound(&self, platform: &str) -> Result<Vec<InboundRecord>, StoreError> {
        self.read("list queued gateway messages", |conn| {
            let mut stmt = conn.prepare(
                "SELECT platform, update_id, chat_id, session_key, event_json FROM gateway_inbound
                 WHERE platform = ?1 AND status = ?2 ORDER BY received_at, update_id",
            )?;
            stmt.query_map(params![platform, QUEUED], |r| {
                Ok(InboundRecord {
                    platform: r.get(0)?,
                    update_id: r.get(1)?,
                    chat_id: r.get(2)?,
                    session_key: r.get(3)?,
                    event_json: r.get(4)?,
                })
            })?
            .collect()
        })
    }

    /// Ends the turn for an inbound update: marks it done and, in the same transaction, puts the
    /// answer (if any) in the outbound ledger as pending. Returns the ledger id.
    pub fn gateway_complete_turn(
        &self,
        platform: &str,
        update_id: i64,
        reply: Option<&OutboundNew>,
    ) -> Result<Option<i64>, StoreError> {
        self.write("finish a gateway turn", |tx| {
            tx.execute(
                "UPDATE gateway_inbound SET status = ?3, done_at = ?4
                 WHERE platform = ?1 AND update_id = ?2",
                params![platform, update_id, DONE, now()],
            )?;
            let Some(out) = reply else {
                return Ok(None);
            };
            tx.execute(
                "INSERT INTO gateway_outbound (platform, chat_id, thread_id, reply_to, session_key,
                     update_id, text, status, created_at, stream_message_id)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    out.platform,
                    out.chat_id,
                    out.thread_id,
                    out.reply_to,
                    out.session_key,
                    out.update_id,
                    out.text,
                    PENDING,
                    now(),
                    out.stream_message_id
                ],
            )?;
            Ok(Some(tx.last_insert_rowid()))
        })
    }

    /// Answers not yet fully delivered, oldest first.
    pub fn gateway_pending_outbound(&self, platform: &str) -> Result<Vec<OutboundRow>, StoreError> {
        self.read("list pending gateway deliveries", |conn| {
            let mut stmt = conn.prepare(
                "SELECT id, platform, chat_id, thread_id, reply_to, session_key, update_id, text,
                        chunks_sent, message_ids, stream_message_id
                 FROM gateway_outbound WHERE platform = ?1 AND status = ?2 ORDER BY id",
            )?;
            stmt.query_map(params![platform, PENDING], |r| {
                let ids: String = r.get(9)?;
                Ok(OutboundRow {
                    id: r.get(0)?,
                    new: OutboundNew {
                        platform: r.get(1)?,
                        chat_id: r.get(2)?,
                        thread_id: r.get(3)?,
                        reply_to: r.get(4)?,
                        session_key: r.get(5)?,
                        update_id: r.get(6)?,
                        text: r.get(7)?,
                        stream_message_id: r.get(10)?,
                    },
                    chunks_sent: r.get::<_, i64>(8)?.max(0) as usize,
                    message_ids: serde_json::from_str(&ids).unwrap_or_default(),
                })
            })?
            .collect()
        })
    }

    /// Records that chunk number `chunks_sent` (1-based count) went out with `message_ids`.
    pub fn gateway_chunk_sent(
        &self,
        id: i64,
        chunks_sent: usize,
        message_ids: &[String],
    ) -> Result<(), StoreError> {
        let ids = serde_json::to_string(message_ids).unwrap_or_else(|_| "[]".into());
        self.write("record a sent gateway chunk", |tx| {
            tx.execute(
                "UPDATE gateway_outbound SET chunks_sent = ?2, message_ids = ?3 WHERE id = ?1",
                params![id, chunks_sent as i64, ids],
            )?;
            Ok(())
        })
    }

    /// Closes a ledger entry: `sent`, or `failed` with the error (never retried again).
    pub fn gateway_finish_outbound(
        &self,
        id: i64,
        status: &str,
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        self.write("close a gateway delivery", |tx| {
            tx.execute(
                "UPDATE gateway_outbound SET status = ?2, error = ?3, sent_at = ?4 WHERE id = ?1",
                params![id, status, error, now()],
            )?;
            Ok(())
        })
    }

    /// The state.db session a chat's session key is routed to.
    pub fn gateway_route(&self, session_key: &str) -> Result<Option<String>, StoreError> {
        let json: Option<String> = self.read("read a gateway route", |conn| {
            conn.query_row(
                "SELECT entry_json FROM gateway_routing WHERE scope = '' AND session_key = ?1",
                params![session_key],
                |r| r.get(0),
            )
            .optional()
        })?;
        Ok(json.and_then(|j| {
            serde_json::from_str::<serde_json::Value>(&j)
                .ok()?
                .get("session_id")?
                .as_str()
                .map(String::from)
        }))
    }

    /// Every chat route: `(session_key, session_id)`, most recently updated first.
    pub fn gateway_routes(&self) -> Result<Vec<(String, String)>, StoreError> {
        let rows: Vec<(String, String)> = self.read("list gateway routes", |conn| {
            conn.prepare(
                "SELECT session_key, entry_json FROM gateway_routing WHERE scope = ''
                 ORDER BY updated_at DESC",
            )?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect()
        })?;
        Ok(rows
            .into_iter()
            .filter_map(|(key, json)| {
                let v = serde_json::from_str::<serde_json::Value>(&json).ok()?;
                Some((key, v.get("session_id")?.as_str()?.to_string()))
            })
            .collect())
    }

    /// The session a chat's key is routed to, if the route and the session both exist.
    pub fn gateway_routed_session(
        &self,
        session_key: &str,
    ) -> Result<Option<SessionRow>, StoreError> {
        match self.gateway_route(session_key)? {
            Some(id) => self.session(&id),
            None => Ok(None),
        }
    }

    /// Routes a session key to a state.db session (replacing any earlier route, e.g. on `/new`).
    pub fn gateway_set_route(&self, session_key: &str, session_id: &str) -> Result<(), StoreError> {
        let entry =
            serde_json::json!({ "session_id": session_id, "session_key": session_key }).to_string();
        self.write("write a gateway route", |tx| {
            tx.execute(
                "INSERT INTO gateway_routing (scope, session_key, entry_json, updated_at)
                 VALUES ('', ?1, ?2, ?3)
                 ON CONFLICT(scope, session_key) DO UPDATE SET entry_json = excluded.entry_json,
                     updated_at = excluded.updated_at",
                params![session_key, entry, now()],
            )?;
            Ok(())
        })
    }

    /// Enters `epoch` of `platform`'s update ids (`PlatformAdapter::id_epoch`) and returns the
    /// base to add to its ids. Unchanged epoch: the recorded base. New epoch (the platform's ids
    /// restarted): the base becomes one above every id recorded for the platform and the poll
    /// cursor is dropped — in one transaction, so a crash cannot keep a stale cursor for a new
    /// sequence. The bool says whether the epoch changed.
    pub fn gateway_enter_id_epoch(
        &self,
        platform: &str,
        epoch: &str,
    ) -> Result<(i64, bool), StoreError> {
        let (epoch_key, base_key) = (
            format!("{platform}.id_epoch"),
            format!("{platform}.id_base"),
        );
        let cursor_key = Self::gateway_cursor_key(platform);
        self.write("enter a new gateway id epoch", |tx| {
            let get = |key: &str| -> rusqlite::Result<Option<String>> {
                tx.query_row(
                    "SELECT value FROM gateway_state WHERE key = ?1",
                    params![key],
                    |r| r.get(0),
                )
                .optional()
            };
            let old_base = get(&base_key)?
                .and_then(|v| v.parse::<i64>().ok())
                .unwrap_or(0);
            if get(&epoch_key)?.as_deref() == Some(epoch) {
                return Ok((old_base, false));
            }
            let above: i64 = tx.query_row(
                "SELECT COALESCE(MAX(update_id) + 1, 0) FROM gateway_inbound WHERE platform = ?1",
                params![platform],
                |r| r.get(0),
            )?;
            let base = above.max(old_base);
            let set = "INSERT INTO gateway_state (key, value, updated_at) VALUES (?1, ?2, ?3)
                       ON CONFLICT(key) DO UPDATE SET value = excluded.value,
                           updated_at = excluded.updated_at";
            tx.execute(set, params![epoch_key, epoch, now()])?;
            tx.execute(set, params![base_key, base.to_string(), now()])?;
            tx.execute(
                "DELETE FROM gateway_state WHERE key = ?1",
                params![cursor_key],
            )?;
            Ok((base, true))
        })
    }

    pub fn gateway_get_state(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.read("read gateway state", |conn| {
            conn.query_row(
                "SELECT value FROM gateway_state WHERE key = ?1",
                params![key],
                |r| r.get(0),
            )
            .optional()
        })
    }

    pub fn gateway_set_state(&self, key: &str, value: &str) -> Result<(), StoreError> {
        self.write("write gateway state", |tx| {
            tx.execute(
                "INSERT INTO gateway_state (key, value, updated_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value,
                     updated_at = excluded.updated_at",
                params![key, value, now()],
            )?;
            Ok(())
        })
    }

    /// Every state entry `(key, value, updated_at)`, for `hermes gateway status`.
    pub fn gateway_all_state(&self) -> Result<Vec<(String, String, f64)>, StoreError> {
        self.read("list gateway state", |conn| {
            let mut stmt =
                conn.prepare("SELECT key, value, updated_at FROM gateway_state ORDER BY key")?;
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect()
        })
    }

    /// Forgets finished gateway bookkeeping older than `before` (unix seconds): answered inbound
    /// updates and closed deliveries. Queued inbound rows and pending deliveries are kept
    /// whatever their age. Returns `(inbound, outbound)` rows removed.
    ///
    /// Safe for exactly-once: Telegram keeps undelivered updates for 24 hours and we persist the
    /// poll offset, so an update id this old is never offered again.
    pub fn gateway_prune(&self, before: f64) -> Result<(usize, usize), StoreError> {
        self.write("prune old gateway records", |tx| {
            let inbound = tx.execute(
                "DELETE FROM gateway_inbound
                 WHERE status = ?1 AND COALESCE(done_at, received_at) < ?2",
                params![DONE, before],
            )?;
            let outbound = tx.execute(
                "DELETE FROM gateway_outbound
                 WHERE status != ?1 AND COALESCE(sent_at, created_at) < ?2",
                params![PENDING, before],
            )?;
            Ok((inbound, outbound))
        })
    }

    /// `(queued inbound, pending outbound)` counts, for status.
    pub fn gateway_backlog(&self) -> Result<(i64, i64), StoreError> {
        self.read("count the gateway backlog", |conn| {
            let q = conn.query_row(
                "SELECT COUNT(*) FROM gateway_inbound WHERE status = ?1",
                params![QUEUED],
                |r| r.get(0),
            )?;
            let p = conn.query_row(
                "SELECT COUNT(*) FROM gateway_outbound WHERE status = ?1",
                params![PENDING],
                |r| r.get(0),
            )?;
            Ok((q, p))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, SessionStore) {
        let dir = tempfile::tempdir().unwrap();
        let s = SessionStore::open(&dir.path().join("state.db")).unwrap();
        s.gateway_init().unwrap();
        s.gateway_init().unwrap();
        (dir, s)
    }

    fn rec(id: i64) -> InboundRecord {
        InboundRecord {
            platform: "telegram".into(),
            update_id: id,
            chat_id: "1".into(),
            session_key: "k".into(),
            event_json: "{}".into(),
        }
    }

    #[test]
    fn inbound_is_recorded_once_and_queued_until_done() {
        let (_d, s) = store();
        assert!(s.gateway_record_inbound(&rec(5), true).unwrap());
        assert!(
            !s.gateway_record_inbound(&rec(5), true).unwrap(),
            "duplicate ignored"
        );
        assert!(s.gateway_record_inbound(&rec(6), false).unwrap());
        let queued = s.gateway_queued_inbound("telegram").unwrap();
        assert_eq!(
            queued.iter().map(|r| r.update_id).collect::<Vec<_>>(),
            vec![5]
        );
        let out = OutboundNew {
            platform: "telegram".into(),
            chat_id: "1".into(),
            session_key: "k".into(),
            update_id: Some(5),
            text: "answer".into(),
            ..OutboundNew::default()
        };
        let id = s
            .gateway_complete_turn("telegram", 5, Some(&out))
            .unwrap()
            .unwrap();
        assert!(s.gateway_queued_inbound("telegram").unwrap().is_empty());
        let pending = s.gateway_pending_outbound("telegram").unwrap();
        assert_eq!(pending.len(), 1);
        assert_eq!(pending[0].new.text, "answer");
        s.gateway_chunk_sent(id, 1, &["77".into()]).unwrap();
        let pending = s.gateway_pending_outbound("telegram").unwrap();
        assert_eq!(
            (pending[0].chunks_sent, pending[0].message_ids.clone()),
            (1, vec!["77".to_string()])
        );
        s.gateway_finish_outbound(id, "sent", None).unwrap();
        assert!(s.gateway_pending_outbound("telegram").unwrap().is_empty());
        assert_eq!(s.gateway_backlog().unwrap(), (0, 0));
    }

    #[test]
    fn prune_forgets_old_finished_records_only() {
        let (_d, s) = store();
        let out = |update_id| OutboundNew {
            platform: "telegram".into(),
            chat_id: "1".into(),
            session_key: "k".into(),
            update_id: Some(update_id),
            text: "answer".into(),
            ..OutboundNew::default()
        };
        // 1: answered and delivered; 2: answered, delivery pending; 3: still queued.
        for id in 1..=3 {
            assert!(s.gateway_record_inbound(&rec(id), true).unwrap());
        }
        let sent = s
            .gateway_complete_turn("telegram", 1, Some(&out(1)))
            .unwrap()
            .unwrap();
        s.gateway_finish_outbound(sent, "sent", None).unwrap();
        s.gateway_complete_turn("telegram", 2, Some(&out(2)))
            .unwrap();

        assert_eq!(
            s.gateway_prune(now() - 60.0).unwrap(),
            (0, 0),
            "recent rows stay"
        );
        assert_eq!(s.gateway_prune(now() + 60.0).unwrap(), (2, 1));
        assert!(!s.gateway_inbound_seen("telegram", 1).unwrap());
        assert_eq!(
            s.gateway_queued_inbound("telegram").unwrap().len(),
            1,
            "a queued update is never pruned"
        );
        let pending = s.gateway_pending_outbound("telegram").unwrap();
        assert_eq!(pending.len(), 1, "a pending delivery is never pruned");
        assert_eq!(pending[0].new.update_id, Some(2));
    }

    #[test]
    fn routes_and_state_round_trip() {
        let (_d, s) = store();
        assert_eq!(s.gateway_route("k").unwrap(), None);
        s.gateway_set_route("k", "s1").unwrap();
        s.gateway_set_route("k", "s2").unwrap();
        assert_eq!(s.gateway_route("k").unwrap().as_deref(), Some("s2"));
        s.gateway_set_state("telegram.offset", "10").unwrap();
        assert_eq!(
            s.gateway_get_state("telegram.offset").unwrap().as_deref(),
            Some("10")
        );
        assert_eq!(s.gateway_all_state().unwrap().len(), 1);
    }
}
