//! `CredentialPool`: several API keys for one provider, chosen by a strategy, with failures
//! classified into cooldowns and dead marks that are **persisted** to `$HERMES_HOME/auth.json`
//! (Python Hermes' `credential_pool` layout), so a restart never retries a key known to be dead
//! or cooling down.

mod auth_file;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};

pub use auth_file::AuthFile;
use auth_file::read_auth;

use crate::llm::{FailoverReason, LlmError};
use crate::util::file_lock::FileLock;

/// Cooldown after a rate limit without a server-given reset time.
const RATE_LIMIT_COOLDOWN: Duration = Duration::from_secs(3600);
/// Cooldown after an authentication failure that may be transient.
const AUTH_COOLDOWN: Duration = Duration::from_secs(300);
/// Cooldown after a billing/quota failure.
const BILLING_COOLDOWN: Duration = Duration::from_secs(3600);
/// How long a write waits for another process holding auth.json's lock.
const LOCK_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum CredentialError {
    #[error("cannot read {path}: {message}")]
    Read { path: PathBuf, message: String },
    #[error("cannot write {path}: {message}")]
    Write { path: PathBuf, message: String },
}

/// How the next key is picked (`credential_pool_strategies.<provider>` in config.yaml).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    FillFirst,
    RoundRobin,
    LeastUsed,
    Random,
}

impl Strategy {
    pub fn parse(s: &str) -> Strategy {
        match s {
            "round_robin" => Strategy::RoundRobin,
            "least_used" => Strategy::LeastUsed,
            "random" => Strategy::Random,
            _ => Strategy::FillFirst,
        }
    }
}

/// A key known from flags, config.yaml or the environment, and where it came from.
#[derive(Debug, Clone, Copy)]
pub struct Seed<'a> {
    pub key: &'a str,
    pub source: &'a str,
}

/// One key of the pool. Unknown fields from auth.json are kept in `extra` and written back.
#[derive(Debug, Clone)]
pub struct PooledCredential {
    pub id: String,
    pub label: String,
    pub priority: i64,
    pub source: String,
    pub api_key: String,
    /// `ok`, `exhausted` (cooling down until `reset_at`) or `dead`.
    pub status: String,
    pub reset_at: Option<f64>,
    pub last_error_reason: Option<String>,
    pub last_error_message: Option<String>,
    pub request_count: u64,
    extra: Map<String, Value>,
}

impl PooledCredential {
    fn new(api_key: &str, source: &str, priority: i64) -> Self {
        PooledCredential {
            id: short_id(),
            label: source.to_string(),
            priority,
            source: source.to_string(),
            api_key: api_key.to_string(),
            status: "ok".into(),
            reset_at: None,
            last_error_reason: None,
            last_error_message: None,
            request_count: 0,
            extra: Map::new(),
        }
    }

    fn from_json(v: &Value) -> Option<Self> {
        let obj = v.as_object()?;
        let key = obj.get("access_token").and_then(Value::as_str)?.to_string();
        let s = |k: &str| obj.get(k).and_then(Value::as_str).map(str::to_string);
        Some(PooledCredential {
            id: s("id").unwrap_or_else(short_id),
            label: s("label").unwrap_or_default(),
            priority: obj.get("priority").and_then(Value::as_i64).unwrap_or(0),
            source: s("source").unwrap_or_else(|| "manual".into()),
            api_key: key,
            status: s("last_status").unwrap_or_else(|| "ok".into()),
            reset_at: obj.get("last_error_reset_at").and_then(Value::as_f64),
            last_error_reason: s("last_error_reason"),
            last_error_message: s("last_error_message"),
            request_count: obj
                .get("request_count")
                .and_then(Value::as_u64)
                .unwrap_or(0),
            extra: obj.clone(),
        })
    }

    fn to_json(&self, provider: &str) -> Value {
        let mut obj = self.extra.clone();
        let now = now();
        for (k, v) in [
            ("provider", json!(provider)),
            ("id", json!(self.id)),
            ("label", json!(self.label)),
            ("auth_type", json!("api_key")),
            ("priority", json!(self.priority)),
            ("source", json!(self.source)),
            ("access_token", json!(self.api_key)),
            ("last_status", json!(self.status)),
            ("last_status_at", json!(now)),
            ("last_error_reason", json!(self.last_error_reason)),
            ("last_error_message", json!(self.last_error_message)),
            ("last_error_reset_at", json!(self.reset_at)),
            ("request_count", json!(self.request_count)),
        ] {
            obj.insert(k.to_string(), v);
        }
        Value::Object(obj)
    }

