//! Unit tests for checkpoints: snapshot, list, restore, ignore rules, limits, compaction.

use super::*;
use crate::config::{EnvVars, HermesHome};

struct Fixture {
    _dir: tempfile::TempDir,
    config: Config,
    work: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let work = root.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let config = Config::defaults(HermesHome::new(root.join("home")), EnvVars::default());
    Fixture {
        _dir: dir,
        config,
        work,
    }
}

fn write(f: &Fixture, rel: &str, text: &str) {
    let p = f.work.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn read(f: &Fixture, rel: &str) -> Option<String> {
    std::fs::read_to_string(f.work.join(rel)).ok()
}

fn limits(f: &Fixture) -> Limits {
    Limits::from(&f.config.checkpoints)
}

fn snap(f: &Fixture, label: &str) -> Snapshot {
    take(
        &f.config.home.root().join("checkpoints"),
        &f.work,
        label,
        &limits(f),
        20,
    )
    .unwrap()
}

#[test]
fn snapshot_and_restore_a_turn() {
    let f = fixture();
    write(&f, "a.txt", "alpha\n");
    write(&f, "src/b.rs", "fn b() {}\n");
    write(&f, "gone.txt", "will be deleted\n");
    assert!(matches!(
        snap(&f, "turn one"),
        Snapshot::Taken { files: 3, .. }
    ));
    // Unchanged tree: no new checkpoint.
    assert_eq!(snap(&f, "turn one again"), Snapshot::Unchanged);

    // The turn changes, deletes and creates files.
    write(&f, "a.txt", "ALPHA\n");
    std::fs::remove_file(f.work.join("gone.txt")).unwrap();
    write(&f, "new/c.txt", "new\n");

    let restored = restore(&f.config, &f.work, 1).unwrap();
    assert_eq!(read(&f, "a.txt").as_deref(), Some("alpha\n"));
    assert_eq!(read(&f, "gone.txt").as_deref(), Some("will be deleted\n"));
    assert_eq!(read(&f, "new/c.txt"), None);
    assert!(!f.work.join("new").exists(), "empty directory left behind");
    assert_eq!(read(&f, "src/b.rs").as_deref(), Some("fn b() {}\n"));
    let text = describe(&restored, 1);
    assert!(
        text.contains("restored a.txt") && text.contains("removed  new/c.txt"),
        "{text}"
    );

    // The restore itself can be undone: checkpoint 1 is now the state before it.
    let list = list(&f.config, &f.work).unwrap();
    assert_eq!(list.len(), 2);
    assert!(list[0].label.contains("before restoring"), "{list:?}");
    restore(&f.config, &f.work, 1).unwrap();
    assert_eq!(read(&f, "a.txt").as_deref(), Some("ALPHA\n"));
    assert_eq!(read(&f, "new/c.txt").as_deref(), Some("new\n"));
}

#[test]
fn gitignore_is_honoured_and_the_users_git_is_untouched() {
    let f = fixture();
    let repo = git2::Repository::init(&f.work).unwrap();
    drop(repo);
    write(&f, ".gitignore", "target/\n*.log\n");
    write(&f, "main.rs", "fn main() {}\n");
    write(&f, "target/big.bin", "build output\n");
    write(&f, "run.log", "log\n");
    let git_before = tree_listing(&f.work.join(".git"));
    assert!(matches!(snap(&f, "t"), Snapshot::Taken { files: 2, .. }));
    assert_eq!(
        tree_listing(&f.work.join(".git")),
        git_before,
        "the user's .git changed"
    );
    // Ignored files are neither saved nor removed by a restore.
    write(&f, "main.rs", "changed\n");
    write(&f, "later.log", "x\n");
    restore(&f.config, &f.work, 1).unwrap();
    assert_eq!(read(&f, "main.rs").as_deref(), Some("fn main() {}\n"));
    assert!(f.work.join("later.log").exists() && f.work.join("target/big.bin").exists());
    assert_eq!(tree_listing(&f.work.join(".git")), git_before);
}

/// Every path and content under `dir`, for before/after comparisons.
fn tree_listing(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out: Vec<(PathBuf, Vec<u8>)> = walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .map(|e| {
            let data = std::fs::read(e.path()).unwrap_or_default();
            (e.path().to_path_buf(), data)
        })
        .collect();
    out.sort();
    out
}

#[test]
fn size_limits_skip_and_say_so() {
    let mut f = fixture();
    f.config.checkpoints.max_files = 3;
    for i in 0..5 {
        write(&f, &format!("f{i}.txt"), "x");
    }
    match snap(&f, "t") {
        Snapshot::Skipped(reason) => assert!(reason.contains("more than 3 files"), "{reason}"),
        other => panic!("{other:?}"),
    }
    let mut f = fixture();
    f.config.checkpoints.max_file_size_mb = 0;
    write(&f, "empty.txt", "");
    write(&f, "big.bin", "more than zero bytes");
    match snap(&f, "t") {
        Snapshot::Taken { files, notes, .. } => {
            assert_eq!(files, 1);
            assert!(notes[0].contains("big.bin"), "{notes:?}");
        }
        other => panic!("{other:?}"),
    }
    assert!(list(&f.config, &f.work).unwrap()[0].notes[0].contains("big.bin"));
}

#[test]
fn compaction_keeps_the_newest() {
    let f = fixture();
    for i in 0..6 {
        write(&f, "a.txt", &format!("v{i}\n"));
        snap(&f, &format!("turn {i}"));
    }
    let dir = f.config.home.root().join("checkpoints");
    let repo = ShadowRepo::open(&dir, &f.work, false).unwrap().unwrap();
    assert_eq!(repo.compact(&dir, 3).unwrap(), 3);
    let kept = list(&f.config, &f.work).unwrap();
    let labels: Vec<&str> = kept.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(labels, ["turn 5", "turn 4", "turn 3"]);
    write(&f, "a.txt", "later\n");
    restore(&f.config, &f.work, 3).unwrap();
    assert_eq!(read(&f, "a.txt").as_deref(), Some("v3\n"));
    // prune: an orphan store (its directory is gone) is removed.
    let other = f.work.parent().unwrap().join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("x"), "x").unwrap();
    take(&dir, &other, "t", &limits(&f), 20).unwrap();
    std::fs::remove_dir_all(&other).unwrap();
    let pruned = prune(&f.config).unwrap();
    assert_eq!(pruned.orphans_removed, 1);
}

