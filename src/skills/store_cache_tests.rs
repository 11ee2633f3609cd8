//! Tests of the persistent parse cache: reuse across stores (processes), invalidation by
//! edit and delete, racy files, and a corrupt cache file.

use std::path::Path;

use crate::skills::SkillStore;
use crate::skills::store_cache::{INDEX_FILE, ParseCache};

fn write(root: &Path, rel: &str, description: &str) -> std::path::PathBuf {
    let dir = root.join(rel);
    std::fs::create_dir_all(&dir).unwrap();
    let name = rel.rsplit('/').next().unwrap();
    let path = dir.join("SKILL.md");
    std::fs::write(
        &path,
        format!("---\nname: {name}\ndescription: {description}\n---\nbody\n"),
    )
    .unwrap();
    age(&path, 3_600);
    path
}

/// Moves a file's mtime into the past: installed skills are old, and a fresh one is "racy".
fn age(path: &Path, secs: u64) {
    let t = std::time::SystemTime::now() - std::time::Duration::from_secs(secs);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

/// A store as a new process would build it: an empty memory cache over the same file.
fn store(root: &Path) -> SkillStore {
    SkillStore::new(root).with_cache(ParseCache::persistent(root.join(INDEX_FILE)))
}

fn descriptions(store: &SkillStore) -> Vec<(String, String)> {
    store
        .scan()
        .skills
        .iter()
        .map(|s| (s.name.clone(), s.description.clone()))
        .collect()
}

#[test]
fn a_new_process_reuses_the_index_without_parsing() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    let a = write(r, "cat/a", "one");
    write(r, "b", "two");
    assert_eq!(descriptions(&store(r)).len(), 2);
    assert!(r.join(INDEX_FILE).is_file());
    // Make the SKILL.md unparseable without changing size or mtime: a store that re-parsed it
    // would report it invalid; one that trusts the index still sees "one".
    let meta = std::fs::metadata(&a).unwrap();
    let text = std::fs::read_to_string(&a).unwrap().replace("---", "+++");
    std::fs::write(&a, text).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&a)
        .unwrap()
        .set_modified(meta.modified().unwrap())
        .unwrap();
    assert_eq!(
        descriptions(&store(r)),
        [("b".into(), "two".into()), ("a".into(), "one".into())]
    );
}

#[test]
fn edits_and_deletes_are_seen_by_the_next_process() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    let a = write(r, "a", "one");
    write(r, "b", "two");
    descriptions(&store(r));
    // Same size, new mtime.
    std::fs::write(
        &a,
        std::fs::read_to_string(&a).unwrap().replace("one", "uno"),
    )
    .unwrap();
    age(&a, 1_800);
    std::fs::remove_dir_all(r.join("b")).unwrap();
    assert_eq!(descriptions(&store(r)), [("a".into(), "uno".into())]);
    let index = std::fs::read_to_string(r.join(INDEX_FILE)).unwrap();
    assert!(index.contains("uno") && !index.contains("two"), "{index}");
}

#[test]
fn a_file_changed_just_now_is_never_trusted_on_size_and_mtime() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    let a = write(r, "a", "one");
    std::fs::write(
        &a,
        std::fs::read_to_string(&a).unwrap().replace("one", "uno"),
    )
    .unwrap();
    let s = store(r);
    assert_eq!(descriptions(&s), [("a".into(), "uno".into())]);
    // A second same-size edit within the same mtime tick: re-parsed, because it is recent.
    let meta = std::fs::metadata(&a).unwrap();
    std::fs::write(
        &a,
        std::fs::read_to_string(&a).unwrap().replace("uno", "dos"),
    )
    .unwrap();
    std::fs::File::options()
        .write(true)
        .open(&a)
        .unwrap()
        .set_modified(meta.modified().unwrap())
        .unwrap();
    assert_eq!(descriptions(&s), [("a".into(), "dos".into())]);
    // Recent entries are not written to disk either.
    let index = std::fs::read_to_string(r.join(INDEX_FILE)).unwrap_or_default();
    assert!(!index.contains("dos"), "{index}");
}

#[test]
fn a_corrupt_or_foreign_index_is_rebuilt() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    write(r, "a", "one");
    std::fs::create_dir_all(r.join(".hub")).unwrap();
    for junk in [
        &b"{not json"[..],
        b"\xff\xfe\x00garbage",
        br#"{"format": 99, "hermes": "0.0.0", "entries": []}"#,
        br#"{"format": 1, "hermes": "x", "entries": [{"path": 5}]}"#,
    ] {
        std::fs::write(r.join(INDEX_FILE), junk).unwrap();
        assert_eq!(descriptions(&store(r)), [("a".into(), "one".into())]);
        let index = std::fs::read_to_string(r.join(INDEX_FILE)).unwrap();
        assert!(index.contains("\"one\""), "not rebuilt: {index}");
    }
}

