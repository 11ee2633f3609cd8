//! Gateway benchmark: the real `hermes gateway run` against the fake Telegram Bot API and the
//! scripted mock LLM (answers at 0 ms). Prints: idle RSS, end-to-end latency per inbound message
//! (push → reply recorded; includes the mock LLM round trip and every state.db commit), RSS with
//! 1,000 sessions just created and after they went idle (evicted), and RSS across a bounded soak
//! (rounds of messages over many chats) to show it stays flat. Figures are printed, not asserted.
//!
//! `cargo bench --bench gateway` (release). `--profile dev` works for a quick look.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/support/fake_telegram.rs"]
mod fake_telegram;
#[path = "../tests/support/mock_llm.rs"]
mod mock_llm;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fake_telegram::{FakeTelegram, TOKEN};
use mock_llm::{MockLlm, Reply};

const LATENCY_RUNS: usize = 50;
const SESSIONS: i64 = 1000;
/// 90 rounds × 400 messages over 100 chats = 36,000 messages: 24 hours of a message every
/// 2.4 s, 360 per chat (long chats compact many times over).
const SOAK_ROUNDS: usize = 90;
/// Idle eviction (2 s here) plus the trim's settle time (1 s) and a margin.
const QUIET: Duration = Duration::from_millis(4500);

