//! DM pairing in state.db (reference §12.3): an unknown user who writes to the bot gets an
//! 8-character code; the owner approves it with `hermes pairing approve PLATFORM CODE`. Codes
//! live 1 h, at most 3 are pending per platform, a user gets one code per 10 minutes, and 5 wrong
//! approvals lock approving for the platform for 1 h.

use rusqlite::{OptionalExtension, params};

use super::super::{SessionStore, StoreError, now};
use crate::gateway::pairing::{
    CODE_TTL_SECS, LOCKOUT_SECS, MAX_FAILURES, MAX_PENDING, PairingApproval, PairingRequest,
    PendingCode, REQUEST_INTERVAL_SECS,
};

pub(super) const PAIRING_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS gateway_pairing (
    platform TEXT NOT NULL,
    code TEXT NOT NULL,
    user_id TEXT NOT NULL,
    user_name TEXT,
    created_at REAL NOT NULL,
    PRIMARY KEY (platform, code)
);
CREATE TABLE IF NOT EXISTS gateway_approved_users (
    platform TEXT NOT NULL,
    user_id TEXT NOT NULL,
    user_name TEXT,
    approved_at REAL NOT NULL,
    PRIMARY KEY (platform, user_id)
);
CREATE TABLE IF NOT EXISTS gateway_pairing_failures (
    platform TEXT PRIMARY KEY,
    failures INTEGER NOT NULL,
    last_failure REAL NOT NULL
);
";

impl SessionStore {
    /// Issues a pairing code for `user_id`, within the rate limits.
    pub fn pairing_request(
        &self,
        platform: &str,
        user_id: &str,
        user_name: Option<&str>,
        code: &str,
    ) -> Result<PairingRequest, StoreError> {
        let t = now();
        self.write("issue a pairing code", |tx| {
            tx.execute(
                "DELETE FROM gateway_pairing WHERE created_at < ?1",
                params![t - CODE_TTL_SECS],
            )?;
            let last: Option<f64> = tx
                .query_row(
                    "SELECT MAX(created_at) FROM gateway_pairing WHERE platform = ?1 AND user_id = ?2",
                    params![platform, user_id],
                    |r| r.get(0),
                )
                .optional()?
                .flatten();
            if last.is_some_and(|l| t - l < REQUEST_INTERVAL_SECS) {
                return Ok(PairingRequest::TooSoon);
            }
            let pending: i64 = tx.query_row(
                "SELECT COUNT(*) FROM gateway_pairing WHERE platform = ?1",
                params![platform],
                |r| r.get(0),
            )?;
            if pending >= MAX_PENDING {
                return Ok(PairingRequest::TooMany);
            }
            // A user has one live code at a time.
            tx.execute(
                "DELETE FROM gateway_pairing WHERE platform = ?1 AND user_id = ?2",
                params![platform, user_id],
            )?;
            tx.execute(
                "INSERT INTO gateway_pairing (platform, code, user_id, user_name, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![platform, code, user_id, user_name, t],
            )?;
            Ok(PairingRequest::New(code.to_string()))
        })
    }

