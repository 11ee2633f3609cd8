//! MCP client benchmark: the real binary (release) against the scripted mock LLM and the stdio
//! MCP test server (`tests/support/mcp_stdio_server.rs`, built as an example).
//!
//! `cargo bench --bench mcp` prints medians of: start → first model request with no MCP server,
//! with 3 servers of which one never answers (first run of a fresh home, against a no-server
//! first run: nothing is waited for, the late servers are reached through tool_search; then with
//! the tool lists known from an earlier run), the size of the first request body with 300 MCP tools (deferred
//! behind tool_search in a 32K window, and with a 1M window where they are sent), and one MCP tool
//! call round trip through hermes against a bare rmcp client calling the same server
//! (`mcp/roundtrip.rs`): what hermes adds on top of the server's own time. Figures are printed,
//! not asserted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "../tests/support/mock_llm.rs"]
mod mock_llm;
#[path = "mcp/roundtrip.rs"]
mod roundtrip;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{home, median};
use mock_llm::{MockLlm, Reply};

const RUNS: usize = 11;

fn main() {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_hermes"));
    let server = test_server(&bin);
    println!(
        "hermes MCP benchmark ({RUNS} runs each, medians)\nbinary: {}\nserver: {}",
        bin.display(),
        server.display()
    );
    let cwd = tempfile::tempdir().unwrap();
    let base = common::QUIET_CONFIG;

    let none = home(base);
    let t_none = median((0..RUNS).map(|_| first_request(&bin, none.path(), cwd.path())));
    report("start → first request, no MCP server", t_none, "");
    // The first-run row below creates a home each run (state.db, skills, caches): its baseline
    // must pay the same.
    let t_none_first = median((0..RUNS).map(|_| {
        let h = home(base);
        first_request(&bin, h.path(), cwd.path())
    }));
    report("… no MCP server, first run of a home", t_none_first, "");

    let three = format!(
        "{base}mcp_servers:\n  a:\n    command: {s}\n  b:\n    command: {s}\n  silent:\n    command: {s}\n    env: {{MCP_TEST_HANG: '1'}}\n    connect_timeout: 5\n",
        s = server.display()
    );
    // A fresh home each run: nothing is known about the servers yet.
    let t_first = median((0..RUNS).map(|_| {
        let h = home(&three);
        first_request(&bin, h.path(), cwd.path())
    }));
    report(
        "… 3 servers, 1 silent, first run of a home",
        t_first,
        "(never-seen servers are not waited for)",
    );
    println!(
        "{:<52} {:>+9.1} ms   (target ≤ +30 ms)",
        "  difference to no server (both first runs)",
        (t_first.as_secs_f64() - t_none_first.as_secs_f64()) * 1000.0
    );
    let known = home(&three);
    first_request(&bin, known.path(), cwd.path());
    let t_known = median((0..RUNS).map(|_| first_request(&bin, known.path(), cwd.path())));
    report("… 3 servers, 1 silent, tool lists known", t_known, "");
    println!(
        "{:<52} {:>+9.1} ms   (target ≤ +30 ms)",
        "  difference to no server (tool lists known)",
        (t_known.as_secs_f64() - t_none.as_secs_f64()) * 1000.0
    );

    for (window, label) in [
        (32_000, "32K window (deferred)"),
        (1_000_000, "1M window (sent)"),
    ] {
        let cfg = format!(
            "{base}model:\n  context_length: {window}\nmcp_servers:\n  fleet:\n    command: {}\n    env: {{MCP_TEST_EXTRA_TOOLS: '300'}}\n",
            server.display()
        );
        let h = home(&cfg);
        let mock = MockLlm::with_script([Reply::text("ok")]);
        run(&bin, h.path(), cwd.path(), &mock, &["-z", "hi"]);
        let body = serde_json::to_vec(&mock.requests()[0]).unwrap().len();
        println!(
            "{:<52} {:>9.1} KB   {}",
            format!("first request body, 300 MCP tools, {label}"),
            body as f64 / 1024.0,
            if window == 32_000 {
                "(target ≤ 15 KB)"
            } else {
                ""
            }
        );
    }

    roundtrip::run(&server);
}

/// The stdio test server, built in the bench profile beside the bench's own binary (a debug
/// build would count its slowness as the server's own time).
fn test_server(bin: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args([
            "build",
            "--profile",
            "bench",
            "--example",
            "mcp_stdio_server",
        ])
        .current_dir(root)
        .status()
        .unwrap();
    assert!(status.success(), "building the MCP test server failed");
    let path = bin.parent().unwrap().join("examples/mcp_stdio_server");
    assert!(path.exists(), "{} is missing", path.display());
    path
}

fn hermes(bin: &Path, home: &Path, cwd: &Path, mock: &MockLlm, args: &[&str]) -> Command {
    common::hermes_on(bin, home, cwd, &mock.base_url(), "test-model", args)
}

fn run(bin: &Path, home: &Path, cwd: &Path, mock: &MockLlm, args: &[&str]) {
    let status = hermes(bin, home, cwd, mock, args).status().unwrap();
    assert!(status.success());
}

fn first_request(bin: &Path, home: &Path, cwd: &Path) -> Duration {
    let mock = MockLlm::with_script([Reply::text("ok")]);
    let cmd = hermes(bin, home, cwd, &mock, &["-z", "hi"]);
    common::time_to_first_request(cmd, || mock.request_count())
}

fn report(label: &str, d: Duration, note: &str) {
    println!("{label:<52} {:>9.1} ms   {note}", d.as_secs_f64() * 1000.0);
}
