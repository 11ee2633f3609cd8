//! `hermes setup`: choose where the model runs (local servers that answer are offered first),
//! the model (listed from the endpoint's `/models`), save the key to `$HERMES_HOME/.env` (mode
//! 0600) and the choice to config.yaml's `model:` block, then make one real call and show the
//! answer. `--yes` asks nothing: flags, else the first local server found and its first model.

use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

use clap::Args;

use crate::cli::args::RunArgs;
use crate::cli::setup::model_yaml;
use crate::cli::{CliError, exit};
use crate::config::{Config, HermesHome};
use crate::llm::provider::table::{Detect, ProviderRow, ProviderSpec, ProviderTable};
use crate::llm::provider::{self};
use crate::llm::{ChatRequest, Message};

#[derive(Debug, Args)]
pub struct SetupArgs {
    /// Provider: ollama, llamacpp, vllm, openrouter, openai, anthropic, custom (any OpenAI-compatible URL).
    #[arg(long)]
    pub provider: Option<String>,
    /// Model name (default: chosen from the endpoint's list; `--yes` takes the first).
    #[arg(short = 'm', long)]
    pub model: Option<String>,
    /// Base URL of the API (needed for `custom`), e.g. http://127.0.0.1:1234/v1.
    #[arg(long = "base-url")]
    pub base_url: Option<String>,
    /// API key, saved to $HERMES_HOME/.env (mode 0600).
    #[arg(long = "api-key", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Ask nothing: use the flags, else the first local server found and its first model.
    #[arg(short = 'y', long)]
    pub yes: bool,
}

// LM Studio serves an OpenAI-compatible API on :1234; the table has no row for it, so it is
// added here, where the local servers are offered (it is probed with the others from then on).
crate::register_provider!(ProviderSpec {
    name: "lmstudio",
    aliases: &["lm-studio"],
    label: "LM Studio",
    base_url: "http://127.0.0.1:1234/v1",
    key_env: None,
    base_env: None,
    key_required: false,
    detect: Detect::Local(40),
    env_base_means_custom: false,
    wire_api: None,
});

const PROBE_TIMEOUT: Duration = Duration::from_millis(400);
const LIST_TIMEOUT: Duration = Duration::from_secs(10);
const TEST_TIMEOUT: Duration = Duration::from_secs(120);

/// A place the model can run.
#[derive(Debug, Clone)]
struct Choice {
    label: String,
    provider: String,
    base_url: Option<String>,
    models: Vec<String>,
}

/// Reads answers line by line (a terminal, or a pipe in scripts and tests).
struct Prompter<'a> {
    input: &'a mut dyn BufRead,
    interactive: bool,
}

impl Prompter<'_> {
    /// Asks `question`; Enter gives `default`. `--yes` never asks.
    fn ask(&mut self, question: &str, default: Option<&str>) -> Result<String, CliError> {
        if !self.interactive {
            return default.map(str::to_string).ok_or_else(|| {
                CliError::Usage(format!(
                    "setup --yes cannot choose this for you: {question} (pass it as a flag)"
                ))
            });
        }
        match default {
            Some(d) if !d.is_empty() => print!("{question} [{d}]: "),
            _ => print!("{question}: "),
        }
        std::io::stdout().flush()?;
        let mut line = String::new();
        if self.input.read_line(&mut line)? == 0 {
            return Err(CliError::Usage(
                "setup stopped: no more answers on stdin (for a script use `hermes setup --yes --provider … --model …`)"
                    .into(),
            ));
        }
        let answer = line.trim();
        Ok(if answer.is_empty() {
            default.unwrap_or("").to_string()
        } else {
            answer.to_string()
        })
    }

    /// Like `ask`, without echoing what is typed on a terminal (keys).
    fn ask_secret(&mut self, question: &str) -> Result<String, CliError> {
        let _echo = crate::cli::setup::wizard::EchoOff::new();
        let answer = self.ask(question, Some(""));
        if _echo.active() {
            println!();
        }
        answer
    }
}

/// Turns terminal echo off while alive (no-op when stdin is not a terminal).
pub(crate) struct EchoOff(Option<libc::termios>);

