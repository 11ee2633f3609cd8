//! The tool lists of servers seen before (`$HERMES_HOME/cache/mcp/<server>.<fingerprint>.json`), so a new
//! process offers a known server's tools at once instead of waiting for it: start-up never waits
//! for a server whose list is known, and a session's tools array is the same from one run to the
//! next (the provider's prompt cache keeps working). A call made before the connection is up waits
//! for it (at most `connect_timeout`). The list is keyed by a fingerprint of how the server is
//! started (command, args, url, the names of env and headers — never their values), so a changed
//! entry is discovered afresh; the live list replaces the cached one once connected. The
//! fingerprint is in the file name too: two servers sharing a name (an editor's per-session one
//! and a config one) each keep their own list instead of overwriting each other's. A list saved
//! under the name alone (`<server>.json`, before) is still read when its fingerprint matches, and
//! removed once the list is saved under the new name.

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

fn dir(config: &Config) -> PathBuf {
    config.home.root().join("cache").join("mcp")
}

/// Where `server`'s list is kept for this entry.
fn path(config: &Config, server: &str, entry: &McpServerConfig) -> PathBuf {
    dir(config).join(format!(
        "{}.{}.json",
        super::names::sanitize(server),
        fingerprint(entry)
    ))
}

/// Where lists were kept before they were keyed by fingerprint (by name alone).
fn legacy_path(config: &Config, server: &str) -> PathBuf {
    dir(config).join(format!("{}.json", super::names::sanitize(server)))
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
    read(&path(config, server, entry), server, entry)
        .or_else(|| read(&legacy_path(config, server), server, entry))
}

/// The list in `file` if it is readable and was saved for `entry` (a list saved for another
/// entry of the same name is not this server's).
fn read(file: &std::path::Path, server: &str, entry: &McpServerConfig) -> Option<KnownList> {
    let text = std::fs::read_to_string(file).ok()?;
    let known: KnownList = serde_json::from_str(&text)
        .map_err(|e| {
            tracing::warn!(server, path = %file.display(), error = %e, "ignoring an unreadable MCP tool list cache")
        })
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
    let file = path(config, server, entry);
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
        return;
    }
    // The same list under the old name is not needed any more; another entry's is left for it.
    let legacy = legacy_path(config, server);
    if read(&legacy, server, entry).is_some() {
        let _ = std::fs::remove_file(&legacy);
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

    #[test]
    fn a_list_saved_under_the_name_alone_is_read_then_moved() {
        let home = tempfile::tempdir().unwrap();
        let config = Config::defaults(
            crate::config::HermesHome::new(home.path()),
            crate::config::EnvVars::default(),
        );
        let entry = McpServerConfig {
            command: Some("srv".into()),
            ..Default::default()
        };
        let old = KnownList {
            fingerprint: fingerprint(&entry),
            tools: Vec::new(),
            capabilities: serde_json::json!({"tools": {}}),
        };
        let legacy = legacy_path(&config, "t");
        std::fs::create_dir_all(legacy.parent().unwrap()).unwrap();
        std::fs::write(&legacy, serde_json::to_vec(&old).unwrap()).unwrap();
        assert!(load(&config, "t", &entry).is_some());
        // Another entry named `t` does not take it.
        let other = McpServerConfig {
            command: Some("other".into()),
            ..Default::default()
        };
        assert!(load(&config, "t", &other).is_none());
        // Garbage is ignored, not an error.
        std::fs::write(path(&config, "t", &other), "{not json").unwrap();
        assert!(load(&config, "t", &other).is_none());

        save(&config, "t", &entry, &[], &serde_json::json!({}));
        assert!(!legacy.exists());
        assert!(path(&config, "t", &entry).exists());
        assert!(load(&config, "t", &entry).is_some());
    }
}
