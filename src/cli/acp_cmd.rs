//! `hermes acp`: serves the Agent Client Protocol on stdin/stdout for an editor (`crate::acp`).
//! A provider that does not resolve is not fatal here: the editor is told through
//! `initialize`/`authenticate` what to configure, which it can show, unlike a dead process.

use crate::cli::args::RunArgs;
use crate::cli::{CliError, exit, setup};
use crate::config::Config;

pub fn run(
    runtime: &tokio::runtime::Runtime,
    args: &RunArgs,
    config: Config,
) -> Result<u8, CliError> {
    let services = crate::cli::services(config)?;
    runtime.block_on(async move {
        let client = setup::make_client(args, &services.config, Some(&services.http))
            .await
            .map_err(|e| {
                tracing::warn!(error = %e, "hermes acp: no model provider");
                format!("{e}; run `hermes setup` (or set a provider in $HERMES_HOME/config.yaml) and restart the agent")
            });
        let options = setup::agent_options(args, &services.config, true);
        let served = crate::acp::serve_stdio(crate::acp::AcpSetup {
            services: services.clone(),
            client,
            options,
        })
        .await;
        services
            .children
            .wait_idle(crate::agent::child::EXIT_WAIT)
            .await;
        served.map_err(|e| CliError::Setup(e.to_string()))?;
        Ok(exit::OK)
    })
}
