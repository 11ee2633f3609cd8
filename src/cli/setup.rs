//! Process bootstrap shared by every front end: home layout, config, logging, state.db,
//! provider resolution, and the `Agent` for a new or resumed session.

pub mod model_yaml;
pub mod wizard;

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::agent::{Agent, AgentError, AgentOptions, Services};
use crate::cli::CliError;
use crate::cli::args::RunArgs;
use crate::config::{Config, HermesHome};
use crate::llm::LlmClient;
use crate::llm::provider::{self, ProviderFlags, ResolveInputs};
use crate::security::redact::{RedactingWriter, Redactor};
use crate::security::secrets;
use crate::sessions::SessionStore;

/// Logs rotate past this size (Python Hermes: 5 MB × 3).
const LOG_MAX_BYTES: u64 = 5 * 1024 * 1024;
const LOG_BACKUPS: usize = 3;

/// Loads the home (the profile from `-p`, else the sticky one) and its config; creates the
/// layout on first run.
pub fn load_config(profile: Option<&str>) -> Result<Config, CliError> {
    let home = crate::config::profiles::resolve_home(profile)?;
    home.ensure_layout()
        .map_err(|e| CliError::Setup(e.to_string()))?;
    seed_soul(&home);
    Ok(Config::load(&home)?)
}

fn seed_soul(home: &HermesHome) {
    let path = home.soul_path();
    if !path.exists()
        && let Err(e) = std::fs::write(&path, crate::agent::prompt::default_identity())
    {
        tracing::warn!(path = %path.display(), error = %e, "cannot seed SOUL.md");
    }
}

/// Sends tracing output, secrets redacted, to `$HERMES_HOME/logs/agent.log` (never stdout). Level from
/// `HERMES_LOG` (e.g. `debug`, `hermes=trace`), default `info`.
pub fn init_logging(config: &Config) {
    let dir = config.home.logs_dir();
    let path = dir.join("agent.log");
    rotate(&path);
    let Ok(file) = OpenOptions::new().create(true).append(true).open(&path) else {
        // No writable log file: run without logs rather than failing the conversation.
        return;
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("HERMES_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(Mutex::new(RedactingWriter::new(
            file,
            Redactor::new(secrets::collect(config), config.security.redact_secrets),
        )))
        .with_ansi(false)
        .try_init();
}

fn rotate(path: &Path) {
    let too_big = std::fs::metadata(path)
        .map(|m| m.len() > LOG_MAX_BYTES)
        .unwrap_or(false);
    if !too_big {
        return;
    }
    let numbered = |n: usize| PathBuf::from(format!("{}.{n}", path.display()));
    for n in (1..LOG_BACKUPS).rev() {
        let _ = std::fs::rename(numbered(n), numbered(n + 1));
    }
    let _ = std::fs::rename(path, numbered(1));
}

/// Opens state.db (waiting up to 5 s for another process's lock).
pub fn open_store(config: &Config) -> Result<Arc<SessionStore>, CliError> {
    let store = SessionStore::open_with_timeout(&config.home.state_db(), Duration::from_secs(5))?;
    Ok(Arc::new(store))
}

/// Opens state.db for a command that only reads: read-only and without the schema pass when
/// the file is complete (fast on a large archive), else as [`open_store`] does.
pub fn open_store_for_reading(config: &Config) -> Result<Arc<SessionStore>, CliError> {
    let path = config.home.state_db();
    match SessionStore::open_existing_read_only(&path, Duration::from_secs(5))? {
        Some(store) => Ok(Arc::new(store)),
        None => open_store(config),
    }
}

/// Resolves the provider from flags, config and environment, and builds its client — on the
/// process's shared HTTP client when there is one (`Services::http`): building a reqwest client
/// loads the system's root certificates, which is most of the start-up cost of a second one.
pub async fn make_client(
    args: &RunArgs,
    config: &Config,
    http: Option<&reqwest::Client>,
) -> Result<Arc<dyn LlmClient>, CliError> {
    let flags = ProviderFlags {
        provider: args.provider.clone(),
        model: args.model.clone(),
        base_url: args.base_url.clone(),
        api_key: args.api_key.clone(),
    };
    let provider = provider::resolve(ResolveInputs {
        flags: &flags,
        config,
        probe_timeout: Duration::from_millis(300),
    })
    .await?;
    tracing::info!(?provider, "provider resolved");
    Ok(match http {
        Some(http) => crate::llm::client_with_http(&provider, http)?,
        None => crate::llm::client_for(&provider)?,
    })
}

/// Agent options from flags and config.
pub fn agent_options(args: &RunArgs, config: &Config, interactive: bool) -> AgentOptions {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    AgentOptions {
        source: "cli".to_string(),
        cwd,
        toolsets: if args.toolsets.is_empty() {
            config.toolsets.clone()
        } else {
            args.toolsets.clone()
        },
        max_iterations: args.max_turns.unwrap_or(config.agent.max_turns).max(1),
        yolo: args.yolo,
        interactive,
        ephemeral: false,
    }
}

/// A new agent, or the resumed one when `-r`/`-c` was given.
pub async fn open_agent(
    args: &RunArgs,
    services: &Arc<Services>,
    client: Arc<dyn LlmClient>,
    options: AgentOptions,
) -> Result<Agent, CliError> {
    let store = services.store.clone();
    let wanted = args.resume.clone();
    let continue_last = args.continue_last;
    let row = store
        .call(move |store| match (wanted, continue_last) {
            (Some(id), _) => store.find_session(&id).map(|r| {
                r.ok_or_else(|| {
                    format!("no session matches `{id}`; `hermes sessions list` shows the ids")
                })
            }),
            (None, true) => store.latest_session(&["cli"]).map(|r| {
                r.ok_or_else(|| {
                    "no previous CLI session to continue; start one with `hermes`".to_string()
                })
            }),
            (None, false) => Ok(Err(String::new())),
        })
        .await?;
    let agent = match row {
        Ok(session) => Agent::resume(services.clone(), client, session, options).await,
        Err(message) if !message.is_empty() => return Err(CliError::NotFound(message)),
        Err(_) => Agent::start(services.clone(), client, options).await,
    };
    agent.map_err(|e: AgentError| e.into())
}
