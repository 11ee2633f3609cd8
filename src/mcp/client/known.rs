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
//! removed once the list is saved under the new name. At most `KEEP_PER_NAME` lists are kept per
//! name (the most recently written), and `hermes mcp remove` forgets all of a server's lists.

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
    prune(config, server, KEEP_PER_NAME);
}

/// Lists kept per server name: an editor's server and a config server may share a name, and
/// a command changed back and forth should not wait twice; older lists (a command edited
/// many times) go.
const KEEP_PER_NAME: usize = 4;

/// The cache files of `server` (every fingerprint, and the list kept by name alone).
fn files_of(config: &Config, server: &str) -> Vec<PathBuf> {
    let name = super::names::sanitize(server);
    let Ok(entries) = std::fs::read_dir(dir(config)) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let Some(stem) = p
                .file_name()
                .and_then(|f| f.to_str()?.strip_suffix(".json"))
            else {
                return false;
            };
            match stem.rsplit_once('.') {
                Some((prefix, hash)) => {
                    prefix == name
                        && hash.len() == 16
                        && hash.bytes().all(|b| b.is_ascii_hexdigit())
                }
                None => stem == name,
            }
        })
        .collect()
}

/// Removes all but the `keep` most recently written lists of `server`.
fn prune(config: &Config, server: &str, keep: usize) {
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = files_of(config, server)
        .into_iter()
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
        .collect();
    if files.len() <= keep {
        return;
    }
    files.sort_by_key(|f| std::cmp::Reverse(f.0));
    for (_, old) in files.into_iter().skip(keep) {
        let _ = std::fs::remove_file(old);
    }
}

/// Forgets every list kept for `server` (`hermes mcp remove`). Names that sanitise alike
/// (`a-b`, `a_b`) share files: the other server only waits for its list once more.
pub fn forget(config: &Config, server: &str) {
    for file in files_of(config, server) {
        if let Err(e) = std::fs::remove_file(&file) {
            tracing::warn!(server, path = %file.display(), error = %e, "cannot remove an MCP tool list cache");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_of_a_name_are_capped_and_forgotten_with_the_server() {
        let home = tempfile::tempdir().unwrap();
        let config = Config::defaults(
            crate::config::HermesHome::new(home.path()),
            crate::config::EnvVars::default(),
        );
        let entry = |cmd: &str| McpServerConfig {
            command: Some(cmd.into()),
            ..Default::default()
        };
        let long_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3_600);
        for i in 0..6 {
            save(
                &config,
                "t",
                &entry(&format!("v{i}")),
                &[],
                &serde_json::json!({}),
            );
            // Older saves are older on disk too, whatever the clock's resolution.
            let file = path(&config, "t", &entry(&format!("v{i}")));
            if file.exists() {
                let age = long_ago + std::time::Duration::from_secs(i);
                std::fs::File::options()
                    .write(true)
                    .open(&file)
                    .unwrap()
                    .set_modified(age)
                    .unwrap();
            }
        }
        save(&config, "other", &entry("x"), &[], &serde_json::json!({}));
        assert_eq!(files_of(&config, "t").len(), KEEP_PER_NAME);
        assert!(
            load(&config, "t", &entry("v5")).is_some(),
            "the newest stays"
        );
        assert!(
            load(&config, "t", &entry("v0")).is_none(),
            "the oldest goes"
        );
        forget(&config, "t");
        assert!(files_of(&config, "t").is_empty());
        assert!(
            load(&config, "other", &entry("x")).is_some(),
            "another server's list stays"
        );
    }

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
