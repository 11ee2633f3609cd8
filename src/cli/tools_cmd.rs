//! `hermes tools list|enable|disable NAME…`: which tools the agent gets, and switching toolsets
//! or single tools off and on. Persisted in config.yaml: a toolset in `agent.disabled_toolsets`
//! (Python Hermes' key), a single tool in `agent.disabled_tools` (ours); enabling a toolset that
//! `toolsets:` does not reach adds it there. Reads the tool registry only through its public API.

use std::collections::BTreeSet;

use clap::Subcommand;
use serde_json::Value;

use crate::cli::{CliError, exit};
use crate::config::{Config, yaml_edit};
use crate::tools::ToolRegistry;

#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// List every tool with its toolset and whether the agent gets it (and why not).
    List,
    /// Turn toolsets or single tools back on.
    Enable {
        #[arg(required = true)]
        names: Vec<String>,
    },
    /// Turn toolsets or single tools off (persisted in config.yaml).
    Disable {
        #[arg(required = true)]
        names: Vec<String>,
    },
}

pub fn run(config: &Config, action: ToolsCommand) -> Result<u8, CliError> {
    let registry = ToolRegistry::discover();
    match action {
        ToolsCommand::List => list(config, &registry),
        ToolsCommand::Enable { names } => change(config, &registry, &names, true),
        ToolsCommand::Disable { names } => change(config, &registry, &names, false),
    }
}

fn list(config: &Config, registry: &ToolRegistry) -> Result<u8, CliError> {
    let selected = registry
        .resolve_toolsets(&config.toolsets, &config.custom_toolsets)
        .map_err(|e| CliError::Usage(e.to_string()))?;
    let disabled = config.disabled_tools(registry);
    let mut out = String::new();
    for status in registry.statuses(config) {
        let state = if disabled.contains(&status.name) {
            "disabled (hermes tools enable)".to_string()
        } else if !selected.contains(&status.name) {
            "off (toolset not in `toolsets`)".to_string()
        } else {
            match &status.available {
                Ok(()) => "enabled".to_string(),
                Err(reason) => format!("unavailable: {reason}"),
            }
        };
        out.push_str(&format!(
            "{:<24} {:<16} {state}\n",
            status.name, status.toolset
        ));
    }
    print!("{out}");
    Ok(exit::OK)
}

fn change(
    config: &Config,
    registry: &ToolRegistry,
    names: &[String],
    enable: bool,
) -> Result<u8, CliError> {
    let toolsets: BTreeSet<String> = registry
        .toolsets(&config.custom_toolsets)
        .into_iter()
        .map(|t| t.name)
        .collect();
    let tools: BTreeSet<String> = registry.names().into_iter().map(String::from).collect();
    let agent = &config.file.agent;
    let mut disabled_sets: Vec<String> = agent.disabled_toolsets.clone().unwrap_or_default();
    let mut disabled_tools: Vec<String> = agent.disabled_tools.clone().unwrap_or_default();
    let mut enabled_sets = config.toolsets.clone();
    for name in names {
        let is_set = toolsets.contains(name);
        if !is_set && !tools.contains(name) {
            let mut known: Vec<&str> = toolsets.iter().map(String::as_str).collect();
            known.extend(tools.iter().map(String::as_str));
            let hint = crate::config::closest_key(name, &known)
                .map(|k| format!(" (did you mean `{k}`?)"))
                .unwrap_or_default();
            return Err(CliError::Usage(format!(
                "`{name}` is neither a toolset nor a tool{hint}; `hermes tools list` shows them"
            )));
        }
        let list = if is_set {
            &mut disabled_sets
        } else {
            &mut disabled_tools
        };
        list.retain(|n| n != name);
        if !enable {
            list.push(name.clone());
            continue;
        }
        let reached = registry
            .resolve_toolsets(&enabled_sets, &config.custom_toolsets)
            .map_err(|e| CliError::Usage(e.to_string()))?;
        let members = registry
            .resolve_toolsets(std::slice::from_ref(name), &config.custom_toolsets)
            .unwrap_or_default();
        if is_set && !members.is_subset(&reached) {
            enabled_sets.push(name.clone());
        } else if !is_set && !reached.contains(name) {
            let toolset = registry.get(name).map(|t| t.toolset().to_string());
            return Err(CliError::Usage(format!(
                "`{name}` is in the toolset `{}`, which `toolsets` does not enable; \
                 run `hermes tools enable {}`",
                toolset.as_deref().unwrap_or("?"),
                toolset.as_deref().unwrap_or("?"),
            )));
        }
    }
    let path = config.home.config_path();
    let mut text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(CliError::Io(e)),
    };
    let strings = |v: &[String]| Value::Array(v.iter().cloned().map(Value::String).collect());
    let edit = |text: &str, key: &str, v: &[String], before: Option<&Vec<String>>| {
        if before.map(Vec::as_slice).unwrap_or_default() == v {
            Ok(text.to_string())
        } else {
            yaml_edit::set(text, key, &strings(v)).map_err(|e| CliError::Usage(e.to_string()))
        }
    };
    text = edit(
        &text,
        "agent.disabled_toolsets",
        &disabled_sets,
        agent.disabled_toolsets.as_ref(),
    )?;
    text = edit(
        &text,
        "agent.disabled_tools",
        &disabled_tools,
        agent.disabled_tools.as_ref(),
    )?;
    if enabled_sets != config.toolsets {
        text = edit(&text, "toolsets", &enabled_sets, None)?;
    }
    crate::cli::config_cmd::write_checked(&config.home, &text)?;
    let verb = if enable { "enabled" } else { "disabled" };
    println!("{verb}: {}", names.join(", "));
    Ok(exit::OK)
}
