//! `hermes skills list | view | audit | delete`. The `--json` outputs are a contract read by
//! scripts: `list` → `[{name, description, category, path, valid, error?, use_count,
//! successful_uses, probation}]` (counts from `.usage.json`); `audit` →
//! `[{name, path, trust, verdict, findings: [{id, category, severity, file, line}]}]`.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use clap::Subcommand;
use serde_json::{Value, json};

use crate::cli::{CliError, exit};
use crate::config::Config;
use crate::skills::guard::{self, Trust, Verdict};
use crate::skills::manage::{self, Caller, ManageRequest};
use crate::skills::usage::{self, Origin};
use crate::skills::{SkillStore, bundled};

#[derive(Debug, Subcommand)]
pub enum SkillsCommand {
    /// List skills (invalid ones too, with the reason).
    List {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Only this category.
        #[arg(long)]
        category: Option<String>,
    },
    /// Print a skill's SKILL.md, or one of its files.
    View { name: String, file: Option<String> },
    /// Scan skills for threats: all, one by NAME, or every skill under PATH.
    Audit {
        target: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Delete a skill.
    Delete {
        name: String,
        /// Do not ask for confirmation.
        #[arg(short = 'y', long)]
        yes: bool,
    },
    #[command(flatten)]
    Hub(crate::cli::skills_hub_cmd::HubCommand),
}

/// Copies bundled skills into the home (first run, or a newer hermes). Never fails a command.
pub fn sync_bundled(config: &Config) {
    match bundled::sync(&config.home.skills_dir()) {
        Ok(report) if !report.installed.is_empty() || !report.updated.is_empty() => {
            tracing::info!(installed = ?report.installed, updated = ?report.updated, "bundled skills synced")
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "cannot sync bundled skills"),
    }
    // A hub install interrupted by a crash is finished or rolled back before skills are read.
    if let Err(e) = crate::skills::hub::recover(&crate::skills::hub::Hub::from_config(config)) {
        tracing::warn!(error = %e, "cannot repair an interrupted hub install");
    }
}

pub fn run(config: &Config, command: SkillsCommand) -> Result<u8, CliError> {
    sync_bundled(config);
    // The store's parse cache (thousands of small allocations over a large home) is freed by
    // the process exit, not entry by entry: a one-shot command has nothing to gain from it.
    let store = std::mem::ManuallyDrop::new(SkillStore::from_config(config));
    match command {
        SkillsCommand::List { json, category } => list(
            &store,
            json,
            category.as_deref(),
            crate::skills::probation::required_uses(config),
        ),
        SkillsCommand::View { name, file } => view(&store, &name, file.as_deref()),
        SkillsCommand::Audit { target, json } => audit(&store, target.as_deref(), json),
        SkillsCommand::Delete { name, yes } => delete(&store, &name, yes),
        SkillsCommand::Hub(command) => crate::cli::skills_hub_cmd::run(config, command),
    }
}

/// One row of `skills list` (the `--json` contract: field order as written here).
#[derive(serde::Serialize)]
struct ListRow<'a> {
    name: &'a str,
    description: &'a str,
    category: &'a Option<String>,
    path: String,
    valid: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    use_count: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    successful_uses: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    probation: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
}

fn list(
    store: &SkillStore,
    as_json: bool,
    category: Option<&str>,
    probation_uses: u64,
) -> Result<u8, CliError> {
    let scan = store.scan();
    let records = usage::all(store.home_root());
    let wanted = |c: &Option<String>| category.is_none() || c.as_deref() == category;
    let mut rows: Vec<ListRow> = scan
        .skills
        .iter()
        .filter(|s| wanted(&s.category))
        .map(|s| {
            // External skills share names with nothing in this home's `.usage.json`.
            let record = records.get(&s.name).filter(|_| !s.external);
            ListRow {
                name: &s.name,
                description: &s.description,
                category: &s.category,
                path: s.dir.display().to_string(),
                valid: true,
                use_count: Some(record.map_or(0, |r| r.use_count)),
                successful_uses: Some(record.map_or(0, |r| r.successful_uses)),
                probation: Some(record.is_some_and(|r| r.on_probation(probation_uses))),
                error: None,
            }
        })
        .collect();
    rows.extend(
        scan.invalid
            .iter()
            .filter(|s| wanted(&s.category))
            .map(|s| ListRow {
                name: &s.name,
                description: "",
                category: &s.category,
                path: s.path.parent().unwrap_or(&s.path).display().to_string(),
                valid: false,
                use_count: None,
                successful_uses: None,
                probation: None,
                error: Some(&s.error),
            }),
    );
    if as_json {
        let mut out = std::io::stdout().lock();
        serde_json::to_writer(&mut out, &rows)
            .map_err(std::io::Error::from)
            .and_then(|()| std::io::Write::write_all(&mut out, b"\n"))
            .map_err(|e| CliError::Setup(format!("cannot write the list: {e}")))?;
    } else if rows.is_empty() {
        println!("no skills in {}", store.home_root().display());
    } else {
        for row in &rows {
            print_row(row, probation_uses);
        }
    }
    // The scan's thousands of small allocations are freed by the exit, not one by one.
    std::mem::forget(rows);
    std::mem::forget(scan);
    Ok(exit::OK)
}

