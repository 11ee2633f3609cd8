//! Terminal front end: argument parsing, the REPL, one-shot mode and the `sessions` commands.
//! It talks to the agent only through `Agent`'s API and the `AgentEvent` stream.

pub mod acp_cmd;
pub mod args;
pub mod checkpoints_cmd;
pub mod claw;
pub mod completion_cmd;
pub mod config_cmd;
pub mod doctor;
pub mod gateway_cmd;
pub mod insights_cmd;
pub mod logs_cmd;
pub mod markdown;
pub mod mcp_cmd;
pub mod mcp_serve_cmd;
pub mod memory_cmd;
pub mod model_cmd;
pub mod not_yet;
pub mod oneshot;
pub mod profile_cmd;
pub mod render;
pub mod repl;
pub mod sessions_cmd;
pub mod sessions_report;
pub mod setup;
pub mod signals;
pub mod skills_cmd;
pub mod skills_hub_cmd;
pub mod slash;
pub mod tools_cmd;

use std::sync::Arc;

use crate::agent::{AgentError, Services};
use crate::config::ConfigError;
use crate::llm::LlmError;
use crate::llm::provider::ProviderError;
use crate::sessions::StoreError;

pub use args::Cli;

/// Everything that can end a CLI invocation with an error message.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error("{0}")]
    Config(#[from] ConfigError),
    #[error("{0}")]
    Provider(#[from] ProviderError),
    #[error("{0}")]
    Llm(#[from] LlmError),
    #[error("{0}")]
    Agent(#[from] AgentError),
    #[error("{0}")]
    Store(#[from] StoreError),
    #[error("{0}")]
    Setup(String),
    #[error("{0}")]
    NotFound(String),
    /// The command was used wrongly (exit 2).
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Process exit codes.
pub mod exit {
    pub const OK: u8 = 0;
    pub const FAILURE: u8 = 1;
    /// The command was used wrongly (e.g. `skills audit` of a path that is not a skill).
    pub const USAGE: u8 = 2;
    /// The user interrupted (as a shell reports SIGINT).
    pub const INTERRUPTED: u8 = 130;
}

impl CliError {
    /// The exit code this error ends the process with.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => exit::USAGE,
            _ => exit::FAILURE,
        }
    }
}

/// Runs the parsed command line; returns the process exit code.
pub fn run(cli: Cli) -> Result<u8, CliError> {
    // `config` and `profile` work on the files themselves, so they run even when config.yaml
    // does not load (they are how it gets repaired).
    let command = match cli.command {
        Some(args::Command::Config { action }) => {
            let home = crate::config::profiles::resolve_home(cli.profile.as_deref())?;
            return config_cmd::run(&home, action);
        }
        Some(args::Command::Profile { action }) => {
            let home = crate::config::profiles::resolve_home(cli.profile.as_deref())?;
            return profile_cmd::run(&home, action);
        }
        other => other,
    };
    let loaded = setup::load_config(cli.profile.as_deref());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| {
            CliError::Setup(format!(
                "cannot start hermes's worker threads ({e}): the system is out of threads or processes; try again when fewer programs run"
            ))
        })?;
    let config = match (loaded, &command) {
        (Ok(config), _) => config,
        // The doctor is where a user goes when the config is broken: it reports, not refuses.
        (Err(e), Some(args::Command::Doctor { json, fix })) => {
            let options = doctor::Options {
                json: *json,
                fix: *fix,
                run: cli.run.clone(),
            };
            return doctor::run_without_config(&runtime, e, options);
        }
        (Err(e), _) => return Err(e),
    };
    setup::init_logging(&config);
    if let Some(warning) = config.unsupported_warning() {
        // Once per process, on stderr: `-z` keeps stdout for the answer alone.
        eprintln!("{warning}");
        tracing::warn!("{warning}");
    }
    if let Some(warning) = config.python_defaults_warning() {
        eprintln!("{warning}");
        tracing::warn!("{warning}");
    }
    match command {
        Some(args::Command::Sessions { action }) => {
            let store = if action.only_reads() {
                setup::open_store_for_reading(&config)?
            } else {
                setup::open_store(&config)?
            };
            let redactor = crate::security::redact::Redactor::new(
                crate::security::secrets::collect(&config),
                config.security.redact_secrets,
            );
            sessions_cmd::run(&store, &redactor, action)
        }
        Some(args::Command::Memory { action }) => memory_cmd::run(&config, action),
        Some(args::Command::Skills { action }) => skills_cmd::run(&config, action),
        Some(args::Command::Gateway { action }) => {
            gateway_cmd::run(&runtime, &cli.run, config, action)
        }
        Some(args::Command::Pairing { action }) => gateway_cmd::pairing(&config, action),
        Some(args::Command::Send { target, text }) => {
            gateway_cmd::send(&runtime, &config, &target, &text)
        }
        Some(args::Command::Checkpoints { action }) => checkpoints_cmd::run(&config, action),
        Some(args::Command::Doctor { json, fix }) => doctor::run(
            &runtime,
            &config,
            None,
            doctor::Options {
                json,
                fix,
                run: cli.run.clone(),
            },
        ),
        Some(args::Command::Tools { action }) => tools_cmd::run(&config, action),
        Some(args::Command::Acp) => acp_cmd::run(&runtime, &cli.run, config),
        Some(args::Command::Mcp { action }) => mcp_cmd::run(&runtime, config, action),
        Some(args::Command::Config { .. } | args::Command::Profile { .. }) => Err(CliError::Setup(
            "config and profile commands run before this point".into(),
        )),
        Some(args::Command::Claw { action }) => claw::run(&config, action),
        Some(args::Command::Setup(setup_args)) => setup::wizard::run(&runtime, &config, setup_args),
        Some(args::Command::Model(model)) => model_cmd::run(&runtime, &cli.run, &config, model),
        Some(args::Command::Logs(logs)) => logs_cmd::run(&config, logs),
        Some(args::Command::Completion { shell }) => completion_cmd::run(shell),
        Some(args::Command::Insights { days, json }) => {
            let store = setup::open_store(&config)?;
            insights_cmd::run(&store, insights_cmd::prices_configured(&config), days, json)
        }
        Some(args::Command::Chat(chat)) => {
            let run = cli.run.overlaid(&chat.run);
            match chat.query {
                Some(query) => runtime.block_on(oneshot::run(
                    &run,
                    config,
                    &query,
                    oneshot::Style::Chat { quiet: chat.quiet },
                )),
                None => repl::run(&runtime, &run, config),
            }
        }
        None => match cli.oneshot {
            Some(prompt) => runtime.block_on(oneshot::run(
                &cli.run,
                config,
                &prompt,
                oneshot::Style::Bare,
            )),
            None => repl::run(&runtime, &cli.run, config),
        },
    }
}

/// Services for a conversation (config + state.db).
pub fn services(config: crate::config::Config) -> Result<Arc<Services>, CliError> {
    let store = setup::open_store(&config)?;
    let mut services = Services::new(Arc::new(config), store);
    services
        .extensions
        .push(Arc::new(crate::memory::MemoryManager::from_config(
            &services.config,
        )));
    skills_cmd::sync_bundled(&services.config);
    services
        .extensions
        .push(Arc::new(crate::skills::learning::SkillLearning::new(
            &services.config,
        )));
    services
        .extensions
        .push(Arc::new(crate::skills::probation::Probation::new(
            &services.config,
        )));
    Ok(Arc::new(services))
}
