//! Test support: the scripted mock LLM server and a harness for running the real binary.
#![allow(dead_code)]

pub mod cross_check;
pub mod fake_telegram;
pub mod harness;
pub mod mock_anthropic;
pub mod mock_llm;
