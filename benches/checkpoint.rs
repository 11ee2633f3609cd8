//! Checkpoint benchmark: a 5,000-file working tree (200 directories of 25 small source files)
//! snapshotted into a fresh shadow repository (first checkpoint), then again with nothing
//! changed (what every later turn pays), then with one file changed.
//!
//! `cargo bench --bench checkpoint`. Figures are printed, not asserted; the targets (issue 11)
//! are ≤ 150 ms for the first checkpoint and ≤ 20 ms when unchanged. Wall time is what a turn
//! waits; CPU time (user + system, all threads) is printed beside it because on a shared,
//! loaded machine wall time mostly measures the queue for a core.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use hermes::checkpoints::{Limits, ShadowRepo, Snapshot};
use hermes::config::checkpoints::CheckpointsConfig;

const FILES: usize = 5_000;
const FIRST_RUNS: usize = 9;
const UNCHANGED_RUNS: usize = 40;

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let work = std::fs::canonicalize(dir.path()).unwrap().join("work");
    make_tree(&work);
    let limits = Limits::from(&CheckpointsConfig::default());

    let mut first = Vec::new();
    let mut store = dir.path().join("store-0");
    for run in 0..FIRST_RUNS {
        store = dir.path().join(format!("store-{run}"));
        let start = Timer::start();
        let repo = ShadowRepo::open(&store, &work, true).unwrap().unwrap();
        let outcome = repo.snapshot("bench", &limits).unwrap();
        first.push(start.stop());
        assert!(
            matches!(outcome, Snapshot::Taken { files: FILES, .. }),
            "{outcome:?}"
        );
    }
    let mut unchanged = Vec::new();
    for _ in 0..UNCHANGED_RUNS {
        let start = Timer::start();
        let repo = ShadowRepo::open(&store, &work, false).unwrap().unwrap();
        let outcome = repo.snapshot("bench", &limits).unwrap();
        unchanged.push(start.stop());
        assert_eq!(outcome, Snapshot::Unchanged);
    }
    let mut one_change = Vec::new();
    for i in 0..UNCHANGED_RUNS {
        std::fs::write(work.join("d000/f000.rs"), format!("// change {i}\n")).unwrap();
        let start = Timer::start();
        let repo = ShadowRepo::open(&store, &work, false).unwrap().unwrap();
        let outcome = repo.snapshot("bench", &limits).unwrap();
        one_change.push(start.stop());
        assert!(matches!(outcome, Snapshot::Taken { .. }), "{outcome:?}");
    }
    println!("checkpoint of a {FILES}-file tree:");
    report("first checkpoint", &mut first);
    report("unchanged", &mut unchanged);
    report("one file changed", &mut one_change);
}

/// Wall and CPU time of one run.
struct Timer {
    wall: Instant,
    cpu: Duration,
}

impl Timer {
    fn start() -> Self {
        Timer {
            wall: Instant::now(),
            cpu: cpu_time(),
        }
    }
    fn stop(self) -> (Duration, Duration) {
        (self.wall.elapsed(), cpu_time().saturating_sub(self.cpu))
    }
}

/// User + system time of this process so far (all threads).
fn cpu_time() -> Duration {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct we own.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

fn report(name: &str, runs: &mut [(Duration, Duration)]) {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let mut wall: Vec<Duration> = runs.iter().map(|r| r.0).collect();
    let mut cpu: Vec<Duration> = runs.iter().map(|r| r.1).collect();
    wall.sort();
    cpu.sort();
    println!(
        "  {name}: wall median {:.1} ms, min {:.1} ms, max {:.1} ms; cpu median {:.1} ms ({} runs)",
        ms(wall[wall.len() / 2]),
        ms(wall[0]),
        ms(wall[wall.len() - 1]),
        ms(cpu[cpu.len() / 2]),
        wall.len()
    );
}

fn make_tree(work: &Path) {
    for d in 0..FILES / 25 {
        let dir = work.join(format!("d{d:03}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..25 {
            let body = format!("// file {d}/{f}\nfn f{f}() -> usize {{ {d} * {f} }}\n");
            std::fs::write(dir.join(format!("f{f:03}.rs")), body).unwrap();
        }
    }
}
