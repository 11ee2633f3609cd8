//! The Model Context Protocol, both ways: `client/` connects to the servers in `mcp_servers:` and
//! registers their tools as `mcp__<server>__<tool>`; the server side (`hermes mcp serve`) offers
//! hermes to other MCP clients.

pub mod client;

pub use client::{McpClients, ServerStatus};
