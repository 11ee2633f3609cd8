//! Where the stdio MCP test server binary is (`target/<profile>/examples/mcp_stdio_server`),
//! built on demand when the tests were run without examples (`cargo test --test all`).

use std::path::PathBuf;
use std::sync::OnceLock;

/// The test server's path; builds it once per test process if it is missing.
pub fn stdio_server() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let hermes = PathBuf::from(env!("CARGO_BIN_EXE_hermes"));
        let path = hermes
            .parent()
            .expect("the binary's directory")
            .join("examples")
            .join("mcp_stdio_server");
        if !path.exists() {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let status = std::process::Command::new(cargo)
                .args(["build", "--example", "mcp_stdio_server"])
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .status()
                .expect("run cargo build --example mcp_stdio_server");
            assert!(status.success(), "building the MCP test server failed");
        }
        path
    })
    .clone()
}

/// A `mcp_servers:` entry for the stdio test server (YAML lines indented under the name).
pub fn stdio_entry(extra: &str) -> String {
    format!("    command: {}\n{extra}", stdio_server().display())
}
