//! Checkpoint benchmark: a 5,000-file working tree (200 directories of 25 small source files)
//! snapshotted into a fresh shadow repository (first checkpoint), then again with nothing
//! changed (what every later turn pays), then with one file changed.
//!
//! `cargo bench --bench checkpoint`. Figures are printed, not asserted; the targets (issue 11)
//! are ≤ 150 ms for the first checkpoint and ≤ 20 ms when unchanged.
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
        let start = Instant::now();
        let repo = ShadowRepo::open(&store, &work, true).unwrap().unwrap();
        let outcome = repo.snapshot("bench", &limits).unwrap();
        first.push(start.elapsed());
        assert!(
            matches!(outcome, Snapshot::Taken { files: FILES, .. }),
            "{outcome:?}"
        );
    }
    let mut unchanged = Vec::new();
    for _ in 0..UNCHANGED_RUNS {
        let start = Instant::now();
        let repo = ShadowRepo::open(&store, &work, false).unwrap().unwrap();
        let outcome = repo.snapshot("bench", &limits).unwrap();
        unchanged.push(start.elapsed());
        assert_eq!(outcome, Snapshot::Unchanged);
    }
    let mut one_change = Vec::new();
    for i in 0..UNCHANGED_RUNS {
        std::fs::write(work.join("d000/f000.rs"), format!("// change {i}\n")).unwrap();
        let start = Instant::now();
        let repo = ShadowRepo::open(&store, &work, false).unwrap().unwrap();
        let outcome = repo.snapshot("bench", &limits).unwrap();
        one_change.push(start.elapsed());
        assert!(matches!(outcome, Snapshot::Taken { .. }), "{outcome:?}");
    }
    println!("checkpoint of a {FILES}-file tree:");
    report("first checkpoint", &mut first);
    report("unchanged", &mut unchanged);
    report("one file changed", &mut one_change);
}

fn report(name: &str, times: &mut [Duration]) {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "  {name}: median {:.1} ms, min {:.1} ms, max {:.1} ms ({} runs)",
        ms(times[times.len() / 2]),
        ms(times[0]),
        ms(times[times.len() - 1]),
        times.len()
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
