//! Dangerous-command approval: the gate every `terminal` command passes before it runs.
//!
//! The classifier (`patterns::classify`) calls a command *safe*, *dangerous* (named reasons),
//! *cannot verify* (its effect depends on text produced at run time; treated like dangerous, the
//! message says why) or *floor* (never runs). `policy::decide` is the one function that turns
//! run mode + configuration + classification into allow / ask the model / ask a human / refuse;
//! the gate only carries that out: it asks the smart reviewer (`smart.rs`) or the front end's
//! `ApprovalPrompt`, with a timeout (timeout = deny), and remembers session / `Always` answers.
//!
//! Detection lives in the submodules: `shell` (lexer), `normalize` + `wrappers` + `payload` +
//! `oneliner` (de-obfuscation: views, wrapper stripping, inline scripts and interpreter code),
//! `dynamic` (what cannot be verified), `targets` (what a path really names; floor checks on
//! targets), `catalog` (pattern keys), `specs` (the regexes), `patterns` (checks written as code,
//! `classify`, `detect`, `hardline`) and `allowlist` (entry semantics).

mod allowlist;
mod catalog;
mod dynamic;
mod edits;
mod normalize;
mod oneliner;
mod patterns;
mod payload;
mod policy;
mod shell;
mod smart;
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

use crate::config::{ApprovalMode, Config};
use crate::llm::LlmClient;
use crate::security::redact::redact;

pub use catalog::Kind;
pub use edits::{EDIT_REASON, EditScope};
pub use patterns::{Classification, Finding, classify, detect, hardline};
pub use policy::{Decision, Facts, Policy, Refusal, Review, RunMode, decide};
pub use smart::SmartReviewer;
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

/// Per-session approval state: policy, run mode, yolo, allowlist, session approvals, deny
/// rules, the smart reviewer. `Send + Sync`; one gate is shared by all tool calls of an agent.
pub struct ApprovalGate {
    mode: ApprovalMode,
    policy: Policy,
    /// `None` until set: inferred from the prompt (interactive = REPL, else one-shot).
    run_mode: Mutex<Option<RunMode>>,
    ctx: Context,
    reviewer: Option<SmartReviewer>,
    yolo: AtomicBool,
    /// `--yes` of a one-shot run: actions that ask for a plain yes (a skill install from the
    /// hub) go ahead. Never applies to commands, which only `--yolo` lets through unasked.
    assume_yes: AtomicBool,
    allowlist: Arc<Mutex<Vec<String>>>,
    deny: Vec<DenyRule>,
    session: Mutex<HashSet<&'static str>>,
    config_path: PathBuf,
    timeout: Duration,
    /// Serialises writes of config.yaml when several `Always` answers race.
    persist_lock: Arc<Mutex<()>>,
    /// Which file edits go ahead without asking (an editor's session mode; `edits.rs`).
    edit_scope: Mutex<EditScope>,
}

