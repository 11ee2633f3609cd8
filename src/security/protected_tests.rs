//! Unit tests for `protected.rs`: what is refused, through symlinks and `..`, and the lists the
//! sandbox builds its mounts from.

use super::*;
use std::os::unix::fs::symlink;

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    hermes: PathBuf,
    home: PathBuf,
    work: PathBuf,
    protected: ProtectedPaths,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let home = root.join("home");
    let hermes = home.join(".hermes");
    let work = root.join("work");
    for d in [&hermes, &work, &home.join(".ssh"), &hermes.join("skills")] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(hermes.join(".env"), "OPENAI_API_KEY=sk-x\n").unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "key").unwrap();
    std::fs::write(home.join(".ssh/id_ed25519.pub"), "pub").unwrap();
    std::fs::write(home.join(".ssh/known_hosts"), "hosts").unwrap();
    let protected = ProtectedPaths::new(Roots {
        hermes_home: hermes.clone(),
        user_homes: vec![home.clone()],
        extra: vec![root.join("prod")],
        readable: vec![root.join("work/allowed")],
    });
    Fixture {
        _dir: dir,
        root,
        hermes,
        home,
        work,
        protected,
    }
}

fn write_refused(f: &Fixture, p: &Path) -> String {
    match f.protected.check_write(p, &p.display().to_string()) {
        Err(e) => e.to_string(),
        Ok(r) => panic!("{} was allowed (resolved {})", p.display(), r.display()),
    }
}

#[test]
fn control_files_are_not_writable() {
    let f = fixture();
    let cases = [
        (f.hermes.join("config.yaml"), "hermes config set"),
        (f.hermes.join(".env"), "hermes never shows secrets"),
        (f.hermes.join("auth.json"), "secrets"),
        (f.hermes.join("SOUL.md"), "SOUL.md"),
        (f.hermes.join("hooks/evil/HOOK.yaml"), "hooks"),
        (f.hermes.join("skills/new/SKILL.md"), "skill_manage"),
        (f.hermes.join("state.db"), "hermes sessions"),
        (f.hermes.join("state.db-wal"), "hermes sessions"),
        (f.hermes.join("memories/MEMORY.md"), "memory tool"),
        (f.hermes.join("anything-else.txt"), "control file"),
        (f.home.join(".ssh/authorized_keys"), "credential"),
        (f.home.join(".bashrc"), "start-up"),
        (f.home.join(".config/fish/config.fish"), "start-up"),
        (f.home.join(".aws/credentials"), "credential"),
        (PathBuf::from("/etc/passwd"), "system"),
        (f.root.join("prod/db.conf"), "security.protected_paths"),
    ];
    for (path, advice) in cases {
        let msg = write_refused(&f, &path);
        assert!(msg.contains(advice), "{}: {msg}", path.display());
        assert!(msg.contains("--yolo"), "{msg}");
    }
    // Ordinary files are fine, and the resolved path is returned.
    let ok = f
        .protected
        .check_write(&f.work.join("src/main.rs"), "src/main.rs")
        .unwrap();
    assert_eq!(ok, f.work.join("src/main.rs"));
    assert!(
        f.protected
            .check_write(&f.home.join("notes.txt"), "x")
            .is_ok()
    );
    // A sibling whose name starts like a protected directory is not covered.
    assert!(
        f.protected
            .check_write(&f.home.join(".sshx/file"), "x")
            .is_ok()
    );
}

#[test]
fn symlinks_and_dotdot_are_resolved_first() {
    let f = fixture();
    symlink(&f.hermes, f.work.join("h")).unwrap();
    symlink(f.hermes.join("config.yaml"), f.work.join("cfg")).unwrap();
    symlink(f.home.join(".ssh"), f.work.join("keys")).unwrap();
    for p in [
        f.work.join("h/config.yaml"),
        f.work.join("h/skills/x/SKILL.md"),
        f.work.join("cfg"),
        f.work.join("keys/authorized_keys"),
        f.work.join("missing/../h/.env"),
    ] {
        let msg = write_refused(&f, &p);
        assert!(msg.contains("resolves to"), "{msg}");
    }
    write_refused(&f, &f.work.join("../home/.hermes/config.yaml"));
    // A dangling link is followed too: writing through it would create the target.
    symlink(
        f.hermes.join("hooks/new/HOOK.yaml"),
        f.work.join("dangling"),
    )
    .unwrap();
    write_refused(&f, &f.work.join("dangling"));
    let err = f
        .protected
        .check_read(&f.work.join("h/.env"), "h/.env")
        .unwrap_err();
    assert!(matches!(err, Refusal::Read { .. }), "{err}");
}

#[test]
fn secrets_are_not_readable_but_the_rest_is() {
    let f = fixture();
    for p in [
        f.hermes.join(".env"),
        f.hermes.join("auth.json"),
        f.home.join(".ssh/id_ed25519"),
        f.home.join(".ssh/deploy_key"),
        f.home.join(".aws/credentials"),
        f.root.join("prod/secret.txt"),
        PathBuf::from("/proc/self/environ"),
    ] {
        let err = f.protected.check_read(&p, "p").unwrap_err();
        assert!(err.to_string().contains("may not read"), "{err}");
    }
    for p in [
        f.hermes.join("config.yaml"),
        f.hermes.join("skills/x/SKILL.md"),
        f.home.join(".ssh/id_ed25519.pub"),
        f.home.join(".ssh/known_hosts"),
        f.home.join(".bashrc"),
        PathBuf::from("/etc/hostname"),
    ] {
        assert!(f.protected.check_read(&p, "p").is_ok(), "{}", p.display());
    }
}

