//! Tests of the one path-resolution function, through the real file tools.

use crate::tools::test_support::env;
use serde_json::json;
use std::os::unix::fs::symlink;

fn home(t: &crate::tools::test_support::TestEnv) -> std::path::PathBuf {
    t.dir.path().join("home")
}

fn seed_home(t: &crate::tools::test_support::TestEnv) {
    let h = home(t);
    std::fs::create_dir_all(h.join("skills/demo")).unwrap();
    std::fs::write(h.join("config.yaml"), "approvals:\n  mode: manual\n").unwrap();
    std::fs::write(h.join(".env"), "OPENAI_API_KEY=sk-test-abcdefghijklmnop\n").unwrap();
    std::fs::write(
        h.join("auth.json"),
        "{\"OPENAI\": \"oauth-abcdefghijklmnop\"}\n",
    )
    .unwrap();
}

#[tokio::test]
async fn every_file_tool_refuses_control_files() {
    let t = env();
    seed_home(&t);
    let h = home(&t);
    let cfg = h.join("config.yaml");
    let cfg_s = cfg.to_str().unwrap();
    let err = t
        .err(
            "write_file",
            json!({"path": cfg_s, "content": "approvals:\n  mode: off\n"}),
        )
        .await;
    assert!(err.contains("hermes config set"), "{err}");
    let err = t
        .err(
            "patch",
            json!({"path": cfg_s, "old_string": "manual", "new_string": "off"}),
        )
        .await;
    assert!(err.contains("refused"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&cfg).unwrap(),
        "approvals:\n  mode: manual\n"
    );
    let skill = h.join("skills/demo/SKILL.md");
    let err = t
        .err(
            "write_file",
            json!({"path": skill.to_str().unwrap(), "content": "---\nname: x\n---\n"}),
        )
        .await;
    assert!(err.contains("skill_manage"), "{err}");
    assert!(!skill.exists());
}

#[tokio::test]
async fn a_symlink_in_the_cwd_does_not_reach_the_home() {
    let t = env();
    seed_home(&t);
    symlink(home(&t), t.path("h")).unwrap();
    let err = t
        .err(
            "write_file",
            json!({"path": "h/config.yaml", "content": "x"}),
        )
        .await;
    assert!(err.contains("resolves to"), "{err}");
    let err = t.err("read_file", json!({"path": "h/.env"})).await;
    assert!(err.contains("may not read"), "{err}");
    assert!(!err.contains("sk-test"), "{err}");
    // `..` out of the cwd into the home is resolved the same way.
    let err = t
        .err(
            "write_file",
            json!({"path": "../home/hooks/x/HOOK.yaml", "content": "x"}),
        )
        .await;
    assert!(err.contains("hook"), "{err}");
    assert!(!home(&t).join("hooks/x").exists());
}

#[tokio::test]
async fn search_never_shows_secret_files() {
    let t = env();
    seed_home(&t);
    let out = t
        .ok(
            "search_files",
            json!({"pattern": "OPENAI", "path": home(&t).to_str().unwrap()}),
        )
        .await;
    assert!(!out.contains("oauth-"), "{out}");
    assert!(out.contains("1 protected file(s) skipped"), "{out}");
    // A hard link to the secret inside the cwd is found out by its inode.
    std::fs::hard_link(home(&t).join("auth.json"), t.path("copy.txt")).unwrap();
    let out = t.ok("search_files", json!({"pattern": "OPENAI"})).await;
    assert!(!out.contains("oauth-"), "{out}");
    let err = t.err("read_file", json!({"path": "copy.txt"})).await;
    assert!(err.contains("may not read"), "{err}");
}

#[tokio::test]
async fn writes_follow_links_inside_the_cwd() {
    let t = env();
    let real = t.write("real.txt", "old");
    symlink("real.txt", t.path("link.txt")).unwrap();
    t.ok("write_file", json!({"path": "link.txt", "content": "new"}))
        .await;
    assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
    assert!(
        std::fs::symlink_metadata(t.path("link.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    // A dangling link: the write creates its target, the link becomes valid.
    symlink("sub/new.txt", t.path("dangling")).unwrap();
    t.ok("write_file", json!({"path": "dangling", "content": "made"}))
        .await;
    assert_eq!(
        std::fs::read_to_string(t.path("sub/new.txt")).unwrap(),
        "made"
    );
}

#[tokio::test]
async fn devices_empty_paths_and_nul_bytes_are_refused() {
    let t = env();
    let err = t.err("read_file", json!({"path": "/dev/zero"})).await;
    assert!(err.contains("not a regular file"), "{err}");
    let err = t
        .err("write_file", json!({"path": "  ", "content": "x"}))
        .await;
    assert!(err.contains("path is empty"), "{err}");
    let err = t.err("read_file", json!({"path": "a\u{0}b"})).await;
    assert!(err.contains("NUL"), "{err}");
}

#[tokio::test]
async fn tool_results_are_redacted() {
    let t = env();
    t.write("notes.txt", "key: sk-proj-abcdefghijklmnopqrstuv\n");
    let out = t.ok("read_file", json!({"path": "notes.txt"})).await;
    assert!(!out.contains("abcdefghijklmnop"), "{out}");
    assert!(out.contains("[REDACTED]"), "{out}");
}

#[test]
fn within_refuses_traversal_absolute_and_symlinks_out() {
    use super::{PathRefusal, within};
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("skill");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(base.join("sub")).unwrap();
    std::fs::create_dir(&outside).unwrap();
    std::fs::create_dir(dir.path().join("skill2")).unwrap();
    symlink(&outside, base.join("link")).unwrap();
    std::fs::create_dir(base.join("real")).unwrap();
    symlink(base.join("real"), base.join("inner")).unwrap();
    let canon = std::fs::canonicalize(&base).unwrap();
    assert_eq!(
        within(&base, "sub/new.md").unwrap(),
        canon.join("sub/new.md")
    );
    assert_eq!(within(&base, "./inner/f").unwrap(), canon.join("real/f"));
    for bad in ["", "a\0b", "/etc/passwd", "../x", "a/../../x", "a/.."] {
        assert!(
            matches!(within(&base, bad), Err(PathRefusal::Invalid(_))),
            "{bad:?}"
        );
    }
    for bad in ["link/secret", "link", "link/new-file"] {
        let err = within(&base, bad).unwrap_err();
        assert!(matches!(err, PathRefusal::Escapes(_)), "{bad}: {err}");
    }
    // `..` is a whole component only.
    assert!(within(&base, "a..b/..c").is_ok());
    // A missing base is an error, not a pass.
    assert!(within(&dir.path().join("missing"), "a").is_err());
}
