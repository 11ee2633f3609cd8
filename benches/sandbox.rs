//! Terminal backend overhead: `echo ok` through the real `terminal` tool in the `local` backend
//! (limits + scrubbed environment, no isolation), the `sandbox` backend (bubblewrap) and, when a
//! docker daemon and the test image are there, the `docker` backend (`docker exec` into the
//! session's container). The sandbox's cost is its median minus local's.
//!
//! `cargo bench --bench sandbox`. Figures are printed, not asserted; the target lives in issue 11
//! (sandbox overhead per foreground command ≤ 5 ms).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use hermes::config::terminal::BackendChoice;
use hermes::config::{ApprovalMode, Config, EnvVars, HermesHome};
use hermes::security::approval::{ApprovalGate, NoPrompt};
use hermes::tools::registry::{SessionScratch, ToolContext, TypedTool};
use hermes::tools::terminal::{Terminal, TerminalArgs};
use tokio_util::sync::CancellationToken;

const RUNS: usize = 60;
const DOCKER_IMAGE: &str = "hermes-test-busybox:latest";

fn context(dir: &std::path::Path, backend: BackendChoice) -> ToolContext {
    let home = HermesHome::new(dir.join("home"));
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let mut config = Config::defaults(home.clone(), EnvVars::default());
    config.terminal.exec.backend = backend;
    config.terminal.exec.docker_image = DOCKER_IMAGE.into();
    // Only the sandbox is measured: no checkpoints before commands.
    config.checkpoints.enabled = false;
    let skills = hermes::skills::SkillStore::from_config(&config);
    let shield = Arc::new(hermes::security::shield::Shield::for_config(&config));
    let checkpoints = Arc::new(hermes::checkpoints::Checkpointer::for_config(&config));
    ToolContext {
        shield,
        checkpoints,
        skills,
        role: Default::default(),
        depth: 0,
        delegator: None,
        config: Arc::new(config),
        cwd: work,
        session_id: "bench".into(),
        call_id: "c".into(),
        cancel: CancellationToken::new(),
        approvals: Arc::new(ApprovalGate::new(
            ApprovalMode::Off,
            false,
            Vec::new(),
            Vec::new(),
            home.config_path(),
            Duration::from_secs(1),
        )),
        prompt: Arc::new(NoPrompt),
        scratch: Arc::new(SessionScratch::default()),
    }
}

/// Median and p90 of `RUNS` runs of `echo ok` (after two warm-up runs: backend detection and,
/// for docker, starting the container).
async fn measure(ctx: &ToolContext) -> Option<(f64, f64)> {
    let run = || async {
        Terminal
            .run(
                TerminalArgs {
                    command: "echo ok".into(),
                    timeout: Some(30),
                    workdir: None,
                },
                ctx,
            )
            .await
    };
    for _ in 0..2 {
        let out = run().await.ok()?;
        if !out.starts_with("ok\n") {
            eprintln!("unexpected output: {out}");
            return None;
        }
    }
    let mut samples = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let started = Instant::now();
        run().await.ok()?;
        samples.push(started.elapsed());
    }
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    Some((ms(samples[RUNS / 2]), ms(samples[RUNS * 9 / 10])))
}

fn docker_ready() -> bool {
    std::process::Command::new("docker")
        .args(["image", "inspect", DOCKER_IMAGE])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let local = context(dir.path(), BackendChoice::Local);
        let (local_median, local_p90) = measure(&local).await.expect("local backend failed");
        println!("terminal `echo ok`, {RUNS} runs each (median / p90):");
        println!("  local    {local_median:7.2} ms / {local_p90:7.2} ms");
        match hermes::security::sandbox::detect::machine().bwrap.as_ref() {
            Ok(_) => {
                let sandbox = context(dir.path(), BackendChoice::Sandbox);
                let (median, p90) = measure(&sandbox).await.expect("sandbox backend failed");
                println!(
                    "  sandbox  {median:7.2} ms / {p90:7.2} ms   overhead vs local {:+.2} ms (target ≤ 5 ms)",
                    median - local_median
                );
            }
            Err(why) => println!("  sandbox  not measured: {why}"),
        }
        if docker_ready() {
            let docker = context(dir.path(), BackendChoice::Docker);
            match measure(&docker).await {
                Some((median, p90)) => println!(
                    "  docker   {median:7.2} ms / {p90:7.2} ms   overhead vs local {:+.2} ms",
                    median - local_median
                ),
                None => println!("  docker   failed to run"),
            }
            // Dropping the context removes the session's container.
            drop(docker);
        } else {
            println!("  docker   not measured: no daemon or no {DOCKER_IMAGE} (scripts/test-setup)");
        }
    });
}