#[test]
fn invalid_skills_are_cached_with_their_reason() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    std::fs::create_dir_all(r.join("broken")).unwrap();
    std::fs::write(r.join("broken/SKILL.md"), "no frontmatter").unwrap();
    age(&r.join("broken/SKILL.md"), 3_600);
    assert_eq!(store(r).scan().invalid.len(), 1);
    let second = store(r).scan();
    assert_eq!(second.invalid.len(), 1);
    assert!(second.invalid[0].error.contains("frontmatter"));
}

/// Sets a directory's mtime (an unchanged tree is old; a listing read just now is "racy").
fn set_dir_mtime(dir: &Path, t: std::time::SystemTime) {
    std::fs::File::open(dir).unwrap().set_modified(t).unwrap();
}

#[test]
fn unchanged_directories_are_not_read_again_and_a_changed_one_is() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    write(r, "cat/a", "one");
    write(r, "cat/b", "two");
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3_600);
    for d in ["", "cat", "cat/a", "cat/b"] {
        set_dir_mtime(&r.join(d), old);
    }
    assert_eq!(descriptions(&store(r)).len(), 2);
    // A new skill whose parent keeps its old mtime: a store trusting the cached listing of
    // `cat` does not see it (proof that the listing is reused, not read again) …
    write(r, "cat/c", "three");
    let cat_mtime = std::fs::metadata(r.join("cat"))
        .unwrap()
        .modified()
        .unwrap();
    set_dir_mtime(&r.join("cat"), old);
    assert_eq!(descriptions(&store(r)).len(), 2);
    // … and as soon as the directory's mtime differs (any add, remove or rename), it is read.
    set_dir_mtime(&r.join("cat"), cat_mtime);
    let names: Vec<String> = descriptions(&store(r))
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["a", "b", "c"]);
    // A skill nested in a skill (Python Hermes's `dogfood/adversarial-ux-test/`) is found too.
    write(r, "cat/a/inner", "four");
    let names: Vec<String> = descriptions(&store(r))
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["a", "b", "c", "inner"]);
    // A removed skill disappears.
    std::fs::remove_dir_all(r.join("cat/b")).unwrap();
    let names: Vec<String> = descriptions(&store(r))
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["a", "c", "inner"]);
}

/// A store as a new process builds it, with a counting scanner: verdicts found once are reused
/// by the next process (no scan), persisted with the index, and a withheld one stays withheld.
#[test]
fn scanner_verdicts_are_remembered_across_processes() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    write(r, "a", "one");
    let scans = std::cell::Cell::new(0);
    let screen = |store: &SkillStore, text: &str| {
        store.scan();
        let verdict = store_cache(store).verdict(text, || {
            scans.set(scans.get() + 1);
            (text == "evil").then(|| "prompt_injection".to_string())
        });
        store.save_cache();
        verdict
    };
    let first = store(r);
    assert_eq!(screen(&first, "fine"), None);
    assert_eq!(screen(&first, "evil").as_deref(), Some("prompt_injection"));
    assert_eq!(scans.get(), 2);
    // Same process: from memory.
    assert_eq!(screen(&first, "fine"), None);
    assert_eq!(scans.get(), 2);
    let index = std::fs::read_to_string(r.join(INDEX_FILE)).unwrap();
    assert!(index.contains("\"verdicts\""), "{index}");
    assert!(
        !index.contains("fine"),
        "texts are stored as hashes: {index}"
    );
    // A new process: from the file, no scan.
    let second = store(r);
    assert_eq!(screen(&second, "evil").as_deref(), Some("prompt_injection"));
    assert_eq!(screen(&second, "fine"), None);
    assert_eq!(scans.get(), 2);
    // Another text: scanned.
    assert_eq!(screen(&second, "fine too"), None);
    assert_eq!(scans.get(), 3);
}

/// Verdicts written by another build are not trusted: its scanner rules may differ.
#[test]
fn another_builds_verdicts_are_scanned_again() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    write(r, "a", "one");
    let first = store(r);
    first.scan();
    store_cache(&first).verdict("text", || None);
    first.save_cache();
    let path = r.join(INDEX_FILE);
    let mut disk: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert!(
        disk["build"].as_str().is_some_and(|b| !b.is_empty()),
        "{disk}"
    );
    disk["build"] = "another-build".into();
    std::fs::write(&path, disk.to_string()).unwrap();
    let second = store(r);
    second.scan();
    let scanned = std::cell::Cell::new(false);
    let verdict = store_cache(&second).verdict("text", || {
        scanned.set(true);
        Some("rule".into())
    });
    assert!(scanned.get());
    assert_eq!(verdict.as_deref(), Some("rule"));
}

fn store_cache(store: &SkillStore) -> &ParseCache {
    store.parse_cache()
}
