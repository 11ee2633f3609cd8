//! Python Hermes's written defaults must not switch hermes's boundary off.
//!
//! Python Hermes 0.19 (and every earlier `save_config` that did not strip defaults) writes each
//! default into config.yaml, so a migrated file carries `terminal.backend: local`,
//! `checkpoints.enabled: false` and `approvals.mode: smart` although the user never chose them.
//! Read literally they would turn off our sandbox, our checkpoints and the human's say over
//! dangerous commands (in smart mode a model's APPROVE runs one unasked). So in a file Python
//! Hermes wrote (it has `_config_version`) such a value equal to Python's default is treated as
//! unset and hermes's default applies; one stderr line and `hermes doctor` say so.
//!
//! A user who does want one of them says so with `hermes config set KEY VALUE`, which lists the
//! key under [`CHOSEN_KEY`] (a hermes-only top-level list). Why this mechanism: Python Hermes
//! accepts unknown top-level keys without a warning and keeps them when it saves (its loader
//! deep-merges the file over its defaults; `validate_config_structure` only flags provider-like
//! names), and it bridges only top-level *scalars* into the environment, so a list is inert there.
//! Dropping `_config_version` instead would make Python Hermes treat the file as a legacy schema
//! and migrate it on its next start.

use std::path::Path;

use serde_json::Value;

use super::ConfigError;
use super::file::ConfigFile;

/// The boundary keys whose Python Hermes 0.19 default is weaker than hermes's, with that default
/// as Python writes it. Others were checked against the generated key table and the fixture:
/// `approvals.cron_mode: deny`, `delegation.subagent_auto_approve: false`,
/// `security.redact_secrets: true` are as strict as ours.
pub const BOUNDARY_DEFAULTS: &[(&str, &str)] = &[
    // Ours: the sandbox where the kernel allows it.
    ("terminal.backend", "local"),
    // Ours: on, so every file change the model makes can be rolled back.
    ("checkpoints.enabled", "false"),
    // Ours: manual; smart lets the auxiliary model approve a dangerous command.
    ("approvals.mode", "smart"),
];

/// The hermes-only key listing boundary keys the user chose although they equal Python's default.
pub const CHOSEN_KEY: &str = "hermes_explicit";

/// Whether `value` (as config.yaml holds it) is Python's default for the boundary key `key`.
pub fn is_python_default(key: &str, value: &Value) -> bool {
    let text = match value {
        Value::String(s) => s.trim().to_ascii_lowercase(),
        Value::Bool(b) => b.to_string(),
        _ => return false,
    };
    let text = match text.as_str() {
        "no" | "off" => "false".to_string(),
        _ => text,
    };
    BOUNDARY_DEFAULTS
        .iter()
        .any(|(k, default)| *k == key && *default == text)
}

/// Whether `key` is one of [`BOUNDARY_DEFAULTS`].
pub fn is_boundary_key(key: &str) -> bool {
    BOUNDARY_DEFAULTS.iter().any(|(k, _)| *k == key)
}

fn lookup<'a>(doc: &'a Value, key: &str) -> Option<&'a Value> {
    key.split('.').try_fold(doc, |v, k| v.get(k))
}

