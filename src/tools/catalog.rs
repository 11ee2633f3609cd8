//! The process's tool catalog (`Services::tools`): every built-in tool, discovered once, plus the
//! tools registered while the process runs (MCP servers). Sessions select theirs from it; a
//! session keeps the set it started with (its request prefix must stay byte-identical), so a
//! tool registered later is offered from the next session on.

use std::sync::{Arc, RwLock};

use crate::config::Config;
use crate::tools::registry::{RegisterError, Tool, ToolRegistry, ToolStatus, ToolsetError};
use crate::tools::toolsets::ToolsetInfo;

/// Shared by every session of the process; registration takes `&self`.
#[derive(Default)]
pub struct ToolCatalog {
    tools: RwLock<ToolRegistry>,
}

impl ToolCatalog {
    /// Every tool linked into the binary.
    pub fn discover() -> Self {
        ToolCatalog {
            tools: RwLock::new(ToolRegistry::discover()),
        }
    }

    // A panic while holding the lock cannot leave the map half-changed (one insert or remove),
    // so a poisoned lock is still usable.
    fn read(&self) -> std::sync::RwLockReadGuard<'_, ToolRegistry> {
        self.tools.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, ToolRegistry> {
        self.tools.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a tool found at run time (see `ToolRegistry::register`).
    pub fn register(&self, tool: Arc<dyn Tool>) -> Result<(), RegisterError> {
        let (name, toolset) = (tool.name().to_string(), tool.toolset().to_string());
        self.write().register(tool)?;
        tracing::info!(tool = %name, %toolset, "tool registered at run time");
        Ok(())
    }

    /// Replaces every tool of `toolset` with `tools` at once (under one lock, so a session
    /// selecting meanwhile sees the old set or the new one, never half of it); the errors of
    /// the tools that could not be registered.
    pub fn replace_toolset(
        &self,
        toolset: &str,
        tools: Vec<Arc<dyn Tool>>,
    ) -> Vec<(String, RegisterError)> {
        let mut registry = self.write();
        registry.deregister_toolset(toolset);
        let mut errors = Vec::new();
        for tool in tools {
            let name = tool.name().to_string();
            if let Err(e) = registry.register(tool) {
                errors.push((name, e));
            }
        }
        tracing::info!(%toolset, "toolset replaced at run time");
        errors
    }

    /// Removes one tool; true when it was registered.
    pub fn deregister(&self, name: &str) -> bool {
        self.write().deregister(name).is_some()
    }

    /// Removes every tool of a toolset; returns their names.
    pub fn deregister_toolset(&self, toolset: &str) -> Vec<String> {
        self.write().deregister_toolset(toolset)
    }

    /// The toolsets whose names start with `prefix` that have tools now (`mcp-`).
    pub fn toolsets_with_prefix(&self, prefix: &str) -> std::collections::BTreeSet<String> {
        let tools = self.read();
        tools
            .names()
            .into_iter()
            .filter_map(|n| tools.get(n))
            .map(|t| t.toolset().to_string())
            .filter(|t| t.starts_with(prefix))
            .collect()
    }

    /// One tool by name.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.read().get(name).cloned()
    }

    /// A copy of every tool now registered.
    pub fn snapshot(&self) -> ToolRegistry {
        self.read().clone()
    }

    /// The tools a session gets: those of the enabled toolsets whose requirements are met.
    pub fn select(
        &self,
        config: &Config,
        toolsets: &[String],
    ) -> Result<ToolRegistry, ToolsetError> {
        self.read().select(config, toolsets)
    }

    /// Every toolset with its description, includes and members.
    pub fn toolsets(&self, config: &Config) -> Vec<ToolsetInfo> {
        self.read().toolsets(&config.custom_toolsets)
    }

    /// Every tool with its toolset and availability under `config`.
    pub fn statuses(&self, config: &Config) -> Vec<ToolStatus> {
        self.read().statuses(config)
    }
}
