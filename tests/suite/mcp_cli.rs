//! `hermes mcp list|add|remove`: surgical config.yaml edits (comments kept), clear refusals.

use crate::support::harness::{TestEnv, stderr, stdout};

#[test]
fn add_list_remove_keep_comments_and_refuse_bad_input() {
    let env = TestEnv::new();
    env.config("# my settings\nmodel: gpt-4o  # default\n");
    let out = env.bare_cmd().args(["mcp", "list"]).output().unwrap();
    assert!(
        stdout(&out).contains("no MCP servers configured"),
        "{out:?}"
    );

    env.bare_cmd()
        .args(["mcp", "add", "gh", "--command", "npx", "--arg", "-y"])
        .args(["--arg", "@x/server", "--env", "GH_TOKEN=${GH}"])
        .assert()
        .success();
    env.bare_cmd()
        .args(["mcp", "add", "web", "--url", "https://example.test/mcp"])
        .args(["--header", "Authorization: Bearer ${WEB_TOKEN}"])
        .assert()
        .success();
    let text = std::fs::read_to_string(env.home_path().join("config.yaml")).unwrap();
    assert!(
        text.starts_with("# my settings\nmodel: gpt-4o  # default\n"),
        "{text}"
    );
    assert!(text.contains("    command: npx\n"), "{text}");
    assert!(text.contains("      GH_TOKEN: ${GH}\n"), "{text}");
    assert!(
        text.contains("      Authorization: Bearer ${WEB_TOKEN}\n"),
        "{text}"
    );

    let out = env.bare_cmd().args(["mcp", "list"]).output().unwrap();
    let listed = stdout(&out);
    assert!(
        listed.contains("gh") && listed.contains("stdio: npx -y @x/server"),
        "{listed}"
    );
    assert!(
        listed.contains("http: https://example.test/mcp"),
        "{listed}"
    );

    // A second `gh`, a bad name, a bad --env and a non-HTTP URL are refused; nothing changes.
    for args in [
        &["mcp", "add", "gh", "--command", "x"][..],
        &["mcp", "add", "a.b", "--command", "x"][..],
        &["mcp", "add", "z", "--command", "x", "--env", "NOEQUALS"][..],
        &["mcp", "add", "z", "--url", "ftp://x"][..],
        &["mcp", "add", "z"][..],
    ] {
        let out = env.bare_cmd().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
    }
    assert_eq!(
        std::fs::read_to_string(env.home_path().join("config.yaml")).unwrap(),
        text
    );

    // Tool lists kept for `gh` (any fingerprint) go with it; another server's stay.
    let cache = env.home_path().join("cache/mcp");
    std::fs::create_dir_all(&cache).unwrap();
    for file in [
        "gh.0123456789abcdef.json",
        "gh.json",
        "web.0123456789abcdef.json",
    ] {
        std::fs::write(cache.join(file), "{}").unwrap();
    }
    env.bare_cmd()
        .args(["mcp", "remove", "gh"])
        .assert()
        .success();
    assert!(!cache.join("gh.0123456789abcdef.json").exists());
    assert!(!cache.join("gh.json").exists());
    assert!(cache.join("web.0123456789abcdef.json").exists());
    let after = std::fs::read_to_string(env.home_path().join("config.yaml")).unwrap();
    assert!(!after.contains("gh:") && after.contains("web:"), "{after}");
    assert!(after.starts_with("# my settings\n"), "{after}");
    let out = env
        .bare_cmd()
        .args(["mcp", "remove", "gh"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("no MCP server `gh`"),
        "{}",
        stderr(&out)
    );
}
