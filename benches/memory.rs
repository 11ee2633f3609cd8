//! Memory and recall benchmark: session_search discover over a generated state.db, a memory
//! tool write, and the prefetch cost when no provider is set.
//!
//! `cargo bench --bench memory` (release profile). The database (1,000,000 messages by default;
//! `HERMES_BENCH_MESSAGES` changes it) is generated once through our own schema and triggers and
//! cached under `target/bench-data/`. Figures are printed, not asserted: targets live in the issue
//! (discover ≤ 50 ms median / ≤ 150 ms p95 for English and CJK; a memory write ≤ 2 ms; prefetch
//! without a provider: nothing). Then the whole `hermes sessions search` process over the same
//! database (issue 14: a two-word query, a quoted phrase, an `OR` query and a CJK query, each
//! ≤ 50 ms per process): median and p95 of `CLI_RUNS` runs of the real binary.
//! `HERMES_BENCH_ONLY=cli` runs only that part.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use hermes::config::{Config, EnvVars, HermesHome};
use hermes::memory::{MemoryManager, MemoryOp, MemorySettings, MemoryStore, Target};
use hermes::sessions::SessionStore;
use hermes::sessions::search::{self, DiscoverOptions};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const MESSAGES_PER_SESSION: usize = 50;
const VOCABULARY: usize = 20_000;
const RUNS: usize = 40;
/// Common Chinese characters the CJK messages are made of.
const HANZI: &str = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处理府研";

fn main() {
    let n: usize = std::env::var("HERMES_BENCH_MESSAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let path = database(n);
    if std::env::var("HERMES_BENCH_ONLY").as_deref() == Ok("cli") {
        cli_search(&path, n);
        return;
    }
    let conn = search::open_read(&path).unwrap();
    // Warm the page cache the way a long-running process would have it.
    let _ = search::discover(&conn, "warm", &DiscoverOptions::default());
    println!("session_search discover over {n} messages ({RUNS} runs per query set)");

    let english: Vec<String> = [
        (150, 0),
        (420, 0),
        (900, 0),
        (2_000, 0),
        (5_000, 0),
        (11_000, 0),
        (300, 1_200),
        (700, 3_000),
        (1_500, 6_000),
        (4_000, 9_000),
    ]
    .iter()
    .map(|&(a, b)| {
        if b == 0 {
            word(a)
        } else {
            format!("{} {}", word(a), word(b))
        }
    })
    .collect();
    report("english (1–2 words)", time_queries(&conn, &english));
    report("english, very common word", time_queries(&conn, &[word(3)]));

    let hanzi: Vec<char> = HANZI.chars().collect();
    let mut rng = StdRng::seed_from_u64(7);
    let cjk: Vec<String> = (0..10)
        .map(|_| {
            let len = rng.random_range(3..=4);
            let start = rng.random_range(0..hanzi.len() - len);
            hanzi[start..start + len].iter().collect()
        })
        .collect();
    report("cjk (3–4 characters, trigram)", time_queries(&conn, &cjk));
    let short: Vec<String> = (0..5)
        .map(|i| hanzi[i * 7..i * 7 + 2].iter().collect())
        .collect();
    report(
        "cjk (2 characters, LIKE fallback)",
        time_queries(&conn, &short),
    );

    memory_write();
    prefetch_without_provider();
    cli_search(&path, n);
}

/// Runs of the binary per query kind.
const CLI_RUNS: usize = 15;

/// `hermes sessions search QUERY` as a user runs it: a fresh process each time (start, config,
/// opening state.db, the query, printing), on a home whose state.db is the generated one.
fn cli_search(db: &Path, n: usize) {
    let home = db.with_file_name(format!("cli-home-{n}"));
    std::fs::create_dir_all(&home).unwrap();
    let state = home.join("state.db");
    if !state.exists() {
        std::fs::hard_link(db, &state).unwrap();
    }
    let hanzi: Vec<char> = HANZI.chars().collect();
    let cases = [
        ("two words", format!("{} {}", word(300), word(1_200))),
        ("quoted phrase", format!("\"{} {}\"", word(3), word(5))),
        ("OR", format!("{} OR {}", word(420), word(900))),
        (
            "CJK (3 characters)",
            hanzi[10..13].iter().collect::<String>(),
        ),
    ];
    let run = |query: &str| {
        let out = common::hermes(Path::new(env!("CARGO_BIN_EXE_hermes")), &home, &home)
            .args(["sessions", "search", query])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    println!(
        "hermes sessions search, whole process over {n} messages ({CLI_RUNS} runs each; CPU = \
         the child's user + system time, which other processes on the machine inflate far less \
         than wall time):"
    );
    for (label, query) in &cases {
        let first = run(query); // warm the page cache
        let mut times = Vec::new();
        let mut cpu = Vec::new();
        for _ in 0..CLI_RUNS {
            let c = common::children_cpu();
            let t = Instant::now();
            std::hint::black_box(run(query));
            times.push(t.elapsed());
            cpu.push(common::children_cpu().saturating_sub(c));
        }
        let found = String::from_utf8_lossy(&first)
            .matches("→ hermes sessions show")
            .count();
        report(&format!("{label} ({found} shown)"), times);
        let cpu = common::Stats::of(cpu);
        println!(
            "  {:<36} CPU min {:>9.2?}   median {:>9.2?}",
            "", cpu.min, cpu.median
        );
    }
}

/// Word `rank` of the generated vocabulary (low ranks are frequent).
fn word(rank: usize) -> String {
    const SYL: [&str; 16] = [
        "ka", "lo", "mi", "ne", "ru", "ta", "vo", "zi", "pe", "sa", "do", "gu", "hi", "bo", "fe",
        "ly",
    ];
    let mut r = rank + 17;
    let mut w = String::new();
    while r > 0 {
        w.push_str(SYL[r % 16]);
        r /= 16;
    }
    w
}

fn database(n: usize) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-data");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("state-{n}.db"));
    let done = dir.join(format!("state-{n}.done"));
    if done.exists() {
        return path;
    }
    let _ = std::fs::remove_file(&path);
    let started = Instant::now();
    drop(SessionStore::open(&path).unwrap()); // our schema, FTS tables and triggers
    let mut conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("PRAGMA synchronous = OFF; PRAGMA journal_mode = WAL;")
        .unwrap();
    let tx = conn.transaction().unwrap();
    {
        let mut session = tx
            .prepare("INSERT INTO sessions (id, source, started_at, message_count) VALUES (?1, ?2, ?3, ?4)")
            .unwrap();
        let mut message = tx
            .prepare(
                "INSERT INTO messages (session_id, role, content, tool_name, timestamp, active) VALUES (?1, ?2, ?3, ?4, ?5, 1)",
            )
            .unwrap();
        let hanzi: Vec<char> = HANZI.chars().collect();
        let mut rng = StdRng::seed_from_u64(42);
        let sessions = n.div_ceil(MESSAGES_PER_SESSION);
        let t0 = 1_700_000_000.0;
        for s in 0..sessions {
            let id = format!("20250101_000000_{s:06x}");
            let source = ["cli", "telegram", "cron", "discord"][s % 4];
            let start = t0 + s as f64 * 600.0;
            session
                .execute(rusqlite::params![
                    id,
                    source,
                    start,
                    MESSAGES_PER_SESSION as i64
                ])
                .unwrap();
            for m in 0..MESSAGES_PER_SESSION.min(n - s * MESSAGES_PER_SESSION) {
                let (role, tool) = match m % 5 {
                    0 | 3 => ("user", None),
                    4 => ("tool", Some("terminal")),
                    _ => ("assistant", None),
                };
                let content = if rng.random_bool(0.05) {
                    let len = rng.random_range(10..40);
                    let at = rng.random_range(0..hanzi.len() - len);
                    hanzi[at..at + len].iter().collect::<String>()
                } else {
                    let words = rng.random_range(8..25);
                    (0..words)
                        .map(|_| {
                            // Roughly Zipf: small ranks far more often.
                            let u: f64 = rng.random_range(0.0..1.0);
                            word(((VOCABULARY as f64).powf(u) as usize).saturating_sub(1))
                        })
                        .collect::<Vec<_>>()
                        .join(" ")
                };
                message
                    .execute(rusqlite::params![id, role, content, tool, start + m as f64])
                    .unwrap();
            }
        }
    }
    tx.commit().unwrap();
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE); ANALYZE;")
        .unwrap();
    std::fs::write(&done, b"").unwrap();
    println!(
        "generated {n} messages in {:.0?} ({:.0} MB)",
        started.elapsed(),
        std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0) as f64 / 1e6
    );
    path
}

