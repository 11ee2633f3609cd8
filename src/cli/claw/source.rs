//! Finding an OpenClaw home and reading what the migration needs from it: the home directory
//! (`~/.openclaw`, or the legacy `~/.clawdbot` / `~/.moltbot` Python Hermes also checks), its
//! config (`openclaw.json`, legacy `clawdbot.json` / `moltbot.json`), its `.env`, and the
//! agent workspace (`agents.defaults.workspace`, else `workspace/`, `workspace.default/`,
//! `workspace-main/`, `workspace-assistant/` — the names OpenClaw has used over time).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::ClawError;

/// Home directory names, newest first (Python Hermes `hermes_cli/claw.py`).
const HOME_NAMES: &[&str] = &[".openclaw", ".clawdbot", ".moltbot"];
/// Config file names, newest first.
const CONFIG_NAMES: &[&str] = &["openclaw.json", "clawdbot.json", "moltbot.json"];
/// Workspace directory names inside the home, in the order OpenClaw's history suggests.
const WORKSPACE_NAMES: &[&str] = &[
    "workspace",
    "workspace.default",
    "workspace-main",
    "workspace-assistant",
];

/// One OpenClaw home as found on disk.
#[derive(Debug, Clone)]
pub struct OpenClawHome {
    pub root: PathBuf,
    /// The agent workspace (SOUL.md, USER.md, MEMORY.md, memory/, skills/), if there is one.
    pub workspace: Option<PathBuf>,
    /// The config file that was read, if any.
    pub config_path: Option<PathBuf>,
    /// Its contents (an empty object when missing or unreadable).
    pub config: Value,
    /// Why the config could not be read, when it exists but is not plain JSON.
    pub config_problem: Option<String>,
    /// `KEY=value` pairs of the home's `.env`.
    pub env: Vec<(String, String)>,
}

impl OpenClawHome {
    /// `--source DIR` when given, else the first of `~/.openclaw`, `~/.clawdbot`, `~/.moltbot`.
    pub fn locate(source: Option<&Path>, home: Option<&Path>) -> Result<Self, ClawError> {
        let root = match source {
            Some(dir) if dir.is_dir() => dir.to_path_buf(),
            Some(dir) => return Err(ClawError::NoSource(dir.display().to_string())),
            None => {
                let Some(home) = home else {
                    return Err(ClawError::NoSource(
                        "~/.openclaw (HOME is not set)".to_string(),
                    ));
                };
                let candidates: Vec<PathBuf> = HOME_NAMES.iter().map(|n| home.join(n)).collect();
                match candidates.iter().find(|c| c.is_dir()) {
                    Some(dir) => dir.clone(),
                    None => {
                        return Err(ClawError::NoSource(
                            candidates
                                .iter()
                                .map(|c| c.display().to_string())
                                .collect::<Vec<_>>()
                                .join(", "),
                        ));
                    }
                }
            }
        };
        Ok(Self::read(root, home))
    }

    fn read(root: PathBuf, home: Option<&Path>) -> Self {
        let mut config = Value::Object(Default::default());
        let mut config_path = None;
        let mut config_problem = None;
        if let Some(path) = CONFIG_NAMES
            .iter()
            .map(|n| root.join(n))
            .find(|p| p.is_file())
        {
            match std::fs::read_to_string(&path)
                .map_err(|e| e.to_string())
                .and_then(|t| serde_json::from_str::<Value>(&t).map_err(|e| e.to_string()))
            {
                Ok(v) if v.is_object() => config = v,
                Ok(_) => config_problem = Some("it is not a JSON object".to_string()),
                // OpenClaw accepts JSON5 (comments, trailing commas); we read plain JSON only.
                Err(e) => config_problem = Some(format!("it is not plain JSON ({e})")),
            }
            config_path = Some(path);
        }
        let configured = config
            .pointer("/agents/defaults/workspace")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| expand_tilde(s, home));
        let workspace = configured
            .into_iter()
            .chain(WORKSPACE_NAMES.iter().map(|n| root.join(n)))
            .find(|p| p.is_dir());
        let env = read_env(&root.join(".env"));
        OpenClawHome {
            root,
            workspace,
            config_path,
            config,
            config_problem,
            env,
        }
    }

    /// A file or directory of the workspace, if it exists.
    pub fn workspace_path(&self, rel: &str) -> Option<PathBuf> {
        self.workspace
            .as_ref()
            .map(|w| w.join(rel))
            .filter(|p| p.exists())
    }

    /// The config file's name for the report (`openclaw.json`).
    pub fn config_name(&self) -> String {
        self.config_path
            .as_ref()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "openclaw.json".to_string())
    }

    /// A value of the home's `.env`.
    pub fn env_value(&self, key: &str) -> Option<&str> {
        self.env
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.trim().is_empty())
    }
}

fn expand_tilde(path: &str, home: Option<&Path>) -> PathBuf {
    match (path.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ if path == "~" => home.map(Path::to_path_buf).unwrap_or_default(),
        _ => PathBuf::from(path),
    }
}

/// `KEY=value` lines (quotes removed); comments, blanks and malformed lines are ignored. An
/// unreadable file reads as empty: the keys in it are then reported as not found.
fn read_env(path: &Path) -> Vec<(String, String)> {
    let Ok(iter) = dotenvy::from_path_iter(path) else {
        return Vec::new();
    };
    iter.filter_map(Result::ok).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_names_and_configured_workspace() {
        let home = tempfile::tempdir().unwrap();
        let root = home.path().join(".clawdbot");
        std::fs::create_dir_all(root.join("workspace-main")).unwrap();
        std::fs::create_dir_all(home.path().join("clawd")).unwrap();
        std::fs::write(
            root.join("clawdbot.json"),
            r#"{"agents":{"defaults":{"workspace":"~/clawd"}}}"#,
        )
        .unwrap();
        let found = OpenClawHome::locate(None, Some(home.path())).unwrap();
        assert_eq!(found.root, root);
        assert_eq!(found.workspace, Some(home.path().join("clawd")));
        assert_eq!(found.config_name(), "clawdbot.json");
    }

    #[test]
    fn json5_config_is_reported_not_fatal() {
        let home = tempfile::tempdir().unwrap();
        let root = home.path().join(".openclaw");
        std::fs::create_dir_all(root.join("workspace")).unwrap();
        std::fs::write(root.join("openclaw.json"), "{ // comment\n a: 1, }").unwrap();
        let found = OpenClawHome::locate(None, Some(home.path())).unwrap();
        assert!(found.config_problem.unwrap().contains("not plain JSON"));
        assert_eq!(found.workspace, Some(root.join("workspace")));
    }

    #[test]
    fn missing_home_names_every_place_looked() {
        let home = tempfile::tempdir().unwrap();
        let err = OpenClawHome::locate(None, Some(home.path()))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(".openclaw") && err.contains(".moltbot"),
            "{err}"
        );
    }
}
