//! One MCP tool call round trip over stdio, hermes's overhead separated from the server's own
//! time: the same tool (`echo`) of the same server binary (the test server, built in the bench
//! profile) is called many times by a bare rmcp client — the baseline: the server's own time plus
//! the stdio transport — and through hermes (`McpClients` → the catalog's `mcp__t__echo` →
//! `ToolRegistry::dispatch`, with the per-call timeout, the untrusted-data wrapper and redaction).
//! Blocks of each alternate so load changes hit both; medians and minimums are printed.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hermes::config::{Config, HermesHome};
use hermes::llm::ToolCall;
use hermes::tools::registry::{SessionScratch, ToolContext};
use hermes::tools::{ToolCatalog, ToolRegistry};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;

const BLOCKS: usize = 20;
const PER_BLOCK: usize = 25;

/// Prints the bare and hermes per-call figures for `server`.
pub fn run(server: &Path) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(measure(server));
}

async fn measure(server: &Path) {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.yaml"),
        format!("mcp_servers:\n  t:\n    command: {}\n", server.display()),
    )
    .unwrap();
    let config = Arc::new(Config::load(&HermesHome::new(home.path().to_path_buf())).unwrap());

    // The bare client: rmcp alone, the same binary.
    let mut cmd = tokio::process::Command::new(server);
    cmd.stderr(std::process::Stdio::null()).kill_on_drop(true);
    let transport = rmcp::transport::TokioChildProcess::new(cmd).unwrap();
    let bare = ().serve(transport).await.unwrap();
    let args = |i: usize| {
        let mut map = serde_json::Map::new();
        map.insert("text".into(), format!("ping {i}").into());
        map
    };

    // hermes: the supervisor, the catalog's dynamic tool, the registry's dispatch.
    let catalog = Arc::new(ToolCatalog::default());
    let clients = hermes::mcp::McpClients::default();
    // rustls without a default provider: the process client installs ring.
    let http = hermes::agent::shared_http();
    clients.start(&hermes::mcp::client::context(&config, &catalog, &http));
    clients.wait_discovery(Duration::from_secs(30)).await;
    let mut registry = ToolRegistry::default();
    registry
        .register(catalog.get("mcp__t__echo").expect("the server's echo tool"))
        .unwrap();
    let ctx = context(&config, home.path());

    let mut bare_us = Vec::new();
    let mut hermes_us = Vec::new();
    for block in 0..BLOCKS {
        for i in 0..PER_BLOCK {
            let params = CallToolRequestParams::new("echo").with_arguments(args(i));
            let t = Instant::now();
            let r = bare.peer().call_tool(params).await.unwrap();
            bare_us.push(t.elapsed().as_secs_f64() * 1e6);
            assert!(r.is_error != Some(true));
        }
        for i in 0..PER_BLOCK {
            let call = ToolCall {
                id: format!("c{block}-{i}"),
                name: "mcp__t__echo".into(),
                arguments: serde_json::Value::Object(args(i)).to_string(),
            };
            let t = Instant::now();
            let out = registry.dispatch(&call, &ctx).await;
            hermes_us.push(t.elapsed().as_secs_f64() * 1e6);
            assert!(!out.is_error, "{}", out.content);
        }
    }
    let (b, h) = (stats(&mut bare_us), stats(&mut hermes_us));
    let row = |label: &str, (median, min): (f64, f64)| {
        println!(
            "{label:<52} {:>9.3} ms   (min {:.3} ms)",
            median / 1e3,
            min / 1e3
        );
    };
    println!(
        "MCP echo over stdio, {} calls each, alternating blocks:",
        BLOCKS * PER_BLOCK
    );
    row("  bare rmcp client (server's own time + stdio)", b);
    row("  through hermes (supervisor, dispatch, wrapper)", h);
    println!(
        "{:<52} {:>+9.3} ms   (min {:+.3} ms; target ≤ 2 ms above the server's own time)",
        "  hermes − bare",
        (h.0 - b.0) / 1e3,
        (h.1 - b.1) / 1e3
    );
    clients.shutdown();
}

/// (median, minimum) in µs.
fn stats(v: &mut [f64]) -> (f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    (v[v.len() / 2], v[0])
}

/// What a session's tool call gets, built from the public API.
fn context(config: &Arc<Config>, cwd: &Path) -> ToolContext {
    ToolContext {
        config: config.clone(),
        cwd: cwd.to_path_buf(),
        session_id: "bench".into(),
        call_id: String::new(),
        cancel: tokio_util::sync::CancellationToken::new(),
        approvals: Arc::new(hermes::security::approval::ApprovalGate::new(
            hermes::config::ApprovalMode::Off,
            false,
            Vec::new(),
            Vec::new(),
            config.home.config_path(),
            Duration::from_secs(1),
        )),
        prompt: Arc::new(hermes::security::approval::NoPrompt),
        scratch: Arc::new(SessionScratch::default()),
        shield: Arc::new(hermes::security::shield::Shield::for_config(config)),
        checkpoints: Arc::new(hermes::checkpoints::Checkpointer::for_config(config)),
        skills: hermes::skills::SkillStore::from_config(config),
        role: Default::default(),
        depth: 0,
        delegator: None,
    }
}