#[test]
fn missing_checkpoints_are_explained() {
    let f = fixture();
    let err = restore(&f.config, &f.work, 1).unwrap_err().to_string();
    assert!(err.contains("no checkpoints"), "{err}");
    write(&f, "a", "x");
    snap(&f, "t");
    let err = restore(&f.config, &f.work, 5).unwrap_err().to_string();
    assert!(
        err.contains("no checkpoint 5") && err.contains("1 exist"),
        "{err}"
    );
}

#[tokio::test]
async fn once_per_turn_and_only_when_enabled() {
    let f = fixture();
    write(&f, "a.txt", "1");
    let cp = Checkpointer::for_config(&f.config);
    cp.begin_turn("first");
    assert_eq!(cp.before_change(&f.work, &f.work.join("a.txt")).await, None);
    write(&f, "a.txt", "2");
    cp.before_change(&f.work, &f.work.join("a.txt")).await;
    assert_eq!(
        list(&f.config, &f.work).unwrap().len(),
        1,
        "snapshotted twice in a turn"
    );
    cp.begin_turn("second");
    cp.before_command(&f.work, "ls -la | wc -l").await;
    assert_eq!(
        list(&f.config, &f.work).unwrap().len(),
        1,
        "a read-only command snapshotted"
    );
    cp.before_command(&f.work, "make").await;
    let all = list(&f.config, &f.work).unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].label, "second");

    let mut off = fixture();
    off.config.checkpoints.enabled = false;
    write(&off, "a.txt", "1");
    let cp = Checkpointer::for_config(&off.config);
    cp.begin_turn("x");
    cp.before_change(&off.work, &off.work.join("a.txt")).await;
    assert!(list(&off.config, &off.work).unwrap().is_empty());
}

