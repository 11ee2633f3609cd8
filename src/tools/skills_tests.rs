//! Tests of `skills_list` and `skill_view` through the real registry dispatch.

use serde_json::{Value, json};

use crate::tools::test_support;

fn write_skill(env: &test_support::TestEnv, rel: &str, text: &str) -> std::path::PathBuf {
    let dir = env.ctx.config.home.skills_dir().join(rel);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), text).unwrap();
    dir
}

fn parse(s: &str) -> Value {
    serde_json::from_str(s).unwrap()
}

#[tokio::test]
async fn list_and_view_tiers() {
    let env = test_support::env();
    let dir = write_skill(
        &env,
        "dev/git-flow",
        "---\nname: git-flow\ndescription: Branching\nrequired_environment_variables: [GIT_FLOW_TOKEN_XYZ]\nmetadata:\n  hermes:\n    tags: [git]\n    related_skills: [debug]\n---\nDir is ${HERMES_SKILL_DIR}\n",
    );
    std::fs::create_dir_all(dir.join("references")).unwrap();
    std::fs::write(dir.join("references/cheats.md"), "git log --oneline").unwrap();
    std::fs::create_dir_all(dir.join("assets")).unwrap();
    std::fs::write(
        dir.join("assets/logo.png"),
        [0x89u8, b'P', b'N', b'G', 0, 0, 1],
    )
    .unwrap();
    write_skill(
        &env,
        "notes",
        "---\nname: notes\ndescription: Notes\n---\nbody\n",
    );

    let list = parse(&env.ok("skills_list", json!({})).await);
    assert_eq!(list["count"], 2);
    assert_eq!(list["skills"][0]["name"], "notes");
    assert_eq!(
        list["skills"][1],
        json!({"name": "git-flow", "description": "Branching", "category": "dev"})
    );
    let only = parse(&env.ok("skills_list", json!({"category": "dev"})).await);
    assert_eq!(only["count"], 1);
    let none = parse(&env.ok("skills_list", json!({"category": "nope"})).await);
    assert!(none["message"].as_str().unwrap().contains("dev"));

    let view = parse(&env.ok("skill_view", json!({"name": "git-flow"})).await);
    assert_eq!(view["tags"], json!(["git"]));
    assert_eq!(view["related_skills"], json!(["debug"]));
    assert_eq!(
        view["linked_files"]["references"],
        json!(["references/cheats.md"])
    );
    assert_eq!(
        view["missing_required_environment_variables"],
        json!(["GIT_FLOW_TOKEN_XYZ"])
    );
    assert_eq!(view["readiness_status"], "setup_needed");
    assert!(
        view["content"]
            .as_str()
            .unwrap()
            .contains(&dir.display().to_string())
    );

    let file = parse(
        &env.ok(
            "skill_view",
            json!({"name": "git-flow", "file_path": "references/cheats.md"}),
        )
        .await,
    );
    assert_eq!(file["content"], "git log --oneline");
    let bin = parse(
        &env.ok(
            "skill_view",
            json!({"name": "git-flow", "file_path": "assets/logo.png"}),
        )
        .await,
    );
    assert_eq!(bin["binary"], true);
    assert!(!bin["content"].as_str().unwrap().contains("PNG"));
}

#[tokio::test]
async fn hostile_view_paths_are_refused_with_the_file_list() {
    let env = test_support::env();
    let dir = write_skill(&env, "s", "---\nname: s\ndescription: d\n---\nbody\n");
    std::fs::create_dir_all(dir.join("references")).unwrap();
    std::fs::write(dir.join("references/ok.md"), "ok").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink("/etc", dir.join("references/etc")).unwrap();
    for (path, expect) in [
        ("../../etc/passwd", "`..`"),
        ("references/../../x", "`..`"),
        ("/etc/passwd", "absolute"),
        ("references/etc/passwd", "outside"),
        ("references/missing.md", "not a file"),
    ] {
        let e = env
            .err("skill_view", json!({"name": "s", "file_path": path}))
            .await;
        assert!(e.contains(expect), "{path}: {e}");
        assert!(e.contains("references/ok.md"), "{path}: {e}");
    }
    let e = env.err("skill_view", json!({"name": "z"})).await;
    assert!(e.contains("no skill named `z`"), "{e}");
}

#[tokio::test]
async fn manage_tool_creates_and_reports_errors() {
    let env = test_support::env();
    let ok = env
        .ok(
            "skill_manage",
            json!({"action": "create", "name": "x", "content": "---\nname: x\ndescription: d\n---\nbody\n"}),
        )
        .await;
    assert_eq!(parse(&ok)["success"], true);
    let e = env
        .err("skill_manage", json!({"action": "explode", "name": "x"}))
        .await;
    assert!(e.contains("action"), "{e}");
    let e = env
        .err("skill_manage", json!({"action": "patch", "name": "x"}))
        .await;
    assert!(e.contains("needs `old_string`"), "{e}");
}

#[tokio::test]
async fn skill_files_go_through_the_one_path_policy() {
    let env = test_support::env();
    let dir = write_skill(
        &env,
        "ops/deploy",
        "---\nname: deploy\ndescription: Deploys\n---\nbody\n",
    );
    std::fs::create_dir_all(dir.join("references")).unwrap();
    std::fs::write(dir.join("references/.env"), "DEPLOY_TOKEN=abcdef123456\n").unwrap();
    std::fs::write(dir.join("references/notes.md"), "hello\n").unwrap();
    let outside = env.dir.path().join("outside.md");
    std::fs::write(&outside, "not the skill's\n").unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("references/out.md")).unwrap();
    // A secrets file inside a skill is refused to skill_view like to read_file.
    let err = env
        .err(
            "skill_view",
            json!({"name": "deploy", "file_path": "references/.env"}),
        )
        .await;
    assert!(err.contains("secrets") && err.contains("notes.md"), "{err}");
    // Traversal and a symlink out of the skill are refused; a near miss gets did-you-mean.
    for (path, expect) in [
        ("../deploy/SKILL.md", "`..`"),
        ("/etc/hostname", "absolute"),
        ("references/out.md", "outside"),
        ("references/nots.md", "not a file in skill"),
    ] {
        let err = env
            .err("skill_view", json!({"name": "deploy", "file_path": path}))
            .await;
        assert!(err.contains(expect), "{path}: {err}");
    }
    let ok = parse(
        &env.ok(
            "skill_view",
            json!({"name": "deploy", "file_path": "references/notes.md"}),
        )
        .await,
    );
    assert_eq!(ok["content"], "hello\n");
    // skill_manage is the door to the skill's directory, not to the secrets in it.
    let err = env
        .err(
            "skill_manage",
            json!({"action": "patch", "name": "deploy", "file_path": "references/.env",
                   "old_string": "abcdef", "new_string": "x"}),
        )
        .await;
    assert!(err.contains("secrets"), "{err}");
    let err = env
        .err(
            "skill_manage",
            json!({"action": "write_file", "name": "deploy", "file_path": "references/out.md",
                   "file_content": "changed"}),
        )
        .await;
    assert!(err.contains("outside"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&outside).unwrap(),
        "not the skill's\n"
    );
    env.ok(
        "skill_manage",
        json!({"action": "write_file", "name": "deploy", "file_path": "references/more.md",
               "file_content": "more"}),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(dir.join("references/more.md")).unwrap(),
        "more"
    );
}
