//! Dangerous-command approval: the gate every `terminal` command passes before it runs.
//!
//! Order of checks (Python Hermes §10.1, without tirith and the smart pre-screen):
//! 1. the hardline floor (`hardline`) — refused always, even under `--yolo` or `mode: off`;
//! 2. the user's `approvals.deny` regexes — refused before any bypass;
//! 3. `--yolo` / `approvals.mode: off` — everything else runs;
//! 4. dangerous findings (`detect`) minus those approved for this session or by
//!    `command_allowlist` (pattern keys; literal commands and globs for non-compound commands);
//! 5. ask through `ApprovalPrompt` with a timeout (timeout = deny); nobody to ask = refuse.
//!
//! Detection lives in the submodules: `shell` (lexer), `normalize` + `wrappers` + `payload`
//! (de-obfuscation: views, wrapper stripping, inline scripts), `catalog` (pattern keys),
//! `specs` (the regexes), `patterns` (checks written as code, `detect`, `hardline`) and
//! `allowlist` (entry semantics).

mod allowlist;
mod catalog;
mod dynamic;
mod normalize;
mod oneliner;
mod patterns;
mod payload;
mod shell;
mod specs;
mod targets;
mod wrappers;

#[cfg(test)]
mod classify_tests;
#[cfg(test)]
mod detect_tests;
#[cfg(test)]
mod gate_tests;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use regex::Regex;

use crate::config::ApprovalMode;
use crate::security::redact::redact;

pub use catalog::Kind;
pub use patterns::{Classification, Finding, classify, detect, hardline};
pub use targets::Context;

/// The user's answer to an approval question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalChoice {
    Once,
    Session,
    Always,
    Deny,
}

/// What the user is asked about.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRequest {
    pub command: String,
    /// Human descriptions of why the command is dangerous.
    pub reasons: Vec<String>,
}

/// Someone who can answer approval questions (the REPL, a chat) — or nobody.
#[async_trait::async_trait]
pub trait ApprovalPrompt: Send + Sync {
    async fn ask(&self, request: &ApprovalRequest) -> ApprovalChoice;
    /// False for one-shot runs, cron, etc.: no one is there to ask.
    fn interactive(&self) -> bool {
        true
    }
}

/// Used where no one can answer (`-z`): every question is denied.
pub struct NoPrompt;

#[async_trait::async_trait]
impl ApprovalPrompt for NoPrompt {
    async fn ask(&self, _request: &ApprovalRequest) -> ApprovalChoice {
        ApprovalChoice::Deny
    }
    fn interactive(&self) -> bool {
        false
    }
}

/// The gate's decision on one command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    /// Refused; the text explains why, for the model and the user.
    Blocked(String),
}

/// One `approvals.deny` entry.
struct DenyRule {
    source: String,
    regex: Regex,
}

/// Per-session approval state: mode, yolo, allowlist, session approvals. `Send + Sync`; one gate
/// is shared by all tool calls of an agent.
pub struct ApprovalGate {
    mode: ApprovalMode,
    yolo: AtomicBool,
    allowlist: Arc<Mutex<Vec<String>>>,
    deny: Vec<DenyRule>,
    session: Mutex<HashSet<&'static str>>,
    config_path: PathBuf,
    timeout: Duration,
    /// Serialises writes of config.yaml when several `Always` answers race.
    persist_lock: Arc<Mutex<()>>,
}

impl ApprovalGate {
    /// `allowlist` is `command_allowlist`, `deny` is `approvals.deny`, `config_path` is where
    /// `Always` answers are persisted, `timeout` bounds each question.
    pub fn new(
        mode: ApprovalMode,
        yolo: bool,
        allowlist: Vec<String>,
        deny: Vec<String>,
        config_path: PathBuf,
        timeout: Duration,
    ) -> Self {
        let deny = deny
            .into_iter()
            .filter(|d| !d.trim().is_empty())
            .filter_map(|source| {
                let regex = match Regex::new(&source) {
                    Ok(r) => r,
                    Err(e) => {
                        // Dropping a deny rule would silently widen what runs: match it literally.
                        tracing::warn!(rule = %source, error = %e, "approvals.deny entry is not a valid regex; matching it as literal text");
                        Regex::new(&regex::escape(&source)).ok()?
                    }
                };
                Some(DenyRule { source, regex })
            })
            .collect();
        ApprovalGate {
            mode,
            yolo: AtomicBool::new(yolo),
            allowlist: Arc::new(Mutex::new(allowlist)),
            deny,
            session: Mutex::new(HashSet::new()),
            config_path,
            timeout,
            persist_lock: Arc::new(Mutex::new(())),
        }
    }

    /// Turns yolo (approve everything above the hardline floor and deny rules) on or off.
    pub fn set_yolo(&self, on: bool) {
        self.yolo.store(on, Ordering::SeqCst);
    }

    pub fn yolo(&self) -> bool {
        self.yolo.load(Ordering::SeqCst)
    }

    pub fn mode(&self) -> ApprovalMode {
        self.mode
    }

    /// The current `command_allowlist`, including entries added by `Always` answers.
    pub fn allowlist(&self) -> Vec<String> {
        self.allowlist
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Pattern keys approved for the rest of this session.
    pub fn session_approved(&self) -> Vec<&'static str> {
        let mut keys: Vec<_> = self
            .session
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .copied()
            .collect();
        keys.sort_unstable();
        keys
    }

