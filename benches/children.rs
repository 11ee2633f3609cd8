//! Child agents through the library API (`Services::spawn_child`) against the scripted mock LLM,
//! in this process.
//!
//! `cargo bench --bench children` prints: spawn → the child's first model request (median of
//! 50), three children whose model answers after 200 ms (wall time, median of 5), and the RSS
//! left behind by 1,000 children run one after another (before, every 100, after, and the trend
//! over the second half) — recorded ones (a state.db session each), then ephemeral ones. Figures are printed, not asserted: targets live in issue 13
//! (≤ 5 ms; ≤ 300 ms; ≤ 1 MiB per child).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "../tests/support/mock_llm.rs"]
mod mock_llm;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::median;
use hermes::agent::Services;
use hermes::agent::child::{ChildSpec, ChildStart, ChildStatus, ParentLink};
use hermes::config::{Config, EnvVars, HermesHome};
use hermes::llm::Provider;
use hermes::sessions::SessionStore;
use hermes::tools::AgentRole;
use mock_llm::{MockLlm, Reply};
use tokio_util::sync::CancellationToken;

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn spec(goal: &str) -> ChildSpec {
    ChildSpec {
        label: goal.to_string(),
        goal: goal.to_string(),
        role: AgentRole::Delegate,
        toolsets: vec!["todo".to_string()],
        only_tools: None,
        max_iterations: 5,
        timeout: Some(Duration::from_secs(30)),
        stall_timeout: Some(Duration::from_secs(30)),
        start: ChildStart::Fresh {
            system_prompt: format!("You are a focused subagent.\n\nYOUR TASK:\n{goal}"),
        },
        recorded: true,
        yolo: false,
        ticket: None,
    }
}

/// Runs 1,000 children one after another and prints the RSS they leave behind.
async fn rss_run(services: &Arc<Services>, parent: &ParentLink, mock: &MockLlm, recorded: bool) {
    let kind = if recorded {
        "recorded (state.db rows)"
    } else {
        "ephemeral (no state.db)"
    };
    mock.forget_requests();
    let before = rss_kib();
    let mut marks = Vec::new();
    for i in 1..=1000 {
        mock.push(Reply::text("ok"));
        let mut s = spec("one of many");
        s.recorded = recorded;
        let r = services.spawn_child(parent.clone(), s).result().await;
        assert_eq!(r.status, ChildStatus::Completed, "{:?}", r.error);
        if i % 100 == 0 {
            mock.forget_requests();
            marks.push(rss_kib());
        }
    }
    let after = rss_kib();
    println!(
        "{:<46} {:>8.1} MiB → {:.1} MiB",
        format!("RSS before → after 1,000 {kind}"),
        before as f64 / 1024.0,
        after as f64 / 1024.0
    );
    println!(
        "{:<46} {:>8.2} KiB   (target ≤ 1024 KiB)",
        "  RSS left per finished child",
        (after as f64 - before as f64) / 1000.0
    );
    let line: Vec<String> = marks
        .iter()
        .map(|k| format!("{:.1}", *k as f64 / 1024.0))
        .collect();
    println!("  RSS every 100 children (MiB): {}", line.join(" "));
    println!(
        "{:<46} {:>8.2} KiB per child (children 500 → 1,000)",
        "  trend over the second half",
        (marks[9] as f64 - marks[4] as f64) / 500.0
    );
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let home = tempfile::tempdir().unwrap();
    let config = Config::defaults(HermesHome::new(home.path()), EnvVars::default());
    let store = SessionStore::open(&home.path().join("state.db")).unwrap();
    // Recorded children point at their parent's session row.
    store
        .create_session(&hermes::sessions::NewSession {
            id: "bench-parent".into(),
            source: "cli".into(),
            ..Default::default()
        })
        .unwrap();
    let services = Arc::new(Services::new(Arc::new(config), Arc::new(store)));
    let mock = MockLlm::start();
    let client =
        hermes::llm::client_for(&Provider::new("custom", "m", &mock.base_url(), None)).unwrap();
    let parent = ParentLink {
        session_id: "bench-parent".into(),
        client,
        cwd: home.path().to_path_buf(),
        depth: 0,
        cancel: CancellationToken::new(),
        session_mcp: None,
    };
    println!("hermes children benchmark (library API, mock LLM in process)");

    runtime.block_on(async {
        // Warm-up: the first HTTP connection and the first state.db writes.
        for _ in 0..3 {
            mock.push(Reply::text("ok"));
            let r = services
                .spawn_child(parent.clone(), spec("warm up"))
                .result()
                .await;
            assert_eq!(r.status, ChildStatus::Completed, "{:?}", r.error);
        }

        let mut firsts = Vec::new();
        for _ in 0..50 {
            mock.push(Reply::text("ok"));
            let before = mock.request_count();
            let t = Instant::now();
            let handle = services.spawn_child(parent.clone(), spec("first request"));
            handle.result().await;
            let rec = mock.recorded();
            firsts.push(rec[before].at.duration_since(t));
        }
        println!(
            "{:<46} {:>8.2} ms   (target ≤ 5 ms)",
            "spawn → first model request (median of 50)",
            median(firsts).as_secs_f64() * 1000.0
        );

        let mut walls = Vec::new();
        for _ in 0..5 {
            for g in ["one", "two", "three"] {
                mock.push_for(
                    &format!("task {g}"),
                    Reply::text("done").delay(Duration::from_millis(200)),
                );
            }
            let t = Instant::now();
            let handles: Vec<_> = ["one", "two", "three"]
                .iter()
                .map(|g| services.spawn_child(parent.clone(), spec(&format!("task {g}"))))
                .collect();
            for h in handles {
                let r = h.result().await;
                assert_eq!(r.status, ChildStatus::Completed, "{:?}", r.error);
            }
            walls.push(t.elapsed());
        }
        println!(
            "{:<46} {:>8.1} ms   (target ≤ 300 ms)",
            "three children, model answers after 200 ms",
            median(walls).as_secs_f64() * 1000.0
        );

        for recorded in [true, false] {
            rss_run(&services, &parent, &mock, recorded).await;
        }
        // The last child's task drops its place in the running set just after its result.
        assert_eq!(services.children.wait_idle(Duration::from_secs(5)).await, 0);
    });
}
