//! What memory asks of the shared scanner (`security::scan`, origin `Memory`): an entry is
//! injected into every future system prompt, so anything above `safe` is refused when written
//! and left out of the prompt when it is already in the file (hand edits, older versions).
//!
//! Besides the scanner's findings (injections in any spelling, hidden characters, exfiltration,
//! token shapes), memory refuses the exact value of any secret hermes has loaded (API keys from
//! `.env` or the environment): a key copied into memory would otherwise reach every prompt and
//! transcript.

use crate::security::scan::{self, Origin, Verdict};

/// The secrets hermes has loaded, as (what it is, value); `Debug` never shows the values.
#[derive(Clone, Default)]
pub struct LoadedSecrets(pub Vec<(String, String)>);

impl LoadedSecrets {
    /// The secret set of `security::secrets`, named by environment variable where it is one.
    pub fn from_config(config: &crate::config::Config) -> Self {
        let named: Vec<(String, String)> = config
            .env
            .iter()
            .filter(|(_, value)| !value.is_empty())
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect();
        let pairs = crate::security::secrets::collect(config)
            .into_iter()
            .map(|value| {
                let name = named
                    .iter()
                    .find(|(_, v)| *v == value)
                    .map(|(n, _)| n.clone())
                    .unwrap_or_else(|| "a key from auth.json or config.yaml".to_string());
                (name, value)
            })
            .collect();
        LoadedSecrets(pairs)
    }
}

impl std::fmt::Debug for LoadedSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LoadedSecrets({} values)", self.0.len())
    }
}

/// Values shorter than this are not treated as secrets (they would match ordinary words).
const MIN_SECRET_CHARS: usize = 8;

/// The scanner's verdict for one memory entry.
pub fn verdict(text: &str) -> Verdict {
    scan::scan(text, Origin::Memory)
}

/// Why `content` may not be stored, in words the model can act on; `None` when it may.
/// `secrets` are the secrets hermes has loaded (API keys, tokens).
pub fn refusal(content: &str, secrets: &LoadedSecrets) -> Option<String> {
    if let Some(name) = loaded_secret_in(content, &secrets.0) {
        return Some(format!(
            "Blocked: content contains the value of {name}, a secret hermes has loaded. Memory is injected into every \
             future system prompt, so it must never hold keys or tokens; refer to the secret by its variable name \
             instead. Nothing was written."
        ));
    }
    let v = verdict(content);
    let f = v.serious().next()?;
    Some(format!(
        "Blocked: content matches threat pattern(s) {} ({}: \"{}\"). Memory is injected into every future system \
         prompt, so it must not carry instructions, injections, hidden characters, secrets or exfiltration \
         payloads. Nothing was written.",
        v.reason(),
        f.description,
        f.matched
    ))
}

/// The notice that replaces a flagged entry in the frozen prompt; `None` when the entry is fine.
pub fn blocked_notice(entry: &str, file_name: &str) -> Option<String> {
    let v = verdict(entry);
    (!v.is_safe()).then(|| {
        format!(
            "[BLOCKED: an entry of {file_name} matched threat pattern(s) {} and is left out of this prompt; \
             delete it with memory(action=remove).]",
            v.reason()
        )
    })
}

/// The name of the loaded secret whose value appears in `content` (never the value itself).
fn loaded_secret_in<'a>(content: &str, secrets: &'a [(String, String)]) -> Option<&'a str> {
    secrets
        .iter()
        .filter(|(_, value)| value.chars().count() >= MIN_SECRET_CHARS)
        .find(|(_, value)| content.contains(value.as_str()))
        .map(|(name, _)| name.as_str())
}

#[cfg(test)]
#[path = "scan_tests.rs"]
mod tests;
