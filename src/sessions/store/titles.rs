//! Setting and resolving session titles (`sessions.title`, unique when not NULL — Python Hermes'
//! `idx_sessions_title_unique`). A title another session holds is refused for a manual rename;
//! an automatic title takes the next free "name #N" instead, like Python's lineage numbering.

use rusqlite::{OptionalExtension, params};

use super::{SessionStore, StoreError, like_escape};
use crate::sessions::title;

/// What a title write found.
enum Outcome {
    Set(Option<String>),
    NoSession,
    InUse(String),
    AlreadyTitled,
}

impl SessionStore {
    /// Sets (or, with an empty title, clears) a session's title. Fails when another session
    /// already has it. Returns the title as stored.
    pub fn set_title(&self, session_id: &str, raw: &str) -> Result<Option<String>, StoreError> {
        let cleaned = title::sanitize(raw).map_err(|e| StoreError::BadTitle(e.to_string()))?;
        let wanted = cleaned.clone();
        let outcome = self.write("set a session title", |tx| {
            if let Some(t) = &wanted
                && let Some(holder) = tx
                    .query_row(
                        "SELECT id FROM sessions WHERE title = ?1 AND id <> ?2",
                        params![t, session_id],
                        |r| r.get::<_, String>(0),
                    )
                    .optional()?
            {
                return Ok(Outcome::InUse(holder));
            }
            let n = tx.execute(
                "UPDATE sessions SET title = ?1 WHERE id = ?2",
                params![wanted, session_id],
            )?;
            Ok(if n == 0 {
                Outcome::NoSession
            } else {
                Outcome::Set(wanted.clone())
            })
        })?;
        match outcome {
            Outcome::Set(t) => Ok(t),
            Outcome::InUse(holder) => Err(StoreError::TitleInUse {
                title: cleaned.unwrap_or_default(),
                session: holder,
            }),
            Outcome::NoSession | Outcome::AlreadyTitled => {
                Err(StoreError::SessionNotFound(session_id.to_string()))
            }
        }
    }

    /// An automatic title, only while the session has none (a manual `/title` always wins);
    /// a title taken by another session gets the next free " #N". `Ok(None)` when nothing was
    /// written.
    pub fn set_auto_title(
        &self,
        session_id: &str,
        raw: &str,
    ) -> Result<Option<String>, StoreError> {
        let Ok(Some(base)) = title::sanitize(raw) else {
            return Ok(None);
        };
        let outcome = self.write("set an automatic session title", |tx| {
            let current: Option<Option<String>> = tx
                .query_row(
                    "SELECT title FROM sessions WHERE id = ?1",
                    [session_id],
                    |r| r.get(0),
                )
                .optional()?;
            match current {
                None => return Ok(Outcome::NoSession),
                Some(Some(_)) => return Ok(Outcome::AlreadyTitled),
                Some(None) => {}
            }
            let taken: Vec<String> = tx
                .prepare(
                    "SELECT title FROM sessions WHERE title = ?1 OR title LIKE ?2 ESCAPE '\\'",
                )?
                .query_map(params![base, format!("{} #%", like_escape(&base))], |r| {
                    r.get(0)
                })?
                .collect::<rusqlite::Result<_>>()?;
            let chosen = if taken.is_empty() {
                base.clone()
            } else {
                let highest = taken
                    .iter()
                    .filter_map(|t| t.rsplit_once(" #").and_then(|(_, n)| n.parse::<u32>().ok()))
                    .max()
                    .unwrap_or(1);
                format!("{base} #{}", highest + 1)
            };
            tx.execute(
                "UPDATE sessions SET title = ?1 WHERE id = ?2 AND title IS NULL",
                params![chosen, session_id],
            )?;
            Ok(Outcome::Set(Some(chosen)))
        })?;
        Ok(match outcome {
            Outcome::Set(t) => t,
            _ => None,
        })
    }
}
