//! End-to-end benchmark of the real binary against the scripted mock LLM.
//!
//! `cargo bench --bench e2e` builds hermes with the release profile and prints medians:
//! `--version` time, process start → first LLM request, one-shot plain answer end to end, the cost
//! of each extra tool round, peak RSS of a ten-round run, and the size of the first request body.
//! Figures are printed, not asserted: the targets live in the issue and the closing notes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "../tests/support/mock_llm.rs"]
mod mock_llm;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::median;
use mock_llm::{MockLlm, Reply};
use serde_json::json;

const RUNS: usize = 15;

fn main() {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_hermes"));
    let home = common::home(common::QUIET_CONFIG);
    let cwd = tempfile::tempdir().unwrap();
    for i in 0..10 {
        std::fs::write(cwd.path().join(format!("f{i}.txt")), format!("file {i}\n")).unwrap();
    }
    println!(
        "hermes e2e benchmark ({RUNS} runs each, medians)\nbinary: {}",
        bin.display()
    );

    let version = median((0..RUNS).map(|_| {
        let t = Instant::now();
        let out = Command::new(&bin).arg("--version").output().unwrap();
        assert!(out.status.success());
        t.elapsed()
    }));
    report("hermes --version", version, "≤ 10 ms");

    let first_request = median((0..RUNS).map(|_| {
        let mock = MockLlm::with_script([Reply::text("ok")]);
        let cmd = hermes(&bin, home.path(), cwd.path(), &mock, &["-z", "hi"]);
        common::time_to_first_request(cmd, || mock.request_count())
    }));
    report("start → first LLM request", first_request, "≤ 30 ms");

    let plain = median((0..RUNS).map(|_| run_rounds(&bin, home.path(), cwd.path(), 0).0));
    report("one-shot plain answer, end to end", plain, "≤ 60 ms");

    let ten = median((0..RUNS).map(|_| run_rounds(&bin, home.path(), cwd.path(), 10).0));
    let per_round = ten.saturating_sub(plain) / 10;
    report("each extra tool round (10-round run)", per_round, "≤ 10 ms");

    let rss = (0..5)
        .map(|_| run_rounds(&bin, home.path(), cwd.path(), 10).1)
        .max()
        .unwrap_or(0);
    println!(
        "{:<42} {:>9.1} MiB   (target ≤ 25 MiB)",
        "peak RSS, ten-round run (max of 5)",
        rss as f64 / 1024.0
    );

    for (label, args) in [
        (
            "first request body, issue-2 tools",
            &["-t", "file,terminal,todo", "-z", "hi"][..],
        ),
        ("first request body, all default tools", &["-z", "hi"][..]),
    ] {
        let mock = MockLlm::with_script([Reply::text("ok")]);
        let out = hermes(&bin, home.path(), cwd.path(), &mock, args)
            .output()
            .unwrap();
        assert!(out.status.success());
        let body = serde_json::to_string(&mock.requests()[0]).unwrap();
        println!(
            "{label:<42} {:>9.1} KB    (target ≤ 8 KB with the issue-2 tools)",
            body.len() as f64 / 1000.0
        );
    }
}

/// Runs a one-shot turn with `rounds` tool calls before the answer; returns (wall time, max RSS KiB).
fn run_rounds(bin: &Path, home: &Path, cwd: &Path, rounds: usize) -> (Duration, i64) {
    let mut script: Vec<Reply> = (0..rounds)
        .map(|i| {
            Reply::tool_call(
                &format!("c{i}"),
                "read_file",
                json!({"path": format!("f{i}.txt")}),
            )
        })
        .collect();
    script.push(Reply::text("done"));
    let mock = MockLlm::with_script(script);
    let t = Instant::now();
    let child = hermes(bin, home, cwd, &mock, &["-z", "go"])
        .spawn()
        .unwrap();
    let (status, rss) = wait_with_rusage(child);
    let elapsed = t.elapsed();
    assert!(status == 0, "hermes exited with {status}");
    (elapsed, rss)
}

fn hermes(bin: &Path, home: &Path, cwd: &Path, mock: &MockLlm, args: &[&str]) -> Command {
    common::hermes_on(bin, home, cwd, &mock.base_url(), "bench-model", args)
}

/// Waits for the child and returns its exit status and peak RSS (KiB) from `wait4`.
fn wait_with_rusage(child: std::process::Child) -> (i32, i64) {
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: rusage is plain data; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(rc, pid);
    std::mem::forget(child);
    (libc::WEXITSTATUS(status), usage.ru_maxrss)
}

fn report(name: &str, d: Duration, target: &str) {
    println!(
        "{name:<42} {:>9.2} ms    (target {target})",
        d.as_secs_f64() * 1000.0
    );
}
