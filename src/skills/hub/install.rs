//! The install pipeline: fetch → quarantine (`skills/.hub/quarantine/`) → guard scan → install
//! policy by trust × verdict → (the caller's confirmation) → atomic rename into
//! `skills/[category/]name` → `lock.json` → audit line.
//!
//! `prepare` does everything up to the confirmation and returns a `Prepared`, which removes its
//! quarantine copy when dropped; `Prepared::commit` does the rest. A replaced skill (update,
//! `--force`, reset) is renamed aside first and only deleted once the new one is in place.
//!
//! Crash safety: before anything in `skills/` moves, a journal (`.hub/journal/<id>.json`) names
//! the target, the quarantine copy, the aside copy and the lock entry to write. `recover` (run
//! before every hub command and when a conversation starts) finishes a journal whose move
//! happened (the target holds the new files: lock entry written) and rolls back one whose move
//! did not (the aside copy goes back), then removes quarantine leftovers of dead processes.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::bundle::{self, Bundle};
use super::lock::{LockEntry, LockFile, now_iso};
use super::source::{SourceRef, Trust, trust_name};
use super::{Hub, HubError, git, index, search, taps};
use crate::skills::guard::{self, Decision, Finding, Verdict};
use crate::skills::{skill, usage};

/// What the caller asks for.
#[derive(Debug, Clone, Default)]
pub struct InstallOptions {
    pub category: Option<String>,
    pub name: Option<String>,
    /// Replace a same-named skill, and install a `caution` skill a policy blocks (never a
    /// `dangerous` one from a trusted or community source).
    pub force: bool,
    /// The lock entry being replaced (update / reset): its folder is expected to exist.
    pub replacing: Option<String>,
    /// The audit log's word for this change (default INSTALL, or UPDATE when replacing).
    pub action: Option<&'static str>,
}

/// A skill fetched, quarantined, scanned and allowed by policy; not installed yet.
#[derive(Debug)]
pub struct Prepared {
    hub: Hub,
    pub name: String,
    /// Relative to `skills/`.
    pub install_path: String,
    pub bundle: Bundle,
    pub trust: Trust,
    pub verdict: Verdict,
    pub findings: Vec<Finding>,
    /// The policy would have blocked it; `--force` let it through.
    pub forced: bool,
    /// An existing skill folder will be replaced.
    pub replaces: bool,
    action: Option<&'static str>,
    quarantine: PathBuf,
    done: bool,
}

/// An installed skill.
#[derive(Debug, Clone)]
pub struct Installed {
    pub name: String,
    pub path: PathBuf,
    pub entry: LockEntry,
}

/// What a journal records about one move into `skills/`.
#[derive(Debug, Serialize, Deserialize)]
struct Journal {
    pid: u32,
    name: String,
    target: PathBuf,
    staged: PathBuf,
    aside: PathBuf,
    originals_new: PathBuf,
    entry: LockEntry,
    action: String,
}

fn unique(prefix: &str, name: &str) -> String {
    format!(
        "{prefix}-{}-{:08x}-{name}",
        std::process::id(),
        rand::random::<u32>()
    )
}

/// Fetches the skill an identifier (or a bare name found in the listings) names.
pub fn fetch(hub: &Hub, id: &str) -> Result<Bundle, HubError> {
    let source = match SourceRef::parse(id) {
        Ok(source) => source,
        Err(e) if !id.contains('/') && !id.contains(':') => {
            let found = search::resolve_name(hub, id.trim())?;
            SourceRef::parse(&found.identifier).map_err(|_| e)?
        }
        Err(e) => return Err(e),
    };
    fetch_source(hub, &source)
}

pub fn fetch_source(hub: &Hub, source: &SourceRef) -> Result<Bundle, HubError> {
    let trust = taps::trust_for(hub, source);
    match source {
        SourceRef::Git {
            url, subpath, rev, ..
        } => {
            let mirror = git::mirror(hub, url, true)?;
            let commit = mirror.resolve(rev.as_deref())?;
            let mut bundle = Bundle::new(source.clone(), trust, Some(commit.id().to_string()));
            mirror.read_into(&commit, subpath, &mut bundle)?;
            bundle.finish()
        }
        SourceRef::WellKnown { .. } => index::fetch(hub, source, trust, true),
    }
}

/// Fetch → quarantine → scan → policy. Nothing under `skills/` (outside `.hub/`) changes.
pub fn prepare(hub: &Hub, id: &str, options: &InstallOptions) -> Result<Prepared, HubError> {
    recover(hub)?;
    let bundle = fetch(hub, id)?;
    prepare_bundle(hub, bundle, options)
}

