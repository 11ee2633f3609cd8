//! `hermes skills search | browse | inspect | install | check | update | uninstall |
//! list-modified | diff | reset | tap …`: the skills hub from the terminal (the work is in
//! `skills::hub`). `--json` outputs: `search`/`browse` → `[SkillMeta]` (Python Hermes's fields);
//! `inspect` → `{name, identifier, source, trust_level, verdict, decision, files, findings,
//! skill_md}`; `check` → `[{name, identifier, status, current_hash, latest_hash?, message?}]`;
//! `list-modified` → `[{name, changed, added, removed}]`.
//!
//! Installing asks for confirmation on a terminal; without one, `--yes` is required.

use std::io::{IsTerminal, Write};

use clap::Subcommand;
use serde_json::{Value, json};

use crate::cli::{CliError, exit};
use crate::config::Config;
use crate::skills::guard::{Finding, Severity};
use crate::skills::hub::install::{self, InstallOptions, verdict_name};
use crate::skills::hub::source::trust_name;
use crate::skills::hub::{Hub, HubError, Prepared, keep, search, taps};

#[derive(Debug, Subcommand)]
pub enum HubCommand {
    /// Search the taps (or a site's skill index, given its URL) for skills.
    Search {
        /// Words to look for, or a site URL to read its skill index.
        query: String,
        /// all, github, git, well-known, or a tap's repo.
        #[arg(long)]
        source: Option<String>,
        /// Show at most this many.
        #[arg(long, default_value_t = 10)]
        limit: usize,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// List what the taps offer.
    Browse {
        /// all, github, git, well-known, or a tap's repo.
        #[arg(long)]
        source: Option<String>,
        /// Show at most this many.
        #[arg(long, default_value_t = 100)]
        limit: usize,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Show a hub skill's SKILL.md, files and the guard's verdict, installing nothing.
    Inspect {
        /// What `install` would take (see `install --help`).
        identifier: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Install a skill: owner/repo/path, URL-or-path[#sub/path][@ref], well-known:URL, or a name.
    Install {
        /// owner/repo/path[@ref], URL-or-path[#sub/path][@ref], well-known:URL, or a name.
        identifier: String,
        /// Install into skills/CATEGORY/.
        #[arg(long)]
        category: Option<String>,
        /// Install under this name instead of the one in SKILL.md.
        #[arg(long)]
        name: Option<String>,
        /// Do not ask for confirmation.
        #[arg(short = 'y', long)]
        yes: bool,
        /// Replace a same-named skill; install a `caution` skill the policy blocks.
        #[arg(long)]
        force: bool,
    },
    /// Which hub-installed skills changed upstream.
    Check {
        /// Only this skill (default: every hub-installed skill).
        name: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Update hub-installed skills (local edits are kept unless --force).
    Update {
        /// The skill to update.
        name: Option<String>,
        /// Update every hub-installed skill.
        #[arg(long)]
        all: bool,
        /// Do not ask for confirmation.
        #[arg(short = 'y', long)]
        yes: bool,
        /// Replace local edits too.
        #[arg(long)]
        force: bool,
    },
    /// Remove a hub-installed skill.
    Uninstall {
        name: String,
        /// Do not ask for confirmation.
        #[arg(short = 'y', long)]
        yes: bool,
    },
    /// Hub skills edited since they were installed.
    ListModified {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Show local edits to a hub skill as a diff.
    Diff { name: String },
    /// Put a hub skill back to its installed version.
    Reset {
        name: String,
        /// Do not ask for confirmation.
        #[arg(short = 'y', long)]
        yes: bool,
    },
    /// The repositories and skill indexes the hub searches.
    Tap {
        #[command(subcommand)]
        action: TapCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum TapCommand {
    /// The taps searched (defaults and yours).
    List {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Add owner/repo, a git URL or path, or an index URL (…/.well-known/skills/index.json).
    Add {
        repo: String,
        /// The folder of the repository that holds skills ("" = the whole repository).
        #[arg(long, default_value = "")]
        path: String,
    },
    Remove {
        repo: String,
    },
}

fn hub_err(e: HubError) -> CliError {
    CliError::Setup(e.to_string())
}

/// Asks `question` on a terminal; without one the answer is no (and says how to say yes).
fn confirm(question: &str, yes: bool) -> bool {
    if yes {
        return true;
    }
    if !std::io::stdin().is_terminal() {
        eprintln!("{question} — not confirmed: no terminal to ask on; add --yes to go ahead");
        return false;
    }
    print!("{question} [y/N] ");
    let _ = std::io::stdout().flush();
    let mut answer = String::new();
    if std::io::stdin().read_line(&mut answer).is_err() {
        return false;
    }
    matches!(answer.trim(), "y" | "Y" | "yes")
}

fn print_findings(findings: &[Finding]) {
    for f in findings.iter().filter(|f| f.severity >= Severity::Medium) {
        let at = if f.line > 0 {
            format!("{}:{}", f.file, f.line)
        } else {
            f.file.clone()
        };
        eprintln!("  {:?} {} at {at}: {}", f.severity, f.id, f.description);
    }
}

fn findings_json(findings: &[Finding]) -> Value {
    json!(
        findings
            .iter()
            .map(
                |f| json!({"id": f.id, "category": f.category, "severity": f.severity,
                        "file": f.file, "line": f.line, "description": f.description})
            )
            .collect::<Vec<_>>()
    )
}

fn describe_plan(p: &Prepared) -> String {
    format!(
        "install `{}` from {} ({} source, verdict {}, {} files{}) into skills/{}{}",
        p.name,
        p.bundle.source.identifier(),
        trust_name(p.trust),
        verdict_name(p.verdict),
        p.bundle.files.len(),
        p.bundle
            .commit
            .as_deref()
            .map(|c| format!(", commit {}", &c[..c.len().min(12)]))
            .unwrap_or_default(),
        p.install_path,
        if p.forced {
            " (forced past the install policy)"
        } else {
            ""
        }
    )
}

pub fn run(config: &Config, command: HubCommand) -> Result<u8, CliError> {
    let hub = Hub::from_config(config);
    match command {
        HubCommand::Search {
            query,
            source,
            limit,
            json,
        } => {
            let (found, notes) =
                search::search(&hub, &query, source.as_deref(), limit).map_err(hub_err)?;
            print_listing(&found, &notes, json);
            Ok(exit::OK)
        }
        HubCommand::Browse {
            source,
            limit,
            json,
        } => {
            let (all, notes) = search::listings(&hub, source.as_deref(), false).map_err(hub_err)?;
            let shown: Vec<_> = all.into_iter().take(limit).collect();
            print_listing(&shown, &notes, json);
            Ok(exit::OK)
        }
        HubCommand::Inspect { identifier, json } => inspect(&hub, &identifier, json),
        HubCommand::Install {
            identifier,
            category,
            name,
            yes,
            force,
        } => {
            let options = InstallOptions {
                category,
                name,
                force,
                ..InstallOptions::default()
            };
            let prepared = match install::prepare(&hub, &identifier, &options) {
                Ok(p) => p,
                Err(HubError::Blocked {
                    name,
                    trust,
                    verdict,
                    findings,
                    ..
                }) => {
                    eprintln!(
                        "refused `{name}`: the guard's verdict is {verdict} and the install policy for {trust} sources does not allow it. Findings:"
                    );
                    print_findings(&findings);
                    if verdict != "dangerous" {
                        eprintln!("after reading them, `--force` installs it anyway");
                    }
                    return Ok(exit::FAILURE);
                }
                Err(e) => return Err(hub_err(e)),
            };
            let plan = describe_plan(&prepared);
            if !prepared.findings.is_empty() {
                eprintln!("the guard noted:");
                print_findings(&prepared.findings);
            }
            if !confirm(&plan, yes) {
                return Ok(exit::FAILURE);
            }
            let done = prepared.commit().map_err(hub_err)?;
            println!("installed `{}` at {}", done.name, done.path.display());
            Ok(exit::OK)
        }
        HubCommand::Check { name, json } => {
            let results = keep::check(&hub, name.as_deref()).map_err(hub_err)?;
            if json {
                println!("{}", serde_json::to_string(&results).unwrap_or_default());
            } else if results.is_empty() {
                println!("no skills installed from the hub");
            } else {
                for r in &results {
                    println!(
                        "{:<32} {:<17} {}{}",
                        r.name,
                        r.status,
                        r.identifier,
                        r.message
                            .as_deref()
                            .map(|m| format!(" ({m})"))
                            .unwrap_or_default()
                    );
                }
            }
            Ok(exit::OK)
        }
        HubCommand::Update {
            name,
            all,
            yes,
            force,
        } => {
            if name.is_none() && !all {
                return Err(CliError::Setup(
                    "name a skill to update, or give --all".into(),
                ));
            }
            let mut ask =
                |p: &Prepared| confirm(&describe_plan(p).replacen("install", "update", 1), yes);
            let outcomes = keep::update(&hub, name.as_deref(), force, &mut ask).map_err(hub_err)?;
            let mut failed = false;
            for o in &outcomes {
                failed |= o.status == "failed";
                println!("{:<32} {:<11} {}", o.name, o.status, o.message);
            }
            if outcomes.is_empty() {
                println!("no skills installed from the hub");
            }
            Ok(if failed { exit::FAILURE } else { exit::OK })
        }
        HubCommand::Uninstall { name, yes } => {
            if !confirm(&format!("uninstall hub skill `{name}`?"), yes) {
                return Ok(exit::FAILURE);
            }
            let entry = keep::uninstall(&hub, &name).map_err(hub_err)?;
            println!("uninstalled `{name}` (skills/{})", entry.install_path);
            Ok(exit::OK)
        }
        HubCommand::ListModified { json } => {
            let list = keep::list_modified(&hub).map_err(hub_err)?;
            if json {
                println!("{}", serde_json::to_string(&list).unwrap_or_default());
            } else if list.is_empty() {
                println!("no hub skill has local edits");
            } else {
                for m in &list {
                    let mut parts = Vec::new();
                    for (word, files) in [
                        ("changed", &m.changed),
                        ("added", &m.added),
                        ("removed", &m.removed),
                    ] {
                        if !files.is_empty() {
                            parts.push(format!("{word}: {}", files.join(", ")));
                        }
                    }
                    println!("{:<32} {}", m.name, parts.join("; "));
                }
            }
            Ok(exit::OK)
        }
        HubCommand::Diff { name } => {
            let diff = keep::diff(&hub, &name).map_err(hub_err)?;
            if diff.is_empty() {
                println!("`{name}` has no local edits");
            } else {
                print!("{diff}");
            }
            Ok(exit::OK)
        }
        HubCommand::Reset { name, yes } => {
            if !confirm(
                &format!("reset `{name}` to its installed version, discarding local edits?"),
                yes,
            ) {
                return Ok(exit::FAILURE);
            }
            let done = keep::reset(&hub, &name).map_err(hub_err)?;
            println!("reset `{}` at {}", done.name, done.path.display());
            Ok(exit::OK)
        }
        HubCommand::Tap { action } => tap(&hub, action),
    }
}

fn print_listing(found: &[crate::skills::hub::SkillMeta], notes: &[String], as_json: bool) {
    for note in notes {
        eprintln!("note: {note}");
    }
    if as_json {
        println!("{}", serde_json::to_string(found).unwrap_or_default());
        return;
    }
    if found.is_empty() {
        println!("no skills found");
        return;
    }
    for m in found {
        println!(
            "{:<28} {:<10} {:<48} {}",
            m.name,
            m.trust_level,
            m.identifier,
            crate::util::truncate_chars(&m.description, 70)
        );
    }
}

fn inspect(hub: &Hub, identifier: &str, as_json: bool) -> Result<u8, CliError> {
    let seen = install::inspect(hub, identifier).map_err(hub_err)?;
    let skill_md = seen
        .bundle
        .files
        .get("SKILL.md")
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default();
    if as_json {
        let files: Vec<Value> = seen
            .bundle
            .files
            .iter()
            .map(|(p, b)| json!({"path": p, "size": b.len()}))
            .collect();
        println!(
            "{}",
            json!({
                "name": seen.name,
                "identifier": seen.bundle.source.identifier(),
                "source": seen.bundle.source.source_id(),
                "trust_level": trust_name(seen.bundle.trust),
                "commit": seen.bundle.commit,
                "verdict": verdict_name(seen.verdict),
                "decision": seen.decision,
                "files": files,
                "findings": findings_json(&seen.findings),
                "skill_md": skill_md,
            })
        );
        return Ok(exit::OK);
    }
    println!("{skill_md}");
    println!("---");
    println!("identifier: {}", seen.bundle.source.identifier());
    println!("trust:      {}", trust_name(seen.bundle.trust));
    println!(
        "verdict:    {} (install policy: {})",
        verdict_name(seen.verdict),
        seen.decision
    );
    println!("files:");
    for (path, bytes) in &seen.bundle.files {
        println!("  {path} ({} bytes)", bytes.len());
    }
    if !seen.findings.is_empty() {
        println!("findings:");
        for f in &seen.findings {
            println!(
                "  {:?} {} at {}:{}: {}",
                f.severity, f.id, f.file, f.line, f.description
            );
        }
    }
    Ok(exit::OK)
}

fn tap(hub: &Hub, action: TapCommand) -> Result<u8, CliError> {
    match action {
        TapCommand::List { json } => {
            let all = taps::all(hub).map_err(hub_err)?;
            if json {
                let rows: Vec<Value> = all
                    .iter()
                    .map(|t| json!({"repo": t.repo, "path": t.path, "default": t.default}))
                    .collect();
                println!("{}", Value::Array(rows));
            } else if all.is_empty() {
                println!("no taps; `hermes skills tap add OWNER/REPO` adds one");
            } else {
                for t in &all {
                    println!(
                        "{:<48} {:<20} {}",
                        t.repo,
                        if t.path.is_empty() {
                            "(whole repository)"
                        } else {
                            &t.path
                        },
                        if t.default { "default" } else { "added" }
                    );
                }
            }
            Ok(exit::OK)
        }
        TapCommand::Add { repo, path } => {
            if taps::add(hub, &repo, &path).map_err(hub_err)? {
                println!("added tap {repo}");
            } else {
                println!("tap {repo} is already there");
            }
            Ok(exit::OK)
        }
        TapCommand::Remove { repo } => {
            if taps::remove(hub, &repo).map_err(hub_err)? {
                println!("removed tap {repo}");
                let kept = taps::installed_from(hub, &repo);
                if !kept.is_empty() {
                    println!(
                        "{} installed from it stay installed: `check`/`update` still read their source, now as a source you no longer trust as a tap; `hermes skills uninstall NAME` removes one",
                        kept.join(", ")
                    );
                }
                Ok(exit::OK)
            } else {
                Err(CliError::NotFound(format!(
                    "no tap {repo}; `hermes skills tap list` shows them"
                )))
            }
        }
    }
}