    /// `…abcd`: enough for the user to tell keys apart, never the key itself.
    pub fn hint(&self) -> String {
        let tail: String = self
            .api_key
            .chars()
            .rev()
            .take(4)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        let name = if self.label.is_empty() {
            &self.id
        } else {
            &self.label
        };
        format!("{name} (…{tail})")
    }

    fn available(&self, now: f64) -> bool {
        match self.status.as_str() {
            "dead" => false,
            "exhausted" => self.reset_at.is_some_and(|t| t <= now),
            _ => true,
        }
    }
}

/// What to do after a failure on the current key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PoolAction {
    /// Try the same key again (after the usual backoff).
    RetrySame,
    /// Switch to this key now.
    Rotate(String),
    /// No key of this provider is usable: fall back to another provider, or give up.
    Exhausted,
    /// The failure has nothing to do with the key.
    NotKeyRelated,
}

/// The keys of one provider.
#[derive(Debug)]
pub struct CredentialPool {
    provider: String,
    path: PathBuf,
    strategy: Strategy,
    entries: Vec<PooledCredential>,
    current: usize,
    /// Consecutive rate limits on the current key.
    rate_limit_streak: u32,
    /// Persistence runs off the runtime and may finish out of order: each write carries a
    /// generation, and a write older than the last one written is skipped.
    generation: u64,
    written: Arc<AtomicU64>,
}