impl EchoOff {
    fn new() -> EchoOff {
        use std::io::IsTerminal;
        if !std::io::stdin().is_terminal() {
            return EchoOff(None);
        }
        let mut term = std::mem::MaybeUninit::<libc::termios>::uninit();
        // SAFETY: fd 0 is a terminal (checked above) and `term` is a correctly sized out-parameter.
        if unsafe { libc::tcgetattr(0, term.as_mut_ptr()) } != 0 {
            return EchoOff(None);
        }
        // SAFETY: tcgetattr returned 0, so it filled `term`.
        let saved = unsafe { term.assume_init() };
        let mut quiet = saved;
        quiet.c_lflag &= !libc::ECHO;
        // SAFETY: a valid termios for fd 0, copied from the current settings.
        unsafe { libc::tcsetattr(0, libc::TCSANOW, &quiet) };
        EchoOff(Some(saved))
    }

    fn active(&self) -> bool {
        self.0.is_some()
    }
}

impl Drop for EchoOff {
    fn drop(&mut self) {
        if let Some(saved) = self.0 {
            // SAFETY: restores the settings read from fd 0 in `new`.
            unsafe { libc::tcsetattr(0, libc::TCSANOW, &saved) };
        }
    }
}

pub fn run(
    runtime: &tokio::runtime::Runtime,
    config: &Config,
    args: SetupArgs,
) -> Result<u8, CliError> {
    let stdin = std::io::stdin();
    let mut lock = stdin.lock();
    let mut prompter = Prompter {
        input: &mut lock,
        interactive: !args.yes,
    };
    runtime.block_on(wizard(config, &args, &mut prompter))
}

async fn wizard(config: &Config, args: &SetupArgs, p: &mut Prompter<'_>) -> Result<u8, CliError> {
    println!("hermes setup — home {}", config.home.root().display());
    let choice = choose_provider(config, args, p).await?;
    let row = row(config, &choice.provider)?;
    let base_url = match args.base_url.clone().or(choice.base_url.clone()) {
        Some(url) => url,
        None => match default_base(config, &row) {
            Some(url) => url,
            None => p.ask(
                &format!(
                    "Base URL of the {} API (e.g. http://127.0.0.1:8080/v1)",
                    choice.provider
                ),
                None,
            )?,
        },
    };
    let base_url = base_url.trim().trim_end_matches('/').to_string();
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err(CliError::Usage(format!(
            "`{base_url}` is not an http(s) URL; give the API's base URL, e.g. http://127.0.0.1:8080/v1"
        )));
    }

    let key_var = row.key_env.clone();
    let key = match (&args.api_key, &key_var) {
        (Some(k), _) => Some(k.trim().to_string()),
        (None, Some(var)) => {
            let existing = config.env.get(var).map(str::to_string);
            let optional = !row.key_required;
            if !p.interactive {
                if existing.is_none() && !optional {
                    return Err(CliError::Usage(format!(
                        "provider `{}` needs an API key: pass --api-key KEY or set {var}",
                        choice.provider
                    )));
                }
                existing
            } else {
                let hint = match (&existing, optional) {
                    (Some(_), _) => "Enter keeps the saved one",
                    (None, true) => "Enter for none",
                    (None, false) => "required",
                };
                let typed =
                    p.ask_secret(&format!("API key for {} ({var}; {hint})", choice.provider))?;
                match (typed.is_empty(), existing) {
                    (false, _) => Some(typed),
                    (true, Some(e)) => Some(e),
                    (true, None) if optional => None,
                    (true, None) => {
                        return Err(CliError::Usage(format!(
                            "provider `{}` needs an API key; run setup again with it",
                            choice.provider
                        )));
                    }
                }
            }
        }
        (None, None) => None,
    }
    .filter(|k| !k.is_empty());
    if key.as_deref().is_some_and(|k| k.contains(['\n', '\r'])) {
        return Err(CliError::Usage("the API key contains a line break".into()));
    }

    let model = match &args.model {
        Some(m) => m.clone(),
        None => {
            let models = if choice.models.is_empty() {
                provider::list_models(&base_url, key.as_deref(), LIST_TIMEOUT)
                    .await
                    .unwrap_or_default()
            } else {
                choice.models.clone()
            };
            pick_model(&models, p)?
        }
    };

    // Save: the key first (.env, 0600), then config.yaml's model block.
    if let (Some(k), Some(var)) = (&key, &key_var) {
        save_env_var(&config.home, var, k)?;
        println!(
            "saved {var} to {} (mode 0600)",
            config.home.env_path().display()
        );
    }
    let config_path = config.home.config_path();
    // A key or protocol left in config.yaml from another provider would override this choice.
    model_yaml::edit_file(
        &config_path,
        &[
            ("default", model.as_str()),
            ("provider", choice.provider.as_str()),
            ("base_url", base_url.as_str()),
        ],
        &["api_key", "api_mode"],
    )
    .map_err(|e| CliError::Setup(format!("cannot write {}: {e}", config_path.display())))?;
    println!(
        "saved model: {model} ({} at {base_url}) to {}",
        choice.provider,
        config_path.display()
    );

    test_call(&config.home).await
}

