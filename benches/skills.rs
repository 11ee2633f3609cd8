//! Skills benchmark: `skills_list` over 1,000 generated skills (cold = first scan in the process,
//! parsing every SKILL.md; warm = later scans that only stat), `skill_view` of one skill, the
//! size of the system-prompt index for 200 skills, and — through the real binary, one process
//! per run — `hermes skills list --json` and start → first model request with 1,000 skills
//! installed (first run: no persistent index yet; then medians with the index in
//! `skills/.hub/store-index.json`).
//!
//! `cargo bench --bench skills`. Figures are printed, not asserted; the targets live in issues 3
//! and 15 (list ≤ 20 ms warm / ≤ 200 ms cold, view ≤ 2 ms, index for 200 skills ≤ 6 KB;
//! `skills list --json` ≤ 20 ms per process; start → first request ≤ 30 ms).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "../tests/support/mock_llm.rs"]
mod mock_llm;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{children_cpu, stats};
use hermes::config::{Config, EnvVars, HermesHome};
use hermes::skills::{SkillStore, index};

const RUNS: usize = 30;

/// Writes `n` skills in 12 categories, each with a realistic frontmatter and body, and a
/// `references/` file for every tenth skill.
fn generate(root: &Path, n: usize) {
    for i in 0..n {
        let category = format!("category-{:02}", i % 12);
        let dir = root.join(&category).join(format!("skill-{i:04}"));
        std::fs::create_dir_all(&dir).unwrap();
        let text = format!(
            "---\nname: skill-{i:04}\ndescription: Procedure number {i} for doing a specific task well, with checks and pitfalls\nversion: 1.0.0\nauthor: bench\nlicense: MIT\nplatforms: [linux, macos]\nmetadata:\n  hermes:\n    tags: [bench, t{}]\n    related_skills: [skill-{:04}]\n---\n# Skill {i}\n\n## Steps\n1. First do this.\n2. Then check that.\n3. Finally report.\n\n## Pitfalls\n- Something that went wrong once.\n",
            i % 17,
            (i + 1) % n
        );
        std::fs::write(dir.join("SKILL.md"), text).unwrap();
        if i % 10 == 0 {
            std::fs::create_dir_all(dir.join("references")).unwrap();
            std::fs::write(dir.join("references/notes.md"), "background notes\n").unwrap();
        }
    }
    for c in 0..12 {
        std::fs::write(
            root.join(format!("category-{c:02}/DESCRIPTION.md")),
            format!("---\ndescription: Category {c} procedures\n---\n"),
        )
        .unwrap();
    }
    age(root);
}

/// Installed skills are not brand new: every file and directory below `path` is dated an hour
/// back. (A file or directory changed in the last seconds is never trusted on its size and
/// mtime, so a fresh tree would be re-read by every process, as it must be right after an edit.)
fn age(path: &Path) {
    let t = std::time::SystemTime::now() - Duration::from_secs(3_600);
    if path.is_dir() {
        for entry in std::fs::read_dir(path).unwrap() {
            age(&entry.unwrap().path());
        }
    }
    // Children first: dating a child does not touch its directory's mtime, creating one does.
    std::fs::File::open(path).unwrap().set_modified(t).unwrap();
}

