//! The tool lists of servers seen before (`$HERMES_HOME/cache/mcp/<server>.json`), so a new
//! process offers a known server's tools at once instead of waiting for it: start-up never waits
//! for a server whose list is known, and a session's tools array is the same from one run to the
//! next (the provider's prompt cache keeps working). A call made before the connection is up waits
//! for it (at most `connect_timeout`). The list is keyed by a fingerprint of how the server is
//! started (command, args, url, the names of env and headers — never their values), so a changed
//! entry is discovered afresh; the live list replaces the cached one once connected.

use std::path::PathBuf;

use rmcp::model::Tool as McpTool;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::Config;
use crate::config::mcp::McpServerConfig;

#[derive(Debug, Serialize, Deserialize)]
pub struct KnownList {
    pub fingerprint: String,
    pub tools: Vec<McpTool>,
    pub capabilities: Value,
}

fn path(config: &Config, server: &str) -> PathBuf {
    config
        .home
        .root()
        .join("cache")
        .join("mcp")
        .join(format!("{}.json", super::names::sanitize(server)))
}

/// How the entry starts its server, hashed (FNV-1a; values of env and headers left out).
pub fn fingerprint(entry: &McpServerConfig) -> String {
    let mut text = String::new();
    for part in [&entry.command, &entry.url, &entry.transport] {
        text.push_str(part.as_deref().unwrap_or(""));
        text.push('\0');
    }
    for a in &entry.args {
        text.push_str(a);
        text.push('\0');
    }
    for k in entry.env.keys().chain(entry.headers.keys()) {
        text.push_str(k);
        text.push('\0');
    }
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{hash:016x}")
}

/// The list saved for `server`, if it was saved for this entry.
pub fn load(config: &Config, server: &str, entry: &McpServerConfig) -> Option<KnownList> {
    let text = std::fs::read_to_string(path(config, server)).ok()?;
    let known: KnownList = serde_json::from_str(&text)
        .map_err(
            |e| tracing::warn!(server, error = %e, "ignoring an unreadable MCP tool list cache"),
        )
        .ok()?;
    (known.fingerprint == fingerprint(entry)).then_some(known)
}

/// Saves the live list (best effort: a failure only costs the next start a wait).
pub fn save(
    config: &Config,
    server: &str,
    entry: &McpServerConfig,
    tools: &[McpTool],
    capabilities: &Value,
) {
    let known = KnownList {
        fingerprint: fingerprint(entry),
        tools: tools.to_vec(),
        capabilities: capabilities.clone(),
    };
    let file = path(config, server);
    let Ok(bytes) = serde_json::to_vec(&known) else {
        return;
    };
    // Unchanged lists are not rewritten.
    if std::fs::read(&file).ok().as_deref() == Some(&bytes[..]) {
        return;
    }
    let written = file
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| crate::util::atomic_write(&file, &bytes));
    if let Err(e) = written {
        tracing::warn!(server, path = %file.display(), error = %e, "cannot save the MCP tool list");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprint_follows_the_command_not_secret_values() {
        let mut a = McpServerConfig {
            command: Some("npx".into()),
            ..Default::default()
        };
        a.env.insert("TOKEN".into(), "one".into());
        let mut b = a.clone();
        b.env.insert("TOKEN".into(), "two".into());
        assert_eq!(fingerprint(&a), fingerprint(&b));
        b.args.push("-y".into());
        assert_ne!(fingerprint(&a), fingerprint(&b));
    }
}
