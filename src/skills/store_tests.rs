//! Tests of the skill store: discovery, categories, nested skills, the parse cache.

use super::*;
use crate::config::EnvVars;

/// Sets a file's mtime `secs_ago` seconds in the past (no sleeping for a new mtime).
pub(crate) fn set_mtime(path: &Path, secs_ago: u64) {
    let t = std::time::SystemTime::now() - std::time::Duration::from_secs(secs_ago);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

pub(crate) fn write_skill(root: &Path, rel: &str, frontmatter: &str, body: &str) -> PathBuf {
    let dir = root.join(rel);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\n{frontmatter}\n---\n{body}\n"),
    )
    .unwrap();
    dir
}

#[test]
fn scans_categories_invalid_and_duplicates() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    write_skill(
        r,
        "dev/git-flow",
        "name: git-flow\ndescription: Branch and merge",
        "body",
    );
    write_skill(
        r,
        "dev/debug",
        "name: debug\ndescription: Find bugs",
        "body",
    );
    write_skill(r, "top", "name: top\ndescription: At the root", "body");
    std::fs::write(
        r.join("dev/DESCRIPTION.md"),
        "---\ndescription: Software work\n---\n",
    )
    .unwrap();
    std::fs::create_dir_all(r.join("broken")).unwrap();
    std::fs::write(r.join("broken/SKILL.md"), "no frontmatter here").unwrap();
    write_skill(
        r,
        "other/git-flow",
        "name: git-flow\ndescription: twin",
        "body",
    );
    write_skill(
        r,
        "dev/debug/references/nested",
        "name: nested\ndescription: no",
        "x",
    );
    write_skill(r, ".hub/quarantine/q", "name: q\ndescription: no", "x");
    write_skill(
        r,
        "mac-only",
        "name: mac-only\ndescription: m\nplatforms: [windows]",
        "x",
    );

    let scan = SkillStore::new(r).scan();
    let names: Vec<(&Option<String>, &str)> = scan
        .skills
        .iter()
        .map(|s| (&s.category, s.name.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            (&None, "top"),
            (&Some("dev".to_string()), "debug"),
            (&Some("dev".to_string()), "git-flow"),
        ]
    );
    assert_eq!(
        scan.categories.get("dev"),
        Some(&Some("Software work".to_string()))
    );
    assert_eq!(scan.invalid.len(), 1);
    assert_eq!(scan.invalid[0].name, "broken");
    assert!(
        scan.invalid[0].error.contains("no frontmatter"),
        "{}",
        scan.invalid[0].error
    );
    assert_eq!(scan.hidden, ["mac-only"]);
}

#[cfg(unix)]
#[test]
fn a_symlinked_skill_directory_counts() {
    let root = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let real = write_skill(
        elsewhere.path(),
        "linked",
        "name: linked\ndescription: d",
        "b",
    );
    std::fs::create_dir_all(root.path().join("cat")).unwrap();
    std::os::unix::fs::symlink(&real, root.path().join("cat/linked")).unwrap();
    let scan = SkillStore::new(root.path()).scan();
    assert_eq!(scan.skills.len(), 1);
    assert_eq!(scan.skills[0].category.as_deref(), Some("cat"));
}

#[test]
fn rescans_only_what_changed() {
    let root = tempfile::tempdir().unwrap();
    let dir = write_skill(root.path(), "a", "name: a\ndescription: one", "body");
    let store = SkillStore::new(root.path());
    assert_eq!(store.find("a").unwrap().description, "one");
    // Same size, different content and mtime: the cache must notice.
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: a\ndescription: two\n---\nbody\n",
    )
    .unwrap();
    set_mtime(&dir.join("SKILL.md"), 3_600);
    assert_eq!(store.find("a").unwrap().description, "two");
}

#[test]
fn linked_files_skip_symlinks_that_leave_the_skill() {
    let root = tempfile::tempdir().unwrap();
    let dir = write_skill(root.path(), "s", "name: s\ndescription: d", "body");
    std::fs::create_dir_all(dir.join("references")).unwrap();
    std::fs::write(dir.join("references/api.md"), "api").unwrap();
    std::fs::create_dir_all(dir.join("scripts")).unwrap();
    std::fs::write(dir.join("scripts/run.sh"), "echo").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink("/etc/passwd", dir.join("references/passwd")).unwrap();
    let skill = SkillStore::new(root.path()).find("s").unwrap();
    let files = skill.linked_files();
    assert_eq!(files["references"], ["references/api.md"]);
    assert_eq!(files["scripts"], ["scripts/run.sh"]);
}

#[test]
fn readiness_reports_missing_requirements() {
    let root = tempfile::tempdir().unwrap();
    write_skill(
        root.path(),
        "s",
        "name: s\ndescription: d\nrequired_environment_variables: [NEEDED_KEY, PRESENT_KEY]\nprerequisites:\n  commands: [definitely-not-a-command-xyz]",
        "body",
    );
    let mut env = EnvVars::default();
    env.set("PRESENT_KEY", "1");
    let r = SkillStore::new(root.path())
        .find("s")
        .unwrap()
        .readiness(&env);
    assert_eq!(r.missing_env, ["NEEDED_KEY"]);
    assert_eq!(r.missing_commands, ["definitely-not-a-command-xyz"]);
    assert!(!r.ready());
}

#[test]
fn conditional_display_follows_tools() {
    let root = tempfile::tempdir().unwrap();
    write_skill(
        root.path(),
        "s",
        "name: s\ndescription: d\nmetadata:\n  hermes:\n    requires_toolsets: [terminal]\n    fallback_for_tools: [web_search]",
        "body",
    );
    let skill = SkillStore::new(root.path()).find("s").unwrap();
    let custom = BTreeMap::new();
    assert!(skill.shown_with(&["terminal".into()], &custom));
    assert!(!skill.shown_with(&["read_file".into()], &custom));
    assert!(!skill.shown_with(&["terminal".into(), "web_search".into()], &custom));
}

#[test]
fn nested_skills_are_found_as_python_hermes_finds_them() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    write_skill(r, "dogfood", "name: dogfood\ndescription: Dogfood it", "b");
    write_skill(
        r,
        "dogfood/adversarial-ux-test",
        "name: adversarial-ux-test\ndescription: Break the UX",
        "b",
    );
    // Below a skill's supporting directory: data, not a skill.
    write_skill(
        r,
        "dogfood/references/old",
        "name: old\ndescription: d",
        "b",
    );
    // A category called `scripts` is still a category.
    write_skill(r, "scripts/runner", "name: runner\ndescription: d", "b");
    let store = SkillStore::new(r);
    let scan = store.scan();
    let names: Vec<(Option<&str>, &str)> = scan
        .skills
        .iter()
        .map(|s| (s.category.as_deref(), s.name.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            (None, "dogfood"),
            (Some("dogfood"), "adversarial-ux-test"),
            (Some("scripts"), "runner"),
        ]
    );
    let nested = store.find("adversarial-ux-test").unwrap();
    assert_eq!(nested.dir, r.join("dogfood/adversarial-ux-test"));
    assert_eq!(nested.category.as_deref(), Some("dogfood"));
    // The parent's linked files do not include the nested skill.
    let linked = store.find("dogfood").unwrap().linked_files();
    assert_eq!(linked["references"], ["references/old/SKILL.md"]);
    assert_eq!(linked.len(), 1);
}
