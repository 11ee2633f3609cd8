//! The threat scanner shared by memory writes, the frozen memory snapshot, project context files
//! and the skills guard: prompt-injection, exfiltration and command-and-control patterns, plus
//! invisible Unicode characters that hide text from the person reading it.
//!
//! Scopes nest: `All` ⊂ `Context` ⊂ `Strict`. Memory writes use `Strict` (the text lands in
//! every future system prompt), project context files `Context`. Text is NFKC-normalised before
//! matching (full-width or ligature look-alikes become plain letters), invisible characters are
//! removed for the pattern pass (so `ig\u{200B}nore` still reads `ignore`) and reported on their
//! own from the raw text, and matching is case-insensitive.
//!
//! Unlike Python Hermes we do not cap the input at 64 KiB: the `regex` crate matches in linear
//! time, and a cap would let a payload hide after the first 64 KiB.

use std::sync::LazyLock;

use regex::{Regex, RegexSet};
use unicode_normalization::UnicodeNormalization;

/// Which pattern families apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// Injection and exfiltration patterns that are never legitimate in text the model obeys.
    All,
    /// `All` plus role hijacking and command-and-control language (project context files).
    Context,
    /// `Context` plus secrets and persistence paths (memory: injected into every prompt).
    Strict,
}

/// One thing the scanner found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreatFinding {
    /// Stable id, e.g. `prompt_injection` or `invisible_unicode_U+200B`.
    pub id: String,
    /// The narrowest scope that contains the pattern.
    pub scope: Scope,
    /// What the pattern means, for people and for the model.
    pub description: &'static str,
    /// The matched text (NFKC-normalised, at most 80 characters), or the character's code.
    pub matched: String,
}

impl ThreatFinding {
    /// True for an invisible-character finding (as opposed to a text pattern).
    pub fn is_invisible(&self) -> bool {
        self.id.starts_with(INVISIBLE_PREFIX)
    }
}

const INVISIBLE_PREFIX: &str = "invisible_unicode_";

/// Zero-width, word-joiner, BOM and bidirectional-override characters: they let text say one
/// thing to the model and show another to a person.
pub const INVISIBLE_CHARS: [char; 17] = [
    '\u{200B}', '\u{200C}', '\u{200D}', '\u{2060}', '\u{2062}', '\u{2063}', '\u{2064}', '\u{FEFF}',
    '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}', '\u{202E}', '\u{2066}', '\u{2067}', '\u{2068}',
    '\u{2069}',
];

/// Up to eight filler words between the parts of a phrase ("ignore *all of the* previous ...").
macro_rules! f {
    () => {
        r"(?:\w+\s+){0,8}"
    };
}

struct Pattern {
    id: &'static str,
    scope: Scope,
    description: &'static str,
    regex: &'static str,
}

const fn p(
    id: &'static str,
    scope: Scope,
    description: &'static str,
    regex: &'static str,
) -> Pattern {
    Pattern {
        id,
        scope,
        description,
        regex,
    }
}

use Scope::{All, Context, Strict};