fn print_row(row: &ListRow, probation_uses: u64) {
    let cat = row.category.as_deref().unwrap_or("-");
    let name = row.name;
    match row.error {
        None => {
            let uses = row.use_count.unwrap_or(0);
            let probation = if row.probation == Some(true) {
                format!(
                    "[probation {}/{probation_uses}] ",
                    row.successful_uses.unwrap_or(0)
                )
            } else {
                String::new()
            };
            println!(
                "{cat:<24} {name:<32} {uses:>5} uses  {probation}{}",
                crate::util::truncate_chars(row.description, 90)
            );
        }
        Some(error) => println!("{cat:<24} {name:<32} INVALID: {error}"),
    }
}

fn not_found(name: &str) -> CliError {
    CliError::NotFound(format!(
        "no skill named `{name}`; `hermes skills list` shows the names"
    ))
}

fn view(store: &SkillStore, name: &str, file: Option<&str>) -> Result<u8, CliError> {
    let skill = store.find(name).ok_or_else(|| not_found(name))?;
    let Some(file) = file else {
        print!("{}", skill.content()?);
        let files: Vec<String> = skill.linked_files().into_values().flatten().collect();
        if !files.is_empty() {
            eprintln!("\nlinked files: {}", files.join(", "));
        }
        return Ok(exit::OK);
    };
    let path = crate::tools::file_path::within(&skill.dir, file)
        .map_err(|e| CliError::Setup(e.to_string()))?;
    let bytes = std::fs::read(&path)
        .map_err(|e| CliError::NotFound(format!("cannot read {file} in `{name}`: {e}")))?;
    match String::from_utf8(bytes) {
        Ok(text) => print!("{text}"),
        Err(e) => println!(
            "binary file, {} bytes: {}",
            e.as_bytes().len(),
            path.display()
        ),
    }
    Ok(exit::OK)
}

enum AuditTargetError {
    NotASkill(NotASkill),
    Cli(CliError),
}

impl From<NotASkill> for AuditTargetError {
    fn from(e: NotASkill) -> Self {
        AuditTargetError::NotASkill(e)
    }
}

impl From<CliError> for AuditTargetError {
    fn from(e: CliError) -> Self {
        AuditTargetError::Cli(e)
    }
}

/// Skill directories to audit for a target: a path (a skill or a tree of skills), a name, or
/// every skill in the store.
fn audit_targets(
    store: &SkillStore,
    target: Option<&str>,
) -> Result<Vec<(String, PathBuf, Trust)>, AuditTargetError> {
    let trust_in_home = |name: &str| match usage::origin(store.home_root(), name) {
        Origin::Bundled => Trust::Builtin,
        Origin::Hub => match usage::hub_trust(store.home_root(), name).as_deref() {
            Some("builtin") => Trust::Builtin,
            Some("trusted") => Trust::Trusted,
            _ => Trust::Community,
        },
        Origin::AgentCreated => Trust::AgentCreated,
        Origin::User | Origin::External => Trust::Community,
    };
    match target {
        Some(t) if Path::new(t).exists() || t.contains(std::path::MAIN_SEPARATOR) => {
            Ok(path_targets(Path::new(t))?)
        }
        Some(name) => {
            let s = store.find(name).ok_or_else(|| not_found(name))?;
            let trust = if s.external {
                Trust::Community
            } else {
                trust_in_home(&s.name)
            };
            Ok(vec![(s.name.clone(), s.dir.clone(), trust)])
        }
        None => Ok(store
            .scan()
            .skills
            .iter()
            .map(|s| {
                let trust = if s.external {
                    Trust::Community
                } else {
                    trust_in_home(&s.name)
                };
                (s.name.clone(), s.dir.clone(), trust)
            })
            .collect()),
    }
}

/// Why a path given to `skills audit` cannot be audited (exit code 2).
#[derive(Debug, thiserror::Error)]
enum NotASkill {
    #[error("{path}: {source}; give a skill directory (one with a SKILL.md) or a folder of skills")]
    Unreadable {
        path: String,
        source: std::io::Error,
    },
    #[error("{0} is a file, not a skill directory; give the folder that holds SKILL.md")]
    File(String),
    #[error("{0} is not a skill directory: there is no SKILL.md in it or in any folder below it")]
    NoSkills(String),
}