pub fn prepare_bundle(
    hub: &Hub,
    bundle: Bundle,
    options: &InstallOptions,
) -> Result<Prepared, HubError> {
    // Skills are found by the name in SKILL.md, so `--name` may only supply a missing one (as in
    // Python Hermes): a folder named otherwise would hide the skill or clash with another.
    let name = match (&options.name, bundle.frontmatter_name()) {
        (Some(wanted), Some(declared)) if *wanted != declared => {
            return Err(HubError::Refused(format!(
                "--name `{wanted}` differs from the name in its SKILL.md (`{declared}`); skills are found by that name, so install it as `{declared}` (uninstall or delete a skill of that name first)"
            )));
        }
        (Some(wanted), _) => wanted.clone(),
        (None, Some(declared)) => declared,
        (None, None) => bundle.source.default_name(),
    };
    skill::validate_name("skill", &name).map_err(HubError::Refused)?;
    let install_path = match options
        .category
        .as_deref()
        .map(str::trim)
        .filter(|c| !c.is_empty())
    {
        Some(category) => {
            skill::validate_name("category", category).map_err(HubError::Refused)?;
            format!("{category}/{name}")
        }
        None => name.clone(),
    };
    let target = hub.skills_dir().join(&install_path);
    let replaces = clash_check(hub, &name, &target, options)?;
    hub.ensure_dirs()?;
    let quarantine = hub.quarantine_dir().join(unique("q", &name));
    let mut prepared = Prepared {
        hub: hub.clone(),
        name,
        install_path,
        trust: bundle.trust,
        bundle,
        verdict: Verdict::Safe,
        findings: Vec::new(),
        forced: false,
        replaces,
        action: options.action,
        quarantine,
        done: false,
    };
    prepared.bundle.write_to(&prepared.quarantine)?;
    hub.crash_point("after-quarantine");
    prepared.findings = guard::scan_dir(&prepared.quarantine);
    prepared.verdict = guard::verdict(&prepared.findings);
    let decision = guard::policy(prepared.trust, prepared.verdict);
    if decision != Decision::Allow {
        if options.force && prepared.verdict != Verdict::Dangerous {
            prepared.forced = true;
        } else {
            let reason = match prepared.verdict {
                Verdict::Dangerous => {
                    "the guard found dangerous content, which is never installed from a hub source"
                }
                _ => {
                    "the install policy blocks this verdict from this source; after reading the findings, --force installs it"
                }
            };
            let verdict = verdict_name(prepared.verdict).to_string();
            let findings = std::mem::take(&mut prepared.findings);
            let described = guard::describe(&findings);
            return Err(HubError::Blocked {
                name: prepared.name.clone(),
                trust: trust_name(prepared.trust).to_string(),
                verdict,
                reason: if described.is_empty() {
                    reason.to_string()
                } else {
                    format!("{reason}. Findings: {described}")
                },
                findings,
            });
        }
    }
    Ok(prepared)
}

pub fn verdict_name(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Safe => "safe",
        Verdict::Caution => "caution",
        Verdict::Dangerous => "dangerous",
    }
}

/// Refuses a name that is taken (unless forced or replacing that very entry); true when an
/// existing folder will be replaced.
fn clash_check(
    hub: &Hub,
    name: &str,
    target: &Path,
    options: &InstallOptions,
) -> Result<bool, HubError> {
    if options.replacing.as_deref() == Some(name) {
        return Ok(target.exists());
    }
    if usage::origin(hub.skills_dir(), name) == usage::Origin::Bundled {
        return Err(HubError::Refused(format!(
            "`{name}` is a skill bundled with hermes; install this one under another name with --name"
        )));
    }
    let lock = LockFile::load(&hub.lock_path())?;
    let existing = match lock.installed.get(name) {
        Some(entry) => Some(hub.skills_dir().join(&entry.install_path)),
        None => crate::skills::SkillStore::new(hub.skills_dir())
            .find(name)
            .map(|s| s.dir.clone())
            .or_else(|| target.exists().then(|| target.to_path_buf())),
    };
    match existing {
        None => Ok(false),
        Some(path) if !options.force => Err(HubError::Clash {
            name: name.into(),
            path,
        }),
        Some(path) if path != target => Err(HubError::Refused(format!(
            "a skill named `{name}` already exists at {}; --force only replaces it in the same place: uninstall or delete it first, or use --name",
            path.display()
        ))),
        Some(_) => Ok(true),
    }
}

