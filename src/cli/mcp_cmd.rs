//! `hermes mcp list|add|remove|test|serve`: the MCP servers in config.yaml (`mcp_servers:`).
//! `add`/`remove` edit config.yaml surgically (comments and key order kept; the result is loaded
//! before it is written); `test` connects to one server and times it; `serve` (hermes as an MCP
//! server) is its own subsystem, plugged in with one arm below.

use clap::{Args, Subcommand};
use serde_json::Value;

use crate::cli::{CliError, exit};
use crate::config::{Config, mcp::McpServerConfig, yaml_edit};

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// List the configured MCP servers (transport, enabled, tool filter).
    List,
    /// Add an MCP server: a command to run (stdio) or a URL (Streamable HTTP).
    Add(AddArgs),
    /// Remove an MCP server from config.yaml.
    Remove { name: String },
    /// Connect to one server, list its tools and say how long it took.
    Test { name: String },
    /// Serve hermes's conversations to MCP clients (stdio; `--http ADDR` for Streamable HTTP).
    Serve(ServeArgs),
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("transport").required(true).args(["command", "url"])))]
pub struct AddArgs {
    /// The server's name (letters, digits, `-`, `_`); its tools become `mcp__NAME__TOOL`.
    pub name: String,
    /// The command that starts a stdio server (e.g. `npx`).
    #[arg(long)]
    pub command: Option<String>,
    /// One argument for the command (repeat for more).
    #[arg(long = "arg", value_name = "ARG", allow_hyphen_values = true)]
    pub args: Vec<String>,
    /// An environment variable for the command, `KEY=VALUE` (repeat for more; `${VAR}` is read
    /// from the environment or .env when the server starts).
    #[arg(long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// The URL of a Streamable HTTP server.
    #[arg(long, conflicts_with_all = ["command", "args", "env"])]
    pub url: Option<String>,
    /// An HTTP header, `Name: value` (repeat for more; `${VAR}` keeps a secret in .env).
    #[arg(long = "header", value_name = "NAME:VALUE")]
    pub headers: Vec<String>,
}

/// Options of `hermes mcp serve` (owned by the MCP server side).
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Serve Streamable HTTP on this address instead of stdio.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
}

pub fn run(
    runtime: &tokio::runtime::Runtime,
    config: Config,
    action: McpCommand,
) -> Result<u8, CliError> {
    match action {
        McpCommand::List => list(runtime, &config),
        McpCommand::Add(args) => add(&config, args),
        McpCommand::Remove { name } => remove(&config, &name),
        McpCommand::Test { name } => test(runtime, &config, &name),
        McpCommand::Serve(args) => {
            crate::cli::mcp_serve_cmd::run(runtime, config, args.http.as_deref())
        }
    }
}

fn server<'a>(config: &'a Config, name: &str) -> Result<&'a McpServerConfig, CliError> {
    config.file.mcp_servers.get(name).ok_or_else(|| {
        let known: Vec<&str> = config.file.mcp_servers.keys().map(String::as_str).collect();
        CliError::NotFound(if known.is_empty() {
            format!("no MCP server `{name}` in config.yaml (none is configured; add one with `hermes mcp add`)")
        } else {
            format!(
                "no MCP server `{name}` in config.yaml (configured: {})",
                known.join(", ")
            )
        })
    })
}

/// One line per server: name, transport and target, enabled, filter; then its status (each
/// enabled server is connected to once, all at the same time, at most `LIST_PROBE` each).
fn list(runtime: &tokio::runtime::Runtime, config: &Config) -> Result<u8, CliError> {
    let servers = &config.file.mcp_servers;
    if servers.is_empty() {
        println!(
            "no MCP servers configured (add one with `hermes mcp add NAME --command CMD` or `--url URL`)"
        );
        return Ok(exit::OK);
    }
    // `${VAR}` in args is expanded at load: a secret there must not reach the screen.
    let redactor = crate::security::redact::Redactor::new(
        crate::security::secrets::collect(config),
        config.security.redact_secrets,
    );
    let http = crate::agent::shared_http();
    let probes = runtime.block_on(async {
        let probes = servers
            .iter()
            .filter(|(_, s)| s.is_enabled())
            .map(|(name, s)| {
                let http = http.clone();
                async move {
                    let r = tokio::time::timeout(
                        LIST_PROBE,
                        crate::mcp::client::test_server(config, name, s, &http),
                    )
                    .await;
                    let status = match r {
                        Ok(Ok(report)) => format!(
                            "connected, {} tools ({} ms)",
                            report.tools.len(),
                            report.connect_ms + report.list_ms
                        ),
                        Ok(Err(e)) => format!("down: {e}"),
                        Err(_) => format!("down: no answer within {} s", LIST_PROBE.as_secs()),
                    };
                    (name.clone(), status)
                }
            });
        futures::future::join_all(probes).await
    });
    for (name, s) in servers {
        let status = probes
            .iter()
            .find(|(n, _)| n == name)
            .map_or("", |(_, st)| st.as_str());
        let line = format!("{}  {status}", describe(name, s));
        println!("{}", redactor.redact(line.trim_end()));
    }
    Ok(exit::OK)
}