/// The provider's table row (a name or alias; `custom_providers` included).
fn row(config: &Config, name: &str) -> Result<ProviderRow, CliError> {
    let table = ProviderTable::for_config(config).map_err(|e| CliError::Setup(e.to_string()))?;
    table.find(name).cloned().ok_or_else(|| {
        CliError::Usage(format!(
            "unknown provider `{name}`; use one of: {}",
            table.names().join(", ")
        ))
    })
}

/// The provider's base URL when the user gives none: its base-URL variable, else its default.
fn default_base(config: &Config, row: &ProviderRow) -> Option<String> {
    row.base_env
        .as_deref()
        .and_then(|v| config.env.get(v))
        .map(str::to_string)
        .or_else(|| (!row.base_url.is_empty()).then(|| row.base_url.clone()))
}

/// Local servers that answer `/models` now, in the table's order of preference.
async fn probe_local(table: &ProviderTable) -> Vec<Choice> {
    let probes = table.local_probes().into_iter().map(|row| async move {
        provider::list_models(&row.base_url, None, PROBE_TIMEOUT)
            .await
            .map(|models| Choice {
                label: format!("{} at {}", row.label, row.base_url),
                provider: row.name.clone(),
                base_url: Some(row.base_url.clone()),
                models,
            })
    });
    futures::future::join_all(probes)
        .await
        .into_iter()
        .flatten()
        .collect()
}

async fn choose_provider(
    config: &Config,
    args: &SetupArgs,
    p: &mut Prompter<'_>,
) -> Result<Choice, CliError> {
    let named = |name: &str| -> Result<Choice, CliError> {
        let row = row(config, name)?;
        Ok(Choice {
            label: row.label.clone(),
            provider: row.name,
            base_url: None,
            models: Vec::new(),
        })
    };
    if let Some(name) = &args.provider {
        return named(name);
    }
    if args.base_url.is_some() {
        return named("custom");
    }
    let table = ProviderTable::for_config(config).map_err(|e| CliError::Setup(e.to_string()))?;
    let local = probe_local(&table).await;
    let ports: Vec<String> = table
        .local_probes()
        .iter()
        .map(|r| format!("{} {}", r.label, r.base_url))
        .collect();
    if !p.interactive {
        return local.into_iter().next().ok_or_else(|| {
            CliError::Usage(format!(
                "no local model server answers ({}): pass --provider (and --api-key, --base-url as it needs)",
                ports.join(", ")
            ))
        });
    }
    let mut choices = local.clone();
    if local.is_empty() {
        println!("No local model server answers ({}).", ports.join(", "));
    } else {
        println!("Local servers found:");
    }
    for (i, c) in local.iter().enumerate() {
        println!("  {}) {} ({} models)", i + 1, c.label, c.models.len());
    }
    println!("Hosted or custom:");
    for row in table
        .rows()
        .iter()
        .filter(|r| !matches!(r.detect, Detect::Local(_)))
    {
        choices.push(Choice {
            label: row.label.clone(),
            provider: row.name.clone(),
            base_url: None,
            models: Vec::new(),
        });
        println!("  {}) {} — {}", choices.len(), row.name, row.label);
    }
    loop {
        let answer = p.ask("Provider (number or name)", Some("1"))?;
        if let Ok(n) = answer.parse::<usize>()
            && let Some(c) = n.checked_sub(1).and_then(|i| choices.get(i))
        {
            return Ok(c.clone());
        }
        if let Some(c) = choices
            .iter()
            .find(|c| c.provider == answer.to_ascii_lowercase())
        {
            return Ok(c.clone());
        }
        match named(&answer) {
            Ok(c) => return Ok(c),
            Err(e) => println!("{e}"),
        }
    }
}

