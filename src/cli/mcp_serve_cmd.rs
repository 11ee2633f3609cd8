//! `hermes mcp serve [--http ADDR]`: runs the MCP server (`crate::mcp_server`) until the client
//! hangs up (stdio) or a stop signal arrives. stdout carries MCP frames only; the HTTP address
//! goes to stderr.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::cli::{CliError, exit, setup};
use crate::config::Config;
use crate::mcp_server::{Conversations, HttpOptions};

pub fn run(
    runtime: &tokio::runtime::Runtime,
    config: Config,
    http: Option<&str>,
) -> Result<u8, CliError> {
    let store = setup::open_store(&config)?;
    let config = Arc::new(config);
    let options = match http {
        Some(addr) => Some(
            HttpOptions::from_config(&config, addr).map_err(|e| CliError::Usage(e.to_string()))?,
        ),
        None => None,
    };
    runtime.block_on(async move {
        let stop = CancellationToken::new();
        let on_signal = stop.clone();
        tokio::spawn(async move {
            crate::cli::signals::stop_signal().await;
            on_signal.cancel();
        });
        let served = match options {
            None => crate::mcp_server::serve_stdio(config, store, stop).await,
            Some(options) => {
                let conversations = Conversations { store, config };
                crate::mcp_server::serve_http(conversations, options.clone(), stop, |addr| {
                    let auth = if options.has_key() {
                        "bearer key required"
                    } else {
                        "no key: loopback only"
                    };
                    eprintln!("hermes mcp serve: listening on http://{addr}/mcp ({auth})");
                })
                .await
            }
        };
        served.map_err(|e| CliError::Setup(e.to_string()))?;
        Ok(exit::OK)
    })
}