    /// Approves a pending code (case-insensitive).
    pub fn pairing_approve(
        &self,
        platform: &str,
        code: &str,
    ) -> Result<PairingApproval, StoreError> {
        let t = now();
        let code = code.trim().to_uppercase();
        self.write("approve a pairing code", |tx| {
            let failures: Option<(i64, f64)> = tx
                .query_row(
                    "SELECT failures, last_failure FROM gateway_pairing_failures WHERE platform = ?1",
                    params![platform],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?;
            if let Some((n, last)) = failures
                && n >= MAX_FAILURES
                && t - last < LOCKOUT_SECS
            {
                return Ok(PairingApproval::Locked);
            }
            let found: Option<(String, Option<String>)> = tx
                .query_row(
                    "SELECT user_id, user_name FROM gateway_pairing
                     WHERE platform = ?1 AND code = ?2 AND created_at >= ?3",
                    params![platform, code, t - CODE_TTL_SECS],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?;
            let Some((user, name)) = found else {
                let n = match failures {
                    Some((n, last)) if t - last < LOCKOUT_SECS => n + 1,
                    _ => 1,
                };
                tx.execute(
                    "INSERT INTO gateway_pairing_failures (platform, failures, last_failure)
                     VALUES (?1, ?2, ?3)
                     ON CONFLICT(platform) DO UPDATE SET failures = excluded.failures,
                         last_failure = excluded.last_failure",
                    params![platform, n, t],
                )?;
                return Ok(PairingApproval::Unknown);
            };
            tx.execute(
                "DELETE FROM gateway_pairing WHERE platform = ?1 AND code = ?2",
                params![platform, code],
            )?;
            tx.execute(
                "INSERT OR REPLACE INTO gateway_approved_users (platform, user_id, user_name, approved_at)
                 VALUES (?1, ?2, ?3, ?4)",
                params![platform, user, name, t],
            )?;
            tx.execute(
                "DELETE FROM gateway_pairing_failures WHERE platform = ?1",
                params![platform],
            )?;
            Ok(PairingApproval::Approved(user, name))
        })
    }

    pub fn pairing_is_approved(&self, platform: &str, user_id: &str) -> Result<bool, StoreError> {
        self.row_exists(
            "check a paired user",
            "SELECT 1 FROM gateway_approved_users WHERE platform = ?1 AND user_id = ?2",
            params![platform, user_id],
        )
    }

    /// Live codes of a platform, oldest first.
    pub fn pairing_pending(&self, platform: &str) -> Result<Vec<PendingCode>, StoreError> {
        let cutoff = now() - CODE_TTL_SECS;
        self.read("list pairing codes", |conn| {
            let mut stmt = conn.prepare(
                "SELECT code, user_id, user_name, created_at FROM gateway_pairing
                 WHERE platform = ?1 AND created_at >= ?2 ORDER BY created_at",
            )?;
            stmt.query_map(params![platform, cutoff], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })?
            .collect()
        })
    }

    /// Paired users of a platform: (user id, name).
    pub fn pairing_approved(
        &self,
        platform: &str,
    ) -> Result<Vec<(String, Option<String>)>, StoreError> {
        self.read("list paired users", |conn| {
            let mut stmt = conn.prepare(
                "SELECT user_id, user_name FROM gateway_approved_users WHERE platform = ?1
                 ORDER BY approved_at",
            )?;
            stmt.query_map(params![platform], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect()
        })
    }

    /// Platforms with a live pairing code or a paired user, sorted.
    pub fn pairing_platforms(&self) -> Result<Vec<String>, StoreError> {
        let cutoff = now() - CODE_TTL_SECS;
        self.read("list pairing platforms", |conn| {
            let mut stmt = conn.prepare(
                "SELECT platform FROM gateway_pairing WHERE created_at >= ?1
                 UNION SELECT platform FROM gateway_approved_users ORDER BY 1",
            )?;
            stmt.query_map(params![cutoff], |r| r.get(0))?.collect()
        })
    }

    pub fn pairing_revoke(&self, platform: &str, user_id: &str) -> Result<bool, StoreError> {
        self.write("revoke a paired user", |tx| {
            Ok(tx.execute(
                "DELETE FROM gateway_approved_users WHERE platform = ?1 AND user_id = ?2",
                params![platform, user_id],
            )? > 0)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gateway::pairing::{CODE_ALPHABET, new_code};

    fn store() -> (tempfile::TempDir, SessionStore) {
        let dir = tempfile::tempdir().unwrap();
        let s = SessionStore::open(&dir.path().join("state.db")).unwrap();
        s.gateway_init().unwrap();
        (dir, s)
    }

    #[test]
    fn codes_use_the_unambiguous_alphabet() {
        for _ in 0..50 {
            let c = new_code();
            assert_eq!(c.len(), 8);
            assert!(c.bytes().all(|b| CODE_ALPHABET.contains(&b)), "{c}");
        }
    }

    #[test]
    fn request_limits_and_approval() {
        let (_d, s) = store();
        assert_eq!(
            s.pairing_request("telegram", "1", Some("ann"), "AAAA2222")
                .unwrap(),
            PairingRequest::New("AAAA2222".into())
        );
        assert_eq!(
            s.pairing_request("telegram", "1", None, "BBBB3333")
                .unwrap(),
            PairingRequest::TooSoon
        );
        s.pairing_request("telegram", "2", None, "CCCC4444")
            .unwrap();
        s.pairing_request("telegram", "3", None, "DDDD5555")
            .unwrap();
        assert_eq!(
            s.pairing_request("telegram", "4", None, "EEEE6666")
                .unwrap(),
            PairingRequest::TooMany
        );
        assert!(!s.pairing_is_approved("telegram", "1").unwrap());
        assert_eq!(
            s.pairing_approve("telegram", "aaaa2222").unwrap(),
            PairingApproval::Approved("1".into(), Some("ann".into()))
        );
        assert!(s.pairing_is_approved("telegram", "1").unwrap());
        assert!(!s.pairing_is_approved("discord", "1").unwrap());
        assert_eq!(s.pairing_pending("telegram").unwrap().len(), 2);
        assert!(s.pairing_revoke("telegram", "1").unwrap());
        assert!(!s.pairing_is_approved("telegram", "1").unwrap());
    }

    #[test]
    fn five_wrong_codes_lock_approving() {
        let (_d, s) = store();
        s.pairing_request("telegram", "1", None, "AAAA2222")
            .unwrap();
        for _ in 0..MAX_FAILURES {
            assert_eq!(
                s.pairing_approve("telegram", "ZZZZ9999").unwrap(),
                PairingApproval::Unknown
            );
        }
        assert_eq!(
            s.pairing_approve("telegram", "AAAA2222").unwrap(),
            PairingApproval::Locked
        );
        assert!(!s.pairing_is_approved("telegram", "1").unwrap());
    }
}