#[test]
fn read_only_classifier_is_conservative() {
    for cmd in [
        "ls -la",
        "cat a | grep x | wc -l",
        "git status",
        "git log --oneline",
        "pwd && echo hi",
    ] {
        assert!(is_clearly_read_only(cmd), "{cmd}");
    }
    for cmd in [
        "rm -rf x",
        "echo hi > f",
        "cat a >> b",
        "sed -i s/a/b/ f",
        "git commit -m x",
        "ls; touch x",
        "python script.py",
        "echo $(rm x)",
        "",
    ] {
        assert!(!is_clearly_read_only(cmd), "{cmd}");
    }
}

/// The tree a checkpoint records is the one git itself would build from the same files
/// (modes, symlinks, nesting, ordering such as `a.txt` before `a/` and `a-b` before `a/`).
#[test]
fn trees_match_what_libgit2_builds() {
    use std::os::unix::fs::PermissionsExt;
    let f = fixture();
    for rel in [
        "a.txt",
        "a/x.rs",
        "a-b",
        "a0",
        "a/deep/er/y",
        "b c/é.txt",
        "z",
    ] {
        write(&f, rel, rel);
    }
    // Enough files to be read on several threads.
    for i in 0..100 {
        write(&f, &format!("many/f{i}"), &format!("{}", i % 7));
    }
    std::fs::set_permissions(f.work.join("z"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("a.txt", f.work.join("link")).unwrap();
    assert!(matches!(snap(&f, "t"), Snapshot::Taken { files: 108, .. }));
    let dir = f.config.home.root().join("checkpoints");
    let ours = ShadowRepo::open(&dir, &f.work, false).unwrap().unwrap();
    let ours = ours.list().unwrap()[0].id.clone();
    let shadow = git2::Repository::open_bare(store::shadow_dir(&dir, &f.work)).unwrap();
    let ours = shadow
        .find_commit(git2::Oid::from_str(&ours).unwrap())
        .unwrap()
        .tree_id();

    let other = tempfile::tempdir().unwrap();
    let repo = git2::Repository::init_bare(other.path()).unwrap();
    repo.set_workdir(&f.work, false).unwrap();
    let mut index = repo.index().unwrap();
    index
        .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
        .unwrap();
    assert_eq!(index.write_tree().unwrap(), ours);
    // Every object is readable from the pack (blobs and trees alike).
    let tree = shadow.find_tree(ours).unwrap();
    tree.walk(git2::TreeWalkMode::PreOrder, |_, e| {
        shadow.find_object(e.id(), None).unwrap();
        git2::TreeWalkResult::Ok
    })
    .unwrap();
}

/// A change that keeps size and lands in the same timestamp tick is still seen (the stat
/// cache does not trust files modified close to its walk), and a lost cache costs only time.
#[test]
fn same_size_changes_and_a_lost_cache_are_handled() {
    let f = fixture();
    write(&f, "a.txt", "one\n");
    write(&f, "b.txt", "bee\n");
    assert!(matches!(snap(&f, "t1"), Snapshot::Taken { .. }));
    write(&f, "a.txt", "two\n");
    assert!(matches!(snap(&f, "t2"), Snapshot::Taken { .. }));
    assert_eq!(snap(&f, "t3"), Snapshot::Unchanged);
    let shadow = store::shadow_dir(&f.config.home.root().join("checkpoints"), &f.work);
    std::fs::write(shadow.join(stat_cache::FILE), b"garbage").unwrap();
    assert_eq!(snap(&f, "t4"), Snapshot::Unchanged);
    write(&f, "a.txt", "six\n");
    assert!(matches!(snap(&f, "t5"), Snapshot::Taken { .. }));
    restore(&f.config, &f.work, 2).unwrap();
    assert_eq!(read(&f, "a.txt").as_deref(), Some("two\n"));
}
