//! Servers a session could not wait for. Start-up never blocks on a server hermes has not seen
//! before (no saved list in `cache/mcp/`): whatever has answered when a session freezes its
//! tools array is in it, and the servers still missing then are handed to the session's
//! `tool_search`/`tool_describe`/`tool_call` (`tools/deferred.rs`) as `LateTools`. Those wait for
//! a server still connecting at most `mcp_discovery_timeout` per call, then search or run what
//! has arrived; a server that is down is named with its reason. The next session sends the
//! late server's tools directly (and the next process too: its list is saved).

use std::sync::Arc;
use std::time::Duration;

use crate::config::Config;
use crate::tools::ToolCatalog;
use crate::tools::deferred::LateTools;
use crate::tools::registry::Tool;

use super::names;
use super::server::{Server, ServerStatus};

/// The servers whose tools were not in a session's array when it froze.
pub struct LateServers {
    /// Each with the catalog its tools are registered in.
    servers: Vec<(Arc<Server>, Arc<ToolCatalog>)>,
    /// For the session's tool rules (`agent.disabled_toolsets`/`disabled_tools`).
    config: Arc<Config>,
    /// How long one bridge call waits for a server still connecting.
    wait: Duration,
}

impl LateServers {
    pub fn new(
        servers: Vec<(Arc<Server>, Arc<ToolCatalog>)>,
        config: Arc<Config>,
        wait: Duration,
    ) -> Self {
        LateServers {
            servers,
            config,
            wait,
        }
    }
}

#[async_trait::async_trait]
impl LateTools for LateServers {
    fn missing(&self) -> Vec<String> {
        self.servers
            .iter()
            .filter_map(|(s, _)| match s.current_status() {
                ServerStatus::Connecting => Some(format!(
                    "the MCP server `{}` is still connecting; its tools can be found once it answers",
                    s.name
                )),
                ServerStatus::Down { reason } => Some(format!(
                    "the MCP server `{}` is down ({reason}); hermes keeps retrying",
                    s.name
                )),
                ServerStatus::Ready { .. } | ServerStatus::Idle { .. } | ServerStatus::Disabled => {
                    None
                }
            })
            .collect()
    }

    async fn settle(&self) {
        let deadline = tokio::time::Instant::now() + self.wait;
        for (server, _) in &self.servers {
            let mut rx = server.status.subscribe();
            let _ = tokio::time::timeout_at(deadline, rx.wait_for(ServerStatus::is_settled)).await;
        }
    }

    fn arrived(&self) -> Vec<Arc<dyn Tool>> {
        // The same selection rules as the session's array (disabled tools stay out); a server
        // with no tools yet has no toolset, which `select` refuses: nothing arrived from it.
        self.servers
            .iter()
            .filter_map(|(s, catalog)| {
                catalog
                    .select(&self.config, &[names::toolset(&s.name)])
                    .ok()
            })
            .flat_map(|selected| {
                selected
                    .names()
                    .into_iter()
                    .filter_map(|n| selected.get(n).cloned())
                    .collect::<Vec<_>>()
            })
            .collect()
    }
}