/// Ids follow Python Hermes (reference §7.4); the expressions are ours.
const PATTERNS: &[Pattern] = &[
    // --- all ---------------------------------------------------------------------------------
    p(
        "prompt_injection",
        All,
        "tells the model to ignore its previous instructions",
        concat!(
            r"\bignore\s+",
            f!(),
            r"(?:previous|all|above|prior|earlier)\s+",
            f!(),
            r"(?:instructions|prompts?)\b"
        ),
    ),
    p(
        "sys_prompt_override",
        All,
        "tries to replace or override the system prompt",
        concat!(
            r"\b(?:system\s+prompt\s+override|override\s+",
            f!(),
            r"system\s+prompt|new\s+system\s+prompt\s*:)"
        ),
    ),
    p(
        "disregard_rules",
        All,
        "tells the model to disregard its rules",
        concat!(
            r"\bdisregard\s+(?:(?:all|any|your|the|of|previous|prior|above|earlier|system)\s+)+",
            r"(?:rules|instructions|guidelines|guidance|policies|prompts?)\b"
        ),
    ),
    p(
        "bypass_restrictions",
        All,
        "asks to bypass safety restrictions",
        concat!(
            r"\b(?:bypass|circumvent|evade|get\s+around)\s+(?:(?:all|any|your|the|of|these)\s+)*",
            r"(?:(?:safety|content|ethical|security)\s+)?(?:restrictions|safeguards|guardrails|filters)\b"
        ),
    ),
    p(
        "html_comment_injection",
        All,
        "hides instructions in an HTML comment",
        r"<!--[^>]*\b(?:ignore\s+(?:all|any|the|your|previous|prior)|override|disregard|system\s*:|system\s+prompt|assistant\s*:|you\s+(?:are|must|should)|do\s+not\s+tell|secretly)\b[^>]*-->",
    ),
    p(
        "hidden_div",
        All,
        "hides content from the reader with display:none",
        r#"<\w+[^>]*\bstyle\s*=\s*["'][^"']*display\s*:\s*none"#,
    ),
    p(
        "translate_execute",
        All,
        "asks to decode or translate text and then run it",
        concat!(
            r"\b(?:translate|decode)\s+",
            f!(),
            r"(?:and|then)\s+(?:execute|run|eval(?:uate)?)\b"
        ),
    ),
    p(
        "deception_hide",
        All,
        "tells the model to hide something from the user",
        r"\b(?:do\s+not|don'?t|never)\s+(?:tell|inform|notify|alert)\s+(?:the\s+|your\s+)?user\b",
    ),
    p(
        "exfil_curl",
        All,
        "sends a secret from the environment with curl",
        r"\bcurl\b[^\n]*\$\{?\w*(?:key|token|secret|password|credential|api)\w*",
    ),
    p(
        "exfil_wget",
        All,
        "sends a secret from the environment with wget",
        r"\bwget\b[^\n]*\$\{?\w*(?:key|token|secret|password|credential|api)\w*",
    ),
    p(
        "read_secrets",
        All,
        "reads a credentials file",
        r"\bcat\s+[^\n]*(?:\.env\b|credentials|\.netrc|\.pgpass|\.npmrc|\.pypirc)",
    ),
    // --- context -----------------------------------------------------------------------------
    p(
        "role_hijack",
        Context,
        "tries to give the model a new role",
        r"\byou\s+are\s+now\s+(?:a|an|the|my)\b",
    ),
    p(
        "role_pretend",
        Context,
        "asks the model to pretend to be something else",
        r"\b(?:pretend\s+(?:that\s+)?(?:you\s+are|you're|to\s+be)|act\s+as\s+(?:if\s+you\s+(?:are|were|have)|an?\s+unrestricted))\b",
    ),
    p(
        "leak_system_prompt",
        Context,
        "asks the model to reveal its system prompt",
        concat!(
            r"\b(?:reveal|print|output|show|repeat|leak|dump|disclose)\s+",
            f!(),
            r"(?:system\s+prompt|initial\s+instructions|hidden\s+instructions)\b"
        ),
    ),
    p(
        "remove_filters",
        Context,
        "asks to switch off safety filters",
        concat!(
            r"\b(?:remove|disable|turn\s+off|deactivate)\s+(?:(?:all|any|your|the|of)\s+)*",
            r"(?:(?:safety|content|ethical|moral)\s+)?(?:filters|guardrails|censorship|content\s+polic(?:y|ies))\b"
        ),
    ),
    p(
        "fake_update",
        Context,
        "poses as an instruction update from the developers or the system",
        r"\b(?:(?:new|updated|important)\s+(?:\w+\s+){0,3}(?:instructions?|polic(?:y|ies)|directives?)\s+from\s+(?:\w+\s+){0,3}(?:developers?|admins?|administrators?|system|openai|anthropic|nous)|system\s+update\s*:)",
    ),
    p(
        "identity_override",
        Context,
        "tries to rename the agent",
        r"\b(?:your\s+(?:new\s+)?name\s+is\s+now|(?:call|name)\s+yourself|you\s+will\s+now\s+be\s+(?:called|known\s+as))\b",
    ),
    p(
        "c2_node_registration",
        Context,
        "registers the machine with a remote controller",
        concat!(
            r"\bregister\s+(?:(?:this|the|your)\s+)?(?:machine|host|device|computer|system|agent|yourself)\s+",
            r"(?:as\s+an?\s+(?:\w+\s+)?)?(?:node|implant|bot|beacon|zombie)\b",
            r"|\bregister\s+(?:\w+\s+){0,2}(?:implant|zombie|beacon)s?\b"
        ),
    ),
    p(
        "c2_heartbeat",
        Context,
        "sends periodic heartbeats to a remote host",
        concat!(
            r"\b(?:send|post|emit)\s+(?:\w+\s+){0,4}heartbeats?\s+(?:\w+\s+){0,4}to\s+",
            r"(?:https?://|(?:the\s+)?(?:c2|controller|operator|command\s+server)\b)"
        ),
    ),
    p(
        "c2_task_pull",
        Context,
        "polls a remote host for commands to run",
        concat!(
            r"\b(?:poll|fetch|pull|check)\s+",
            f!(),
            r"(?:tasks|commands|orders|instructions)\s+from\s+(?:the\s+)?(?:remote|server|controller|operator|c2)\b"
        ),
    ),
    p(
        "c2_network_connect",
        Context,
        "connects back to a controller",
        r"\b(?:connect|report|beacon|phone\s+home)\s+(?:back\s+)?to\s+(?:\w+\s+){0,4}(?:c2|c&c|command\s+server|controller|operator)\b",
    ),
    p(
        "forced_action",
        Context,
        "orders the agent to register, beacon or report somewhere",
        r"\byou\s+must\s+(?:immediately\s+|now\s+|first\s+|always\s+)?(?:register\s+(?:with|at)|beacon|(?:report|connect)\s+(?:back\s+)?to\s+(?:the\s+)?(?:server|controller|operator|c2|hub|https?://|\d))",
    ),
    p(
        "anti_forensic_oneliner",
        Context,
        "erases shell history",
        r"(?:\bhistory\s+-c\b|\bunset\s+histfile\b|\bhistsize=0\b|\bhistfile=/dev/null|\brm\s+(?:-\w+\s+)*\S*\.bash_history)",
    ),
    p(
        "anti_forensic_disk",
        Context,
        "wipes files or disks beyond recovery",
        r"(?:\bshred\s+-\w|\bdd\s+if=/dev/(?:zero|u?random)\s+of=/dev/|\bwipefs\s+-a\b)",
    ),
    p(
        "env_var_unset_agent",
        Context,
        "unsets the agent's own environment variables",
        r"\bunset\s+(?:\w+\s+)*\w*(?:claude|codex|hermes|agent|openai|anthropic)\w*",
    ),
    p(
        "known_c2_framework",
        Context,
        "names a command-and-control framework",
        r"\b(?:cobalt\s*strike|metasploit|brainworm|(?:sliver|havoc|mythic)\s+(?:c2|implants?|beacons?|teamserver|listeners?|framework))\b",
    ),
    p(
        "c2_explicit",
        Context,
        "talks about a C2 server or channel",
        r"(?:\bc2\s+(?:servers?|channels?|infrastructure|nodes?|endpoints?|beacons?)\b|\bc&c\b)",
    ),
    p(
        "c2_explicit_long",
        Context,
        "talks about command and control",
        r"\bcommand[\s-]+and[\s-]+control\b",
    ),
    // --- strict ------------------------------------------------------------------------------
    p(
        "send_to_url",
        Strict,
        "sends data to a URL",
        r"\b(?:send|post|upload|transmit|forward|exfiltrate)\s+(?:\S+\s+){0,8}to\s+https?://",
    ),
    p(
        "context_exfil",
        Strict,
        "sends the conversation, context or memory somewhere",
        concat!(
            r"\b(?:send|share|upload|post|leak|exfiltrate|transmit|forward)\s+",
            f!(),
            r"(?:conversation|chat\s+history|context|system\s+prompt|memory|memories)\s+(?:\w+\s+){0,4}to\b"
        ),
    ),
    p(
        "ssh_backdoor",
        Strict,
        "touches SSH authorized_keys (persistent access)",
        r"\bauthorized_keys\b",
    ),
    p(
        "ssh_access",
        Strict,
        "refers to the user's SSH directory",
        r"(?:~|\$home|\$\{home\})/\.ssh\b",
    ),
    p(
        "hermes_env",
        Strict,
        "refers to hermes' secrets file",
        r"\.hermes/\.env\b",
    ),
    p(
        "agent_config_mod",
        Strict,
        "changes another agent's instruction file",
        r"\b(?:edit|modify|change|overwrite|write\s+to|append\s+to|update|replace)\s+(?:\S+\s+){0,8}(?:agents\.md|claude\.md|\.cursorrules|\.clinerules)",
    ),
    p(
        "hermes_config_mod",
        Strict,
        "changes hermes' own configuration or identity",
        r"\b(?:edit|modify|change|overwrite|write\s+to|append\s+to|update|replace)\s+(?:\S+\s+){0,8}(?:\.hermes/config\.yaml|soul\.md)",
    ),
    p(
        "hardcoded_secret",
        Strict,
        "contains what looks like a secret value",
        r#"\b(?:api[_-]?key|token|secret|password|passwd)\s*[:=]\s*["']?[a-z0-9_\-./+]{20,}"#,
    ),
];

