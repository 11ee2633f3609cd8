//! hermes: a self-improving personal AI agent in one binary.
//!
//! The map is `DESIGN.md`; in short: `agent` runs the conversation loop, `llm` talks to model
//! providers, `tools` holds what the model can call, `sessions` is state.db, `security` guards
//! commands and paths, `cli` is the terminal front end.

pub mod acp;
pub mod agent;
pub mod checkpoints;
pub mod cli;
pub mod config;
pub mod gateway;
pub mod llm;
pub mod mcp;
pub mod mcp_server;
pub mod memory;
pub mod panics;
pub mod security;
pub mod sessions;
pub mod skills;
pub mod template;
pub mod tools;
pub mod turn;
pub mod util;

pub use agent::Agent;
