//! One migration run over an OpenClaw home: SOUL.md, memory (MEMORY.md + daily notes into
//! MEMORY.md, USER.md into USER.md), skills, provider keys, and a list of what Hermes does not
//! import. With `execute == false` (the preview and `--dry-run`) it decides everything the same
//! way and writes nothing. Every step is idempotent: a second run finds what the first wrote and
//! reports it as already there.

use std::path::PathBuf;

use crate::config::Config;
use crate::memory::builtin::{MemoryStore, Target, char_count};
use crate::memory::edit::MemoryOp;
use crate::security::scan::{self, Origin};

use super::entries;
use super::report::{Report, Status};
use super::secrets;
use super::skills::{SkillImport, source_dirs};
use super::source::OpenClawHome;

/// Top-level `openclaw.json` sections whose settings Hermes does not import (yet).
const NOT_IMPORTED: &[&str] = &[
    "channels",
    "gateway",
    "mcp",
    "plugins",
    "cron",
    "hooks",
    "session",
    "browser",
    "tools",
    "approvals",
    "messages",
    "ui",
    "logging",
    "bindings",
];

pub struct Migration<'a> {
    pub config: &'a Config,
    pub source: &'a OpenClawHome,
    pub user_home: Option<PathBuf>,
    pub execute: bool,
    pub overwrite: bool,
    pub migrate_secrets: bool,
    /// `$HERMES_HOME/migration/openclaw/<timestamp>`: overflow, backups, staging.
    pub out_dir: PathBuf,
}