/// The keys listed under [`CHOSEN_KEY`] in `doc`.
pub fn chosen(doc: &Value) -> Vec<String> {
    match doc.get(CHOSEN_KEY) {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

/// In a document Python Hermes wrote, clears from `file` each boundary value equal to Python's
/// default that the user did not confirm under [`CHOSEN_KEY`], so hermes's default applies.
/// Returns what was set aside (`terminal.backend: local`, ...), in table order.
pub(super) fn set_aside(
    file: &mut ConfigFile,
    doc: &Value,
    path: &Path,
) -> Result<Vec<String>, ConfigError> {
    let confirmed = chosen(doc);
    if let Some(unknown) = confirmed.iter().find(|k| !is_boundary_key(k)) {
        let known: Vec<&str> = BOUNDARY_DEFAULTS.iter().map(|(k, _)| *k).collect();
        return Err(ConfigError::Invalid {
            path: path.to_path_buf(),
            message: format!(
                "`{CHOSEN_KEY}` lists `{unknown}`, which is not one of {}",
                known.join(", ")
            ),
        });
    }
    if file.config_version.is_none() {
        // Written by hand or by hermes: every value is the user's.
        return Ok(Vec::new());
    }
    let mut set_aside = Vec::new();
    for (key, default) in BOUNDARY_DEFAULTS {
        if confirmed.iter().any(|k| k == key)
            || !lookup(doc, key).is_some_and(|v| is_python_default(key, v))
        {
            continue;
        }
        match *key {
            "terminal.backend" => file.terminal.backend = None,
            "checkpoints.enabled" => file.checkpoints.enabled = None,
            "approvals.mode" => file.approvals.mode = None,
            _ => continue,
        }
        set_aside.push(format!("{key}: {default}"));
    }
    Ok(set_aside)
}

/// The one stderr line for what [`set_aside`] returned, if anything.
pub fn warning(set_aside: &[String]) -> Option<String> {
    let first = set_aside.first()?;
    let example = first.replacen(": ", " ", 1);
    Some(format!(
        "config.yaml: Python Hermes defaults set aside (hermes's safer default applies): {}; \
         to keep one, run `hermes config set {example}`",
        set_aside.join(", ")
    ))
}

/// The new [`CHOSEN_KEY`] list after `hermes config set KEY VALUE` (`value` = `Some`) or
/// `hermes config unset KEY` (`None`) in `doc`; `None` when the list does not change.
pub fn chosen_after(doc: &Value, key: &str, value: Option<&Value>) -> Option<Vec<String>> {
    if !is_boundary_key(key) {
        return None;
    }
    let mut list = chosen(doc);
    let listed = list.iter().any(|k| k == key);
    let wanted = value.is_some_and(|v| is_python_default(key, v));
    if wanted == listed {
        return None;
    }
    if wanted {
        list.push(key.to_string());
    } else {
        list.retain(|k| k != key);
    }
    Some(list)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, EnvVars, HermesHome};
    use serde_json::json;

    fn load(text: &str) -> Result<Config, ConfigError> {
        Config::from_yaml(
            HermesHome::new("/h"),
            EnvVars::default(),
            text,
            Path::new("/h/config.yaml"),
        )
    }

    const PYTHON: &str = "terminal:\n  backend: local\ncheckpoints:\n  enabled: false\napprovals:\n  mode: smart\n_config_version: 33\n";

    #[test]
    fn python_defaults_in_a_python_file_are_set_aside() {
        let c = load(PYTHON).unwrap();
        assert_eq!(
            c.terminal.exec.backend,
            crate::config::terminal::BackendChoice::Auto
        );
        assert!(c.checkpoints.enabled);
        assert_eq!(c.approvals.mode, crate::config::ApprovalMode::Manual);
        let w = c.python_defaults_warning().unwrap();
        assert!(
            w.contains(
                "terminal.backend: local, checkpoints.enabled: false, approvals.mode: smart"
            ),
            "{w}"
        );
        assert!(!w.contains("not supported yet"), "{w}");
    }

    #[test]
    fn the_same_values_by_hand_or_confirmed_are_honoured() {
        let by_hand = PYTHON.replace("_config_version: 33\n", "");
        let c = load(&by_hand).unwrap();
        assert_eq!(
            c.terminal.exec.backend,
            crate::config::terminal::BackendChoice::Local
        );
        assert!(!c.checkpoints.enabled);
        assert!(c.python_defaults_warning().is_none());

        let confirmed = format!("{PYTHON}{CHOSEN_KEY}: [terminal.backend]\n");
        let c = load(&confirmed).unwrap();
        assert_eq!(
            c.terminal.exec.backend,
            crate::config::terminal::BackendChoice::Local
        );
        assert!(c.checkpoints.enabled, "only the confirmed key is honoured");
        let w = c.python_defaults_warning().unwrap();
        assert!(!w.contains("terminal.backend"), "{w}");
    }

    #[test]
    fn other_values_are_the_users() {
        let c =
            load("terminal:\n  backend: docker\napprovals:\n  mode: 'off'\n_config_version: 33\n")
                .unwrap();
        assert_eq!(
            c.terminal.exec.backend,
            crate::config::terminal::BackendChoice::Docker
        );
        assert_eq!(c.approvals.mode, crate::config::ApprovalMode::Off);
        assert!(c.python_defaults_warning().is_none());
    }

    #[test]
    fn a_typo_in_the_chosen_list_is_an_error() {
        let e = load(&format!("{CHOSEN_KEY}: [terminal.backnd]\n"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("terminal.backnd") && e.contains("terminal.backend"),
            "{e}"
        );
    }

    #[test]
    fn set_and_unset_keep_the_list_true() {
        let doc = json!({});
        assert_eq!(
            chosen_after(&doc, "terminal.backend", Some(&json!("local"))),
            Some(vec!["terminal.backend".to_string()])
        );
        assert_eq!(
            chosen_after(&doc, "checkpoints.enabled", Some(&json!(false))),
            Some(vec!["checkpoints.enabled".to_string()])
        );
        assert_eq!(chosen_after(&doc, "agent.max_turns", Some(&json!(3))), None);
        let doc = json!({CHOSEN_KEY: ["terminal.backend"]});
        assert_eq!(
            chosen_after(&doc, "terminal.backend", Some(&json!("local"))),
            None
        );
        assert_eq!(
            chosen_after(&doc, "terminal.backend", Some(&json!("sandbox"))),
            Some(vec![])
        );
        assert_eq!(chosen_after(&doc, "terminal.backend", None), Some(vec![]));
    }
}
