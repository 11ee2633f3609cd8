//! "This tool call started" markers, so a resume after a crash can tell a call that ran (its
//! effects are unknown) from one that never started.
//!
//! A marker is an empty file `$HERMES_HOME/run/started/<session>/<call>` written just before a
//! call is dispatched and removed once the iteration's results are in state.db. A hermes that is
//! SIGKILLed mid-call leaves it behind; `Agent::resume` takes the markers when it records results
//! for the unanswered calls. (Creating an empty file costs microseconds, so it is done inline.)

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// What the resumed transcript says about a call that started but never finished.
pub const KILLED_TEXT: &str = "hermes was killed while this was running; its effects are unknown";

fn session_dir(home: &Path, session_id: &str) -> PathBuf {
    home.join("run").join("started").join(safe_name(session_id))
}

/// File-name form of an id (ids come from the model or the provider).
fn safe_name(id: &str) -> String {
    id.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
                (b as char).to_string()
            } else {
                format!("%{b:02x}")
            }
        })
        .collect()
}

/// Records that `call_id` is about to run.
pub fn mark(home: &Path, session_id: &str, call_id: &str) {
    let dir = session_dir(home, session_id);
    let result = std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(dir.join(safe_name(call_id)), b""));
    if let Err(e) = result {
        tracing::warn!(error = %e, dir = %dir.display(), "cannot record that a tool call started");
    }
}

/// Forgets the session's markers (its results are persisted).
pub fn clear(home: &Path, session_id: &str) {
    let dir = session_dir(home, session_id);
    if dir.exists() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The (file-name form of the) calls that started and were never cleared, removing the markers.
pub fn take(home: &Path, session_id: &str) -> HashSet<String> {
    let dir = session_dir(home, session_id);
    let started = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    clear(home, session_id);
    started
}

/// Whether `call_id` is among `started` (as returned by `take`).
pub fn was_started(started: &HashSet<String>, call_id: &str) -> bool {
    started.contains(&safe_name(call_id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_survive_until_cleared_and_odd_ids_are_safe() {
        let home = tempfile::tempdir().unwrap();
        mark(home.path(), "s1", "call/../1");
        mark(home.path(), "s1", "c2");
        mark(home.path(), "s2", "c3");
        clear(home.path(), "s2");
        let started = take(home.path(), "s1");
        assert!(was_started(&started, "call/../1"));
        assert!(was_started(&started, "c2"));
        assert!(!was_started(&started, "c3"));
        assert!(take(home.path(), "s1").is_empty());
        assert!(take(home.path(), "s2").is_empty());
        assert!(!home.path().join("run/started/s1").exists());
    }
}
