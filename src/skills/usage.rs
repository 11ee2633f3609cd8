//! `skills/.usage.json`: per-skill provenance (who made it, when), use counts, pinning and
//! probation, and the provenance questions the write guards ask (is this skill bundled?
//! hub-installed?).
//!
//! The file is a JSON object keyed by skill name. Entries we cannot read are kept as written, so
//! a newer or older Hermes sharing the home loses nothing. Read-modify-write is serialized
//! by a file lock (threads and processes alike, the same `.usage.json.lock` Python Hermes
//! takes); the write is atomic.
//!
//! Python Hermes compatibility: an agent-made skill carries `created_by: "agent"` (what Python's
//! curator checks) as well as our `provenance`; views set `last_viewed_at`, patches
//! `last_patched_at`. Probation is ours (`probation`, `successful_uses`): Python keeps unknown
//! keys of a record when it updates one, so both programs can share the file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::util::file_lock::FileLock;

pub const USAGE_FILE: &str = ".usage.json";
pub const BUNDLED_MANIFEST: &str = ".bundled_manifest";
pub const HUB_LOCK: &str = ".hub/lock.json";

/// Provenance value for skills the agent wrote itself.
pub const AGENT_CREATED: &str = "agent-created";

/// How long a writer waits for another process's read-modify-write of `.usage.json`.
const LOCK_TIMEOUT: Duration = Duration::from_secs(5);

/// One skill's record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageRecord {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<String>,
    /// Python Hermes's marker of agent-made skills (`"agent"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_used_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_viewed_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_patched_at: Option<String>,
    #[serde(default)]
    pub use_count: u64,
    #[serde(default)]
    pub view_count: u64,
    #[serde(default)]
    pub patch_count: u64,
    #[serde(default)]
    pub pinned: bool,
    /// A new agent-made skill, not yet proven: true until `successful_uses` reaches
    /// `skills.probation_uses`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub probation: bool,
    /// Turns that loaded the skill and ended with an answer.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub successful_uses: u64,
    /// Fields written by other versions, kept as they were.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Where a skill came from, for the write guards and `skills audit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Shipped with hermes (listed in `.bundled_manifest`).
    Bundled,
    /// Installed from a hub (listed in `.hub/lock.json`).
    Hub,
    /// Written by the agent (`provenance: agent-created`).
    AgentCreated,
    /// Anything else under `$HERMES_HOME/skills`: written by the user.
    User,
    /// From `skills.external_dirs` (read-only for hermes).
    External,
}

impl Origin {
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Bundled => "bundled",
            Origin::Hub => "hub",
            Origin::AgentCreated => AGENT_CREATED,
            Origin::User => "user",
            Origin::External => "external",
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl UsageRecord {
    /// Made by the agent (ours or Python Hermes's marker).
    pub fn agent_created(&self) -> bool {
        self.provenance.as_deref() == Some(AGENT_CREATED)
            || self.created_by.as_deref() == Some("agent")
            || self.extra.get("agent_created") == Some(&Value::Bool(true))
    }

    /// Still on probation when `required` successful uses are asked for.
    pub fn on_probation(&self, required: u64) -> bool {
        self.probation && self.successful_uses < required
    }
}

fn now() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn usage_path(skills_dir: &Path) -> PathBuf {
    skills_dir.join(USAGE_FILE)
}

fn read_raw(skills_dir: &Path) -> Map<String, Value> {
    let path = usage_path(skills_dir);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(_) => return Map::new(),
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(map)) => map,
        _ => {
            // Keep the unreadable file for the user instead of silently overwriting it.
            let aside = skills_dir.join(".usage.json.corrupt");
            tracing::warn!(path = %path.display(), aside = %aside.display(), "unreadable .usage.json moved aside");
            let _ = std::fs::rename(&path, aside);
            Map::new()
        }
    }
}

/// The record of `name`, if any.
pub fn record(skills_dir: &Path, name: &str) -> Option<UsageRecord> {
    read_raw(skills_dir)
        .get(name)
        .and_then(|v| serde_json::from_value(v.clone()).ok())
}

/// Every readable record.
pub fn all(skills_dir: &Path) -> BTreeMap<String, UsageRecord> {
    read_raw(skills_dir)
        .into_iter()
        .filter_map(|(k, v)| serde_json::from_value(v).ok().map(|r| (k, r)))
        .collect()
}

