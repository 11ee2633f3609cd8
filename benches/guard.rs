//! Guard benchmark: the shared scanner over a 1 MB skill (SKILL.md, references and scripts of
//! ordinary documentation and code, a little non-ASCII text), as text in memory and as a
//! directory scan with file reads; and, when `HERMES_GUARD_BENCH_SKILLS` names a folder (e.g.
//! Python Hermes's `skills/` and `optional-skills/`), the audit of every skill under it with
//! the verdict counts and the dangerous skills listed.
//!
//! `cargo bench --bench guard`. Figures are printed, not asserted; the target lives in issue 12
//! (guard scan of a 1 MB skill ≤ 20 ms).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hermes::security::scan::{self, Origin};
use hermes::skills::guard;

const RUNS: usize = 15;

const PROSE: &str = "## Steps\n\nRead the configuration first, then run the tests with `cargo test` and \
read the output carefully. If something fails, check the logs under logs/ and retry. Keep the \
changes small; café menus and naïve résumés still render, and so do emoji 🚀.\n\n";
const SHELL: &str = "```bash\nset -euo pipefail\nfor f in *.csv; do\n  wc -l \"$f\" | tee -a counts.txt\ndone\n\
git status --short && git diff --stat\nfind . -name '*.log' -mtime +7 -print\n```\n\n";
const PYTHON: &str = "```python\nimport json, pathlib\n\ndef load(path):\n    with open(path) as f:\n        \
return json.load(f)\n\nfor p in pathlib.Path('.').glob('*.json'):\n    print(p, len(load(p)))\n```\n\n";

/// Writes a skill of about `bytes` bytes: SKILL.md, two references and a script.
fn generate(dir: &Path, bytes: usize) {
    std::fs::create_dir_all(dir.join("references")).unwrap();
    std::fs::create_dir_all(dir.join("scripts")).unwrap();
    let chunk = format!("{PROSE}{SHELL}{PYTHON}");
    let part = |n: usize| chunk.repeat(n / chunk.len() + 1);
    let quarter = bytes / 4;
    std::fs::write(
        dir.join("SKILL.md"),
        format!(
            "---\nname: big\ndescription: A large but ordinary skill\n---\n# Big\n{}",
            part(quarter)
        ),
    )
    .unwrap();
    std::fs::write(dir.join("references/a.md"), part(quarter)).unwrap();
    std::fs::write(dir.join("references/b.md"), part(quarter)).unwrap();
    std::fs::write(
        dir.join("scripts/run.sh"),
        SHELL.repeat(quarter / SHELL.len()),
    )
    .unwrap();
}

fn median(mut samples: Vec<Duration>) -> String {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    format!(
        "median {:.2} ms, min {:.2} ms, max {:.2} ms",
        ms(samples[samples.len() / 2]),
        ms(samples[0]),
        ms(samples[samples.len() - 1])
    )
}

fn time<T>(mut f: impl FnMut() -> T) -> Vec<Duration> {
    f(); // warm up (compiles the rule set once)
    (0..RUNS)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(f());
            t.elapsed()
        })
        .collect()
}

/// Every directory under `root` that holds a SKILL.md.
fn skill_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = walkdir::WalkDir::new(root)
        .into_iter()
        .flatten()
        .filter(|e| e.file_name() == "SKILL.md")
        .filter_map(|e| e.path().parent().map(Path::to_path_buf))
        .collect();
    dirs.sort();
    dirs
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("big");
    generate(&dir, 1024 * 1024);
    let total: u64 = walkdir::WalkDir::new(&dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum();
    let text = std::fs::read_to_string(dir.join("SKILL.md"))
        .unwrap()
        .repeat(4);

    let findings = guard::scan_dir(&dir);
    println!(
        "skill of {total} bytes: verdict {:?}, {} findings",
        guard::verdict(&findings),
        findings.len()
    );
    println!(
        "scan::scan, {} bytes of skill text in memory: {}",
        text.len(),
        median(time(|| scan::scan(&text, Origin::Skill)))
    );
    let ascii = text.replace(|c: char| !c.is_ascii(), "?");
    println!(
        "scan::scan, the same text all ASCII: {}",
        median(time(|| scan::scan(&ascii, Origin::Skill)))
    );
    println!(
        "guard::scan_dir, 1 MB skill (4 files, read + scan): {} (target ≤ 20 ms)",
        median(time(|| guard::scan_dir(&dir)))
    );

    let Ok(root) = std::env::var("HERMES_GUARD_BENCH_SKILLS") else {
        println!("(set HERMES_GUARD_BENCH_SKILLS=<folder of skills> to audit a real tree)");
        return;
    };
    let mut dirs = Vec::new();
    for part in root.split(':') {
        dirs.extend(skill_dirs(Path::new(part)));
    }
    let started = Instant::now();
    let results: Vec<(PathBuf, Vec<guard::Finding>)> = dirs
        .iter()
        .map(|d| (d.clone(), guard::scan_dir(d)))
        .collect();
    let elapsed = started.elapsed();
    let count = |v: guard::Verdict| {
        results
            .iter()
            .filter(|(_, f)| guard::verdict(f) == v)
            .count()
    };
    println!(
        "audit of {} skills under {root}: {:.0} ms; safe {}, caution {}, dangerous {}",
        results.len(),
        elapsed.as_secs_f64() * 1000.0,
        count(guard::Verdict::Safe),
        count(guard::Verdict::Caution),
        count(guard::Verdict::Dangerous)
    );
    for (d, f) in &results {
        if guard::verdict(f) == guard::Verdict::Dangerous {
            let ids: Vec<String> = f
                .iter()
                .filter(|f| f.severity == guard::Severity::Critical)
                .map(|f| format!("{} ({}:{})", f.id, f.file, f.line))
                .collect();
            println!("  dangerous: {}: {}", d.display(), ids.join(", "));
        }
    }
}