impl Migration<'_> {
    pub fn run(&self) -> Report {
        let mut report = Report::default();
        report
            .header
            .push(format!("OpenClaw home: {}", self.source.root.display()));
        match &self.source.workspace {
            Some(w) => report
                .header
                .push(format!("Workspace:     {}", w.display())),
            None => report.header.push(
                "Workspace:     none found (no SOUL.md, memory or workspace skills to import)"
                    .into(),
            ),
        }
        report.header.push(format!(
            "Hermes home:   {}",
            self.config.home.root().display()
        ));
        if let Some(problem) = &self.source.config_problem {
            report.add(
                Status::Skipped,
                self.source.config_name(),
                format!("not read: {problem}; settings and keys inside it were not imported"),
            );
        }
        self.soul(&mut report);
        self.memory(&mut report, Target::Memory);
        self.memory(&mut report, Target::User);
        SkillImport {
            config: self.config,
            execute: self.execute,
            overwrite: self.overwrite,
            staging: self.out_dir.clone(),
        }
        .run(
            &source_dirs(self.source, self.user_home.as_deref()),
            &mut report,
        );
        self.keys(&mut report);
        self.not_imported(&mut report);
        report
    }

    fn soul(&self, report: &mut Report) {
        let Some(src) = self.source.workspace_path("SOUL.md") else {
            report.add(Status::Skipped, "SOUL.md", "none in the OpenClaw workspace");
            return;
        };
        let text = match std::fs::read_to_string(&src) {
            Ok(t) => entries::rebrand(&t),
            Err(e) => {
                report.add(
                    Status::Failed,
                    "SOUL.md",
                    format!("cannot read {}: {e}", src.display()),
                );
                return;
            }
        };
        let verdict = scan::scan(&text, Origin::ContextFile);
        // The user's own persona: only what the scanner calls dangerous is refused.
        if verdict.level == scan::Level::Dangerous {
            report.add(
                Status::Refused,
                "SOUL.md",
                format!("refused by the prompt scanner: {}", verdict.reason()),
            );
            return;
        }
        let dest = self.config.home.soul_path();
        let current = std::fs::read_to_string(&dest).unwrap_or_default();
        if current.trim() == text.trim() {
            report.add(Status::Unchanged, "SOUL.md", "already imported");
            return;
        }
        // The identity hermes seeds a new home with is not the user's: replacing it loses nothing.
        let seeded = current.trim().is_empty()
            || current.trim() == crate::agent::prompt::default_identity().trim();
        if !seeded && !self.overwrite {
            report.add(
                Status::Conflict,
                "SOUL.md",
                "your Hermes SOUL.md is customised",
            );
            return;
        }
        if self.execute {
            if !seeded && let Err(e) = self.backup(&dest, "SOUL.md") {
                report.add(Status::Failed, "SOUL.md", e);
                return;
            }
            if let Err(e) = crate::util::atomic_write(&dest, text.as_bytes()) {
                report.add(
                    Status::Failed,
                    "SOUL.md",
                    format!("cannot write {}: {e}", dest.display()),
                );
                return;
            }
        }
        report.add(
            Status::Imported,
            "SOUL.md",
            "→ SOUL.md (OpenClaw's names rewritten to Hermes)",
        );
    }

    /// MEMORY.md first (curated), then the daily notes newest first: when the limit is reached,
    /// what overflows is the oldest day-to-day detail.
    fn memory(&self, report: &mut Report, target: Target) {
        let mut sources: Vec<PathBuf> = Vec::new();
        match target {
            Target::Memory => {
                sources.extend(self.source.workspace_path("MEMORY.md"));
                if let Some(dir) = self.source.workspace_path("memory") {
                    let mut notes: Vec<PathBuf> = std::fs::read_dir(&dir)
                        .into_iter()
                        .flatten()
                        .filter_map(Result::ok)
                        .map(|e| e.path())
                        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "md"))
                        .collect();
                    notes.sort();
                    notes.reverse();
                    sources.extend(notes);
                }
            }
            Target::User => sources.extend(self.source.workspace_path("USER.md")),
        }
        let what = format!("memory → {}", target.file_name());
        if sources.is_empty() {
            let looked = match target {
                Target::Memory => "no MEMORY.md or memory/*.md daily notes in the workspace",
                Target::User => "no USER.md in the workspace",
            };
            report.add(Status::Skipped, what, looked);
            return;
        }
        let store = MemoryStore::from_config(self.config);
        if !store.enabled(target) {
            report.add(
                Status::Skipped,
                what,
                format!("the {} store is disabled in config.yaml", target.as_str()),
            );
            return;
        }
        let existing = match store.read(target) {
            Ok(e) => e,
            Err(e) => {
                report.add(Status::Failed, what, e.to_string());
                return;
            }
        };
        let mut seen: std::collections::HashSet<String> =
            existing.iter().map(|e| entries::normalize(e)).collect();
        let limit = store.limit(target);
        let mut kept = existing.clone();
        let (mut added, mut already, mut refused, mut overflow) =
            (Vec::new(), 0usize, Vec::new(), Vec::new());
        for src in &sources {
            let text = match std::fs::read(src) {
                Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                Err(e) => {
                    report.add(
                        Status::Failed,
                        what.clone(),
                        format!("cannot read {}: {e}", src.display()),
                    );
                    continue;
                }
            };
            for entry in entries::extract(&text) {
                let entry = entries::rebrand(&entry);
                if !seen.insert(entries::normalize(&entry)) {
                    already += 1;
                    continue;
                }
                if let Err(why) = store.check_content(&entry) {
                    refused.push(why);
                    continue;
                }
                kept.push(entry.clone());
                if char_count(&kept) > limit {
                    kept.pop();
                    overflow.push(entry);
                    continue;
                }
                added.push(entry);
            }
        }
        let names = sources
            .iter()
            .map(|p| {
                p.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()
            })
            .collect::<Vec<_>>();
        let from = summarize_sources(&names);
        if !refused.is_empty() {
            report.add(
                Status::Refused,
                format!("{} from {from}", entries_word(refused.len())),
                format!(
                    "refused by the memory scanner (first: {})",
                    first_line(&refused[0])
                ),
            );
        }
        if !overflow.is_empty() {
            let kept_at = if self.execute {
                match self.write_overflow(target, &overflow) {
                    Ok(path) => format!("kept in {}", path.display()),
                    Err(e) => format!("NOT saved ({e}); they remain in the OpenClaw files"),
                }
            } else {
                "would be kept in an overflow file".to_string()
            };
            report.add(
                Status::Skipped,
                format!("{} from {from}", entries_word(overflow.len())),
                format!(
                    "over the {limit}-character limit of {}; {kept_at} (raise memory.{} or consolidate, then add them)",
                    target.file_name(),
                    match target {
                        Target::Memory => "memory_char_limit",
                        Target::User => "user_char_limit",
                    }
                ),
            );
        }
        if added.is_empty() {
            if already > 0 || (refused.is_empty() && overflow.is_empty()) {
                report.add(
                    Status::Unchanged,
                    what,
                    format!("{} from {from} already there", entries_word(already)),
                );
            }
            return;
        }
        let usage = format!("{}/{limit} chars", char_count(&kept));
        if self.execute {
            let ops: Vec<MemoryOp> = added
                .iter()
                .map(|c| MemoryOp::Add { content: c.clone() })
                .collect();
            if let Err(e) = store.apply(target, &ops) {
                report.add(Status::Failed, what, format!("nothing written: {e}"));
                return;
            }
        }
        let dup = if already > 0 {
            format!("; {already} already there")
        } else {
            String::new()
        };
        report.add(
            Status::Imported,
            what,
            format!("{} from {from} ({usage}{dup})", entries_word(added.len())),
        );
    }

    fn keys(&self, report: &mut Report) {
        let found = secrets::collect(self.source);
        for note in &found.unreadable {
            report.add(Status::Skipped, "provider key", note.clone());
        }
        if found.keys.is_empty() {
            report.add(Status::Skipped, "provider keys", "none found");
            return;
        }
        let names = found.keys.keys().cloned().collect::<Vec<_>>().join(", ");
        if !self.migrate_secrets {
            report.add(
                Status::Skipped,
                "provider keys",
                format!("found {names}; not imported without --migrate-secrets"),
            );
            return;
        }
        let path = self.config.home.env_path();
        match secrets::merge_env(&path, &found.keys, self.overwrite, self.execute) {
            Ok(m) => {
                if !m.added.is_empty() {
                    report.add(
                        Status::Imported,
                        "provider keys",
                        format!("{} → .env (mode 0600)", m.added.join(", ")),
                    );
                }
                if !m.same.is_empty() {
                    report.add(
                        Status::Unchanged,
                        "provider keys",
                        format!("{} already in .env", m.same.join(", ")),
                    );
                }
                if !m.conflicting.is_empty() {
                    report.add(
                        Status::Conflict,
                        "provider keys",
                        format!("{} set to another value in .env", m.conflicting.join(", ")),
                    );
                }
            }
            Err(e) => report.add(
                Status::Failed,
                "provider keys",
                format!("cannot update {}: {e}", path.display()),
            ),
        }
    }

    fn not_imported(&self, report: &mut Report) {
        let present: Vec<&str> = NOT_IMPORTED
            .iter()
            .copied()
            .filter(|k| self.source.config.get(*k).is_some())
            .collect();
        if !present.is_empty() {
            report.add(
                Status::Skipped,
                format!("{} sections: {}", self.source.config_name(), present.join(", ")),
                "hermes claw migrate does not import these settings; set them up with hermes config / hermes gateway",
            );
        }
        // `agents.defaults.model` is "provider/model" or `{primary: "provider/model", ...}`.
        let model = self.source.config.pointer("/agents/defaults/model");
        let model = model
            .and_then(|m| {
                m.as_str()
                    .or_else(|| m.get("primary").and_then(|p| p.as_str()))
            })
            .map(str::trim)
            .filter(|m| !m.is_empty());
        if let Some(model) = model {
            report.add(
                Status::Skipped,
                "default model",
                format!("OpenClaw used `{model}`; hermes's model is not changed — pass -m/--provider or set `model:` in config.yaml"),
            );
        }
        let agents = self.source.workspace_path("AGENTS.md");
        if let Some(path) = agents {
            report.add(
                Status::Skipped,
                "AGENTS.md",
                format!("workspace instructions stay where they are ({}); copy them into a project as AGENTS.md if wanted", path.display()),
            );
        }
    }

    fn write_overflow(&self, target: Target, entries: &[String]) -> std::io::Result<PathBuf> {
        let dir = self.out_dir.join("overflow");
        std::fs::create_dir_all(&dir)?;
        let path = dir.join(format!("{}_overflow.md", target.as_str()));
        crate::util::atomic_write(
            &path,
            crate::memory::builtin::join_entries(entries).as_bytes(),
        )?;
        Ok(path)
    }

    fn backup(&self, path: &std::path::Path, name: &str) -> Result<(), String> {
        let dir = self.out_dir.join("backups");
        std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::copy(path, dir.join(name)).map(|_| ()))
            .map_err(|e| format!("cannot back up {} before replacing it: {e}", path.display()))
    }
}

/// `MEMORY.md + 3 daily notes`.
fn summarize_sources(names: &[String]) -> String {
    let main: Vec<&String> = names
        .iter()
        .filter(|n| *n == "MEMORY.md" || *n == "USER.md")
        .collect();
    let notes = names.len() - main.len();
    let mut parts: Vec<String> = main.iter().map(|s| s.to_string()).collect();
    match notes {
        0 => {}
        1 => parts.push("1 daily note".to_string()),
        n => parts.push(format!("{n} daily notes")),
    }
    parts.join(" + ")
}

fn entries_word(n: usize) -> String {
    if n == 1 {
        "1 entry".to_string()
    } else {
        format!("{n} entries")
    }
}

fn first_line(text: &str) -> &str {
    crate::util::truncate_chars(text.lines().next().unwrap_or(""), 160)
}
