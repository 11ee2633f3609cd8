//! Skills hub benchmark: installing a 20-file skill from a local git repository (the whole
//! pipeline: fetch into the mirror, read from git objects, quarantine, guard scan, policy, atomic
//! rename, pristine copy, lock.json, audit line), and searching a tap whose cached listing holds
//! 5,000 skills (each search reads the cache file from disk and ranks it, as a new process does).
//!
//! `cargo bench --bench skills_hub`. Figures are printed, not asserted; the targets live in
//! issue 15 (install ≤ 300 ms, search over a 5,000-entry cached index ≤ 30 ms).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use git2::{Oid, Repository, RepositoryInitOptions, Signature};
use hermes::skills::hub::install::InstallOptions;
use hermes::skills::hub::{Hub, install, keep, search, taps};

const RUNS: usize = 15;

/// Writes `files` (path → bytes) as one commit on `main` of a new bare repository.
fn repo_with(path: &Path, files: &BTreeMap<String, Vec<u8>>) {
    let mut opts = RepositoryInitOptions::new();
    opts.bare(true).initial_head("main");
    let repo = Repository::init_opts(path, &opts).unwrap();
    let tree = build(&repo, files);
    let tree = repo.find_tree(tree).unwrap();
    let sig = Signature::now("bench", "bench@example.com").unwrap();
    repo.commit(Some("refs/heads/main"), &sig, &sig, "bench", &tree, &[])
        .unwrap();
}

fn build(repo: &Repository, files: &BTreeMap<String, Vec<u8>>) -> Oid {
    let mut builder = repo.treebuilder(None).unwrap();
    let mut dirs: BTreeMap<String, BTreeMap<String, Vec<u8>>> = BTreeMap::new();
    for (path, bytes) in files {
        match path.split_once('/') {
            Some((dir, rest)) => {
                dirs.entry(dir.to_string())
                    .or_default()
                    .insert(rest.to_string(), bytes.clone());
            }
            None => {
                let blob = repo.blob(bytes).unwrap();
                builder.insert(path, blob, 0o100644).unwrap();
            }
        }
    }
    for (dir, sub) in dirs {
        let oid = build(repo, &sub);
        builder.insert(&dir, oid, 0o040000).unwrap();
    }
    builder.write().unwrap()
}

fn skill_md(name: &str, i: usize) -> Vec<u8> {
    format!(
        "---\nname: {name}\ndescription: Procedure {i} for a specific task, with checks and pitfalls\nmetadata:\n  hermes:\n    tags: [bench, t{}]\n---\n# {name}\n\n## Steps\n1. Read references/notes.md.\n2. Run scripts/check.sh.\n3. Report.\n",
        i % 17
    )
    .into_bytes()
}

fn stats(mut samples: Vec<Duration>) -> String {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    format!(
        "median {:.2} ms, p95 {:.2} ms, min {:.2} ms, max {:.2} ms",
        ms(samples[samples.len() / 2]),
        ms(samples[(samples.len() * 95 / 100).min(samples.len() - 1)]),
        ms(samples[0]),
        ms(samples[samples.len() - 1])
    )
}

fn bench_install() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = BTreeMap::new();
    files.insert("SKILL.md".to_string(), skill_md("twenty-files", 0));
    for i in 0..19 {
        let folder = ["references", "scripts", "templates", "assets"][i % 4];
        let body = format!("line {i} of a supporting file for the bench\n").repeat(40);
        files.insert(format!("{folder}/file-{i:02}.md"), body.into_bytes());
    }
    let upstream = dir.path().join("upstream.git");
    repo_with(&upstream, &files);
    let id = upstream.display().to_string();

    let mut cold = Vec::new();
    let mut warm = Vec::new();
    for _ in 0..RUNS {
        // Cold: a fresh home, so the repository is mirrored first.
        let home = tempfile::tempdir().unwrap();
        let hub = Hub::new(home.path().join("skills"));
        let start = Instant::now();
        install::install(&hub, &id, &InstallOptions::default()).unwrap();
        cold.push(start.elapsed());
        // Warm: the mirror exists (it is fetched again, as every install does).
        keep::uninstall(&hub, "twenty-files").unwrap();
        let start = Instant::now();
        install::install(&hub, &id, &InstallOptions::default()).unwrap();
        warm.push(start.elapsed());
    }
    println!(
        "install 20-file skill, new home (mirror created): {}",
        stats(cold)
    );
    println!(
        "install 20-file skill, mirror present:             {}",
        stats(warm)
    );
}

fn bench_search() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = BTreeMap::new();
    for i in 0..5_000 {
        let name = format!("skill-{i:04}");
        files.insert(
            format!("skills/category-{:02}/{name}/SKILL.md", i % 40),
            skill_md(&name, i),
        );
    }
    let upstream = dir.path().join("index.git");
    repo_with(&upstream, &files);
    let home = tempfile::tempdir().unwrap();
    let mut hub = Hub::new(home.path().join("skills"));
    hub.default_taps = false;
    taps::add(&hub, &upstream.display().to_string(), "skills").unwrap();

    let start = Instant::now();
    let (first, _) = search::search(&hub, "skill-4999", None, 10).unwrap();
    let listing = start.elapsed();
    assert_eq!(first[0].name, "skill-4999");
    let (all, _) = search::listings(&hub, None, false).unwrap();
    assert_eq!(all.len(), 5_000);

    let mut samples = Vec::new();
    let mut found = 0;
    for i in 0..RUNS * 2 {
        let query = [
            "procedure pitfalls",
            "skill-1234",
            "t7 bench",
            "no-such-thing",
        ][i % 4];
        let start = Instant::now();
        let (hits, _) = search::search(&hub, query, None, 10).unwrap();
        samples.push(start.elapsed());
        found += hits.len();
    }
    let cache_bytes: u64 = std::fs::read_dir(hub.cache_dir())
        .unwrap()
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum();
    println!(
        "first search of a 5,000-skill tap (mirror + listing + cache write): {:.1} ms",
        listing.as_secs_f64() * 1000.0
    );
    println!(
        "search over the cached 5,000-entry listing ({} KB on disk): {} ({found} hits in total)",
        cache_bytes / 1024,
        stats(samples)
    );
}

fn main() {
    bench_install();
    bench_search();
}