/// Applies `change` to the record of `name` (created if missing) and saves the file.
pub fn update(
    skills_dir: &Path,
    name: &str,
    change: impl FnOnce(&mut UsageRecord),
) -> std::io::Result<()> {
    let _guard = lock(skills_dir)?;
    let mut raw = read_raw(skills_dir);
    let mut rec: UsageRecord = raw
        .get(name)
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default();
    change(&mut rec);
    let value = serde_json::to_value(&rec).map_err(std::io::Error::other)?;
    raw.insert(name.to_string(), value);
    save(skills_dir, &raw)
}

/// Forgets `name` (after a delete).
pub fn remove(skills_dir: &Path, name: &str) -> std::io::Result<()> {
    let _guard = lock(skills_dir)?;
    let mut raw = read_raw(skills_dir);
    if raw.remove(name).is_some() {
        save(skills_dir, &raw)?;
    }
    Ok(())
}

/// Serializes read-modify-write of `.usage.json` across threads and processes.
fn lock(skills_dir: &Path) -> std::io::Result<FileLock> {
    std::fs::create_dir_all(skills_dir)?;
    FileLock::acquire(&skills_dir.join(".usage.json.lock"), LOCK_TIMEOUT)
        .map_err(std::io::Error::other)
}

fn save(skills_dir: &Path, raw: &Map<String, Value>) -> std::io::Result<()> {
    std::fs::create_dir_all(skills_dir)?;
    let text = serde_json::to_string_pretty(raw).map_err(std::io::Error::other)?;
    crate::util::atomic_write(&usage_path(skills_dir), text.as_bytes())
}

/// Records a skill the agent just created; on probation when `probation` (a skill made again
/// under an old name starts over).
pub fn mark_created(skills_dir: &Path, name: &str, probation: bool) -> std::io::Result<()> {
    update(skills_dir, name, |r| {
        let t = now();
        r.provenance = Some(AGENT_CREATED.to_string());
        r.created_by = Some("agent".to_string());
        r.created_at.get_or_insert_with(|| t.clone());
        r.updated_at = Some(t);
        r.probation = probation;
        r.successful_uses = 0;
    })
}

/// Counts a turn that loaded the skill and ended with an answer; ends probation once
/// `required` such turns are reached. Returns true when this call ended it.
pub fn mark_used_successfully(
    skills_dir: &Path,
    name: &str,
    required: u64,
) -> std::io::Result<bool> {
    let mut ended = false;
    update(skills_dir, name, |r| {
        r.successful_uses += 1;
        if r.probation && r.successful_uses >= required {
            r.probation = false;
            r.extra
                .insert("probation_ended_at".into(), Value::String(now()));
            ended = true;
        }
    })?;
    Ok(ended)
}

/// Records a change by the agent (edit, patch, file write or removal).
pub fn mark_updated(skills_dir: &Path, name: &str) -> std::io::Result<()> {
    update(skills_dir, name, |r| {
        let t = now();
        r.updated_at = Some(t.clone());
        r.last_patched_at = Some(t);
        r.patch_count += 1;
    })
}

/// Counts a `skill_view` (or a `/skill` invocation).
pub fn mark_viewed(skills_dir: &Path, name: &str) -> std::io::Result<()> {
    update(skills_dir, name, |r| {
        let t = now();
        r.view_count += 1;
        r.use_count += 1;
        r.last_viewed_at = Some(t.clone());
        r.last_used_at = Some(t);
    })
}

