//! Integration test modules, one per area.

pub mod agent_api;
pub mod anthropic_cli;
pub mod anthropic_client;
pub mod cli_agent;
pub mod cli_errors;
pub mod cli_interrupt;
pub mod cli_repl;
pub mod compaction;
pub mod failover;
pub mod gateway_api;
pub mod gateway_recovery;
pub mod gateway_sessions;
pub mod gateway_support;
pub mod gateway_telegram;
pub mod guards_e2e;
pub mod llm_client;
pub mod loop_guard;
pub mod memory_e2e;
pub mod session_search_e2e;
pub mod sessions_compat;
pub mod skills_e2e;
pub mod spend;
