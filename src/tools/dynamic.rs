//! Tools that exist only at run time (an MCP server's tools, later plugins): a name, a toolset
//! (e.g. `mcp-<server>`), a JSON schema that came from elsewhere, an async call handle and an
//! availability state with a reason. A `DynamicTool` is a `Tool` like any built-in one, so it is
//! offered, filtered by toolset and availability, dispatched, redacted and capped by the same
//! code (`ToolRegistry`); register it with `ToolCatalog::register`.

use std::sync::{Arc, RwLock};

use serde_json::Value;

use crate::config::Config;
use crate::llm::ToolSchema;
use crate::tools::registry::{Tool, ToolContext, ToolError};

/// What runs a dynamic tool's call (the MCP client's `tools/call`, for one).
#[async_trait::async_trait]
pub trait ToolHandler: Send + Sync {
    /// `arguments` is the model's JSON object (`{}` when it sent none).
    async fn call(&self, arguments: Value, ctx: &ToolContext) -> Result<String, ToolError>;
}

/// Whether a dynamic tool can be used now; shared between the tool and whoever knows (the MCP
/// connection marks its tools unavailable with a reason when the server goes away).
#[derive(Debug, Clone, Default)]
pub struct Availability(Arc<RwLock<Option<String>>>);

impl Availability {
    pub fn available() -> Self {
        Self::default()
    }

    pub fn unavailable(reason: impl Into<String>) -> Self {
        Availability(Arc::new(RwLock::new(Some(reason.into()))))
    }

    pub fn set_available(&self) {
        *self.0.write().unwrap_or_else(|p| p.into_inner()) = None;
    }

    pub fn set_unavailable(&self, reason: impl Into<String>) {
        *self.0.write().unwrap_or_else(|p| p.into_inner()) = Some(reason.into());
    }

    /// `Err(reason)` while unavailable.
    pub fn check(&self) -> Result<(), String> {
        match &*self.0.read().unwrap_or_else(|p| p.into_inner()) {
            None => Ok(()),
            Some(reason) => Err(reason.clone()),
        }
    }
}

/// A tool registered at run time.
pub struct DynamicTool {
    schema: ToolSchema,
    toolset: String,
    read_only: bool,
    handler: Arc<dyn ToolHandler>,
    availability: Availability,
    /// Offered to new sessions even while unavailable (a call then answers with the reason).
    offered_while_unavailable: bool,
}

impl DynamicTool {
    /// `parameters` is the tool's JSON schema (an object schema); it is sent as given.
    pub fn new(
        name: impl Into<String>,
        toolset: impl Into<String>,
        description: impl Into<String>,
        parameters: Value,
        handler: Arc<dyn ToolHandler>,
    ) -> Self {
        DynamicTool {
            schema: ToolSchema {
                name: name.into(),
                description: description.into(),
                parameters,
            },
            toolset: toolset.into(),
            read_only: false,
            handler,
            availability: Availability::available(),
            offered_while_unavailable: false,
        }
    }

    /// Declares the tool free of side effects (it may then run beside other read-only calls).
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// Keeps the tool in new sessions while it is unavailable: the model then reads the reason
    /// when it calls it, instead of the tool vanishing (an MCP server that is down). The
    /// session's tools array also stays the same while a server comes and goes.
    pub fn offered_while_unavailable(mut self, offered: bool) -> Self {
        self.offered_while_unavailable = offered;
        self
    }

    /// Shares an availability state (keep a clone to change it later).
    pub fn with_availability(mut self, availability: Availability) -> Self {
        self.availability = availability;
        self
    }
}

#[async_trait::async_trait]
impl Tool for DynamicTool {
    fn name(&self) -> &str {
        &self.schema.name
    }

    fn toolset(&self) -> &str {
        &self.toolset
    }

    fn schema(&self) -> ToolSchema {
        self.schema.clone()
    }

    fn read_only(&self) -> bool {
        self.read_only
    }

    fn check_available(&self, _config: &Config) -> Result<(), String> {
        if self.offered_while_unavailable {
            return Ok(());
        }
        self.availability.check()
    }

    fn unavailable_now(&self) -> Option<String> {
        self.availability.check().err()
    }

    async fn call(&self, arguments: &str, ctx: &ToolContext) -> Result<String, ToolError> {
        // Offered when the session started; it may have gone away since.
        if let Err(reason) = self.availability.check() {
            return Err(ToolError::Respond(format!(
                "the tool {} is not available now: {reason}",
                self.schema.name
            )));
        }
        let value: Value = crate::tools::registry::parse_arguments(&self.schema.name, arguments)?;
        if !value.is_object() {
            return Err(ToolError::Respond(format!(
                "the arguments for {} must be one JSON object, not {value}",
                self.schema.name
            )));
        }
        self.handler.call(value, ctx).await
    }
}
