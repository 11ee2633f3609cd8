//! `hermes model [NAME] [--list] [--force]`: show the default model and provider and where each
//! comes from (flag, config.yaml, environment, a local server), list the models the endpoint
//! serves (`GET /models` in its protocol's dialect), or switch `model.default` in config.yaml by
//! a line edit (comments and key order kept). A name the endpoint says it does not serve is
//! refused unless `--force`; an endpoint without a list gets a warning. With a terminal on both
//! ends and no NAME, the user picks from the list. Changing the provider is `hermes setup`'s job.

use std::io::{BufRead, IsTerminal, Write};
use std::time::Duration;

use clap::Args;

use crate::cli::args::RunArgs;
use crate::cli::setup::model_yaml;
use crate::cli::{CliError, exit};
use crate::config::Config;
use crate::llm::provider::{self, Provider, ProviderFlags, ProviderTable, ResolveInputs};

#[derive(Debug, Args)]
pub struct ModelArgs {
    /// Make NAME the default model (config.yaml `model.default`).
    pub name: Option<String>,
    /// List the models the provider's endpoint serves, one per line.
    #[arg(long, conflicts_with = "name")]
    pub list: bool,
    /// Switch to NAME even when the endpoint does not list it (nothing is asked of the endpoint).
    #[arg(long, requires = "name")]
    pub force: bool,
}

/// How long the endpoint may take to list its models.
const LIST_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a local server may take to answer the probe when nothing else is configured.
const PROBE_TIMEOUT: Duration = Duration::from_millis(400);
/// Models shown in the interactive list (the rest can be typed).
const PICK_SHOWN: usize = 30;

pub fn run(
    runtime: &tokio::runtime::Runtime,
    run: &RunArgs,
    config: &Config,
    args: ModelArgs,
) -> Result<u8, CliError> {
    if let (Some(name), true) = (&args.name, args.force) {
        return switch(config, name, "not checked against the endpoint (--force)");
    }
    let provider = runtime.block_on(resolve(run, config))?;
    if args.list {
        let models = runtime
            .block_on(list(&provider))
            .ok_or_else(|| no_list(&provider))?;
        for m in &models {
            println!("{m}");
        }
        return Ok(exit::OK);
    }
    let Some(name) = args.name else {
        show(run, config, &provider);
        if std::io::stdin().is_terminal() && std::io::stdout().is_terminal() {
            let models = runtime.block_on(list(&provider)).unwrap_or_default();
            let stdin = std::io::stdin();
            if let Some(name) = pick(&models, &provider.model, &mut stdin.lock())? {
                return switch(config, &name, "chosen from the endpoint's list");
            }
        }
        return Ok(exit::OK);
    };
    match runtime.block_on(list(&provider)) {
        Some(models) if models.contains(&name) => {
            switch(config, &name, &format!("served by {}", provider.base_url))
        }
        Some(models) => Err(CliError::Usage(format!(
            "{} at {} does not serve `{name}`; it serves: {}\n\
             `hermes model --list` shows them all; `hermes model {name} --force` switches anyway",
            provider.name,
            provider.base_url,
            preview(&models)
        ))),
        None => {
            eprintln!(
                "warning: {} does not list its models, so `{name}` was not checked",
                provider.base_url
            );
            switch(config, &name, "not checked: the endpoint has no list")
        }
    }
}

async fn resolve(run: &RunArgs, config: &Config) -> Result<Provider, CliError> {
    let flags = ProviderFlags {
        provider: run.provider.clone(),
        model: run.model.clone(),
        base_url: run.base_url.clone(),
        api_key: run.api_key.clone(),
    };
    Ok(provider::resolve(ResolveInputs {
        flags: &flags,
        config,
        probe_timeout: PROBE_TIMEOUT,
    })
    .await?)
}

async fn list(p: &Provider) -> Option<Vec<String>> {
    provider::list_models_for(p.wire_api, &p.base_url, p.api_key.as_deref(), LIST_TIMEOUT).await
}

fn no_list(p: &Provider) -> CliError {
    CliError::Setup(format!(
        "{} ({}) did not list its models: GET /models failed or timed out; check that the server \
         runs and the key is right (`hermes doctor` tests the provider)",
        p.name, p.base_url
    ))
}

/// The first few names, for an error message.
fn preview(models: &[String]) -> String {
    let mut text = models
        .iter()
        .take(8)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if models.len() > 8 {
        text.push_str(&format!(", … ({} in all)", models.len()));
    }
    if text.is_empty() {
        text = "nothing".into();
    }
    text
}

/// Prints the current default and where it and the provider come from.
fn show(run: &RunArgs, config: &Config, p: &Provider) {
    println!("model     {}  ({})", p.model, model_source(run, config, p));
    println!(
        "provider  {}  {}  ({})",
        p.name,
        p.base_url,
        provider_source(run, config)
    );
}