impl CredentialPool {
    /// Loads the pool of `provider` from auth.json and adds the `seeds` (keys from flags,
    /// config.yaml and the environment, best first) that are not in it yet, ahead of it.
    pub fn load(
        auth: &AuthFile,
        provider: &str,
        seeds: &[Seed<'_>],
        strategy: Strategy,
    ) -> Result<Self, CredentialError> {
        let doc = auth.document()?;
        let auth_path = auth.path();
        let mut entries: Vec<PooledCredential> = doc["credential_pool"][provider]
            .as_array()
            .map(|list| {
                list.iter()
                    .filter_map(PooledCredential::from_json)
                    .collect()
            })
            .unwrap_or_default();
        let base = entries.iter().map(|e| e.priority).min().unwrap_or(0);
        let fresh: Vec<&Seed<'_>> = seeds
            .iter()
            .filter(|s| !s.key.is_empty())
            .filter(|s| !entries.iter().any(|e| e.api_key == s.key))
            .collect();
        let n = fresh.len() as i64;
        for (i, seed) in fresh.into_iter().enumerate() {
            if entries.iter().any(|e| e.api_key == seed.key) {
                continue;
            }
            entries.push(PooledCredential::new(
                seed.key,
                seed.source,
                base - n + i as i64,
            ));
        }
        entries.sort_by_key(|e| e.priority);
        let mut pool = CredentialPool {
            provider: provider.to_string(),
            path: auth_path.to_path_buf(),
            strategy,
            entries,
            current: 0,
            rate_limit_streak: 0,
            generation: 0,
            written: Arc::new(AtomicU64::new(0)),
        };
        if let Some(i) = pool.pick(None) {
            pool.current = i;
        }
        Ok(pool)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The key to use now, or `None` when every key is dead or cooling down.
    pub fn current_key(&self) -> Option<&str> {
        let e = self.entries.get(self.current)?;
        e.available(now()).then_some(e.api_key.as_str())
    }

    pub fn current(&self) -> Option<&PooledCredential> {
        self.entries.get(self.current)
    }

    /// Counts a request on the current key (for `least_used`).
    pub fn note_request(&mut self) {
        if let Some(e) = self.entries.get_mut(self.current) {
            e.request_count += 1;
        }
    }

    /// A success clears the rate-limit streak.
    pub fn note_success(&mut self) {
        self.rate_limit_streak = 0;
    }

    /// Classifies a failure on the current key, marks and persists the key's state, and says what
    /// to do next. Rate limits retry the same key once, then rotate; billing rotates now; auth
    /// cools down for 5 minutes; a revoked key is dead until re-added.
    pub fn on_failure(&mut self, err: &LlmError) -> PoolAction {
        let now = now();
        let cooldown = match err.reason {
            FailoverReason::RateLimit => {
                self.rate_limit_streak += 1;
                // The last usable key is never put to rest for a rate limit: the retry policy
                // backs off on it instead, and a restart does not lock the user out.
                if self.rate_limit_streak < 2 || self.pick(Some(self.current)).is_none() {
                    return PoolAction::RetrySame;
                }
                Some(
                    err.retry_after
                        .unwrap_or(RATE_LIMIT_COOLDOWN)
                        .max(Duration::from_secs(1)),
                )
            }
            FailoverReason::Billing => Some(BILLING_COOLDOWN),
            FailoverReason::Auth => Some(AUTH_COOLDOWN),
            FailoverReason::AuthPermanent => None,
            _ => return PoolAction::NotKeyRelated,
        };
        self.rate_limit_streak = 0;
        if let Some(e) = self.entries.get_mut(self.current) {
            match cooldown {
                Some(d) => {
                    e.status = "exhausted".into();
                    e.reset_at = Some(now + d.as_secs_f64());
                }
                None => {
                    e.status = "dead".into();
                    e.reset_at = None;
                }
            }
            e.last_error_reason = Some(err.reason.as_str().to_string());
            e.last_error_message = Some(crate::util::truncate_chars(&err.body, 300).to_string());
            tracing::warn!(key = %e.hint(), status = %e.status, reason = %err.reason, "credential marked");
        }
        self.persist();
        match self.pick(Some(self.current)) {
            Some(i) => {
                self.current = i;
                PoolAction::Rotate(self.entries[i].api_key.clone())
            }
            None => PoolAction::Exhausted,
        }
    }

    /// A human summary of why the pool cannot be used (which keys, which state).
    pub fn describe_exhausted(&self) -> String {
        let parts: Vec<String> = self
            .entries
            .iter()
            .map(|e| match e.status.as_str() {
                "dead" => format!(
                    "{} is dead ({}) — re-add it after fixing it",
                    e.hint(),
                    e.last_error_reason.as_deref().unwrap_or("rejected")
                ),
                "exhausted" => format!(
                    "{} cools down for {} more s ({})",
                    e.hint(),
                    e.reset_at.map_or(0.0, |t| (t - now()).max(0.0)).round(),
                    e.last_error_reason.as_deref().unwrap_or("error")
                ),
                _ => format!("{} is usable", e.hint()),
            })
            .collect();
        format!("credentials of `{}`: {}", self.provider, parts.join("; "))
    }

    fn pick(&self, exclude: Option<usize>) -> Option<usize> {
        let now = now();
        let usable: Vec<usize> = (0..self.entries.len())
            .filter(|i| Some(*i) != exclude && self.entries[*i].available(now))
            .collect();
        if usable.is_empty() {
            return None;
        }
        Some(match self.strategy {
            Strategy::FillFirst => usable[0],
            // The key after the one being left; the first one when nothing is being left.
            Strategy::RoundRobin => exclude
                .and_then(|left| usable.iter().copied().find(|i| *i > left))
                .unwrap_or(usable[0]),
            Strategy::LeastUsed => usable
                .iter()
                .copied()
                .min_by_key(|i| self.entries[*i].request_count)
                .unwrap_or(usable[0]),
            Strategy::Random => usable[rand::random_range(0..usable.len())],
        })
    }

    /// Writes this provider's entries into auth.json off the async runtime (a held lock or a
    /// slow disk must not stall other chats); failures are logged.
    fn persist(&mut self) {
        self.generation += 1;
        let write = PoolWrite {
            path: self.path.clone(),
            provider: self.provider.clone(),
            entries: self
                .entries
                .iter()
                .map(|e| (e.api_key.clone(), e.to_json(&self.provider)))
                .collect(),
            generation: self.generation,
            written: self.written.clone(),
        };
        crate::util::offload::offload_detached("persist the credential pool", move || {
            if let Err(e) = write.apply() {
                tracing::warn!(error = %e, "cannot persist the credential pool");
            }
        });
    }
}

/// One snapshot of a pool to merge into auth.json.
struct PoolWrite {
    path: PathBuf,
    provider: String,
    entries: Vec<(String, Value)>,
    generation: u64,
    written: Arc<AtomicU64>,
}

impl PoolWrite {
    /// Merges the entries into the file, keeping everything else in it, under an exclusive lock
    /// so concurrent processes do not lose each other's changes.
    fn apply(self) -> Result<(), CredentialError> {
        let lock_path = self.path.with_extension("json.lock");
        let _lock =
            FileLock::acquire(&lock_path, LOCK_TIMEOUT).map_err(|e| CredentialError::Write {
                path: self.path.clone(),
                message: e.to_string(),
            })?;
        if self.written.fetch_max(self.generation, Ordering::SeqCst) > self.generation {
            return Ok(());
        }
        let mut doc = read_auth(&self.path)?;
        if !doc.is_object() {
            doc = json!({});
        }
        let existing: Vec<Value> = doc["credential_pool"][&self.provider]
            .as_array()
            .cloned()
            .unwrap_or_default();
        // Entries other processes added since we loaded are kept.
        let mut merged: BTreeMap<String, Value> = existing
            .into_iter()
            .filter_map(|v| Some((v["access_token"].as_str()?.to_string(), v)))
            .collect();
        merged.extend(self.entries);
        if !doc["credential_pool"].is_object() {
            doc["credential_pool"] = json!({});
        }
        doc["credential_pool"][&self.provider] = Value::Array(merged.into_values().collect());
        let text = serde_json::to_string_pretty(&doc).map_err(|e| CredentialError::Write {
            path: self.path.clone(),
            message: e.to_string(),
        })?;
        crate::util::atomic_write(&self.path, text.as_bytes()).map_err(|e| {
            CredentialError::Write {
                path: self.path.clone(),
                message: e.to_string(),
            }
        })?;
        restrict_permissions(&self.path);
        Ok(())
    }
}

fn restrict_permissions(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

fn short_id() -> String {
    format!("{:06x}", rand::random::<u32>() & 0xff_ffff)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(reason: FailoverReason) -> LlmError {
        LlmError::new(reason, "provider said no")
    }

    fn pool_with(dir: &Path, keys: &[&str]) -> CredentialPool {
        let path = dir.join("auth.json");
        let entries: Vec<Value> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| json!({"access_token": k, "label": format!("key{i}"), "priority": i}))
            .collect();
        std::fs::write(
            &path,
            json!({"credential_pool": {"custom": entries}, "other": 1}).to_string(),
        )
        .unwrap();
        CredentialPool::load(&AuthFile::new(&path), "custom", &[], Strategy::FillFirst).unwrap()
    }

    #[test]
    fn rate_limit_retries_once_then_rotates_and_persists() {
        let dir = tempfile::tempdir().unwrap();
        let mut pool = pool_with(dir.path(), &["k-aaaa", "k-bbbb"]);
        assert_eq!(pool.current_key(), Some("k-aaaa"));
        assert_eq!(
            pool.on_failure(&err(FailoverReason::RateLimit)),
            PoolAction::RetrySame
        );
        assert_eq!(
            pool.on_failure(&err(FailoverReason::RateLimit)),
            PoolAction::Rotate("k-bbbb".into())
        );
        // A new process sees the cooldown and starts on the second key.
        let again = CredentialPool::load(
            &AuthFile::new(dir.path().join("auth.json")),
            "custom",
            &[],
            Strategy::FillFirst,
        )
        .unwrap();
        assert_eq!(again.current_key(), Some("k-bbbb"));
        let doc: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("auth.json")).unwrap())
                .unwrap();
        assert_eq!(doc["other"], 1, "other content of auth.json is kept");
    }