#[test]
fn hard_links_to_secrets_are_not_readable() {
    let f = fixture();
    let link = f.work.join("innocent.txt");
    std::fs::hard_link(f.hermes.join(".env"), &link).unwrap();
    // The list was built before the link existed; the inode still gives it away.
    assert!(f.protected.check_read(&link, "innocent.txt").is_err());
    assert!(f.protected.is_unreadable(&link));
}

#[test]
fn lists_for_the_sandbox() {
    let f = fixture();
    let w = &f.protected.no_write;
    assert!(w.contains(&f.hermes), "{w:?}");
    // Entries under a listed directory are folded into it.
    assert!(!w.contains(&f.hermes.join("config.yaml")), "{w:?}");
    assert!(w.contains(&f.home.join(".ssh")), "{w:?}");
    assert!(w.contains(&f.home.join(".bashrc")), "{w:?}");
    assert!(w.contains(&PathBuf::from("/etc")), "{w:?}");
    let r = &f.protected.no_read;
    assert!(r.contains(&f.hermes.join(".env")), "{r:?}");
    assert!(r.contains(&f.hermes.join("auth.json")), "{r:?}");
    assert!(r.contains(&f.home.join(".ssh/id_ed25519")), "{r:?}");
    assert!(!r.contains(&f.home.join(".ssh/id_ed25519.pub")), "{r:?}");
    assert!(!r.iter().any(|p| p.ends_with("known_hosts")), "{r:?}");
    assert!(r.contains(&f.root.join("prod")), "{r:?}");
    // Every entry is absolute and resolved.
    for p in w.iter().chain(r) {
        assert!(p.is_absolute(), "{}", p.display());
    }
}

#[test]
fn a_symlinked_hermes_home_is_protected_by_its_real_path() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(root.join("real-home")).unwrap();
    symlink(root.join("real-home"), root.join("link-home")).unwrap();
    let p = ProtectedPaths::new(Roots {
        hermes_home: root.join("link-home"),
        ..Default::default()
    });
    assert!(p.no_write.contains(&root.join("real-home")));
    assert!(
        p.check_write(&root.join("real-home/config.yaml"), "c")
            .is_err()
    );
    assert!(
        p.check_write(&root.join("link-home/config.yaml"), "c")
            .is_err()
    );
}

#[test]
fn for_config_reads_home_and_additions() {
    let f = fixture();
    let mut env = crate::config::EnvVars::default();
    env.set("HOME", f.home.display().to_string());
    let mut config = Config::defaults(crate::config::HermesHome::new(&f.hermes), env);
    config.security.protected_paths = vec![f.root.join("vault")];
    let p = ProtectedPaths::for_config(&config);
    assert!(p.check_write(&f.home.join(".ssh/x"), "x").is_err());
    assert!(p.check_read(&f.root.join("vault/a"), "a").is_err());
    assert!(p.check_write(&f.work.join("a"), "a").is_ok());
}

#[test]
fn nul_bytes_are_refused() {
    let f = fixture();
    let err = f
        .protected
        .check_write(Path::new("/tmp/a\0b"), "a\0b")
        .unwrap_err();
    assert!(matches!(err, Refusal::Unresolvable { .. }), "{err}");
}

#[test]
fn project_secrets_files_are_unreadable_unless_the_user_allows_them() {
    let f = fixture();
    std::fs::create_dir_all(f.work.join("allowed")).unwrap();
    for name in [
        ".env",
        ".env.local",
        "id_rsa",
        ".npmrc",
        "allowed/.env",
        ".env.example",
    ] {
        std::fs::write(f.work.join(name), "TOKEN=abc\n").unwrap();
    }
    for name in [".env", ".env.local", "id_rsa", ".npmrc"] {
        let p = f.work.join(name);
        let e = f.protected.check_read(&p, name).unwrap_err().to_string();
        assert!(
            e.contains("may not read") && e.contains("security.readable_paths"),
            "{name}: {e}"
        );
        assert!(f.protected.is_unreadable(&p), "{name}");
        // Creating or overwriting one is not refused (only reading it).
        assert!(f.protected.check_write(&p, name).is_ok(), "{name}");
    }
    // Listed in security.readable_paths, or a documented shape: readable.
    assert!(
        f.protected
            .check_read(&f.work.join("allowed/.env"), "a")
            .is_ok()
    );
    assert!(
        f.protected
            .check_read(&f.work.join(".env.example"), "e")
            .is_ok()
    );
    // A symlink with an innocent name is judged by what it points at.
    symlink(f.work.join(".env"), f.work.join("notes.txt")).unwrap();
    assert!(
        f.protected
            .check_read(&f.work.join("notes.txt"), "notes.txt")
            .is_err()
    );
    // readable_paths never opens hermes's own secrets.
    let p = ProtectedPaths::new(Roots {
        hermes_home: f.hermes.clone(),
        readable: vec![f.hermes.clone()],
        ..Default::default()
    });
    assert!(p.check_read(&f.hermes.join(".env"), ".env").is_err());
}
