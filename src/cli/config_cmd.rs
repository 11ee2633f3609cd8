//! `hermes config show|get|set|unset|path|check|edit`: the user's way to change config.yaml (the
//! agent's file tools may not write it). Every change is checked with the loader itself before it
//! is written — an invalid value is refused and the file stays as it was — and written atomically
//! (temp file + rename, mode kept) as a surgical text edit, so comments and key order survive.
//! These commands run before the config is loaded, so a broken file can be repaired with them.

use clap::Subcommand;
use serde_json::Value;

use crate::cli::{CliError, exit};
use crate::config::yaml_edit::{self, inline_yaml};
use crate::config::{Config, EnvVars, HermesHome};
use crate::config::{env_file, python_defaults};
use crate::security::{redact, secrets};

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print config.yaml with secret values hidden.
    Show,
    /// Print one value by dotted key (e.g. `agent.max_turns`).
    Get { key: String },
    /// Set a value (YAML: `7`, `true`, `[a, b]`, text); the file is checked before it is written.
    /// API keys and tokens (`OPENAI_API_KEY`, `*_TOKEN`, ...) go to `.env` instead.
    Set { key: String, value: String },
    /// Remove a key (and everything under it).
    Unset { key: String },
    /// Print the path of config.yaml.
    Path,
    /// Check config.yaml: errors, and the keys hermes does not support yet.
    Check,
    /// Open config.yaml in $VISUAL / $EDITOR (else vi), then check it.
    Edit,
}

pub fn run(home: &HermesHome, action: ConfigCommand) -> Result<u8, CliError> {
    let path = home.config_path();
    match action {
        ConfigCommand::Path => {
            println!("{}", path.display());
            Ok(exit::OK)
        }
        ConfigCommand::Show => {
            let text = read(home)?;
            if text.trim().is_empty() {
                eprintln!(
                    "{} is empty or missing: hermes uses its defaults",
                    path.display()
                );
            }
            print!("{}", redact_text(home, &text));
            Ok(exit::OK)
        }
        ConfigCommand::Get { key } => {
            let config = Config::load(home)?;
            let value = key
                .split('.')
                .try_fold(&config.raw, |v, k| v.get(k))
                .ok_or_else(|| CliError::NotFound(format!("`{key}` is not set in config.yaml")))?;
            let shown = match value {
                Value::String(s) => s.clone(),
                other => inline_yaml(other),
            };
            let last = key.rsplit('.').next().unwrap_or(&key);
            if secrets::is_secret_name(last) && value.is_string() && !shown.is_empty() {
                println!("{}", redact::REDACTED);
            } else {
                println!("{}", redact_text(home, &shown).trim_end_matches('\n'));
            }
            Ok(exit::OK)
        }
        ConfigCommand::Set { key, value } if env_file::is_env_key(&key) => {
            // API keys and tokens belong in .env (as Python Hermes routes them), never in
            // config.yaml.
            let name = key.to_ascii_uppercase();
            let env = home.env_path();
            home.ensure_layout()?;
            env_file::set_var(&env, &name, &value).map_err(|e| {
                CliError::Setup(format!("cannot write {name} to {}: {e}", env.display()))
            })?;
            eprintln!("set {name} in {}", env.display());
            Ok(exit::OK)
        }
        ConfigCommand::Set { key, value } => {
            let value = parse_value(&value);
            let text = read(home)?;
            let new = yaml_edit::set(&text, &key, &value).map_err(edit_error)?;
            let new = record_choice(&new, &key, Some(&value))?;
            write_checked(home, &new)?;
            eprintln!("set {key} in {}", path.display());
            Ok(exit::OK)
        }
        ConfigCommand::Unset { key } => {
            let text = read(home)?;
            let new = yaml_edit::unset(&text, &key).map_err(edit_error)?;
            let new = record_choice(&new, &key, None)?;
            write_checked(home, &new)?;
            eprintln!("removed {key} from {}", path.display());
            Ok(exit::OK)
        }
        ConfigCommand::Check => check(home),
        ConfigCommand::Edit => {
            let editor = std::env::var("VISUAL")
                .ok()
                .or_else(|| std::env::var("EDITOR").ok())
                .filter(|e| !e.trim().is_empty())
                .unwrap_or_else(|| "vi".to_string());
            home.ensure_layout()?;
            // `$EDITOR` may carry arguments (`code --wait`): run it through the shell.
            let status = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("{editor} \"$1\""))
                .arg("hermes-config-edit")
                .arg(&path)
                .status()
                .map_err(|e| CliError::Setup(format!("cannot run the editor `{editor}`: {e}")))?;
            if !status.success() {
                return Err(CliError::Setup(format!(
                    "the editor `{editor}` exited with {status}; config.yaml is as the editor left it"
                )));
            }
            check(home)
        }
    }
}