/// `HERMES_BENCH_SOAK_ROUNDS` overrides the soak length for a longer look.
fn soak_rounds() -> usize {
    std::env::var("HERMES_BENCH_SOAK_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(SOAK_ROUNDS)
}
const SOAK_MESSAGES: i64 = 400;
const SOAK_CHATS: i64 = 100;

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

fn wait_sends(tg: &FakeTelegram, n: usize, limit: Duration) {
    let start = Instant::now();
    while tg.sends().len() < n {
        assert!(
            start.elapsed() < limit,
            "only {} of {n} answers",
            tg.sends().len()
        );
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// A paragraph-sized answer (~700 characters), different each time, like a real reply.
fn soak_answer(round: usize, i: i64) -> String {
    let mut text = format!("Answer {i} of round {round}. ");
    while text.len() < 700 {
        text.push_str("Here is a sentence that explains a little more about the question asked. ");
    }
    text
}

/// The first half warms up: chats grow until compaction bounds them, SQLite's page cache fills,
/// the allocator's heaps reach their working size (measured: ~16,000 messages). After that RSS
/// must stay in a band. Prints that band and the least-squares slope over the second half.
fn print_steady_state(label: &str, samples: &[u64]) {
    let steady = &samples[samples.len() / 2..];
    if steady.len() < 2 {
        return;
    }
    let n = steady.len() as f64;
    let mean_x = (n - 1.0) / 2.0;
    let mean_y = steady.iter().map(|k| *k as f64).sum::<f64>() / n;
    let (mut num, mut den) = (0.0, 0.0);
    for (x, y) in steady.iter().enumerate() {
        num += (x as f64 - mean_x) * (*y as f64 - mean_y);
        den += (x as f64 - mean_x).powi(2);
    }
    let slope_kib_per_round = num / den;
    let per_thousand = slope_kib_per_round / 1024.0 * 1000.0 / SOAK_MESSAGES as f64;
    let (min, max) = (
        steady.iter().min().copied().unwrap_or(0),
        steady.iter().max().copied().unwrap_or(0),
    );
    println!(
        "steady state, {label} (last {} rounds): RSS {}–{}, trend {per_thousand:+.3} MiB per 1,000 messages",
        steady.len(),
        mib(min),
        mib(max)
    );
}

/// RSS per stretch of 10 rounds (4,000 messages): where a plateau starts, and whether it holds.
fn print_bands(busy: &[u64], quiet: &[u64]) {
    println!("RSS per 4,000 messages (quiet min–max, busy max):");
    for (i, (q, b)) in quiet.chunks(10).zip(busy.chunks(10)).enumerate() {
        let (lo, hi) = (
            q.iter().min().copied().unwrap_or(0),
            q.iter().max().copied().unwrap_or(0),
        );
        println!(
            "  messages {:>6}–{:>6}: quiet {}–{}, busy max {}",
            i * 10 * SOAK_MESSAGES as usize + 1,
            (i * 10 + q.len()) * SOAK_MESSAGES as usize,
            mib(lo),
            mib(hi),
            mib(b.iter().max().copied().unwrap_or(0))
        );
    }
}

/// The busy peak of the first and the last quarter of the soak (target: within 3 MiB).
fn print_quarter_peaks(busy: &[u64]) {
    let quarter = busy.len() / 4;
    if quarter == 0 {
        return;
    }
    let peak = |v: &[u64]| v.iter().max().copied().unwrap_or(0);
    let (first, last) = (peak(&busy[..quarter]), peak(&busy[busy.len() - quarter..]));
    println!(
        "busy peak: first quarter {}, last quarter {} ({:+.1} MiB; target within 3 MiB)",
        mib(first),
        mib(last),
        (last as f64 - first as f64) / 1024.0
    );
}

fn main() {
    let bin = env!("CARGO_BIN_EXE_hermes");
    let home_dir = tempfile::tempdir().unwrap();
    let home = home_dir.path().to_path_buf();
    // `HERMES_BENCH_KEEP_HOME=1` leaves state.db and the logs behind for a look afterwards.
    let _home_guard = if std::env::var_os("HERMES_BENCH_KEEP_HOME").is_some() {
        println!("HERMES_HOME kept at {}", home_dir.keep().display());
        None
    } else {
        Some(home_dir)
    };
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(
        home.as_path().join("config.yaml"),
        format!(
            // A 16K window: long chats compact, as they would in a day of real use.
            "gateway:\n  session_idle_seconds: 2\nmodel:\n  context_length: 16000\n{}",
            std::env::var("HERMES_BENCH_CONFIG_EXTRA").unwrap_or_default()
        ),
    )
    .unwrap();
    let tg = FakeTelegram::start();
    let llm = MockLlm::start();
    // `HERMES_BENCH_WRAP="heaptrack -o /tmp/x"` runs the gateway under a profiler.
    let wrap = std::env::var("HERMES_BENCH_WRAP").unwrap_or_default();
    let wrapped = !wrap.trim().is_empty();
    let mut words = wrap.split_whitespace();
    let mut command = match words.next() {
        Some(program) => {
            let mut c = Command::new(program);
            c.args(words).arg(bin);
            c
        }
        None => Command::new(bin),
    };
    let mut child: Child = command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home.as_path())
        .env("HERMES_HOME", home.as_path())
        .env("CUSTOM_BASE_URL", llm.base_url())
        .env("TELEGRAM_BOT_TOKEN", TOKEN)
        .env("TELEGRAM_API_BASE_URL", tg.base_url())
        .env("GATEWAY_ALLOW_ALL_USERS", "true")
        .current_dir(cwd.path())
        .args([
            "--provider",
            "custom",
            "-m",
            "bench-model",
            "gateway",
            "run",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    tg.wait_polls(0, 1, Duration::from_secs(30));
    std::thread::sleep(Duration::from_secs(1));
    println!("hermes gateway benchmark\nbinary: {bin}");
    println!("idle RSS: {} (target ≤ 20 MiB)", mib(rss_kib(pid)));

    let mut times = Vec::new();
    for i in 0..LATENCY_RUNS {
        llm.push(Reply::text("ok"));
        let t = Instant::now();
        tg.push_text(42, &format!("ping {i}"));
        wait_sends(&tg, i + 1, Duration::from_secs(30));
        times.push(t.elapsed());
    }
    times.sort();
    println!(
        "end to end per inbound message: median {:?}, p90 {:?} (target ≤ 5 ms overhead)",
        times[times.len() / 2],
        times[times.len() * 9 / 10]
    );

    let before = tg.sends().len();
    // Spare replies: a first turn can start a background review that calls the model too.
    for _ in 0..SESSIONS * 2 {
        llm.push(Reply::text("ok"));
    }
    let t = Instant::now();
    for user in 0..SESSIONS {
        tg.push_text(100_000 + user, "hello");
    }
    wait_sends(&tg, before + SESSIONS as usize, Duration::from_secs(600));
    println!(
        "{SESSIONS} new sessions answered in {:?}; RSS right after: {} (target ≤ 60 MiB)",
        t.elapsed(),
        mib(rss_kib(pid))
    );
    // Idle eviction (2 s here), then the trim that follows evictions, hand the memory back.
    std::thread::sleep(QUIET);
    println!(
        "RSS after they went idle (evicted, memory trimmed): {}",
        mib(rss_kib(pid))
    );

    let (mut busy, mut quiet) = (Vec::new(), Vec::new());
    let rounds = soak_rounds();
    for round in 0..rounds {
        let before = tg.sends().len();
        // Spare replies: background memory/skill reviews also call the model in long chats.
        for i in 0..SOAK_MESSAGES * 2 {
            llm.push(Reply::text(soak_answer(round, i)));
        }
        for m in 0..SOAK_MESSAGES {
            tg.push_text(
                200_000 + (m % SOAK_CHATS),
                &format!("round {round} message {m}"),
            );
        }
        // Queued acknowledgements are sends too: wait for all the answers.
        let start = Instant::now();
        let answered = |tg: &FakeTelegram| {
            tg.sends()[before..]
                .iter()
                .filter(|s| !s.text.starts_with("Queued"))
                .count()
        };
        while answered(&tg) < SOAK_MESSAGES as usize {
            assert!(
                start.elapsed() < Duration::from_secs(600),
                "soak round stuck: {} of {SOAK_MESSAGES} answered",
                answered(&tg)
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        busy.push(rss_kib(pid));
        std::thread::sleep(QUIET);
        quiet.push(rss_kib(pid));
    }
    let list = |v: &[u64]| v.iter().map(|k| mib(*k)).collect::<Vec<_>>().join(", ");
    println!(
        "soak ({rounds} rounds × {SOAK_MESSAGES} messages over {SOAK_CHATS} chats)\n  RSS at the end of each round (busy): {}\n  RSS once the chats went idle (quiet): {}",
        list(&busy),
        list(&quiet)
    );
    print_bands(&busy, &quiet);
    print_quarter_peaks(&busy);
    print_steady_state("busy", &busy);
    print_steady_state("quiet", &quiet);
    if wrapped {
        // The profiler's child is the gateway: stop it where it stands, so the profile shows
        // what was live at the end of the soak.
        let _ = Command::new("pkill")
            .args(["-KILL", "-f", &format!("{bin} --provider")])
            .status();
    }
    unsafe {
        libc::kill(pid as i32, libc::SIGTERM);
    }
    let _ = child.wait();
}
