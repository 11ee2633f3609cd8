//! Skills benchmark: `skills_list` over 1,000 generated skills (cold = first scan in the process,
//! parsing every SKILL.md; warm = later scans that only stat), `skill_view` of one skill, and
//! the size of the system-prompt index for 200 skills.
//!
//! `cargo bench --bench skills`. Figures are printed, not asserted; the targets live in issue 3
//! (list ≤ 20 ms warm / ≤ 200 ms cold, view ≤ 2 ms, index for 200 skills ≤ 6 KB).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

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
}

fn stats(mut samples: Vec<Duration>) -> String {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    format!(
        "median {:.2} ms, p95 {:.2} ms, min {:.2} ms",
        ms(samples[samples.len() / 2]),
        ms(samples[samples.len() * 95 / 100]),
        ms(samples[0])
    )
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
            let v = hermes::tools::skills::view(&store, &config, "bench", &name, None).unwrap();
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
}
