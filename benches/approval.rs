//! Approval benchmark: classification time per command over the benign fixture (the 409 real
//! developer commands in tests/fixtures/approval/benign_commands.txt) and the false-positive
//! rate on it, plus the time for long hostile inputs.
//!
//! `cargo bench --bench approval`. Figures are printed, not asserted; the targets live in issue
//! 12 (classification ≤ 50 µs median over the benign list, false positives ≤ 2 %).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use hermes::security::approval::{Classification, Context, classify};

const FIXTURE: &str = include_str!("../tests/fixtures/approval/benign_commands.txt");
const ROUNDS: usize = 20;

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn main() {
    let commands: Vec<&str> = FIXTURE
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let ctx = Context::with_home(Some("/home/user"));
    // Warm-up: compiles the regexes once (LazyLock), as the first command of a session does.
    let cold = Instant::now();
    let _ = classify("ls", &ctx);
    let first = cold.elapsed();

    let mut samples = Vec::with_capacity(commands.len() * ROUNDS);
    for _ in 0..ROUNDS {
        for c in &commands {
            let t = Instant::now();
            let v = classify(c, &ctx);
            samples.push(t.elapsed());
            std::hint::black_box(v);
        }
    }
    samples.sort();
    let flagged: Vec<&str> = commands
        .iter()
        .copied()
        .filter(|c| classify(c, &ctx) != Classification::Safe)
        .collect();
    println!(
        "approval classification over {} benign commands × {ROUNDS}:",
        commands.len()
    );
    println!(
        "  median {:.1} µs, p95 {:.1} µs, p99 {:.1} µs, max {:.1} µs (first call incl. regex compile: {:.1} ms)",
        us(samples[samples.len() / 2]),
        us(samples[samples.len() * 95 / 100]),
        us(samples[samples.len() * 99 / 100]),
        us(samples[samples.len() - 1]),
        first.as_secs_f64() * 1e3
    );
    println!(
        "  false positives: {}/{} = {:.2} % (target ≤ 2 %): {flagged:?}",
        flagged.len(),
        commands.len(),
        100.0 * flagged.len() as f64 / commands.len() as f64
    );
    for (label, input) in [
        (
            "10 KB pipeline",
            "cat a | grep b | sort | uniq -c | ".repeat(300),
        ),
        (
            "20,000 brace lists",
            format!("echo {}", "{a,b}".repeat(20_000)),
        ),
        (
            "2,000 nested loops",
            "while true; do ".repeat(2_000) + "ls" + &"; done".repeat(2_000),
        ),
        ("12 nested sh -c", {
            let mut c = "ls".to_string();
            for _ in 0..12 {
                c = format!("sh -c {:?}", c);
            }
            c
        }),
    ] {
        let t = Instant::now();
        let v = classify(&input, &ctx);
        println!(
            "  {label} ({} bytes): {:.2} ms → {}",
            input.len(),
            t.elapsed().as_secs_f64() * 1e3,
            match v {
                Classification::Safe => "safe",
                Classification::Dangerous(_) => "dangerous",
                Classification::CannotVerify(_) => "cannot verify",
                Classification::Floor(_) => "floor",
            }
        );
    }
}