fn pick_model(models: &[String], p: &mut Prompter<'_>) -> Result<String, CliError> {
    if models.is_empty() {
        let typed = p.ask("Model name (the endpoint lists none)", None)?;
        if typed.is_empty() {
            return Err(CliError::Usage("no model given".into()));
        }
        return Ok(typed);
    }
    if p.interactive {
        println!("Models:");
        for (i, m) in models.iter().take(30).enumerate() {
            println!("  {}) {m}", i + 1);
        }
        if models.len() > 30 {
            println!("  … and {} more (type a name)", models.len() - 30);
        }
    }
    let answer = p.ask("Model (number or name)", Some("1"))?;
    Ok(match answer.parse::<usize>() {
        Ok(n) if (1..=models.len()).contains(&n) => models[n - 1].clone(),
        _ => answer,
    })
}

/// Sets `NAME=value` in .env (replacing an earlier line for NAME, keeping every other line),
/// written atomically with mode 0600.
pub fn save_env_var(home: &HermesHome, name: &str, value: &str) -> Result<(), CliError> {
    let path = home.env_path();
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => {
            return Err(CliError::Setup(format!(
                "cannot read {}: {e}",
                path.display()
            )));
        }
    };
    let defines = |line: &str| {
        let l = line.trim_start();
        let l = l.strip_prefix("export ").unwrap_or(l);
        l.split_once('=').is_some_and(|(k, _)| k.trim() == name)
    };
    let quoted = if value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_./:+@".contains(c))
    {
        value.to_string()
    } else {
        format!("'{}'", value.replace('\'', ""))
    };
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| !defines(l))
        .map(str::to_string)
        .collect();
    lines.push(format!("{name}={quoted}"));
    let mut out = lines.join("\n");
    out.push('\n');
    model_yaml::write_atomic(&path, &out, Some(0o600))
        .map_err(|e| CliError::Setup(format!("cannot write {}: {e}", path.display())))
}

/// Loads what was just written, exactly as `hermes` will, and asks the model for one line.
async fn test_call(home: &HermesHome) -> Result<u8, CliError> {
    let config = Config::load(home)?;
    let client = crate::cli::setup::make_client(&RunArgs::default(), &config, None).await?;
    let p = client.provider();
    println!("Testing {} at {} …", p.model, p.base_url);
    let request = ChatRequest {
        model: p.model.clone(),
        system: "You are being set up. Answer in one short sentence.".into(),
        messages: vec![Message::user("Say hello and name yourself.")],
        tools: Vec::new(),
        max_tokens: Some(100),
        temperature: None,
    };
    let started = Instant::now();
    match crate::cli::doctor::roundtrip::complete(client.as_ref(), request, TEST_TIMEOUT).await {
        Ok(response) => {
            let answer = response.message.content.unwrap_or_default();
            println!(
                "answer ({:.1} s): {}",
                started.elapsed().as_secs_f64(),
                answer.trim()
            );
            println!("Ready: `hermes` to chat, `hermes doctor` to check everything.");
            Ok(exit::OK)
        }
        Err(e) => {
            eprintln!("hermes: the test call failed: {e}");
            eprintln!(
                "The settings are saved; fix the cause (server running? key right? model name?) and run `hermes doctor`."
            );
            Ok(exit::FAILURE)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_var_replaces_its_line_and_keeps_the_rest() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let home = HermesHome::new(dir.path());
        std::fs::write(home.env_path(), "# keys\nOPENAI_API_KEY=old\nOTHER=1\n")
            .unwrap_or_default();
        save_env_var(&home, "OPENAI_API_KEY", "sk-new").unwrap_or_else(|e| panic!("{e}"));
        save_env_var(&home, "CUSTOM_API_KEY", "a b#c").unwrap_or_else(|e| panic!("{e}"));
        let text = std::fs::read_to_string(home.env_path()).unwrap_or_default();
        assert_eq!(
            text,
            "# keys\nOTHER=1\nOPENAI_API_KEY=sk-new\nCUSTOM_API_KEY='a b#c'\n"
        );
        let env = crate::config::EnvVars::load(&home.env_path()).unwrap_or_default();
        assert_eq!(env.get("CUSTOM_API_KEY"), Some("a b#c"));
    }
}
