//! Test support: the scripted mock LLM server and a harness for running the real binary.
#![allow(dead_code)]

pub mod acp_editor;
pub mod closed_port;
pub mod cross_check;
pub mod fake_telegram;
pub mod harness;
pub mod hub_cli;
pub mod mcp_http;
pub mod mcp_servers;
pub mod mcp_tools;
pub mod mock_anthropic;
pub mod mock_llm;
