//! Read-side reports on state.db for `hermes sessions stats|prune`: counts by source, sizes, and
//! which sessions have been idle longer than a cut-off (deleting is the store's job).

use std::time::Duration;

use rusqlite::Connection;
use serde::Serialize;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SourceCount {
    pub source: String,
    pub sessions: i64,
    pub messages: i64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Stats {
    pub sessions: i64,
    pub messages: i64,
    /// Rows hidden by `/undo` (kept but never shown or searched).
    pub rewound_messages: i64,
    pub by_source: Vec<SourceCount>,
    pub oldest: Option<f64>,
    pub newest: Option<f64>,
    /// Bytes of state.db plus its WAL.
    pub db_bytes: u64,
}

pub fn stats(conn: &Connection, db_path: &std::path::Path) -> rusqlite::Result<Stats> {
    let (sessions, oldest, newest): (i64, Option<f64>, Option<f64>) = conn.query_row(
        "SELECT COUNT(*), MIN(started_at), MAX(started_at) FROM sessions",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    let (messages, rewound): (i64, i64) = conn.query_row(
        "SELECT COUNT(*), COALESCE(SUM(CASE WHEN active = 0 AND compacted = 0 THEN 1 ELSE 0 END), 0) FROM messages",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let by_source = conn
        .prepare(
            "SELECT s.source, COUNT(DISTINCT s.id), COUNT(m.id)
             FROM sessions s LEFT JOIN messages m ON m.session_id = s.id
             GROUP BY s.source ORDER BY COUNT(DISTINCT s.id) DESC, s.source",
        )?
        .query_map([], |r| {
            Ok(SourceCount {
                source: r.get::<_, Option<String>>(0)?.unwrap_or_default(),
                sessions: r.get(1)?,
                messages: r.get(2)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let size = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let mut wal = db_path.as_os_str().to_owned();
    wal.push("-wal");
    Ok(Stats {
        sessions,
        messages,
        rewound_messages: rewound,
        by_source,
        oldest,
        newest,
        db_bytes: size(db_path) + size(std::path::Path::new(&wal)),
    })
}

/// A session idle since before the cut-off.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct IdleSession {
    pub id: String,
    pub source: String,
    /// Last message (or start) time, Unix seconds.
    pub last_active: f64,
    pub message_count: i64,
}

/// Root sessions whose whole conversation (children included) has been idle since `cutoff`
/// (Unix seconds). Children go with their root when the store deletes it or are detached.
pub fn idle_sessions(conn: &Connection, cutoff: f64) -> rusqlite::Result<Vec<IdleSession>> {
    conn.prepare(
        "SELECT s.id, s.source,
                MAX(COALESCE((SELECT MAX(timestamp) FROM messages m WHERE m.session_id = s.id), 0),
                    COALESCE(s.ended_at, 0), COALESCE(s.started_at, 0)) AS last,
                COALESCE(s.message_count, 0)
         FROM sessions s
         WHERE s.parent_session_id IS NULL OR s.parent_session_id = ''
         GROUP BY s.id
         HAVING last < ?1
         ORDER BY last",
    )?
    .query_map([cutoff], |r| {
        Ok(IdleSession {
            id: r.get(0)?,
            source: r.get::<_, Option<String>>(1)?.unwrap_or_default(),
            last_active: r.get(2)?,
            message_count: r.get(3)?,
        })
    })?
    .collect()
}

/// `90d`, `12w`, `36h`, `30m`, `45s` or a bare number of days.
pub fn parse_period(text: &str) -> Option<Duration> {
    let t = text.trim().to_ascii_lowercase();
    let (num, unit) = match t.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => (&t[..i], t[i..].trim()),
        None => (t.as_str(), "d"),
    };
    let n: u64 = num.parse().ok()?;
    let secs = match unit {
        "s" | "sec" | "secs" => n,
        "m" | "min" | "mins" => n.checked_mul(60)?,
        "h" | "hour" | "hours" => n.checked_mul(3_600)?,
        "d" | "day" | "days" => n.checked_mul(86_400)?,
        "w" | "week" | "weeks" => n.checked_mul(7 * 86_400)?,
        _ => return None,
    };
    Some(Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::Message;
    use crate::sessions::{NewSession, SessionStore};

    #[test]
    fn periods() {
        assert_eq!(parse_period("90d"), Some(Duration::from_secs(90 * 86_400)));
        assert_eq!(parse_period("2w"), Some(Duration::from_secs(14 * 86_400)));
        assert_eq!(parse_period("36h"), Some(Duration::from_secs(36 * 3_600)));
        assert_eq!(parse_period("7"), Some(Duration::from_secs(7 * 86_400)));
        assert_eq!(parse_period("soon"), None);
        assert_eq!(parse_period("5y"), None);
        assert_eq!(parse_period("99999999999999999999d"), None);
    }

    #[test]
    fn stats_and_idle_sessions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        let store = SessionStore::open(&path).unwrap();
        for (id, source) in [("a", "cli"), ("b", "telegram")] {
            store
                .create_session(&NewSession {
                    id: id.into(),
                    source: source.into(),
                    ..NewSession::default()
                })
                .unwrap();
            store.append_message(id, &Message::user("hi")).unwrap();
        }
        let conn = crate::sessions::search::open_read(&path).unwrap();
        let s = stats(&conn, &path).unwrap();
        assert_eq!((s.sessions, s.messages), (2, 2));
        assert_eq!(s.by_source.len(), 2);
        assert!(s.db_bytes > 0);
        assert!(idle_sessions(&conn, 0.0).unwrap().is_empty());
        let future = s.newest.unwrap() + 10.0;
        assert_eq!(idle_sessions(&conn, future).unwrap().len(), 2);
    }
}
