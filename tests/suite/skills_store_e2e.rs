//! The skill store through the real binary: nested skills (Python Hermes's
//! `dogfood/adversarial-ux-test/`), the persistent parsed index in `skills/.hub/` (reused by the
//! next process, edits and deletes seen, a corrupt file rebuilt with a log line), and the skill
//! lifecycle (similar-skill check before create, probation, use counts in `skills list`).

use std::path::Path;

use serde_json::Value;

use crate::support::harness::{TestEnv, stderr, stdout};

const INDEX: &str = "skills/.hub/store-index.json";

fn skill_text(name: &str, description: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\n# {name}\nDo the thing.\n")
}

/// Writes a skill whose SKILL.md is an hour old (installed skills are not brand new; a file
/// changed in the last seconds is deliberately never trusted on size and mtime).
fn install(env: &TestEnv, rel: &str, description: &str) -> std::path::PathBuf {
    let name = rel.rsplit('/').next().unwrap();
    let path = env.home_path().join(format!("skills/{rel}/SKILL.md"));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, skill_text(name, description)).unwrap();
    set_age(&path, 3_600);
    path
}

fn set_age(path: &Path, secs: u64) {
    let t = std::time::SystemTime::now() - std::time::Duration::from_secs(secs);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

fn list(env: &TestEnv) -> Vec<Value> {
    let out = env
        .bare_cmd()
        .args(["skills", "list", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_str::<Value>(&stdout(&out))
        .unwrap()
        .as_array()
        .cloned()
        .unwrap()
}

fn find<'a>(rows: &'a [Value], name: &str) -> Option<&'a Value> {
    rows.iter().find(|r| r["name"] == name)
}

#[test]
fn nested_skills_are_listed_and_the_index_persists_correctly() {
    let env = TestEnv::new();
    install(&env, "dogfood", "Dogfood a product");
    install(&env, "dogfood/adversarial-ux-test", "Break the UX on purpose");
    let tea = install(&env, "kitchen/brew-tea", "Steep green tea");

    let rows = list(&env);
    let nested = find(&rows, "adversarial-ux-test").unwrap_or_else(|| panic!("nested skill not listed: {rows:?}"));
    assert_eq!(nested["category"], "dogfood");
    assert!(find(&rows, "dogfood").is_some());
    let index = std::fs::read_to_string(env.home_path().join(INDEX)).unwrap();
    assert!(index.contains("Steep green tea"), "{index}");

    // Edited (same size, new mtime) → seen by the next process.
    std::fs::write(
        &tea,
        skill_text("brew-tea", "Steep black tea").replace("black", "hot  "),
    )
    .unwrap();
    set_age(&tea, 1_800);
    let rows = list(&env);
    assert_eq!(find(&rows, "brew-tea").unwrap()["description"], "Steep hot   tea");

    // Deleted → gone, from the list and from the index.
    std::fs::remove_dir_all(env.home_path().join("skills/kitchen")).unwrap();
    let rows = list(&env);
    assert!(find(&rows, "brew-tea").is_none());
    let index = std::fs::read_to_string(env.home_path().join(INDEX)).unwrap();
    assert!(!index.contains("brew-tea"), "{index}");

    // Corrupt → rebuilt, with a log line, not an error.
    std::fs::write(env.home_path().join(INDEX), "{\"format\": 1, \"entr").unwrap();
    let rows = list(&env);
    assert!(find(&rows, "adversarial-ux-test").is_some());
    let index = std::fs::read_to_string(env.home_path().join(INDEX)).unwrap();
    assert!(index.contains("Break the UX on purpose"), "{index}");
    let log = std::fs::read_to_string(env.home_path().join("logs/agent.log")).unwrap_or_default();
    assert!(
        log.contains("skill index cache is corrupt"),
        "no log line about the rebuild: {log}"
    );
}