fn time_queries(conn: &rusqlite::Connection, queries: &[String]) -> Vec<Duration> {
    let opts = DiscoverOptions {
        current_session: Some("20250101_000000_000001".into()),
        ..DiscoverOptions::default()
    };
    let mut times = Vec::new();
    for round in 0..RUNS {
        let q = &queries[round % queries.len()];
        let t = Instant::now();
        let found = search::discover(conn, q, &opts).unwrap();
        times.push(t.elapsed());
        std::hint::black_box(found);
    }
    times
}

fn report(label: &str, times: Vec<Duration>) {
    let s = common::Stats::of(times);
    println!(
        "  {label:<36} median {:>9.2?}   p95 {:>9.2?}   max {:>9.2?}",
        s.median, s.p95, s.max
    );
}

fn memory_write() {
    let dir = tempfile::tempdir().unwrap();
    let store = MemoryStore::new(dir.path(), MemorySettings::default());
    for i in 0..20 {
        store
            .apply(
                Target::Memory,
                &[MemoryOp::Add {
                    content: format!("background fact number {i}"),
                }],
            )
            .unwrap();
    }
    let mut times = Vec::new();
    for i in 0..200 {
        let content = format!("the user prefers option {i}");
        let t = Instant::now();
        store
            .apply(
                Target::Memory,
                &[MemoryOp::Add {
                    content: content.clone(),
                }],
            )
            .unwrap();
        times.push(t.elapsed());
        store
            .apply(Target::Memory, &[MemoryOp::Remove { old_text: content }])
            .unwrap();
    }
    println!("memory tool write (lock, re-read, scan, atomic fsync'd replace), 200 runs:");
    report("add one entry", times);
    // What the disk alone costs for the same bytes: the store's own overhead is the difference.
    let text = std::fs::read(store.path(Target::Memory)).unwrap();
    let probe = dir.path().join("probe.md");
    let disk: Vec<Duration> = (0..200)
        .map(|_| {
            let t = Instant::now();
            hermes::util::atomic_write(&probe, &text).unwrap();
            t.elapsed()
        })
        .collect();
    report("same bytes, bare atomic_write (fsync)", disk);
}

fn prefetch_without_provider() {
    let home = tempfile::tempdir().unwrap();
    let config = Config::defaults(HermesHome::new(home.path()), EnvVars::default());
    let manager = MemoryManager::from_config(&config);
    assert!(manager.provider_name().is_none());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut times = Vec::new();
    for _ in 0..1_000 {
        let t = Instant::now();
        let r =
            rt.block_on(manager.prefetch("what did we decide about the migration?", "s", "cli"));
        times.push(t.elapsed());
        assert!(r.is_none());
    }
    println!("prefetch with no provider (returns before any I/O), 1000 runs:");
    report("prefetch", times);
}
