//! Where the stdio MCP test server binary is (`target/<profile>/examples/mcp_stdio_server`).
//! `cargo test` builds it; `cargo test --test all` does not, so it is built here when it is
//! missing or older than its sources (a stale one would test old server code).

use std::path::PathBuf;
use std::sync::OnceLock;

/// The test server's path; built once per test process if it is missing or stale.
pub fn stdio_server() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let hermes = PathBuf::from(env!("CARGO_BIN_EXE_hermes"));
        let path = hermes
            .parent()
            .expect("the binary's directory")
            .join("examples")
            .join("mcp_stdio_server");
        if is_stale(&path) {
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

/// Missing, or older than one of the files it is built from.
fn is_stale(binary: &std::path::Path) -> bool {
    let Ok(built) = std::fs::metadata(binary).and_then(|m| m.modified()) else {
        return true;
    };
    let support = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support");
    ["mcp_stdio_server.rs", "mcp_tools.rs"].iter().any(|f| {
        std::fs::metadata(support.join(f))
            .and_then(|m| m.modified())
            .is_ok_and(|changed| changed > built)
    })
}