/// The skills under a path: the path itself when it holds SKILL.md, else every skill below it.
/// The path is resolved first, so a relative and an absolute spelling audit the same files.
fn path_targets(path: &Path) -> Result<Vec<(String, PathBuf, Trust)>, NotASkill> {
    let shown = path.display().to_string();
    let root = std::fs::canonicalize(path).map_err(|source| NotASkill::Unreadable {
        path: shown.clone(),
        source,
    })?;
    if !root.is_dir() {
        return Err(NotASkill::File(shown));
    }
    if let Some(dir) = guard::skill_dir(&root) {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        return Ok(vec![(name, dir, Trust::Community)]);
    }
    let scan = SkillStore::new(&root).unfiltered().scan();
    let mut out: Vec<(String, PathBuf, Trust)> = scan
        .skills
        .iter()
        .map(|s| (s.name.clone(), s.dir.clone(), Trust::Community))
        .collect();
    out.extend(scan.invalid.iter().filter_map(|s| {
        s.path
            .parent()
            .map(|d| (s.name.clone(), d.to_path_buf(), Trust::Community))
    }));
    if out.is_empty() {
        return Err(NotASkill::NoSkills(shown));
    }
    Ok(out)
}

fn audit(store: &SkillStore, target: Option<&str>, as_json: bool) -> Result<u8, CliError> {
    let targets = match audit_targets(store, target) {
        Ok(targets) => targets,
        Err(AuditTargetError::NotASkill(e)) => {
            eprintln!("hermes skills audit: {e}");
            return Ok(exit::USAGE);
        }
        Err(AuditTargetError::Cli(e)) => return Err(e),
    };
    let mut reports = Vec::new();
    let mut any_dangerous = false;
    let dirs: Vec<PathBuf> = targets.iter().map(|(_, dir, _)| dir.clone()).collect();
    let scanned = guard::scan_dirs(&dirs);
    for ((name, dir, trust), findings) in targets.into_iter().zip(scanned) {
        let verdict = guard::verdict(&findings);
        any_dangerous |= verdict == Verdict::Dangerous;
        reports.push(json!({
            "name": name,
            "path": dir.display().to_string(),
            "trust": trust,
            "verdict": verdict,
            "findings": findings.iter().map(|f| json!({
                "id": f.id, "category": f.category, "severity": f.severity, "file": f.file, "line": f.line,
            })).collect::<Vec<_>>(),
        }));
        if !as_json {
            let decision = guard::policy(trust, verdict);
            let verdict_s = reports
                .last()
                .map(|r| r["verdict"].as_str().unwrap_or_default().to_string())
                .unwrap_or_default();
            println!(
                "{name}: {verdict_s} ({} findings; install policy for this trust: {decision:?})",
                findings.len()
            );
            for f in &findings {
                println!(
                    "  {}:{} {} [{:?}] {}",
                    if f.file.is_empty() { "." } else { &f.file },
                    f.line,
                    f.id,
                    f.severity,
                    f.description
                );
            }
        }
    }
    if as_json {
        println!("{}", Value::Array(reports));
    } else if reports.is_empty() {
        println!("no skills found to audit");
    }
    // Scripts can gate on the exit code: 1 when anything is dangerous.
    Ok(if any_dangerous {
        exit::FAILURE
    } else {
        exit::OK
    })
}

fn delete(store: &SkillStore, name: &str, yes: bool) -> Result<u8, CliError> {
    let skill = store.find(name).ok_or_else(|| not_found(name))?;
    if !yes && std::io::stdin().is_terminal() {
        print!(
            "Delete skill {} at {}? [y/N] ",
            skill.name,
            skill.dir.display()
        );
        std::io::stdout().flush()?;
        let mut answer = String::new();
        std::io::stdin().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            println!("kept");
            return Ok(exit::OK);
        }
    }
    let request = ManageRequest {
        action: "delete".into(),
        name: skill.name.clone(),
        ..ManageRequest::default()
    };
    manage::run(store, &request, &Caller::default()).map_err(|e| CliError::Setup(e.to_string()))?;
    println!("deleted skill {} ({})", skill.name, skill.dir.display());
    Ok(exit::OK)
}

/// `/skills` in the REPL: one line per skill, grouped by category.
pub fn print_for_repl(config: &Config) {
    let scan = SkillStore::from_config(config).scan();
    if scan.skills.is_empty() {
        println!(
            "no skills yet; the agent saves them with skill_manage, or add SKILL.md folders under {}",
            config.home.skills_dir().display()
        );
        return;
    }
    let mut current: Option<&str> = None;
    for s in &scan.skills {
        let cat = s.category.as_deref().unwrap_or("general");
        if current != Some(cat) {
            println!("{cat}:");
            current = Some(cat);
        }
        println!(
            "  /{:<28} {}",
            s.name,
            crate::util::truncate_chars(&s.description, 90)
        );
    }
    if !scan.invalid.is_empty() {
        println!(
            "{} invalid skill(s); `hermes skills list` shows why",
            scan.invalid.len()
        );
    }
}
