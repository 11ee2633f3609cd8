//! Secret redaction for anything that may reach a log, a transcript or an error message.

use regex::Regex;
use std::sync::LazyLock;

static SECRET_PATTERNS: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        // Provider keys: OpenAI, Anthropic, OpenRouter, generic sk- keys.
        r"sk-[A-Za-z0-9_\-]{16,}",
        // GitHub tokens.
        r"gh[pousr]_[A-Za-z0-9]{20,}",
        // Slack tokens.
        r"xox[abprs]-[A-Za-z0-9\-]{10,}",
        // AWS access key ids.
        r"AKIA[0-9A-Z]{16}",
        // Telegram bot tokens.
        r"\b[0-9]{8,10}:[A-Za-z0-9_\-]{35}\b",
        // Bearer headers.
        r"(?i)bearer\s+[A-Za-z0-9._\-]{12,}",
        // key=value / "key": "value" forms.
        r#"(?i)((?:api[_-]?key|token|secret|password|authorization)["']?\s*[:=]\s*["']?)[^\s"',}]{8,}"#,
    ]
    .iter()
    .filter_map(|p| Regex::new(p).ok())
    .collect()
});

/// Replaces anything that looks like a credential with `[REDACTED]`.
pub fn redact(text: &str) -> String {
    let mut out = text.to_string();
    for (i, re) in SECRET_PATTERNS.iter().enumerate() {
        // The last pattern keeps its `key=` prefix so the text still reads.
        out = if i + 1 == SECRET_PATTERNS.len() {
            re.replace_all(&out, "${1}[REDACTED]").into_owned()
        } else {
            re.replace_all(&out, "[REDACTED]").into_owned()
        };
    }
    out
}

/// Redacts one known secret value (e.g. the configured API key) wherever it appears.
pub fn redact_value(text: &str, secret: &str) -> String {
    if secret.len() < 6 {
        return text.to_string();
    }
    text.replace(secret, "[REDACTED]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_hidden() {
        let s = redact("Incorrect API key provided: sk-proj-abcdefghijklmnopqrstuvwx.");
        assert!(!s.contains("abcdefghijklmnop"), "{s}");
        assert!(s.contains("[REDACTED]"));
        let s = redact(r#"{"api_key": "supersecretvalue123"}"#);
        assert!(!s.contains("supersecretvalue123"), "{s}");
        assert!(s.contains("api_key"));
        assert_eq!(redact("nothing here"), "nothing here");
    }

    #[test]
    fn known_value_is_hidden() {
        assert_eq!(redact_value("key=abcdef123", "abcdef123"), "key=[REDACTED]");
    }
}
