//! Redaction benchmark: one 1 MB tool result (source code, logs and `env` output with a few
//! secrets in it) through the process `Redactor` (20 known secret values + every token shape).
//!
//! `cargo bench --bench redact`. Figures are printed, not asserted; the target (issue 11) is
//! ≤ 2 ms per 1 MB result. A clean 1 MB (no secrets, no triggers) is timed too: that is the
//! common case and is two SIMD scans. Its time, measured in the same process, is the baseline
//! for a figure that depends less on the machine's load: mixed ÷ clean (minimums). A last row
//! is hostile text (nested triggers `sk-sk-sk-…`, PEM headers that never end): its cost must stay
//! a small multiple of the others, not grow with the square of the text.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use hermes::security::redact::Redactor;

const RUNS: usize = 100;
const SIZE: usize = 1024 * 1024;

fn main() {
    let secrets: Vec<String> = (0..20)
        .map(|i| format!("known-secret-value-{i:02}-Zx9q7PwL"))
        .collect();
    let redactor = Redactor::new(secrets.clone(), true);

    let mixed = mixed_text(&secrets);
    let clean = clean_text();
    let hostile = hostile_text();
    let mut minimums = Vec::new();
    for (name, text) in [
        ("mixed (code, logs, env, 40 secrets)", &mixed),
        ("clean prose", &clean),
        ("hostile (nested triggers)", &hostile),
    ] {
        let mut times = Vec::with_capacity(RUNS);
        let mut redactions = 0;
        for _ in 0..RUNS {
            let start = Instant::now();
            let out = redactor.redact(text);
            times.push(start.elapsed());
            redactions = out.matches("[REDACTED]").count();
            std::hint::black_box(out);
        }
        times.sort();
        println!(
            "redact {name}: {:.2} MB, median {}, p90 {}, min {} ({redactions} redactions)",
            text.len() as f64 / (1024.0 * 1024.0),
            ms(times[RUNS / 2]),
            ms(times[RUNS * 9 / 10]),
            ms(times[0]),
        );
        minimums.push(times[0].as_secs_f64());
    }
    println!(
        "redact ratio mixed/clean (min/min): {:.2}; hostile/clean: {:.2}",
        minimums[0] / minimums[1],
        minimums[2] / minimums[1]
    );
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

/// Text shaped like real tool output: Rust code with `token`/`key` identifiers, log lines,
/// `env` output; a secret value or token every ~25 KB.
fn mixed_text(secrets: &[String]) -> String {
    let code = "fn tokenize(input: &str) -> Vec<Token> {\n    let key = cache_key(input);\n    let tokens = lexer.tokens(input).collect::<Vec<_>>();\n    map.insert(key, tokens.clone());\n    tokens\n}\n";
    let log = "2026-12-01T10:41:11Z INFO hermes::agent: model call finished reason=stop tokens=1234 secret_store=disabled\n";
    let env = "PATH=/usr/local/bin:/usr/bin\nHOME=/home/user\nLANG=C.UTF-8\nTERM=xterm-256color\n";
    let mut out = String::with_capacity(SIZE + 4096);
    let mut i = 0usize;
    while out.len() < SIZE {
        out.push_str(match i % 3 {
            0 => code,
            1 => log,
            _ => env,
        });
        if i.is_multiple_of(120) {
            let s = &secrets[(i / 120) % secrets.len()];
            out.push_str(&format!(
                "OPENAI_API_KEY={s}\nleaked sk-proj-abcdefghijklmnop{i:08}\n"
            ));
        }
        i += 1;
    }
    out
}

fn clean_text() -> String {
    let line =
        "The quick brown fox jumps over the lazy dog while the compiler checks every borrow.\n";
    line.repeat(SIZE / line.len() + 1)
}

/// Triggers inside triggers: a token made of `sk-` prefixes, `token=` chains, and PEM headers
/// without an end line (each one would read 64 KB).
fn hostile_text() -> String {
    let mut out = String::with_capacity(SIZE + 4096);
    while out.len() < SIZE {
        out.push_str(&"sk-".repeat(300));
        out.push('\n');
        out.push_str(&"token=".repeat(100));
        out.push('\n');
        out.push_str(&"-----BEGIN RSA PRIVATE KEY-----\n".repeat(20));
    }
    out
}
