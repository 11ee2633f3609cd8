//! A session's settings that a front end keeps with it, as keys of `sessions.model_config` (a
//! JSON object; Python Hermes keeps `_delegate_from` there): the mode an editor picked over ACP,
//! so opening the session again after a reconnect finds it. Setting a key leaves the others as
//! they are; a `model_config` that is not a JSON object (another program's) is never replaced.

use rusqlite::{OptionalExtension, params};

use super::{SessionStore, StoreError};

/// `$."key"`: a JSON path naming one top-level key, whatever characters it holds.
fn json_path(key: &str) -> String {
    format!("$.\"{}\"", key.replace('"', ""))
}

impl SessionStore {
    /// The text stored under `key` in the session's `model_config` (None when the session, the
    /// key or a JSON object is missing, or the value is not text).
    pub fn session_setting(
        &self,
        session_id: &str,
        key: &str,
    ) -> Result<Option<String>, StoreError> {
        self.read("read a session setting", |conn| {
            conn.query_row(
                "SELECT CASE WHEN json_valid(model_config) AND json_type(model_config, ?2) = 'text'
                             THEN json_extract(model_config, ?2) END
                 FROM sessions WHERE id = ?1",
                params![session_id, json_path(key)],
                |r| r.get::<_, Option<String>>(0),
            )
            .optional()
            .map(Option::flatten)
        })
    }

    /// Stores `value` under `key` in the session's `model_config`, keeping its other keys.
    /// False (nothing written) when `model_config` holds something other than a JSON object.
    pub fn set_session_setting(
        &self,
        session_id: &str,
        key: &str,
        value: &str,
    ) -> Result<bool, StoreError> {
        let changed = self.write("store a session setting", |tx| {
            tx.execute(
                "UPDATE sessions SET model_config = json_set(COALESCE(model_config, '{}'), ?2, ?3)
                 WHERE id = ?1 AND (model_config IS NULL
                       OR (json_valid(model_config) AND json_type(model_config) = 'object'))",
                params![session_id, json_path(key), value],
            )
        })?;
        if changed > 0 {
            return Ok(true);
        }
        if self.row_exists(
            "store a session setting",
            "SELECT 1 FROM sessions WHERE id = ?1",
            params![session_id],
        )? {
            return Ok(false);
        }
        Err(StoreError::SessionNotFound(session_id.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use crate::sessions::{NewSession, SessionStore};

    #[test]
    fn a_setting_is_kept_beside_the_other_keys_and_foreign_values_are_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::open(&dir.path().join("state.db")).unwrap();
        for (id, config) in [
            ("plain", None),
            ("py", Some(r#"{"_delegate_from": "p1"}"#.to_string())),
            ("odd", Some("[1, 2]".to_string())),
        ] {
            store
                .create_session(&NewSession {
                    id: id.into(),
                    source: "acp".into(),
                    model_config: config,
                    ..NewSession::default()
                })
                .unwrap();
        }
        assert_eq!(store.session_setting("plain", "acp_mode").unwrap(), None);
        assert!(
            store
                .set_session_setting("plain", "acp_mode", "yolo")
                .unwrap()
        );
        assert!(
            store
                .set_session_setting("plain", "acp_mode", "dont_ask")
                .unwrap()
        );
        assert_eq!(
            store
                .session_setting("plain", "acp_mode")
                .unwrap()
                .as_deref(),
            Some("dont_ask")
        );
        assert!(
            store
                .set_session_setting("py", "acp_mode", "default")
                .unwrap()
        );
        assert_eq!(
            store
                .session_setting("py", "_delegate_from")
                .unwrap()
                .as_deref(),
            Some("p1")
        );
        assert!(
            !store
                .set_session_setting("odd", "acp_mode", "yolo")
                .unwrap()
        );
        assert_eq!(store.session_setting("odd", "acp_mode").unwrap(), None);
        assert!(
            store
                .set_session_setting("nope", "acp_mode", "yolo")
                .is_err()
        );
        assert_eq!(store.session_setting("nope", "acp_mode").unwrap(), None);
    }
}