/// How long `hermes mcp list` waits for each server.
const LIST_PROBE: std::time::Duration = std::time::Duration::from_secs(10);

/// Connects to one server, lists its tools, prints them with the timings.
fn test(runtime: &tokio::runtime::Runtime, config: &Config, name: &str) -> Result<u8, CliError> {
    let entry = server(config, name)?;
    let http = crate::agent::shared_http();
    let report = runtime
        .block_on(crate::mcp::client::test_server(config, name, entry, &http))
        .map_err(|e| {
            CliError::Setup(format!(
                "the MCP server `{name}` failed: {e} (its stderr is in {})",
                config
                    .home
                    .logs_dir()
                    .join(format!(
                        "mcp-{}.log",
                        crate::mcp::client::names::sanitize(name)
                    ))
                    .display()
            ))
        })?;
    if !report.server_info.trim().is_empty() {
        println!("server: {}", report.server_info.trim());
    }
    println!(
        "connected in {} ms, tools listed in {} ms: {} tools{}",
        report.connect_ms,
        report.list_ms,
        report.tools.len(),
        if report.filtered_out.is_empty() {
            String::new()
        } else {
            format!(
                " ({} left out by tools.include/exclude: {})",
                report.filtered_out.len(),
                report.filtered_out.join(", ")
            )
        }
    );
    for (registered, _, description) in &report.tools {
        let first = description.lines().next().unwrap_or("");
        println!(
            "  {registered:<40} {}",
            crate::util::truncate_chars(first, 80)
        );
    }
    Ok(exit::OK)
}

/// `name  stdio: cmd args  [disabled] [include: a, b] [exclude: c]` (never env or header values).
pub fn describe(name: &str, s: &McpServerConfig) -> String {
    let target = match (&s.command, &s.url) {
        (Some(cmd), _) => {
            let mut t = format!("stdio: {cmd}");
            for a in &s.args {
                t.push(' ');
                t.push_str(a);
            }
            t
        }
        (None, Some(url)) => format!("http: {url}"),
        (None, None) => "no command or url (not usable)".to_string(),
    };
    let mut line = format!("{name:<16} {target}");
    if !s.is_enabled() {
        line.push_str("  [disabled]");
    }
    if !s.tools.include.is_empty() {
        line.push_str(&format!("  [include: {}]", s.tools.include.join(", ")));
    }
    if !s.tools.exclude.is_empty() {
        line.push_str(&format!("  [exclude: {}]", s.tools.exclude.join(", ")));
    }
    line
}

fn check_name(name: &str) -> Result<(), CliError> {
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(CliError::Usage(format!(
            "`{name}` is not a usable MCP server name: use letters, digits, `-` and `_` (it becomes part of tool names)"
        )))
    }
}

fn pair<'a>(text: &'a str, sep: char, what: &str) -> Result<(&'a str, &'a str), CliError> {
    match text.split_once(sep) {
        Some((k, v))
            if !k.trim().is_empty()
                && k.trim()
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') =>
        {
            Ok((k.trim(), v.trim_start()))
        }
        _ => Err(CliError::Usage(format!(
            "`{text}` is not a valid {what} (write it as NAME{sep}VALUE; NAME of letters, digits, `-`, `_`)"
        ))),
    }
}

fn add(config: &Config, a: AddArgs) -> Result<u8, CliError> {
    check_name(&a.name)?;
    if config.file.mcp_servers.contains_key(&a.name) {
        return Err(CliError::Usage(format!(
            "an MCP server `{}` is already configured; `hermes mcp remove {}` first to replace it",
            a.name, a.name
        )));
    }
    let base = format!("mcp_servers.{}", a.name);
    let mut sets: Vec<(String, Value)> = Vec::new();
    if let Some(cmd) = &a.command {
        sets.push((format!("{base}.command"), Value::String(cmd.clone())));
        if !a.args.is_empty() {
            sets.push((format!("{base}.args"), Value::from(a.args.clone())));
        }
        for e in &a.env {
            let (k, v) = pair(e, '=', "--env")?;
            sets.push((format!("{base}.env.{k}"), Value::String(v.to_string())));
        }
    }
    if let Some(url) = &a.url {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(CliError::Usage(format!(
                "`{url}` is not an http:// or https:// URL"
            )));
        }
        sets.push((format!("{base}.url"), Value::String(url.clone())));
    }
    for h in &a.headers {
        let (k, v) = pair(h, ':', "--header")?;
        sets.push((format!("{base}.headers.{k}"), Value::String(v.to_string())));
    }
    let path = config.home.config_path();
    let mut text = read_config(config)?;
    for (key, value) in &sets {
        text = yaml_edit::set(&text, key, value).map_err(|e| CliError::Usage(e.to_string()))?;
    }
    crate::cli::config_cmd::write_checked(&config.home, &text)?;
    eprintln!("added MCP server `{}` to {}", a.name, path.display());
    Ok(exit::OK)
}