impl ApprovalGate {
    /// `allowlist` is `command_allowlist`, `deny` is `approvals.deny` + `command_denylist`,
    /// `config_path` is where `Always` answers are persisted, `timeout` bounds each question.
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
            policy: Policy {
                mode,
                ..Policy::default()
            },
            run_mode: Mutex::new(None),
            ctx: Context::from_env(),
            reviewer: None,
            yolo: AtomicBool::new(yolo),
            assume_yes: AtomicBool::new(false),
            allowlist: Arc::new(Mutex::new(allowlist)),
            deny,
            session: Mutex::new(HashSet::new()),
            config_path,
            timeout,
            persist_lock: Arc::new(Mutex::new(())),
            edit_scope: Mutex::new(EditScope::Ask),
        }
    }

    /// The gate of an agent: everything from `config`, the run mode from the agent's session
    /// `source` and whether someone can answer, smart reviews through `client` (or
    /// `auxiliary.approval`).
    pub fn for_agent(
        config: &Arc<Config>,
        source: &str,
        interactive: bool,
        yolo: bool,
        client: Arc<dyn LlmClient>,
    ) -> Self {
        let mut deny = config.approvals.deny.clone();
        deny.extend(config.command_denylist.iter().cloned());
        let mut gate = ApprovalGate::new(
            config.approvals.mode,
            yolo,
            config.command_allowlist.clone(),
            deny,
            config.home.config_path(),
            Duration::from_secs(config.approvals.timeout),
        );
        gate.policy = Policy::from_config(config);
        gate.ctx = Context::with_home(config.env.get("HOME"));
        gate.reviewer = Some(SmartReviewer::new(config.clone(), client));
        gate.set_run_mode(RunMode::infer(source, interactive));
        gate
    }

    /// Replaces the policy read from config (tests, embedders).
    pub fn with_policy(mut self, policy: Policy) -> Self {
        self.mode = policy.mode;
        self.policy = policy;
        self
    }

    /// Sets the home directory the floor protects (default: `$HOME` of this process).
    pub fn with_context(mut self, ctx: Context) -> Self {
        self.ctx = ctx;
        self
    }

    /// Sets the reviewer smart mode asks.
    pub fn with_reviewer(mut self, reviewer: SmartReviewer) -> Self {
        self.reviewer = Some(reviewer);
        self
    }

    /// Fixes the run mode (`RunMode::Child` for a child agent, `RunMode::Acp`, …).
    pub fn set_run_mode(&self, run: RunMode) {
        *self.run_mode.lock().unwrap_or_else(PoisonError::into_inner) = Some(run);
    }

    /// The run mode commands are judged in; `prompt` decides when none was set.
    pub fn run_mode(&self, prompt: &dyn ApprovalPrompt) -> RunMode {
        self.run_mode
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .unwrap_or(if prompt.interactive() {
                RunMode::Repl
            } else {
                RunMode::OneShot
            })
    }

    /// Turns yolo (approve everything above the hardline floor and deny rules) on or off.
    pub fn set_yolo(&self, on: bool) {
        self.yolo.store(on, Ordering::SeqCst);
    }

    pub fn yolo(&self) -> bool {
        self.yolo.load(Ordering::SeqCst)
    }

    /// Set by `-z … --yes`: yes-or-no questions outside command approval are answered yes.
    pub fn set_assume_yes(&self, on: bool) {
        self.assume_yes.store(on, Ordering::SeqCst);
    }

    pub fn assume_yes(&self) -> bool {
        self.assume_yes.load(Ordering::SeqCst)
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

    /// Decides whether `command` may run, asking the reviewer or `prompt` if the policy says so.
    pub async fn check(&self, command: &str, prompt: &dyn ApprovalPrompt) -> Verdict {
        let analysis = patterns::analyze(command, &self.ctx);
        let classification = analysis.classification();
        let deny_rule = self.deny_rule_for(command, &analysis.views);
        let findings = match &classification {
            Classification::Dangerous(f) | Classification::CannotVerify(f) => f.clone(),
            _ => Vec::new(),
        };
        let pending = self.unapproved(command, findings.clone());
        let run = self.run_mode(prompt);
        let listed = describe(&pending);
        let mut facts = Facts {
            run,
            policy: &self.policy,
            yolo: self.yolo(),
            classification: &classification,
            deny_rule: deny_rule.as_deref(),
            pre_approved: !findings.is_empty() && pending.is_empty(),
            review: None,
        };
        let mut decision = decide(&facts);
        if decision == Decision::AskModel {
            let review = match &self.reviewer {
                Some(r) => r.review(command, &listed).await,
                None => Review::Escalate,
            };
            tracing::info!(?review, ?run, reasons = %listed, command = %redact(command), "smart approval decision");
            facts.review = Some(review);
            decision = decide(&facts);
        }
        if decision == Decision::AskHuman && !prompt.interactive() {
            decision = Decision::Refuse(Refusal::NoOneToAsk(run));
        }
        match decision {
            Decision::Allow => Verdict::Allowed,
            Decision::Refuse(r) => self.refuse(r, command, &pending, &listed),
            Decision::AskHuman | Decision::AskModel => {
                self.ask(command, pending, listed, prompt).await
            }
        }
    }

    fn refuse(&self, r: Refusal, command: &str, pending: &[Finding], listed: &str) -> Verdict {
        let text = match r {
            Refusal::Floor(what) => {
                tracing::warn!(floor = what, command = %redact(command), "hardline: command refused");
                format!(
                    "BLOCKED: this command is on the hardline safety floor ({what}). It is never \
                     run, whatever the approval mode, --yolo or command_allowlist say. Do not \
                     retry it or a variant of it; if it is truly needed, ask the user to run it \
                     themselves."
                )
            }
            Refusal::DenyRule(rule) => {
                tracing::info!(rule = %rule, command = %redact(command), "deny rule: command refused");
                format!(
                    "BLOCKED: this command matches the user's deny rule `{rule}` (approvals.deny / \
                     command_denylist in config.yaml). Do not retry it or a variant of it."
                )
            }
            Refusal::SmartDeny => {
                tracing::info!(reasons = %listed, command = %redact(command), "smart approval: denied");
                format!(
                    "BLOCKED by smart approval: {listed}. The command was assessed as genuinely \
                     dangerous. Do NOT retry it or a variant of it."
                )
            }
            Refusal::NoOneToAsk(run) => {
                let keys: Vec<&str> = pending.iter().map(|f| f.key).collect();
                tracing::info!(?run, reasons = %listed, command = %redact(command), "command refused: no one to ask");
                format!(
                    "BLOCKED: this command was refused because {}. No one can approve it in \
                     this mode ({}). {} Do not retry it; use a safer alternative or explain what \
                     you need.",
                    why(pending),
                    run_label(run),
                    policy::how_to_allow(run, &keys.join(", "))
                )
            }
        };
        Verdict::Blocked(text)
    }

    /// Asks a person through `prompt` (with the timeout) and applies the answer.
    async fn ask(
        &self,
        command: &str,
        pending: Vec<Finding>,
        listed: String,
        prompt: &dyn ApprovalPrompt,
    ) -> Verdict {
        let request = ApprovalRequest {
            command: command.to_string(),
            reasons: pending.iter().map(reason_text).collect(),
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

    /// The first deny rule matching the command as written or any de-obfuscated view of it:
    /// as a regex anywhere in the text, or (Python Hermes' form) as a glob over a whole command,
    /// case-insensitively. The views include every core command with wrappers, paths and git's
    /// global options stripped, so `git push` also catches `git -C . push`, `/usr/bin/git push`,
    /// `command git push`, `env X=1 git push` and quoted or escaped spellings.
    fn deny_rule_for(&self, command: &str, views: &normalize::Views) -> Option<String> {
        let texts = || {
            std::iter::once(command)
                .chain(views.raws.iter().map(String::as_str))
                .chain(views.flats.iter().map(String::as_str))
                .chain(views.lines.iter().map(String::as_str))
        };
        self.deny
            .iter()
            .find(|rule| {
                texts().any(|t| {
                    rule.regex.is_match(t) || allowlist::glob_matches_ci(&rule.source, t.trim())
                })
            })
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

/// One reason as the user reads it: cannot-verify findings say so.
fn reason_text(f: &Finding) -> String {
    match f.kind {
        Kind::CannotVerify => format!("cannot verify: {}", f.description),
        _ => f.description.to_string(),
    }
}

/// All reasons, `; `-separated.
fn describe(findings: &[Finding]) -> String {
    findings
        .iter()
        .map(reason_text)
        .collect::<Vec<_>>()
        .join("; ")
}

/// "it is dangerous (…)" and/or "it cannot be verified (…)".
fn why(findings: &[Finding]) -> String {
    let (opaque, danger): (Vec<&Finding>, Vec<&Finding>) =
        findings.iter().partition(|f| f.kind == Kind::CannotVerify);
    let list = |v: &[&Finding]| {
        v.iter()
            .map(|f| f.description)
            .collect::<Vec<_>>()
            .join("; ")
    };
    match (danger.is_empty(), opaque.is_empty()) {
        (false, true) => format!("it is dangerous ({})", list(&danger)),
        (true, false) => format!(
            "it cannot be verified: what it runs is produced at run time ({})",
            list(&opaque)
        ),
        _ => format!(
            "it is dangerous ({}) and cannot be verified ({})",
            list(&danger),
            list(&opaque)
        ),
    }
}

fn run_label(run: RunMode) -> &'static str {
    match run {
        RunMode::Repl => "interactive chat",
        RunMode::OneShot => "one-shot run: nobody is there to answer an approval question",
        RunMode::Gateway => "chat platform",
        RunMode::ApiServer => "API server: nobody is there to answer an approval question",
        RunMode::Cron => "cron job: nobody is there to answer an approval question",
        RunMode::Child => "child agent: nobody is there to answer an approval question",
        RunMode::Acp => "editor",
    }
}