impl Prepared {
    /// Moves the quarantined skill into place, then records it in lock.json and the audit log.
    pub fn commit(mut self) -> Result<Installed, HubError> {
        let hub = self.hub.clone();
        let target = hub.skills_dir().join(&self.install_path);
        let previous = LockFile::load(&hub.lock_path())?
            .installed
            .get(&self.name)
            .cloned();
        let now = now_iso();
        let entry = self.lock_entry(previous.as_ref(), &now);
        let action = self.action.unwrap_or(if previous.is_some() {
            "UPDATE"
        } else {
            "INSTALL"
        });
        let journal = Journal {
            pid: std::process::id(),
            name: self.name.clone(),
            target: target.clone(),
            staged: self.quarantine.clone(),
            aside: hub.quarantine_dir().join(unique("old", &self.name)),
            originals_new: hub.quarantine_dir().join(unique("orig", &self.name)),
            entry,
            action: action.into(),
        };
        // The pristine copy `diff` and `reset` compare against, staged beside the quarantine.
        self.bundle.write_to(&journal.originals_new)?;
        let journal_dir = hub.hub_dir().join("journal");
        std::fs::create_dir_all(&journal_dir)
            .map_err(|e| HubError::io("create", &journal_dir, e))?;
        let journal_path = journal_dir.join(format!("{}.json", unique("j", &self.name)));
        let text = serde_json::to_vec_pretty(&journal)
            .map_err(|e| HubError::Lock(format!("cannot write the install journal: {e}")))?;
        crate::util::atomic_write(&journal_path, &text)
            .map_err(|e| HubError::io("write", &journal_path, e))?;
        if let Err(e) = self.swap_in(&journal) {
            let _ = std::fs::remove_dir_all(&journal.originals_new);
            let _ = std::fs::remove_file(&journal_path);
            return Err(e);
        }
        self.done = true;
        hub.crash_point("after-move");
        finish(&hub, &journal)?;
        let _ = std::fs::remove_file(&journal_path);
        Ok(Installed {
            name: self.name.clone(),
            path: target,
            entry: journal.entry,
        })
    }

    fn swap_in(&self, journal: &Journal) -> Result<(), HubError> {
        let target = &journal.target;
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| HubError::io("create", parent, e))?;
        }
        let had_old = target.exists();
        if had_old {
            std::fs::rename(target, &journal.aside)
                .map_err(|e| HubError::io("move aside", target, e))?;
        }
        if let Err(e) = std::fs::rename(&self.quarantine, target) {
            if had_old {
                let _ = std::fs::rename(&journal.aside, target);
            }
            return Err(HubError::io("move into place", target, e));
        }
        Ok(())
    }

    fn lock_entry(&self, previous: Option<&LockEntry>, now: &str) -> LockEntry {
        let source = &self.bundle.source;
        let mut metadata = json!({"origin": source.origin()});
        if let SourceRef::Git { subpath, rev, .. } = source {
            metadata["path"] = json!(subpath);
            if let Some(rev) = rev {
                metadata["ref"] = json!(rev);
            }
        }
        LockEntry {
            source: source.source_id().to_string(),
            identifier: source.identifier(),
            trust_level: trust_name(self.trust).to_string(),
            scan_verdict: verdict_name(self.verdict).to_string(),
            content_hash: self.bundle.content_hash(),
            install_path: self.install_path.clone(),
            files: self.bundle.files.keys().cloned().collect(),
            metadata,
            scan_provenance: json!({
                "scanner": guard::SCANNER_VERSION,
                "findings": self.findings.len(),
                "forced": self.forced,
            }),
            installed_at: previous
                .map(|p| p.installed_at.clone())
                .filter(|t| !t.is_empty())
                .unwrap_or_else(|| now.to_string()),
            updated_at: now.to_string(),
            commit: self.bundle.commit.clone(),
            file_hashes: self.bundle.file_hashes(),
            extra: Default::default(),
        }
    }
}

impl Drop for Prepared {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_dir_all(&self.quarantine);
        }
    }
}

