//! The one scanner for text that enters the prompt from outside: skills (every file of a skill
//! directory and the descriptions shown in the skills index), memory entries, project context
//! files (AGENTS.md, .hermes.md, …), recalled sessions and, later, web and MCP results.
//!
//! `scan(text, origin)` returns a [`Verdict`]: a [`Level`] (safe / caution / dangerous) and the
//! findings behind it. The pipeline is the same for every origin:
//!
//! 1. `hidden` removes what a person cannot see but a model reads — Unicode tag characters (a
//!    whole invisible ASCII text), bidirectional controls, zero-width characters and soft hyphens
//!    — reporting them, then folds look-alikes (NFKC, common Cyrillic/Greek homoglyphs) so that
//!    `ig\u{00AD}nore previous instructions` reads `ignore previous instructions`;
//! 2. `engine` runs every rule of the table (`rules_*` files) in one `RegexSet` pass over the
//!    normalised text, then locates only the rules that matched, and combines co-occurring
//!    signals (e.g. "reads the whole environment" + "sends an HTTP request" a few lines apart);
//! 3. the level is the worst severity: critical → dangerous, high → caution, else safe.
//!
//! What differs per origin is which rules apply (`Origin::reach`): code rules (sudo, pip install,
//! subprocess, …) only make sense in skill files; rules about mentioning `~/.ssh` or editing
//! AGENTS.md only in memory, which is injected into every future prompt. Each consumer decides
//! what a level means for it (skill_manage refuses `dangerous`; memory, context files and the
//! skills index refuse anything above `safe`).

/// One rule of a table (`rules_*.rs`): id, severity, category, reach, regex, description and an
/// optional extra check. Defined before the table modules so they all share it; each table
/// imports `Rule`, `Severity as S` and `Category as C`.
macro_rules! rule {
    ($id:literal, $sev:ident, $cat:ident, $reach:expr, $re:expr, $desc:literal) => {
        rule!($id, $sev, $cat, $reach, $re, $desc, None)
    };
    ($id:literal, $sev:ident, $cat:ident, $reach:expr, $re:expr, $desc:literal, $check:expr) => {
        Rule {
            id: $id,
            severity: S::$sev,
            category: C::$cat,
            reach: $reach,
            regex: $re,
            description: $desc,
            check: $check,
        }
    };
}

mod destination;
mod engine;
mod hidden;
mod rules_code;
mod rules_exfil;
mod rules_prompt;
mod rules_secrets;
mod secret_dest;

use serde::Serialize;

pub use hidden::TAG_CHARS;

/// Where a text comes from; decides which rules apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Origin {
    /// A file of a skill directory (SKILL.md, scripts, references): code rules apply.
    Skill,
    /// A skill's description as the skills index shows it in the system prompt.
    SkillDescription,
    /// A memory entry (MEMORY.md / USER.md): strictest, it reaches every future prompt.
    Memory,
    /// A project context file (AGENTS.md, .hermes.md, CLAUDE.md, .cursorrules).
    ContextFile,
    /// Text recalled from earlier sessions.
    Recall,
    /// A web page or search result.
    Web,
    /// A result of an MCP tool.
    Mcp,
}

impl Origin {
    /// The reach bit rules are matched against.
    fn reach(self) -> u8 {
        match self {
            Origin::Skill => reach::SKILL,
            Origin::SkillDescription | Origin::ContextFile => reach::CONTEXT,
            Origin::Memory => reach::MEMORY,
            Origin::Recall | Origin::Web | Origin::Mcp => reach::EXTERNAL,
        }
    }

    /// Text shown verbatim in every system prompt: an invisible character there is never
    /// harmless formatting, so it counts as high.
    fn is_prompt_text(self) -> bool {
        matches!(
            self,
            Origin::Memory | Origin::ContextFile | Origin::SkillDescription
        )
    }
}