/// A command-line value read as YAML (`7` is a number, `[a, b]` a list), else taken as text.
fn parse_value(raw: &str) -> Value {
    match serde_saphyr::from_str::<Value>(raw) {
        Ok(Value::Null) if !matches!(raw.trim(), "null" | "~") => Value::String(raw.to_string()),
        Ok(v) => v,
        Err(_) => Value::String(raw.to_string()),
    }
}

fn read(home: &HermesHome) -> Result<String, CliError> {
    let path = home.config_path();
    match std::fs::read_to_string(&path) {
        Ok(t) => Ok(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(CliError::Config(crate::config::ConfigError::Read {
            path,
            source: e,
        })),
    }
}

/// Loads `text` with the real loader; writes it only if it loads.
pub(crate) fn write_checked(home: &HermesHome, text: &str) -> Result<(), CliError> {
    let path = home.config_path();
    let env = EnvVars::load(&home.env_path())?;
    Config::from_yaml(home.clone(), env, text, &path).map_err(|e| {
        CliError::Usage(format!(
            "not changed: the result would be invalid: {e}\nconfig.yaml was left as it was"
        ))
    })?;
    home.ensure_layout()?;
    crate::util::atomic_write(&path, text.as_bytes()).map_err(|e| {
        CliError::Config(crate::config::ConfigError::Write {
            path: path.clone(),
            source: e,
        })
    })
}

fn check(home: &HermesHome) -> Result<u8, CliError> {
    let config = Config::load(home)?;
    println!("{}: ok", home.config_path().display());
    if !config.unsupported_keys().is_empty() {
        println!(
            "not supported yet (accepted, no effect): {}",
            config.unsupported_keys().join(", ")
        );
    }
    if let Some(w) = config.python_defaults_warning() {
        println!("{}", w.replacen("config.yaml: ", "", 1));
    }
    Ok(exit::OK)
}

/// `text` with the boundary-key choice list brought up to date after setting (`Some`) or
/// removing (`None`) `key`: a value equal to Python Hermes's default, set here, is the user's
/// choice and must be honoured even in a file Python Hermes wrote (`config/python_defaults.rs`).
fn record_choice(text: &str, key: &str, value: Option<&Value>) -> Result<String, CliError> {
    if !python_defaults::is_boundary_key(key) {
        return Ok(text.to_string());
    }
    let doc: Value = serde_saphyr::from_str(text).unwrap_or(Value::Null);
    let Some(list) = python_defaults::chosen_after(&doc, key, value) else {
        return Ok(text.to_string());
    };
    let edited = if list.is_empty() {
        yaml_edit::unset(text, python_defaults::CHOSEN_KEY)
    } else {
        let list = Value::Array(list.into_iter().map(Value::String).collect());
        yaml_edit::set(text, python_defaults::CHOSEN_KEY, &list)
    };
    edited.map_err(edit_error)
}

fn edit_error(e: yaml_edit::EditError) -> CliError {
    CliError::Usage(e.to_string())
}

/// config.yaml's text with secret values hidden: values of secret-named keys, the values the
/// loaded config knows are secret (when it loads), and anything shaped like a credential.
fn redact_text(home: &HermesHome, text: &str) -> String {
    let known = Config::load(home)
        .map(|c| secrets::collect(&c))
        .unwrap_or_default();
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let mut line = line.to_string();
        if let Some((key, value)) = line.split_once(':') {
            let name = key
                .trim()
                .trim_start_matches("- ")
                .trim_matches(['"', '\'']);
            let value = value.split(" #").next().unwrap_or("").trim();
            if secrets::is_secret_name(name)
                && !value.is_empty()
                && !matches!(value, "''" | "\"\"" | "null" | "~")
                && !value.starts_with("${")
            {
                line = format!("{key}: {}", redact::REDACTED);
            }
        }
        for secret in &known {
            line = redact::redact_value(&line, secret);
        }
        out.push_str(&redact::redact(&line));
        out.push('\n');
    }
    out
}