fn remove(config: &Config, name: &str) -> Result<u8, CliError> {
    server(config, name)?;
    let text = read_config(config)?;
    let new = yaml_edit::unset(&text, &format!("mcp_servers.{name}")).map_err(|e| {
        CliError::Usage(format!(
            "{e} (a server written inside a `{{...}}` mapping must be removed with `hermes config edit`)"
        ))
    })?;
    crate::cli::config_cmd::write_checked(&config.home, &new)?;
    crate::mcp::client::known::forget(config, name);
    eprintln!(
        "removed MCP server `{name}` from {}",
        config.home.config_path().display()
    );
    Ok(exit::OK)
}

fn read_config(config: &Config) -> Result<String, CliError> {
    let path = config.home.config_path();
    match std::fs::read_to_string(&path) {
        Ok(t) => Ok(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(CliError::Config(crate::config::ConfigError::Read {
            path,
            source: e,
        })),
    }
}

/// `/reload-mcp`: reads config.yaml again, restarts every MCP supervisor from its
/// `mcp_servers:`, waits at most `mcp_discovery_timeout` to say where each stands. The
/// running session keeps the tools it started with (its request prefix stays byte-identical);
/// the next session (`/new`) gets the new set.
pub fn reload(runtime: &tokio::runtime::Runtime, services: &crate::agent::Services) -> String {
    let config = match Config::load(&services.config.home) {
        Ok(c) => std::sync::Arc::new(c),
        Err(e) => return format!("MCP servers not reloaded: {e}"),
    };
    let cx = crate::mcp::client::context(&config, &services.tools, &services.http);
    let limit = config
        .file
        .mcp_discovery_timeout
        .filter(|v| v.is_finite() && *v >= 0.0)
        .unwrap_or(crate::mcp::client::DEFAULT_DISCOVERY_TIMEOUT)
        .min(600.0);
    let statuses = runtime.block_on(async {
        services.mcp.reload(&cx);
        services
            .mcp
            .wait_discovery(std::time::Duration::from_secs_f64(limit))
            .await;
        services.mcp.statuses()
    });
    if statuses.is_empty() {
        return "no MCP servers configured; this session keeps its tools".to_string();
    }
    let mut out = String::from("MCP servers reloaded:");
    for (name, status) in statuses {
        out.push_str(&format!("\n  {name:<16} {status}"));
    }
    out.push_str("\nThis session keeps its tools; /new starts one with the new set.");
    out
}

/// `mcp.auto_reload_on_config_change` in the REPL: before each line is handled, config.yaml's
/// modification time is compared (one `stat`); when the file changed and its `mcp_servers:`
/// with it, the servers are reloaded as by `/reload-mcp` — or, with the key false, the user is
/// told that `/reload-mcp` applies the change. An unreadable file mid-edit is skipped until it
/// changes again.
pub struct ConfigWatch {
    path: std::path::PathBuf,
    mtime: Option<std::time::SystemTime>,
    servers: std::collections::BTreeMap<String, McpServerConfig>,
}

impl ConfigWatch {
    /// Watches from the servers `config` was loaded with. The file's time is not taken now:
    /// it may have changed since `config` was read, so the first check reads it.
    pub fn new(config: &Config) -> Self {
        ConfigWatch {
            path: config.home.config_path(),
            mtime: None,
            servers: config.file.mcp_servers.clone(),
        }
    }

    /// What to print when the MCP servers changed (after reloading them), else `None`.
    pub fn check(
        &mut self,
        runtime: &tokio::runtime::Runtime,
        services: &crate::agent::Services,
    ) -> Option<String> {
        let mtime = modified(&self.path);
        if mtime == self.mtime {
            return None;
        }
        self.mtime = mtime;
        let config = Config::load(&services.config.home).ok()?;
        if config.file.mcp_servers == self.servers {
            return None;
        }
        self.servers = config.file.mcp_servers.clone();
        if config.file.mcp.auto_reload_on_config_change == Some(false) {
            return Some(
                "MCP server config changed — not reloaded (mcp.auto_reload_on_config_change is false).\n\
                 /reload-mcp applies it; the next session then gets the new tools (a new tools array: the provider's prompt cache starts over)."
                    .to_string(),
            );
        }
        Some(format!(
            "MCP server config changed — reloading.\n{}",
            reload(runtime, services)
        ))
    }

    /// Takes the file as it is now (after a `/reload-mcp`).
    pub fn sync(&mut self, config: &Config) {
        if let Ok(c) = Config::load(&config.home) {
            self.servers = c.file.mcp_servers.clone();
        }
        self.mtime = modified(&self.path);
    }
}

fn modified(path: &std::path::Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}