/// Which origins a rule applies to (bit set).
pub(crate) mod reach {
    pub const SKILL: u8 = 1;
    pub const CONTEXT: u8 = 2;
    pub const MEMORY: u8 = 4;
    pub const EXTERNAL: u8 = 8;
    /// Text a model reads from anywhere: injections, exfiltration commands, C2 language.
    pub const ALL: u8 = SKILL | CONTEXT | MEMORY | EXTERNAL;
    /// Our own prompt's sources (not web pages, which may quote anything).
    pub const OWN: u8 = SKILL | CONTEXT | MEMORY;
    /// A component of a combined rule: never reported on its own.
    pub const SIGNAL: u8 = 0;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Low,
    Medium,
    High,
    Critical,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    Exfiltration,
    Injection,
    Destructive,
    Persistence,
    Network,
    Obfuscation,
    Execution,
    Traversal,
    Mining,
    SupplyChain,
    PrivilegeEscalation,
    CredentialExposure,
    /// Invisible characters and encodings that make a person see something else than the model.
    Hidden,
    /// File-layout findings of a skill directory (sizes, binaries, symlinks).
    Structure,
}

impl Category {
    /// The snake_case name used in JSON and messages.
    pub fn name(self) -> &'static str {
        match self {
            Category::Exfiltration => "exfiltration",
            Category::Injection => "injection",
            Category::Destructive => "destructive",
            Category::Persistence => "persistence",
            Category::Network => "network",
            Category::Obfuscation => "obfuscation",
            Category::Execution => "execution",
            Category::Traversal => "traversal",
            Category::Mining => "mining",
            Category::SupplyChain => "supply_chain",
            Category::PrivilegeEscalation => "privilege_escalation",
            Category::CredentialExposure => "credential_exposure",
            Category::Hidden => "hidden",
            Category::Structure => "structure",
        }
    }
}

/// How worrying a text is as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Safe,
    Caution,
    Dangerous,
}

impl Level {
    /// Critical → dangerous, high → caution, anything else → safe.
    pub fn of(severity: Option<Severity>) -> Level {
        match severity {
            Some(Severity::Critical) => Level::Dangerous,
            Some(Severity::High) => Level::Caution,
            _ => Level::Safe,
        }
    }
}

/// One thing the scanner found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Stable id, e.g. `prompt_injection` or `invisible_unicode_U+200B`.
    pub id: String,
    pub category: Category,
    pub severity: Severity,
    /// 1-based line of the text; 0 when the finding is about the whole text.
    pub line: usize,
    /// What the rule means, for people and for the model.
    pub description: String,
    /// The matched text after normalisation (at most 80 characters), or the character's code.
    pub matched: String,
}

/// The result of a scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub level: Level,
    /// Sorted by line, worst first within a line.
    pub findings: Vec<Finding>,
}

impl Verdict {
    /// Builds a verdict from findings (level = worst severity).
    pub fn from_findings(mut findings: Vec<Finding>) -> Verdict {
        findings.sort_by_key(|f| (f.line, std::cmp::Reverse(f.severity)));
        let level = Level::of(findings.iter().map(|f| f.severity).max());
        Verdict { level, findings }
    }

    pub fn is_safe(&self) -> bool {
        self.level == Level::Safe
    }

    /// Findings that decide the level (high and critical).
    pub fn serious(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|f| f.severity >= Severity::High)
    }

    /// The distinct ids of the serious findings, comma-separated ("" when safe).
    pub fn reason(&self) -> String {
        let mut ids: Vec<&str> = Vec::new();
        for f in self.serious() {
            if !ids.contains(&f.id.as_str()) {
                ids.push(&f.id);
            }
        }
        ids.join(", ")
    }
}

/// Scans `text` as coming from `origin`.
pub fn scan(text: &str, origin: Origin) -> Verdict {
    let normalized = hidden::normalize(text, origin);
    let mut findings = normalized.findings;
    findings.extend(engine::run(&normalized.text, origin.reach()));
    Verdict::from_findings(findings)
}

/// Every rule id with its category and severity, in table order (docs and tests).
pub fn rule_ids() -> impl Iterator<Item = (&'static str, Category, Severity)> {
    engine::rules().map(|r| (r.id, r.category, r.severity))
}

#[cfg(test)]
#[path = "scan/tests.rs"]
mod tests;

#[cfg(test)]
#[path = "scan/header_tests.rs"]
mod header_tests;
