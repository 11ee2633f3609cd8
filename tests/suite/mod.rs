//! Integration test modules, one per area.

pub mod anthropic_client;
pub mod cli_agent;
pub mod cli_errors;
pub mod cli_interrupt;
pub mod cli_repl;
pub mod failover;
pub mod llm_client;
pub mod loop_guard;
pub mod sessions_compat;
pub mod spend;