/// Names listed in `.bundled_manifest` (`name:hash` lines, or bare names from v1).
pub fn bundled_names(skills_dir: &Path) -> Vec<String> {
    std::fs::read_to_string(skills_dir.join(BUNDLED_MANIFEST))
        .map(|t| {
            t.lines()
                .filter_map(|l| l.split(':').next())
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Names installed from a hub (`.hub/lock.json` → `installed`).
pub fn hub_names(skills_dir: &Path) -> Vec<String> {
    std::fs::read_to_string(skills_dir.join(HUB_LOCK))
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|v| v.get("installed").and_then(Value::as_object).cloned())
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

/// The trust level recorded for a hub-installed skill.
pub fn hub_trust(skills_dir: &Path, name: &str) -> Option<String> {
    let text = std::fs::read_to_string(skills_dir.join(HUB_LOCK)).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    v.get("installed")?
        .get(name)?
        .get("trust_level")?
        .as_str()
        .map(str::to_string)
}

/// Where the skill `name` in the home skills dir came from.
pub fn origin(skills_dir: &Path, name: &str) -> Origin {
    if bundled_names(skills_dir).iter().any(|n| n == name) {
        Origin::Bundled
    } else if hub_names(skills_dir).iter().any(|n| n == name) {
        Origin::Hub
    } else if record(skills_dir, name).is_some_and(|r| r.agent_created()) {
        Origin::AgentCreated
    } else {
        Origin::User
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_keep_unknown_fields() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(USAGE_FILE),
            r#"{"old": {"use_count": 3, "future_field": [1]}, "weird": 5}"#,
        )
        .unwrap();
        mark_created(dir.path(), "new-skill", true).unwrap();
        mark_viewed(dir.path(), "old").unwrap();
        let text = std::fs::read_to_string(dir.path().join(USAGE_FILE)).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["old"]["use_count"], 4);
        assert_eq!(v["old"]["future_field"][0], 1);
        assert_eq!(v["weird"], 5);
        assert_eq!(v["new-skill"]["provenance"], AGENT_CREATED);
        assert_eq!(origin(dir.path(), "new-skill"), Origin::AgentCreated);
        assert_eq!(origin(dir.path(), "old"), Origin::User);
        remove(dir.path(), "new-skill").unwrap();
        assert!(record(dir.path(), "new-skill").is_none());
    }

    #[test]
    fn corrupt_file_is_moved_aside() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(USAGE_FILE), "{not json").unwrap();
        mark_viewed(dir.path(), "a").unwrap();
        assert!(dir.path().join(".usage.json.corrupt").exists());
        assert_eq!(record(dir.path(), "a").unwrap().view_count, 1);
    }

    #[test]
    fn bundled_and_hub_origins() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(BUNDLED_MANIFEST),
            "git-workflow:abc\nlegacy\n",
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join(".hub")).unwrap();
        std::fs::write(
            dir.path().join(HUB_LOCK),
            r#"{"version":1,"installed":{"pdf":{"trust_level":"trusted"}}}"#,
        )
        .unwrap();
        assert_eq!(origin(dir.path(), "git-workflow"), Origin::Bundled);
        assert_eq!(origin(dir.path(), "legacy"), Origin::Bundled);
        assert_eq!(origin(dir.path(), "pdf"), Origin::Hub);
        assert_eq!(hub_trust(dir.path(), "pdf").as_deref(), Some("trusted"));
    }

    #[test]
    fn probation_ends_after_the_required_successful_uses() {
        let dir = tempfile::tempdir().unwrap();
        mark_created(dir.path(), "fresh", true).unwrap();
        let r = record(dir.path(), "fresh").unwrap();
        assert!(r.probation && r.on_probation(2));
        assert_eq!(r.created_by.as_deref(), Some("agent"));
        assert!(!mark_used_successfully(dir.path(), "fresh", 2).unwrap());
        assert!(record(dir.path(), "fresh").unwrap().on_probation(2));
        assert!(mark_used_successfully(dir.path(), "fresh", 2).unwrap());
        let r = record(dir.path(), "fresh").unwrap();
        assert!(!r.probation && r.successful_uses == 2);
        assert!(r.extra.contains_key("probation_ended_at"));
        // Python Hermes's own marker counts as agent-made too.
        std::fs::write(
            dir.path().join(USAGE_FILE),
            r#"{"py": {"created_by": "agent", "state": "active", "use_count": 1}}"#,
        )
        .unwrap();
        assert_eq!(origin(dir.path(), "py"), Origin::AgentCreated);
        mark_viewed(dir.path(), "py").unwrap();
        let v: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join(USAGE_FILE)).unwrap())
                .unwrap();
        assert_eq!(v["py"]["state"], "active");
        assert_eq!(v["py"]["use_count"], 2);
        assert!(v["py"]["last_viewed_at"].is_string());
        assert!(v["py"].get("probation").is_none());
    }
}