/// After the move: lock entry, pristine copy, the aside copy removed, audit line.
fn finish(hub: &Hub, journal: &Journal) -> Result<(), HubError> {
    LockFile::update(&hub.lock_path(), |lock| {
        lock.installed
            .insert(journal.name.clone(), journal.entry.clone());
    })?;
    let originals = hub.originals_dir().join(&journal.name);
    if journal.originals_new.exists() {
        std::fs::create_dir_all(hub.originals_dir())
            .map_err(|e| HubError::io("create", &hub.originals_dir(), e))?;
        let old = hub.quarantine_dir().join(unique("gone", &journal.name));
        if originals.exists() {
            let _ = std::fs::rename(&originals, &old);
        }
        std::fs::rename(&journal.originals_new, &originals)
            .map_err(|e| HubError::io("keep the original copy in", &originals, e))?;
        let _ = std::fs::remove_dir_all(&old);
    }
    let _ = std::fs::remove_dir_all(&journal.aside);
    let entry = &journal.entry;
    hub.audit(
        &journal.action,
        &journal.name,
        &entry.source,
        &entry.trust_level,
        &entry.scan_verdict,
        &entry.content_hash,
    );
    Ok(())
}

fn alive(pid: u32) -> bool {
    // SAFETY: kill with signal 0 only checks whether the process exists.
    pid == std::process::id() || unsafe { libc::kill(pid as libc::pid_t, 0) } == 0
}

/// The pid in a quarantine entry's name (`q-PID-…`, `old-PID-…`).
fn pid_of(name: &str) -> Option<u32> {
    name.split('-').nth(1)?.parse().ok()
}

/// Repairs what a crashed install left: finishes or rolls back journals of dead processes and
/// removes their quarantine leftovers. Returns how many leftovers were cleaned.
pub fn recover(hub: &Hub) -> Result<usize, HubError> {
    let mut cleaned = 0;
    let journal_dir = hub.hub_dir().join("journal");
    if let Ok(entries) = std::fs::read_dir(&journal_dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(text) = std::fs::read(&path) else {
                continue;
            };
            let Ok(journal) = serde_json::from_slice::<Journal>(&text) else {
                tracing::warn!(path = %path.display(), "unreadable hub journal removed");
                let _ = std::fs::remove_file(&path);
                continue;
            };
            if alive(journal.pid) {
                continue;
            }
            let moved = !journal.staged.exists()
                && bundle::read_dir_files(&journal.target)
                    .map(|files| bundle::content_hash(&files) == journal.entry.content_hash)
                    .unwrap_or(false);
            if moved {
                finish(hub, &journal)?;
                tracing::info!(skill = %journal.name, "finished an install interrupted after its move");
            } else {
                if journal.aside.exists() && !journal.target.exists() {
                    std::fs::rename(&journal.aside, &journal.target)
                        .map_err(|e| HubError::io("restore", &journal.target, e))?;
                }
                tracing::info!(skill = %journal.name, "rolled back an interrupted install");
            }
            let _ = std::fs::remove_file(&path);
            cleaned += 1;
        }
    }
    if let Ok(entries) = std::fs::read_dir(hub.quarantine_dir()) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if pid_of(&name).is_some_and(alive) {
                continue;
            }
            let _ = std::fs::remove_dir_all(entry.path());
            cleaned += 1;
        }
    }
    Ok(cleaned)
}

/// What `inspect` reports: the skill as it would be installed, scanned, and what the policy
/// says, with nothing written outside the quarantine (which is removed before returning).
#[derive(Debug)]
pub struct Inspection {
    pub name: String,
    pub bundle: Bundle,
    pub verdict: Verdict,
    pub findings: Vec<Finding>,
    /// `allow`, `block` (a --force could pass a caution), or `refuse` (dangerous).
    pub decision: &'static str,
}

pub fn inspect(hub: &Hub, id: &str) -> Result<Inspection, HubError> {
    recover(hub)?;
    let bundle = fetch(hub, id)?;
    let name = bundle
        .frontmatter_name()
        .unwrap_or_else(|| bundle.source.default_name());
    hub.ensure_dirs()?;
    let dir = hub.quarantine_dir().join(unique("q", &name));
    let scanned = bundle.write_to(&dir).map(|_| guard::scan_dir(&dir));
    let _ = std::fs::remove_dir_all(&dir);
    let findings = scanned?;
    let verdict = guard::verdict(&findings);
    let decision = match guard::policy(bundle.trust, verdict) {
        Decision::Allow => "allow",
        _ if verdict == Verdict::Dangerous => "refuse",
        _ => "block",
    };
    Ok(Inspection {
        name,
        bundle,
        verdict,
        findings,
        decision,
    })
}

/// The whole pipeline without a question: prepare, then commit.
pub fn install(hub: &Hub, id: &str, options: &InstallOptions) -> Result<Installed, HubError> {
    prepare(hub, id, options)?.commit()
}
