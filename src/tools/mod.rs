//! Tools the model can call: the registry (contract, registration, dispatch), toolsets, and one
//! file per tool family. Every tool module must be linked here or it never registers.

pub mod catalog;
pub mod deferred;
pub mod delegate;
pub mod dynamic;
pub mod file_common;
pub mod file_io;
pub mod file_patch;
pub mod file_path;
pub mod file_read;
pub mod file_write;
pub mod memory;
pub mod patch_indent;
pub mod patch_match;
pub mod proc_output;
pub mod registry;
pub mod search_files;
pub mod session_search;
pub mod skills;
pub mod skills_hub;
pub mod skills_manage;
pub mod terminal;
#[cfg(debug_assertions)]
pub mod test_crash;
#[cfg(test)]
pub mod test_support;
pub mod todo;
pub mod toolsets;

pub use catalog::ToolCatalog;
pub use dynamic::{Availability, DynamicTool, ToolHandler};
pub use registry::{
    AgentRole, RegisterError, SessionScratch, Tool, ToolContext, ToolError, ToolOutput,
    ToolRegistry, TypedTool,
};
