//! Keeping installed hub skills: `check` (changed upstream?), `update` (the whole pipeline
//! again; the old version stays until the new one is in), `uninstall` (hub skills only),
//! `list-modified` / `diff` (local edits, compared with the pristine copy kept at install) and
//! `reset` (back to the locked version). A locally edited skill is never overwritten without
//! `--force`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

use super::bundle::{self, Bundle};
use super::install::{self, InstallOptions, Installed, Prepared};
use super::lock::{LockEntry, LockFile};
use super::source::{SourceRef, trust_from};
use super::{Hub, HubError};
use crate::skills::usage;

/// `check`'s answer for one skill.
#[derive(Debug, Clone, Serialize)]
pub struct CheckResult {
    pub name: String,
    pub identifier: String,
    /// `up_to_date`, `update_available` or `unavailable` (Python Hermes's words).
    pub status: String,
    pub current_hash: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latest_hash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Local edits to one hub skill.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Modified {
    pub name: String,
    pub changed: Vec<String>,
    pub added: Vec<String>,
    pub removed: Vec<String>,
}

impl Modified {
    pub fn is_empty(&self) -> bool {
        self.changed.is_empty() && self.added.is_empty() && self.removed.is_empty()
    }
}

/// What `update` did for one skill.
#[derive(Debug, Clone, Serialize)]
pub struct UpdateOutcome {
    pub name: String,
    /// `updated`, `up_to_date`, `kept` (local edits or declined), `failed`.
    pub status: String,
    pub message: String,
}

fn entries(hub: &Hub, name: Option<&str>) -> Result<Vec<(String, LockEntry)>, HubError> {
    let lock = LockFile::load(&hub.lock_path())?;
    match name {
        Some(n) => match lock.installed.get(n) {
            Some(e) => Ok(vec![(n.to_string(), e.clone())]),
            None => Err(not_installed(hub, n)),
        },
        None => Ok(lock.installed.into_iter().collect()),
    }
}

fn not_installed(hub: &Hub, name: &str) -> HubError {
    if usage::origin(hub.skills_dir(), name) == usage::Origin::Bundled {
        HubError::Refused(format!(
            "`{name}` is bundled with hermes, not installed from a hub; it cannot be uninstalled or updated here"
        ))
    } else {
        HubError::NotFound(format!(
            "`{name}` was not installed from a hub (it is not in skills/.hub/lock.json); `hermes skills list` shows every skill"
        ))
    }
}

/// The installed folder of a lock entry, refusing a path that could leave `skills/`.
fn installed_dir(hub: &Hub, name: &str, entry: &LockEntry) -> Result<PathBuf, HubError> {
    let rel = entry.install_path.trim_matches('/');
    let parts: Vec<&str> = rel.split('/').collect();
    let ok = !rel.is_empty()
        && parts.last() == Some(&name)
        && parts
            .iter()
            .all(|p| !p.is_empty() && *p != "." && *p != "..");
    if !ok {
        return Err(HubError::Refused(format!(
            "the lock entry of `{name}` has an unsafe install_path `{}`; fix skills/.hub/lock.json",
            entry.install_path
        )));
    }
    let path = hub.skills_dir().join(rel);
    let mut walk = hub.skills_dir().to_path_buf();
    for part in parts {
        walk.push(part);
        if walk.is_symlink() {
            return Err(HubError::Refused(format!(
                "{} is a symlink; refusing to change a hub skill through a link",
                walk.display()
            )));
        }
    }
    Ok(path)
}

/// Fetches the current upstream version of an entry.
fn upstream(hub: &Hub, entry: &LockEntry) -> Result<Bundle, HubError> {
    install::fetch_source(hub, &SourceRef::parse(&entry.identifier)?)
}

/// Which installed hub skills changed upstream.
pub fn check(hub: &Hub, name: Option<&str>) -> Result<Vec<CheckResult>, HubError> {
    install::recover(hub)?;
    Ok(entries(hub, name)?
        .into_iter()
        .map(|(name, entry)| match upstream(hub, &entry) {
            Ok(latest) => {
                let latest_hash = latest.content_hash();
                CheckResult {
                    status: if latest_hash == entry.content_hash {
                        "up_to_date"
                    } else {
                        "update_available"
                    }
                    .into(),
                    name,
                    identifier: entry.identifier,
                    current_hash: entry.content_hash,
                    latest_hash: Some(latest_hash),
                    message: None,
                }
            }
            Err(e) => CheckResult {
                name,
                identifier: entry.identifier,
                status: "unavailable".into(),
                current_hash: entry.content_hash,
                latest_hash: None,
                message: Some(e.to_string()),
            },
        })
        .collect())
}

/// Local edits of one installed skill against what was installed.
pub fn modified(hub: &Hub, name: &str, entry: &LockEntry) -> Result<Modified, HubError> {
    let dir = installed_dir(hub, name, entry)?;
    let mut out = Modified {
        name: name.to_string(),
        ..Modified::default()
    };
    if !dir.exists() {
        out.removed = entry.files.clone();
        return Ok(out);
    }
    let files = bundle::read_dir_files(&dir)?;
    if entry.file_hashes.is_empty() {
        // Installed by Python Hermes: only the whole-skill hash is known.
        if bundle::content_hash(&files) != entry.content_hash {
            out.changed = files.keys().cloned().collect();
        }
        return Ok(out);
    }
    let now = bundle::file_hashes(&files);
    for (rel, hash) in &now {
        match entry.file_hashes.get(rel) {
            None => out.added.push(rel.clone()),
            Some(h) if h != hash => out.changed.push(rel.clone()),
            Some(_) => {}
        }
    }
    out.removed = entry
        .file_hashes
        .keys()
        .filter(|rel| !now.contains_key(*rel))
        .cloned()
        .collect();
    Ok(out)
}

/// Every hub skill with local edits.
pub fn list_modified(hub: &Hub) -> Result<Vec<Modified>, HubError> {
    let mut out = Vec::new();
    for (name, entry) in entries(hub, None)? {
        let m = modified(hub, &name, &entry)?;
        if !m.is_empty() {
            out.push(m);
        }
    }
    Ok(out)
}

fn options_for(name: &str, entry: &LockEntry, force: bool, action: &'static str) -> InstallOptions {
    let category = entry
        .install_path
        .trim_matches('/')
        .rsplit_once('/')
        .map(|(c, _)| c.to_string());
    InstallOptions {
        category,
        name: Some(name.to_string()),
        force,
        replacing: Some(name.to_string()),
        action: Some(action),
    }
}

/// Updates one skill or all (`name: None`); `confirm` sees each prepared update (after its
/// scan) and may decline it.
pub fn update(
    hub: &Hub,
    name: Option<&str>,
    force: bool,
    confirm: &mut dyn FnMut(&Prepared) -> bool,
) -> Result<Vec<UpdateOutcome>, HubError> {
    install::recover(hub)?;
    let mut out = Vec::new();
    for (name, entry) in entries(hub, name)? {
        let outcome = |status: &str, message: String| UpdateOutcome {
            name: name.clone(),
            status: status.into(),
            message,
        };
        let latest = match upstream(hub, &entry) {
            Ok(b) => b,
            Err(e) => {
                out.push(outcome("failed", e.to_string()));
                continue;
            }
        };
        if latest.content_hash() == entry.content_hash {
            out.push(outcome("up_to_date", "already the latest version".into()));
            continue;
        }
        let edits = modified(hub, &name, &entry)?;
        if !edits.is_empty() && !force {
            out.push(outcome(
                "kept",
                format!(
                    "it has local edits ({}); `hermes skills diff {name}` shows them, --force replaces them",
                    [&edits.changed[..], &edits.added[..], &edits.removed[..]].concat().join(", ")
                ),
            ));
            continue;
        }
        let prepared = match install::prepare_bundle(
            hub,
            latest,
            &options_for(&name, &entry, force, "UPDATE"),
        ) {
            Ok(p) => p,
            Err(e) => {
                out.push(outcome("failed", e.to_string()));
                continue;
            }
        };
        if !confirm(&prepared) {
            out.push(outcome("kept", "not confirmed".into()));
            continue;
        }
        match prepared.commit() {
            Ok(done) => out.push(outcome(
                "updated",
                format!(
                    "now at {}",
                    done.entry
                        .commit
                        .as_deref()
                        .unwrap_or(&done.entry.content_hash)
                ),
            )),
            Err(e) => out.push(outcome("failed", e.to_string())),
        }
    }
    Ok(out)
}

/// Removes a hub-installed skill (its folder, lock entry and pristine copy).
pub fn uninstall(hub: &Hub, name: &str) -> Result<LockEntry, HubError> {
    install::recover(hub)?;
    let lock = LockFile::load(&hub.lock_path())?;
    let entry = lock
        .installed
        .get(name)
        .cloned()
        .ok_or_else(|| not_installed(hub, name))?;
    let dir = installed_dir(hub, name, &entry)?;
    hub.ensure_dirs()?;
    let gone = hub.quarantine_dir().join(format!(
        "gone-{}-{:08x}-{name}",
        std::process::id(),
        rand::random::<u32>()
    ));
    if dir.exists() {
        std::fs::rename(&dir, &gone).map_err(|e| HubError::io("remove", &dir, e))?;
    }
    LockFile::update(&hub.lock_path(), |lock| {
        lock.installed.remove(name);
    })?;
    let _ = std::fs::remove_dir_all(&gone);
    let _ = std::fs::remove_dir_all(hub.originals_dir().join(name));
    hub.audit(
        "UNINSTALL",
        name,
        &entry.source,
        &entry.trust_level,
        "n/a",
        "user_request",
    );
    Ok(entry)
}

/// The version that was installed: the pristine copy, or (for a skill installed by Python
/// Hermes) the locked commit fetched again.
fn original(hub: &Hub, name: &str, entry: &LockEntry) -> Result<Bundle, HubError> {
    let source = SourceRef::parse(&entry.identifier)?;
    let kept = hub.originals_dir().join(name);
    if kept.is_dir() {
        let mut bundle = Bundle::new(source, trust_from(&entry.trust_level), entry.commit.clone());
        for (rel, bytes) in bundle::read_dir_files(&kept)? {
            bundle.add(&rel, bytes);
        }
        return bundle.finish();
    }
    match (source, &entry.commit) {
        (
            SourceRef::Git {
                url,
                subpath,
                github,
                ..
            },
            Some(commit),
        ) => install::fetch_source(
            hub,
            &SourceRef::Git {
                url,
                subpath,
                rev: Some(commit.clone()),
                github,
            },
        ),
        _ => Err(HubError::NotFound(format!(
            "no copy of the installed version of `{name}` is kept and its source has no locked commit; reinstall it with --force"
        ))),
    }
}

/// A unified diff from the installed version to the skill as it is now ("" = no edits).
pub fn diff(hub: &Hub, name: &str) -> Result<String, HubError> {
    let (_, entry) = entries(hub, Some(name))?.remove(0);
    let before = original(hub, name, &entry)?.files;
    let dir = installed_dir(hub, name, &entry)?;
    let after = if dir.exists() {
        bundle::read_dir_files(&dir)?
    } else {
        BTreeMap::new()
    };
    let mut out = String::new();
    let paths: std::collections::BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    for rel in paths {
        let (old, new) = (before.get(rel), after.get(rel));
        if old == new {
            continue;
        }
        let mut patch = git2::Patch::from_buffers(
            old.map(Vec::as_slice).unwrap_or_default(),
            old.map(|_| std::path::Path::new(rel)),
            new.map(Vec::as_slice).unwrap_or_default(),
            new.map(|_| std::path::Path::new(rel)),
            None,
        )
        .map_err(|e| HubError::Git {
            what: "diff",
            target: rel.clone(),
            message: e.message().to_string(),
        })?;
        let buf = patch.to_buf().map_err(|e| HubError::Git {
            what: "diff",
            target: rel.clone(),
            message: e.message().to_string(),
        })?;
        out.push_str(&String::from_utf8_lossy(&buf));
    }
    Ok(out)
}

/// Puts the installed version back (the pipeline again, so it is re-scanned and re-locked).
pub fn reset(hub: &Hub, name: &str) -> Result<Installed, HubError> {
    install::recover(hub)?;
    let (_, entry) = entries(hub, Some(name))?.remove(0);
    let bundle = original(hub, name, &entry)?;
    let options = options_for(name, &entry, true, "RESET");
    install::prepare_bundle(hub, bundle, &options)?.commit()
}
