//! `test_crash`: a tool that panics, for the tests of the panic policy (`crate::panics`).
//!
//! Compiled only with `debug_assertions` (never into a release build) — and offered
//! only when `HERMES_TEST_TOOLS=1` is in the environment, so the integration tests (which drive
//! the real debug binary) can reach it and nobody else ever sees it.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::config::Config;
use crate::tools::registry::{ToolContext, ToolError, TypedTool};

/// Arguments of `test_crash`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TestCrashArgs {
    /// Text put into the panic message.
    #[serde(default)]
    pub message: String,
}

/// Panics on every call.
pub struct TestCrash;

impl TypedTool for TestCrash {
    type Args = TestCrashArgs;
    const NAME: &'static str = "test_crash";
    const TOOLSET: &'static str = "test";
    const DESCRIPTION: &'static str = "Test only: panics.";

    fn check_available(&self, config: &Config) -> Result<(), String> {
        match config.env.get("HERMES_TEST_TOOLS") {
            Some("1") => Ok(()),
            _ => Err("test-only tool (set HERMES_TEST_TOOLS=1 in a debug build)".into()),
        }
    }

    async fn run(&self, args: TestCrashArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        panic!("test_crash was asked to crash: {}", args.message);
    }
}

crate::register_tool!(TestCrash);
