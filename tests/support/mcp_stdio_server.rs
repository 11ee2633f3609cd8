//! The stdio MCP test server: an `[[example]]` binary (`target/debug/examples/mcp_stdio_server`)
//! that the real `hermes` spawns from an `mcp_servers:` entry. An example rather than a hidden
//! mode of `hermes`: the test server's code never ships in the product binary, and `cargo test`
//! builds examples. `MCP_TEST_HANG=1` makes a server that never answers; `MCP_TEST_PID_FILE`
//! gets the process id (tests kill it); `MCP_TEST_WAIT_FILE=path` makes a slow server that
//! answers only once that file exists (a test creates it when hermes's first request went out).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "mcp_tools.rs"]
mod mcp_tools;

use rmcp::ServiceExt;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    eprintln!("mcp test server starting (pid {})", std::process::id());
    if let Ok(path) = std::env::var("MCP_TEST_PID_FILE") {
        std::fs::write(path, std::process::id().to_string()).unwrap();
    }
    if std::env::var("MCP_TEST_HANG").is_ok_and(|v| v == "1") {
        // Reads nothing, answers nothing.
        loop {
            tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
        }
    }
    if let Ok(path) = std::env::var("MCP_TEST_WAIT_FILE") {
        // Reads nothing until the test says so (bounded, so a failed test leaves no server).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !std::path::Path::new(&path).exists() && std::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }
    if let Ok(secret) = std::env::var("MCP_TEST_REPORT_ENV") {
        // Lets a test see which variables reached the server.
        let names: Vec<String> = std::env::vars().map(|(k, _)| k).collect();
        std::fs::write(secret, names.join("\n")).unwrap();
    }
    let server = mcp_tools::TestServer::from_env();
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .expect("serve stdio");
    let _ = running.waiting().await;
}