fn main() {
    let home = tempfile::tempdir().unwrap();
    let skills = home.path().join("skills");
    generate(&skills, 1_000);
    let config = Config::defaults(HermesHome::new(home.path()), EnvVars::default());
    let store = SkillStore::from_config(&config);

    let started = Instant::now();
    let cold = hermes::tools::skills::list(&store, None);
    let cold_time = started.elapsed();
    assert_eq!(cold["count"], 1_000);
    println!(
        "skills_list, 1,000 skills, cold (parse all): {:.2} ms (target ≤ 200 ms)",
        cold_time.as_secs_f64() * 1000.0
    );

    let warm: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let t = Instant::now();
            let v = hermes::tools::skills::list(&store, None);
            let d = t.elapsed();
            assert_eq!(v["count"], 1_000);
            d
        })
        .collect();
    println!(
        "skills_list, 1,000 skills, warm: {} (target ≤ 20 ms)",
        stats(warm)
    );

    let view: Vec<Duration> = (0..RUNS)
        .map(|i| {
            let name = format!("skill-{:04}", (i * 37) % 1_000);
            let t = Instant::now();
            let v = hermes::tools::skills::view(
                &store,
                &config,
                &Default::default(),
                "bench",
                &name,
                None,
            )
            .unwrap();
            let d = t.elapsed();
            assert_eq!(v["name"], name.as_str());
            d
        })
        .collect();
    println!(
        "skill_view over 1,000 skills: {} (target ≤ 2 ms)",
        stats(view)
    );

    let small = tempfile::tempdir().unwrap();
    generate(small.path(), 200);
    let scan = SkillStore::new(small.path()).scan();
    let text = index::render(&scan.skills, &scan.categories, index::MAX_INDEX_BYTES);
    println!(
        "system prompt index, 200 skills: {} bytes (target ≤ 6,144); 1,000 skills: {} bytes",
        text.len(),
        {
            let scan = store.scan();
            index::render(&scan.skills, &scan.categories, index::MAX_INDEX_BYTES).len()
        }
    );

    per_process(home.path());
}

/// The real binary, one process per run, over the 1,000-skill home.
fn per_process(home: &Path) {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_hermes"));
    // The loop's own cost: no background reviews.
    std::fs::write(
        home.join("config.yaml"),
        "skills:\n  creation_nudge_interval: 0\nmemory:\n  nudge_interval: 0\n",
    )
    .unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let index = home.join("skills/.hub/store-index.json");
    let base = |args: &[&str]| {
        let mut cmd = Command::new(&bin);
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", home)
            .env("HERMES_HOME", home)
            .current_dir(cwd.path())
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        cmd
    };
    let cpu = std::cell::RefCell::new(Vec::new());
    let list_once = || {
        let before = children_cpu();
        let t = Instant::now();
        let out = base(&["skills", "list", "--json"]).output().unwrap();
        let elapsed = t.elapsed();
        assert!(out.status.success());
        cpu.borrow_mut().push(children_cpu() - before);
        elapsed
    };
    // The bundled skills a first start copies in are installed too: copy them, date the tree,
    // then measure from a home without an index.
    list_once();
    age(&home.join("skills"));
    let _ = std::fs::remove_file(&index);
    let cold = list_once();
    cpu.borrow_mut().clear();
    let warm: Vec<Duration> = (0..RUNS).map(|_| list_once()).collect();
    println!(
        "hermes skills list --json, 1,000 skills, per process: first (no index) {:.2} ms; with the index {} (target ≤ 20 ms); CPU per process {}",
        cold.as_secs_f64() * 1000.0,
        stats(warm),
        stats(cpu.take())
    );

    let first_request = |remove_index: bool| {
        if remove_index {
            let _ = std::fs::remove_file(&index);
        }
        let mock = mock_llm::MockLlm::with_script([mock_llm::Reply::text("ok")]);
        let t = Instant::now();
        let mut child = base(&["--provider", "custom", "-m", "bench-model", "-z", "hi"])
            .env("CUSTOM_BASE_URL", mock.base_url())
            .spawn()
            .unwrap();
        while mock.request_count() == 0 {
            std::thread::sleep(Duration::from_micros(100));
        }
        let elapsed = t.elapsed();
        child.wait().unwrap();
        elapsed
    };
    let cold = first_request(true);
    let before = children_cpu();
    let warm: Vec<Duration> = (0..RUNS).map(|_| first_request(false)).collect();
    let cpu = (children_cpu() - before) / RUNS as u32;
    println!(
        "start → first model request, 1,000 skills: first (no index) {:.2} ms; with the index {} (target ≤ 30 ms); CPU of the whole -z run, mean {:.2} ms",
        cold.as_secs_f64() * 1000.0,
        stats(warm),
        cpu.as_secs_f64() * 1000.0
    );
}
