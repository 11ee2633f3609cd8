//! Rules for secrets written into text (token shapes of the common providers, private keys,
//! `password = "…"` assignments) and the memory-only rules: a memory entry reaches every future
//! system prompt, so there even a mention of `~/.ssh`, `authorized_keys`, `~/.hermes/.env` or an
//! instruction to edit AGENTS.md / config.yaml is refused — the same words in a skill about SSH
//! setup are ordinary.
//!
//! Token shapes are checked against placeholders (`sk-xxxxxxxx…`, `ghp_your_token_here`) so
//! documentation examples do not count as leaked keys.

use super::engine::{Check, Checker, Rule};
use super::reach::{CONTEXT, MEMORY, OWN};
use super::{Category as C, Severity as S};

const REAL: Option<Checker> = Some(real);

fn real(matched: &[u8], _before: &[u8], _after: &[u8]) -> Check {
    if looks_real(matched) {
        Check::Keep
    } else {
        Check::Drop
    }
}

pub(super) const RULES: &[Rule] = &[
    rule!(
        "embedded_private_key",
        Critical,
        CredentialExposure,
        OWN,
        r"-----BEGIN\s+(?:RSA\s+|EC\s+|OPENSSH\s+|DSA\s+|PGP\s+|ENCRYPTED\s+)?PRIVATE\s+KEY(?:\s+BLOCK)?-----\s*\n\s*[A-Za-z0-9+/=]{40,}",
        "an embedded private key"
    ),
    rule!(
        "github_token_leaked",
        Critical,
        CredentialExposure,
        OWN,
        r"(?-i:\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}\b|\bgithub_pat_[A-Za-z0-9_]{22,})",
        "a GitHub token",
        REAL
    ),
    rule!(
        "openai_key_leaked",
        Critical,
        CredentialExposure,
        OWN,
        r"(?-i:\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,})",
        "an OpenAI-style API key",
        REAL
    ),
    rule!(
        "anthropic_key_leaked",
        Critical,
        CredentialExposure,
        OWN,
        r"(?-i:\bsk-ant-[A-Za-z0-9_-]{20,})",
        "an Anthropic API key",
        REAL
    ),
    rule!(
        "aws_access_key_leaked",
        Critical,
        CredentialExposure,
        OWN,
        r"(?-i:\b(?:AKIA|ASIA)[0-9A-Z]{16}\b)",
        "an AWS access key id",
        REAL
    ),
    rule!(
        "provider_token_leaked",
        Critical,
        CredentialExposure,
        OWN,
        r"(?-i:\bxox[abprs]-[A-Za-z0-9-]{10,}|\bAIza[0-9A-Za-z_-]{35}\b|\bhf_[A-Za-z0-9]{30,}\b|\b(?:sk|rk)_live_[A-Za-z0-9]{20,}|\bglpat-[A-Za-z0-9_-]{20}\b|\b\d{8,10}:AA[A-Za-z0-9_-]{33}\b|\bnpm_[A-Za-z0-9]{36}\b)",
        "an API token (Slack, Google, Hugging Face, Stripe, GitLab, Telegram or npm)",
        REAL
    ),
    rule!(
        "hardcoded_secret",
        Critical,
        CredentialExposure,
        OWN,
        r#"\b(?:api[_-]?key|secret|token|password|passwd|access[_-]?key)\b["']?\s*[:=]\s*["'][A-Za-z0-9_\-+/=.]{20,}["']"#,
        "a secret value written into the text",
        REAL
    ),
    // ── memory (and context files): mentions that have no place in every prompt ──
    rule!(
        "hardcoded_secret_bare",
        High,
        CredentialExposure,
        MEMORY,
        r"\b(?:api[_-]?key|token|secret|password|passwd)\s+(?:is\s+)?[:=]?\s*[a-z0-9_\-./+]{20,}",
        "what looks like a secret value",
        REAL
    ),
    rule!(
        "ssh_backdoor",
        High,
        Persistence,
        MEMORY,
        r"\bauthorized_keys\b",
        "touches SSH authorized_keys (persistent access)"
    ),
    rule!(
        "ssh_access",
        High,
        Exfiltration,
        MEMORY,
        r"(?:~|\$home|\$\{home\}|/root|/home/[\w.-]+)/\.ssh\b",
        "refers to the user's SSH directory"
    ),
    rule!(
        "hermes_env",
        High,
        Exfiltration,
        MEMORY,
        r"\.hermes/\.env\b",
        "refers to Hermes' secrets file"
    ),
    rule!(
        "agent_config_mod",
        High,
        Persistence,
        CONTEXT | MEMORY,
        r"\b(?:edit|modify|change|overwrite|write\s+to|append\s+to|update|replace)\s+(?:\S+\s+){0,8}?(?:agents\.md|claude\.md|\.cursorrules|\.clinerules)\b",
        "changes another agent's instruction file"
    ),
    rule!(
        "hermes_config_mod",
        High,
        Persistence,
        CONTEXT | MEMORY,
        r"\b(?:edit|modify|change|overwrite|write\s+to|append\s+to|update|replace)\s+(?:\S+\s+){0,8}?(?:\.hermes/config\.yaml|soul\.md|\.hermes/\.env)",
        "changes Hermes' own configuration or identity"
    ),
];

/// False for documentation placeholders: long runs of one character, or words like "your",
/// "example", "xxxx" inside the value.
pub(super) fn looks_real(matched: &[u8]) -> bool {
    // `"token": "MATTERMOST_BOT_TOKEN"`: the value names a variable, it is not one.
    let value = matched
        .rsplit(|b| matches!(b, b'"' | b'\'' | b'=' | b':' | b' '))
        .find(|part| !part.is_empty())
        .unwrap_or(matched);
    if value.contains(&b'_')
        && value
            .iter()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || *b == b'_')
    {
        return false;
    }
    let lower = matched.to_ascii_lowercase();
    let text = String::from_utf8_lossy(&lower);
    const PLACEHOLDERS: &[&str] = &[
        "xxxx",
        "your",
        "example",
        "placeholder",
        "dummy",
        "fake",
        "redacted",
        "here",
        "1234",
        "abcd",
        "test",
        "sample",
        "changeme",
        "<",
        "...",
        "***",
    ];
    if PLACEHOLDERS.iter().any(|p| text.contains(p)) {
        return false;
    }
    // A run of 6 identical characters is a mask, not a key.
    let mut run = 1;
    for w in lower.windows(2) {
        run = if w[0] == w[1] { run + 1 } else { 1 };
        if run >= 6 {
            return false;
        }
    }
    true
}
