//! `hermes gateway run|status` and `hermes send PLATFORM:CHAT TEXT`: the terminal side of the
//! messaging gateway (`crate::gateway`).

use clap::Subcommand;
use tokio_util::sync::CancellationToken;

use crate::cli::args::RunArgs;
use crate::cli::{CliError, exit, setup};
use crate::config::Config;

#[derive(Debug, Subcommand)]
pub enum GatewayCommand {
    /// Serve the configured platforms in the foreground (Ctrl-C or SIGTERM stops).
    Run {
        /// Serve only this platform (e.g. telegram).
        #[arg(long)]
        platform: Option<String>,
    },
    /// Health of the platforms and the delivery backlog, as last recorded by the gateway.
    Status {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(
    runtime: &tokio::runtime::Runtime,
    args: &RunArgs,
    config: Config,
    action: GatewayCommand,
) -> Result<u8, CliError> {
    match action {
        GatewayCommand::Run { platform } => runtime.block_on(serve(args, config, platform)),
        GatewayCommand::Status { json } => status(&config, json),
    }
}

async fn serve(args: &RunArgs, config: Config, only: Option<String>) -> Result<u8, CliError> {
    let platforms = crate::gateway::configured(&config, only.as_deref())
        .map_err(|e| CliError::Setup(e.to_string()))?;
    let services = crate::cli::services(config)?;
    let client = setup::make_client(args, &services.config, Some(&services.http)).await?;
    let options = setup::agent_options(args, &services.config, true);
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    tokio::spawn(async move {
        let signal = crate::cli::signals::stop_signal().await;
        tracing::info!(signal, "gateway stopping on signal");
        stop.cancel();
    });
    eprintln!(
        "hermes gateway: serving {} (Ctrl-C to stop)",
        platforms.names().join(", ")
    );
    match crate::gateway::run(services, client, options, platforms, shutdown).await {
        Ok(()) => {
            eprintln!("hermes gateway: stopped");
            Ok(exit::OK)
        }
        Err(e) => Err(CliError::Setup(format!("gateway stopped: {e}"))),
    }
}

fn status(config: &Config, json: bool) -> Result<u8, CliError> {
    let store = setup::open_store(config)?;
    store.gateway_init()?;
    let state = store.gateway_all_state()?;
    let (queued, pending) = store.gateway_backlog()?;
    let now = crate::gateway::unix_now();
    let mut platforms = serde_json::Map::new();
    for (key, value, updated) in &state {
        let Some((platform, field)) = key.split_once('.') else {
            continue;
        };
        let entry = platforms
            .entry(platform.to_string())
            .or_insert_with(|| serde_json::json!({}));
        entry[field] = serde_json::Value::from(value.clone());
        if field == "last_ok" {
            entry["seconds_since_last_ok"] =
                serde_json::Value::from((now - updated).max(0.0).round());
        }
        if field == "pid" {
            let alive = value.parse::<i32>().is_ok_and(pid_alive);
            entry["process_alive"] = serde_json::Value::from(alive);
        }
    }
    if json {
        let doc = serde_json::json!({
            "platforms": platforms,
            "queued_messages": queued,
            "pending_deliveries": pending,
        });
        println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
        return Ok(exit::OK);
    }
    if platforms.is_empty() {
        println!("The gateway has not run yet (`hermes gateway run`).");
    }
    for (name, entry) in &platforms {
        let field = |k: &str| {
            entry
                .get(k)
                .map(|v| v.to_string().trim_matches('"').to_string())
        };
        let status = field("status").unwrap_or_else(|| "unknown".into());
        // A stopped platform's process is gone by design; say so only when it claims to run.
        let dead = entry.get("process_alive").and_then(|v| v.as_bool()) == Some(false)
            && !status.starts_with("stopped");
        println!(
            "{name}: {status}{}",
            if dead { " (process not running)" } else { "" }
        );
        if let Some(s) = field("seconds_since_last_ok") {
            println!("  last successful poll: {s}s ago");
        }
        if let Some(e) = field("last_error") {
            println!("  last error: {e}");
        }
    }
    println!("queued messages: {queued}, pending deliveries: {pending}");
    Ok(exit::OK)
}

fn pid_alive(pid: i32) -> bool {
    // Signal 0 checks existence without touching the process.
    // SAFETY: kill(2) with signal 0 only reads the pid; no memory is shared with the callee.
    pid > 0 && unsafe { libc::kill(pid, 0) } == 0
}

/// `hermes send telegram:CHAT "text"`: one message, chunked, for scripts.
pub fn send(
    runtime: &tokio::runtime::Runtime,
    config: &Config,
    target: &str,
    text: &str,
) -> Result<u8, CliError> {
    runtime
        .block_on(crate::gateway::send::send_text(config, target, text))
        .map(|_| exit::OK)
        .map_err(|e| CliError::Setup(e.to_string()))
}

#[derive(Debug, Subcommand)]
pub enum PairingCommand {
    /// Codes waiting for approval and users already paired (every platform unless one is named).
    List { platform: Option<String> },
    /// Let the user who got CODE talk to the bot.
    Approve { platform: String, code: String },
    /// Remove a paired user.
    Revoke { platform: String, user_id: String },
}

/// `hermes pairing list|approve|revoke`.
pub fn pairing(config: &Config, action: PairingCommand) -> Result<u8, CliError> {
    use crate::gateway::pairing::PairingApproval;
    let store = setup::open_store(config)?;
    store.gateway_init()?;
    match action {
        PairingCommand::List { platform } => {
            let platforms = match platform {
                Some(p) => vec![p],
                None => store.pairing_platforms()?,
            };
            if platforms.is_empty() {
                println!("no pending pairing codes and no paired users on any platform");
            }
            for platform in platforms {
                let pending = store.pairing_pending(&platform)?;
                let approved = store.pairing_approved(&platform)?;
                println!("pending codes ({platform}): {}", pending.len());
                for (code, user, name, _) in pending {
                    println!("  {code}  user {user} {}", name.unwrap_or_default());
                }
                println!("paired users ({platform}): {}", approved.len());
                for (user, name) in approved {
                    println!("  {user} {}", name.unwrap_or_default());
                }
            }
            Ok(exit::OK)
        }
        PairingCommand::Approve { platform, code } => {
            match store.pairing_approve(&platform, &code)? {
                PairingApproval::Approved(user, name) => {
                    let who = name.map(|n| format!(" ({n})")).unwrap_or_default();
                    println!("paired: {platform} user {user}{who} may now talk to the bot");
                    Ok(exit::OK)
                }
                PairingApproval::Unknown => Err(CliError::NotFound(format!(
                    "no pending {platform} pairing code `{code}` (codes expire after 1 hour; `hermes pairing list` shows them)"
                ))),
                PairingApproval::Locked => Err(CliError::Setup(format!(
                    "too many wrong {platform} pairing codes: approving is locked for an hour"
                ))),
            }
        }
        PairingCommand::Revoke { platform, user_id } => {
            if store.pairing_revoke(&platform, &user_id)? {
                println!("revoked: {platform} user {user_id}");
                Ok(exit::OK)
            } else {
                Err(CliError::NotFound(format!(
                    "{platform} user {user_id} is not paired"
                )))
            }
        }
    }
}