    #[test]
    fn revoked_key_is_dead_and_stays_dead() {
        let dir = tempfile::tempdir().unwrap();
        let mut pool = pool_with(dir.path(), &["k-dead", "k-good"]);
        assert_eq!(
            pool.on_failure(&err(FailoverReason::AuthPermanent)),
            PoolAction::Rotate("k-good".into())
        );
        let again = CredentialPool::load(
            &AuthFile::new(dir.path().join("auth.json")),
            "custom",
            &[Seed {
                key: "k-dead",
                source: "env",
            }],
            Strategy::FillFirst,
        )
        .unwrap();
        assert_eq!(again.current_key(), Some("k-good"));
        assert!(again.describe_exhausted().contains("…dead"));
    }

    #[test]
    fn the_last_key_is_not_rested_for_rate_limits() {
        let dir = tempfile::tempdir().unwrap();
        let mut pool = pool_with(dir.path(), &["k-only"]);
        for _ in 0..5 {
            assert_eq!(
                pool.on_failure(&err(FailoverReason::RateLimit)),
                PoolAction::RetrySame
            );
        }
        assert_eq!(pool.current_key(), Some("k-only"));
    }

    #[test]
    fn all_keys_exhausted() {
        let dir = tempfile::tempdir().unwrap();
        let mut pool = pool_with(dir.path(), &["k-1"]);
        assert_eq!(
            pool.on_failure(&err(FailoverReason::Billing)),
            PoolAction::Exhausted
        );
        assert_eq!(pool.current_key(), None);
        assert_eq!(
            pool.on_failure(&err(FailoverReason::ServerError)),
            PoolAction::NotKeyRelated
        );
    }

    #[test]
    fn seed_key_joins_the_pool_and_bad_json_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("auth.json");
        let pool = CredentialPool::load(
            &AuthFile::new(&path),
            "openai",
            &[
                Seed {
                    key: "sk-seed",
                    source: "flag",
                },
                Seed {
                    key: "sk-seed-2",
                    source: "env",
                },
            ],
            Strategy::RoundRobin,
        )
        .unwrap();
        assert_eq!(pool.len(), 2);
        assert_eq!(
            pool.current_key(),
            Some("sk-seed"),
            "the resolved key comes first"
        );
        std::fs::write(&path, "{not json").unwrap();
        let e = CredentialPool::load(&AuthFile::new(&path), "openai", &[], Strategy::FillFirst)
            .unwrap_err();
        assert!(e.to_string().contains("auth.json"), "{e}");
    }
}