    /// Decides whether `command` may run, asking `prompt` if needed.
    pub async fn check(&self, command: &str, prompt: &dyn ApprovalPrompt) -> Verdict {
        let analysis = patterns::analyze(command, &Context::from_env());
        if let Some(f) = analysis.hardline.first() {
            tracing::warn!(key = f.key, command = %redact(command), "hardline: command refused");
            return Verdict::Blocked(format!(
                "BLOCKED: this command is on the hardline safety floor ({}). It is never run, whatever \
                 the approval mode, --yolo or command_allowlist say. Do not retry it or a variant of it; \
                 if it is truly needed, ask the user to run it themselves.",
                f.description
            ));
        }
        if let Some(rule) = self.deny_rule_for(command, &analysis.views) {
            tracing::info!(rule = %rule, command = %redact(command), "approvals.deny: command refused");
            return Verdict::Blocked(format!(
                "BLOCKED: this command matches the user's approvals.deny rule `{rule}`. Do not retry \
                 it or a variant of it."
            ));
        }
        if self.yolo() || self.mode == ApprovalMode::Off {
            return Verdict::Allowed;
        }
        // Smart mode has no auxiliary reviewer yet, so it asks like manual mode.
        let pending = self.unapproved(command, analysis.dangerous);
        if pending.is_empty() {
            return Verdict::Allowed;
        }
        let reasons: Vec<String> = pending.iter().map(|f| f.description.to_string()).collect();
        let listed = reasons.join("; ");
        if !prompt.interactive() {
            let keys: Vec<&str> = pending.iter().map(|f| f.key).collect();
            tracing::info!(reasons = %listed, command = %redact(command), "dangerous command refused: no one to ask");
            return Verdict::Blocked(format!(
                "BLOCKED: this command was refused because it is dangerous ({listed}). No one can \
                 approve it in this mode: nobody is there to answer an approval question. The user \
                 can allow dangerous commands by running hermes with --yolo, or by adding {} to \
                 command_allowlist in config.yaml. Do not retry it; use a safer alternative or \
                 explain what you need.",
                keys.join(", ")
            ));
        }
        let request = ApprovalRequest {
            command: command.to_string(),
            reasons,
        };
        let choice = match tokio::time::timeout(self.timeout, prompt.ask(&request)).await {
            Ok(choice) => choice,
            Err(_) => {
                tracing::info!(command = %redact(command), "approval request timed out: denied");
                return Verdict::Blocked(format!(
                    "BLOCKED: no answer to the approval request within {}s, so the command was \
                     denied ({listed}). Do not retry it unless the user asks you to.",
                    self.timeout.as_secs_f32()
                ));
            }
        };
        tracing::info!(?choice, reasons = %listed, command = %redact(command), "approval answer");
        match choice {
            ApprovalChoice::Deny => Verdict::Blocked(format!(
                "BLOCKED: the user denied this command ({listed}). Do not retry it or a variant of \
                 it; ask the user how they want to proceed."
            )),
            ApprovalChoice::Once => Verdict::Allowed,
            ApprovalChoice::Session => {
                self.session
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .extend(pending.iter().map(|f| f.key));
                Verdict::Allowed
            }
            ApprovalChoice::Always => {
                self.approve_always(&pending).await;
                Verdict::Allowed
            }
        }
    }

    /// The first deny rule matching the command as written or any de-obfuscated view of it.
    fn deny_rule_for(&self, command: &str, views: &normalize::Views) -> Option<String> {
        let texts = || {
            std::iter::once(command)
                .chain(views.raws.iter().map(String::as_str))
                .chain(views.flats.iter().map(String::as_str))
                .chain(views.lines.iter().map(String::as_str))
        };
        self.deny
            .iter()
            .find(|rule| texts().any(|t| rule.regex.is_match(t)))
            .map(|rule| rule.source.clone())
    }

    /// Findings not yet approved; empty if a literal/glob allowlist entry approves the command.
    fn unapproved(&self, command: &str, findings: Vec<Finding>) -> Vec<Finding> {
        if findings.is_empty() {
            return findings;
        }
        let allow = self
            .allowlist
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if allow
            .iter()
            .any(|entry| allowlist::approves_command(entry, command))
        {
            return Vec::new();
        }
        let session = self.session.lock().unwrap_or_else(PoisonError::into_inner);
        findings
            .into_iter()
            .filter(|f| {
                !session.contains(f.key) && !allow.iter().any(|e| allowlist::approves_finding(e, f))
            })
            .collect()
    }

    /// Adds the findings' keys to the allowlist and writes it to config.yaml. A failed write is
    /// logged: the command still runs this once and the keys stay approved in memory.
    async fn approve_always(&self, findings: &[Finding]) {
        {
            let mut allow = self
                .allowlist
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            for f in findings {
                if !allow.iter().any(|e| e == f.key) {
                    allow.push(f.key.to_string());
                }
            }
        }
        let allowlist = Arc::clone(&self.allowlist);
        let lock = Arc::clone(&self.persist_lock);
        let path = self.config_path.clone();
        let written = tokio::task::spawn_blocking(move || {
            let _guard = lock.lock().unwrap_or_else(PoisonError::into_inner);
            let snapshot = allowlist
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            crate::config::persist_command_allowlist(&path, &snapshot)
        })
        .await;
        match written {
            Ok(Ok(())) => {
                tracing::info!(path = %self.config_path.display(), "command_allowlist saved")
            }
            Ok(Err(e)) => tracing::warn!(
                error = %e,
                "could not save command_allowlist; the approval holds for this session only"
            ),
            Err(e) => tracing::warn!(
                error = %e,
                "saving command_allowlist did not finish; the approval holds for this session only"
            ),
        }
    }
}