struct Compiled {
    set: RegexSet,
    each: Vec<Regex>,
}

static COMPILED: LazyLock<Compiled> = LazyLock::new(|| {
    let sources: Vec<String> = PATTERNS
        .iter()
        .map(|p| format!("(?i){}", p.regex))
        .collect();
    // The patterns are constants covered by the tests below; a failure here is a programming
    // error in this file, and a scanner that silently scanned nothing would be worse.
    #[allow(clippy::expect_used)]
    let set = RegexSet::new(&sources).expect("threat patterns compile");
    #[allow(clippy::expect_used)]
    let each = sources
        .iter()
        .map(|s| Regex::new(s).expect("threat pattern compiles"))
        .collect();
    Compiled { set, each }
});

/// Every finding for `text` in `scope`: invisible characters first (in order of appearance,
/// each character once), then text patterns in table order.
pub fn scan(text: &str, scope: Scope) -> Vec<ThreatFinding> {
    let mut out: Vec<ThreatFinding> = invisible_chars(text)
        .into_iter()
        .map(|c| ThreatFinding {
            id: invisible_id(c),
            scope: All,
            description: "invisible unicode character (hides text from the reader)",
            matched: format!("U+{:04X}", c as u32),
        })
        .collect();
    out.extend(scan_patterns(text, scope));
    out
}

