//! Tools the model can call: the registry (contract, registration, dispatch), toolsets, and one
//! file per tool family. Every tool module must be linked here or it never registers.

pub mod file_patch;
pub mod file_read;
pub mod file_write;
pub mod registry;
pub mod search_files;
pub mod terminal;
pub mod todo;
pub mod toolsets;

pub use registry::{
    SessionScratch, Tool, ToolContext, ToolError, ToolOutput, ToolRegistry, TypedTool,
};
