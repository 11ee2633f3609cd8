//! What the benches that drive the real binary share: a fresh home, the `hermes` command with a
//! clean environment, start → first model request, the CPU time of waited-for children, and the
//! median / p95 / min of a set of samples. Included by each bench with `mod common;` (a bench
//! uses only part of it, hence the `dead_code` allowance).
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A bench home's config: no background memory or skill reviews, so the loop's own cost is what
/// is measured.
pub const QUIET_CONFIG: &str =
    "skills:\n  creation_nudge_interval: 0\nmemory:\n  nudge_interval: 0\n";

/// A fresh `HERMES_HOME` with `config` as its config.yaml.
pub fn home(config: &str) -> tempfile::TempDir {
    let h = tempfile::tempdir().unwrap();
    std::fs::write(h.path().join("config.yaml"), config).unwrap();
    h
}

/// `bin` with nothing of this process's environment but `PATH`, `home` as both `HOME` and
/// `HERMES_HOME`, run in `cwd`, its output discarded.
pub fn hermes(bin: &Path, home: &Path, cwd: &Path) -> Command {
    let mut cmd = Command::new(bin);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("HERMES_HOME", home)
        .current_dir(cwd)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

/// [`hermes`] talking to the mock LLM at `base_url` as the `custom` provider, model `model`.
pub fn hermes_on(
    bin: &Path,
    home: &Path,
    cwd: &Path,
    base_url: &str,
    model: &str,
    args: &[&str],
) -> Command {
    let mut cmd = hermes(bin, home, cwd);
    cmd.env("CUSTOM_BASE_URL", base_url)
        .args(["--provider", "custom", "-m", model])
        .args(args);
    cmd
}

/// Starts `cmd` and returns the time until the mock LLM has seen a request (`requests` counts
/// them); then waits for the process to end.
pub fn time_to_first_request(mut cmd: Command, requests: impl Fn() -> usize) -> Duration {
    let before = requests();
    let t = Instant::now();
    let mut child = cmd.spawn().unwrap();
    while requests() == before {
        std::thread::sleep(Duration::from_micros(100));
    }
    let elapsed = t.elapsed();
    child.wait().unwrap();
    elapsed
}

/// CPU time (user + system) of the children this process has waited for so far. On a loaded
/// machine wall-clock time measures the queue for the cores; CPU time is what the process costs.
pub fn children_cpu() -> Duration {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a whole `rusage` into the pointer it is given.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_CHILDREN, usage.as_mut_ptr());
        usage.assume_init()
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1_000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// The median of `samples` (the upper one of an even count).
pub fn median(samples: impl IntoIterator<Item = Duration>) -> Duration {
    Stats::of(samples.into_iter().collect()).median
}

/// Order statistics of a set of timings.
#[derive(Debug, Clone, Copy)]
pub struct Stats {
    pub min: Duration,
    pub median: Duration,
    pub p95: Duration,
    pub max: Duration,
}

impl Stats {
    /// Of at least one sample.
    pub fn of(mut samples: Vec<Duration>) -> Stats {
        assert!(!samples.is_empty(), "no samples");
        samples.sort();
        let n = samples.len();
        Stats {
            min: samples[0],
            median: samples[n / 2],
            p95: samples[(n * 95 / 100).min(n - 1)],
            max: samples[n - 1],
        }
    }
}

/// `median X ms, p95 Y ms, min Z ms` of `samples`.
pub fn stats(samples: Vec<Duration>) -> String {
    let s = Stats::of(samples);
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    format!(
        "median {:.2} ms, p95 {:.2} ms, min {:.2} ms",
        ms(s.median),
        ms(s.p95),
        ms(s.min)
    )
}