/// Text patterns only (no invisible-character check).
pub fn scan_patterns(text: &str, scope: Scope) -> Vec<ThreatFinding> {
    let normalized = normalize(text);
    let compiled = &*COMPILED;
    compiled
        .set
        .matches(&normalized)
        .into_iter()
        .filter(|&i| PATTERNS[i].scope <= scope)
        .map(|i| {
            let pat = &PATTERNS[i];
            let matched = compiled.each[i]
                .find(&normalized)
                .map(|m| crate::util::truncate_chars(m.as_str(), 80).to_string())
                .unwrap_or_default();
            ThreatFinding {
                id: pat.id.to_string(),
                scope: pat.scope,
                description: pat.description,
                matched,
            }
        })
        .collect()
}

/// The distinct invisible characters in `text`, in order of first appearance.
pub fn invisible_chars(text: &str) -> Vec<char> {
    let mut found = Vec::new();
    for c in text.chars() {
        if INVISIBLE_CHARS.contains(&c) && !found.contains(&c) {
            found.push(c);
        }
    }
    found
}

/// `invisible_unicode_U+200B` for U+200B.
pub fn invisible_id(c: char) -> String {
    format!("{INVISIBLE_PREFIX}U+{:04X}", c as u32)
}

/// True when `text` has any finding in `scope` (cheaper than `scan` when no details are needed).
pub fn is_clean(text: &str, scope: Scope) -> bool {
    invisible_chars(text).is_empty() && {
        let normalized = normalize(text);
        COMPILED
            .set
            .matches(&normalized)
            .into_iter()
            .all(|i| PATTERNS[i].scope > scope)
    }
}

/// The ids of `findings`, comma-separated (for notices and errors).
pub fn ids(findings: &[ThreatFinding]) -> String {
    findings
        .iter()
        .map(|f| f.id.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every pattern id with its scope, in table order (for docs and the skills guard's report).
pub fn pattern_ids() -> impl Iterator<Item = (&'static str, Scope)> {
    PATTERNS.iter().map(|p| (p.id, p.scope))
}

/// NFKC with the invisible characters removed.
fn normalize(text: &str) -> String {
    text.nfkc()
        .filter(|c| !INVISIBLE_CHARS.contains(c))
        .collect()
}

#[cfg(test)]
#[path = "scan_tests.rs"]
mod tests;