/// Where the model name came from, in the order `provider::resolve` looks.
fn model_source(run: &RunArgs, config: &Config, p: &Provider) -> String {
    let path = config.home.config_path();
    if run.model.is_some() {
        return "the -m flag".into();
    }
    if config.model.default.is_some() {
        return format!("{}: model.default", path.display());
    }
    let row_default = ProviderTable::for_config(config)
        .ok()
        .and_then(|t| t.find(&p.name).and_then(|r| r.default_model.clone()));
    if row_default.as_deref() == Some(p.model.as_str()) {
        return format!("the default of provider {}", p.name);
    }
    "the first model the endpoint lists; none is configured".into()
}

/// Where the provider came from, in the order `provider::resolve` looks.
fn provider_source(run: &RunArgs, config: &Config) -> String {
    let path = config.home.config_path();
    if run.provider.is_some() || run.base_url.is_some() {
        return "command-line flags".into();
    }
    if config.model.provider.is_some() || config.model.base_url.is_some() {
        return format!("{}: model.provider / model.base_url", path.display());
    }
    // The first row whose variables are set, as `provider::resolve` picks it.
    let set = |var: &Option<String>| -> Option<String> {
        var.clone().filter(|v| config.env.get(v).is_some())
    };
    let from_env = ProviderTable::for_config(config).ok().and_then(|table| {
        table.env_detected().into_iter().find_map(|r| {
            set(&r.key_env).or_else(|| set(&r.base_env).filter(|_| r.env_base_means_custom))
        })
    });
    match from_env {
        Some(var) => format!("environment: {var}"),
        None => "a local server that answered".into(),
    }
}

/// Asks which model to use (number or name); Enter keeps `current`. `None` = keep.
fn pick(
    models: &[String],
    current: &str,
    input: &mut dyn BufRead,
) -> Result<Option<String>, CliError> {
    if models.is_empty() {
        println!("The endpoint lists no models; `hermes model NAME` switches by name.");
        return Ok(None);
    }
    for (i, m) in models.iter().take(PICK_SHOWN).enumerate() {
        let mark = if m == current { "*" } else { " " };
        println!("{mark} {:>2}) {m}", i + 1);
    }
    if models.len() > PICK_SHOWN {
        println!("  … and {} more (type a name)", models.len() - PICK_SHOWN);
    }
    print!("Model (number or name, Enter keeps {current}): ");
    std::io::stdout().flush()?;
    let mut line = String::new();
    input.read_line(&mut line)?;
    let answer = line.trim();
    Ok(match answer.parse::<usize>() {
        _ if answer.is_empty() => None,
        Ok(n) if (1..=models.len()).contains(&n) => Some(models[n - 1].clone()),
        _ if answer == current => None,
        _ if models.iter().any(|m| m == answer) => Some(answer.to_string()),
        _ => {
            return Err(CliError::Usage(format!(
                "`{answer}` is neither a number from the list nor a model it names; \
                 `hermes model {answer} --force` switches to an unlisted name"
            )));
        }
    })
}

/// Writes `model.default: name` into config.yaml (checked with the loader, atomic, comments kept).
fn switch(config: &Config, name: &str, why: &str) -> Result<u8, CliError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(CliError::Usage("the model name is empty".into()));
    }
    let path = config.home.config_path();
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(crate::config::ConfigError::Read { path, source: e }.into()),
    };
    let new = model_yaml::edit(&text, &[("default", name)], &[]);
    crate::cli::config_cmd::write_checked(&config.home, &new)?;
    let was = config.model.default.as_deref().unwrap_or("none");
    println!("default model: {name} (was {was}; {why})");
    eprintln!("saved in {}", path.display());
    Ok(exit::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn models() -> Vec<String> {
        ["a-model", "b-model"].map(String::from).to_vec()
    }

    #[test]
    fn pick_by_number_name_or_enter() {
        let pick_with = |answer: &str| pick(&models(), "a-model", &mut answer.as_bytes());
        assert_eq!(pick_with("2\n").unwrap().as_deref(), Some("b-model"));
        assert_eq!(pick_with("b-model\n").unwrap().as_deref(), Some("b-model"));
        assert_eq!(pick_with("\n").unwrap(), None);
        assert_eq!(pick_with("").unwrap(), None);
        assert_eq!(pick_with("a-model\n").unwrap(), None);
        let e = pick_with("9\n").unwrap_err().to_string();
        assert!(e.contains("--force"), "{e}");
        assert_eq!(pick(&[], "x", &mut "1\n".as_bytes()).unwrap(), None);
    }

    #[test]
    fn preview_is_short() {
        let many: Vec<String> = (0..20).map(|i| format!("m{i}")).collect();
        let p = preview(&many);
        assert!(p.starts_with("m0, m1") && p.ends_with("(20 in all)"), "{p}");
        assert_eq!(preview(&[]), "nothing");
    }
}
