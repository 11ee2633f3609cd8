//! The hub's sources and what may not use them, through the real binary: `tap add | list |
//! remove` (a removed tap's installed skills stay, and are named), the default taps offline (each
//! unreachable one named, the rest of the search still answers), the listing cache's TTL (a
//! fresh listing is used, a stale one fetched again), `browse`, `inspect` writing nothing, a
//! bundled skill refused by `check`/`update`/`uninstall`/`reset`, and a background review that
//! cannot install from the hub even in a run started with `--yes`; installs at a commit id, a
//! short id and a branch.

use serde_json::{Value, json};

use super::skills_hub::{
    Upstream, commit_owned, lock, pdf_skill, quarantine_is_empty, skill_tree, tool_result,
};
use crate::support::closed_port::ClosedPort;
use crate::support::harness::{TestEnv, stderr, stdout};
use crate::support::hub_cli::{skills_ok as ok, skills_with_taps as hermes};
use crate::support::mock_llm::{MockLlm, Reply};

const FILE: i32 = 0o100644;

fn tap_repos(env: &TestEnv, defaults: bool) -> Vec<(String, bool)> {
    let out = hermes(env, defaults, &["tap", "list", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: Value = serde_json::from_str(&stdout(&out)).unwrap();
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["repo"].as_str().unwrap().to_string(),
                r["default"].as_bool().unwrap(),
            )
        })
        .collect()
}

/// The pdf skill plus a second one, `csv-tools`.
fn two_skills(version: &str) -> Vec<(String, i32, Vec<u8>)> {
    let mut files = pdf_skill(version);
    files.push((
        "skills/csv/SKILL.md".into(),
        FILE,
        b"---\nname: csv-tools\ndescription: Summarise CSV tables\n---\n# CSV\nRead the file.\n"
            .to_vec(),
    ));
    files
}

#[test]
fn taps_are_added_listed_and_removed_and_their_installed_skills_stay() {
    let env = TestEnv::new();
    let up = Upstream::new();
    commit_owned(&up, &pdf_skill("1"));
    assert!(ok(&env, &["tap", "list"]).contains("no taps"));
    // The defaults are listed (nothing is fetched to list them).
    let defaults = tap_repos(&env, true);
    for repo in ["openai/skills", "anthropics/skills", "NVIDIA/skills"] {
        assert!(defaults.contains(&(repo.to_string(), true)), "{defaults:?}");
    }

    assert!(ok(&env, &["tap", "add", &up.location()]).contains("added tap"));
    assert!(ok(&env, &["tap", "add", &up.location()]).contains("already there"));
    assert_eq!(tap_repos(&env, false), vec![(up.location(), false)]);
    let text = ok(&env, &["tap", "list"]);
    assert!(
        text.contains(&up.location()) && text.contains("added"),
        "{text}"
    );
    let missing = env.home_path().join("no-such-repo");
    let out = hermes(&env, false, &["tap", "add", &missing.display().to_string()]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("does not exist"), "{}", stderr(&out));

    ok(&env, &["install", "pdf-tools", "--yes"]);
    let entry = lock(&env)["installed"]["pdf-tools"].clone();
    assert_eq!(entry["trust_level"], "trusted");

    // Removing the tap keeps what came from it, and says so.
    let out = ok(&env, &["tap", "remove", &up.location()]);
    assert!(
        out.contains("removed tap") && out.contains("pdf-tools") && out.contains("stay installed"),
        "{out}"
    );
    assert!(tap_repos(&env, false).is_empty());
    assert!(env.home_path().join("skills/pdf-tools/SKILL.md").exists());
    assert_eq!(lock(&env)["installed"]["pdf-tools"], entry);
    // Its source is still read for check (no longer through a tap).
    let check: Value = serde_json::from_str(&ok(&env, &["check", "--json"])).unwrap();
    assert_eq!(check[0]["status"], "up_to_date", "{check}");
    // And it is no longer found by name: the tap is gone.
    let out = hermes(&env, false, &["search", "pdf", "--json"]);
    assert_eq!(stdout(&out).trim(), "[]", "{}", stderr(&out));

    let out = hermes(&env, false, &["tap", "remove", &up.location()]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("no tap"), "{}", stderr(&out));

    // A default tap is remembered as removed, and comes back when added again.
    ok(&env, &["tap", "remove", "anthropics/skills"]);
    let now = tap_repos(&env, true);
    assert!(
        !now.iter().any(|(r, _)| r == "anthropics/skills"),
        "{now:?}"
    );
    ok(
        &env,
        &["tap", "add", "anthropics/skills", "--path", "skills/"],
    );
    let back = tap_repos(&env, true);
    assert_eq!(
        back.iter()
            .filter(|(r, _)| r == "anthropics/skills")
            .count(),
        1,
        "{back:?}"
    );
}

#[test]
fn unreachable_default_taps_are_named_and_the_rest_of_the_search_answers() {
    let env = TestEnv::new();
    let up = Upstream::new();
    commit_owned(&up, &pdf_skill("1"));
    ok(&env, &["tap", "add", &up.location()]);
    // Git's own proxy setting points at a closed local port: the public repositories cannot
    // be reached, and nothing leaves the machine.
    let port = ClosedPort::new();
    let closed = port.addr();
    let out = env
        .bare_cmd()
        .env("HTTPS_PROXY", format!("http://{closed}"))
        .env("https_proxy", format!("http://{closed}"))
        .args(["skills", "search", "pdf", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let found: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(found[0]["name"], "pdf-tools", "{found}");
    let err = stderr(&out);
    for repo in [
        "openai/skills",
        "anthropics/skills",
        "huggingface/skills",
        "NVIDIA/skills",
        "garrytan/gstack",
    ] {
        let line = err
            .lines()
            .find(|l| l.starts_with(&format!("note: tap {repo}:")))
            .unwrap_or_else(|| panic!("no note for {repo}: {err}"));
        assert!(line.contains("github.com"), "{line}");
    }
    assert!(
        err.contains("failed to connect to 127.0.0.1"),
        "the fetch went through the proxy: {err}"
    );
    // A failed fetch leaves no half-made mirror behind.
    let repos = env.home_path().join("skills/.hub/repos");
    let mirrors = std::fs::read_dir(&repos)
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "git"))
        .count();
    assert_eq!(mirrors, 1, "only the local tap's mirror");
}

#[test]
fn a_fresh_listing_is_used_and_a_stale_one_is_fetched_again() {
    let env = TestEnv::new();
    let up = Upstream::new();
    commit_owned(&up, &pdf_skill("1"));
    ok(&env, &["tap", "add", &up.location()]);
    let search = |ttl: Option<&str>, query: &str| -> Value {
        let mut cmd = env.bare_cmd();
        cmd.env("HERMES_SKILLS_DEFAULT_TAPS", "0");
        if let Some(ttl) = ttl {
            cmd.env("HERMES_SKILLS_HUB_TTL", ttl);
        }
        let out = cmd
            .args(["skills", "search", query, "--json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_str(&stdout(&out)).unwrap()
    };
    assert_eq!(search(None, "pdf")[0]["name"], "pdf-tools");
    let cache = env.home_path().join("skills/.hub/index-cache");
    assert_eq!(std::fs::read_dir(&cache).unwrap().count(), 1);

    // Upstream gains a skill. Within the TTL (default one hour) the cached listing answers.
    commit_owned(&up, &two_skills("1"));
    assert_eq!(search(None, "csv"), json!([]));
    assert_eq!(search(Some("3600"), "csv"), json!([]));
    // Past it (TTL 0: every listing is stale) the tap is fetched again, and cached again.
    assert_eq!(search(Some("0"), "csv")[0]["name"], "csv-tools");
    assert_eq!(search(None, "csv")[0]["name"], "csv-tools");
}

#[test]
fn browse_lists_what_the_taps_offer() {
    let env = TestEnv::new();
    let up = Upstream::new();
    commit_owned(&up, &two_skills("1"));
    assert!(ok(&env, &["browse"]).contains("no skills found"));
    ok(&env, &["tap", "add", &up.location()]);
    let all: Value = serde_json::from_str(&ok(&env, &["browse", "--json"])).unwrap();
    let mut names: Vec<&str> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["csv-tools", "pdf-tools"], "{all}");
    for m in all.as_array().unwrap() {
        assert_eq!(m["trust_level"], "trusted", "{m}");
        assert!(
            m["identifier"]
                .as_str()
                .unwrap()
                .starts_with(&up.location())
        );
    }
    let text = ok(&env, &["browse"]);
    assert!(
        text.contains("csv-tools") && text.contains("Summarise CSV tables"),
        "{text}"
    );
    let one: Value =
        serde_json::from_str(&ok(&env, &["browse", "--limit", "1", "--json"])).unwrap();
    assert_eq!(one.as_array().unwrap().len(), 1);
    let git: Value =
        serde_json::from_str(&ok(&env, &["browse", "--source", "well-known", "--json"])).unwrap();
    assert_eq!(git, json!([]), "no index taps");
}

#[test]
fn inspect_shows_the_skill_and_writes_nothing() {
    let env = TestEnv::new();
    let up = Upstream::new();
    commit_owned(&up, &pdf_skill("1"));
    ok(&env, &["list"]); // bundled skills are synced by the first command
    let before = skill_tree(&env);
    let id = format!("{}#skills/pdf", up.location());
    let seen: Value = serde_json::from_str(&ok(&env, &["inspect", &id, "--json"])).unwrap();
    assert_eq!(seen["name"], "pdf-tools");
    assert_eq!(seen["verdict"], "safe");
    assert!(
        seen["skill_md"]
            .as_str()
            .unwrap()
            .contains("Fill and merge")
    );
    let files: Vec<&str> = seen["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        files,
        ["SKILL.md", "references/forms.md", "scripts/fill.py"]
    );
    let text = ok(&env, &["inspect", &id]);
    assert!(
        text.contains("verdict:    safe") && text.contains("scripts/fill.py"),
        "{text}"
    );
    assert_eq!(skill_tree(&env), before, "inspect wrote into skills/");
    assert!(lock(&env).is_null(), "inspect wrote lock.json");
    assert!(quarantine_is_empty(&env));
    assert!(!env.home_path().join("skills/.hub/audit.log").exists());
}

#[test]
fn a_bundled_skill_is_not_checked_updated_uninstalled_or_reset() {
    let env = TestEnv::new();
    ok(&env, &["list"]);
    let skill = env
        .home_path()
        .join("skills/software-development/git-workflow/SKILL.md");
    let text = std::fs::read_to_string(&skill).unwrap();
    for args in [
        &["check", "git-workflow"][..],
        &["update", "git-workflow", "--yes"],
        &["uninstall", "git-workflow", "--yes"],
        &["reset", "git-workflow", "--yes"],
    ] {
        let out = hermes(&env, false, args);
        assert!(!out.status.success(), "{args:?}: {}", stdout(&out));
        assert!(
            stderr(&out).contains("bundled with hermes"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    assert_eq!(std::fs::read_to_string(&skill).unwrap(), text);
}

#[test]
fn a_background_review_cannot_install_from_the_hub() {
    let env = TestEnv::new();
    env.config("skills:\n  creation_nudge_interval: 2\n");
    let up = Upstream::new();
    commit_owned(&up, &pdf_skill("1"));
    let id = format!("{}#skills/pdf", up.location());
    // A two-read turn crosses the nudge interval; the review then tries the hub.
    let mut script: Vec<Reply> = (0..2)
        .map(|i| {
            env.write(&format!("data{i}.csv"), "a,b\n1,2\n");
            Reply::tool_call(
                &format!("r{i}"),
                "read_file",
                json!({"path": format!("data{i}.csv")}),
            )
        })
        .collect();
    script.push(Reply::text("Report done."));
    script.extend([
        Reply::tool_call(
            "v1",
            "skills_hub",
            json!({"action": "install", "identifier": id}),
        ),
        Reply::text("Could not install."),
    ]);
    let mock = MockLlm::with_script(script);
    // Started with --yes: the user's own agent could install; its review still may not.
    let out = env
        .cmd(&mock.base_url())
        .env("HERMES_SKILLS_DEFAULT_TAPS", "0")
        .args(["-z", "summarise the csv files", "--yes"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Report done.\n");
    assert_eq!(mock.remaining(), 0, "the review ran to its end");
    let parent_tools = mock.requests()[0]["tools"].to_string();
    assert!(
        parent_tools.contains("\"skills_hub\""),
        "the review sees the parent's tools array, hub included"
    );
    let refused = tool_result(&mock, 4);
    assert!(
        refused.contains("`skills_hub` is not available to the background skill review"),
        "{refused}"
    );
    assert!(!env.home_path().join("skills/pdf-tools").exists());
    assert!(lock(&env)["installed"]["pdf-tools"].is_null());
    assert!(quarantine_is_empty(&env));
}

#[test]
fn install_at_a_commit_id_a_short_id_or_a_branch() {
    let up = Upstream::new();
    let v1 = commit_owned(&up, &pdf_skill("1"));
    let v2 = commit_owned(&up, &pdf_skill("2"));
    let full = v1.to_string();
    for (rev, version, commit) in [
        (full.as_str(), "Version 1.", v1),
        (&full[..10], "Version 1.", v1),
        ("main", "Version 2.", v2),
    ] {
        let env = TestEnv::new();
        let id = format!("{}#skills/pdf@{rev}", up.location());
        ok(&env, &["install", &id, "--yes"]);
        let md =
            std::fs::read_to_string(env.home_path().join("skills/pdf-tools/SKILL.md")).unwrap();
        assert!(md.contains(version), "@{rev}: {md}");
        assert_eq!(
            lock(&env)["installed"]["pdf-tools"]["commit"],
            commit.to_string(),
            "@{rev}"
        );
    }
    let env = TestEnv::new();
    let out = hermes(
        &env,
        false,
        &[
            "install",
            &format!("{}#skills/pdf@no-such-ref", up.location()),
            "--yes",
        ],
    );
    assert!(!out.status.success());
    assert!(stderr(&out).contains("no-such-ref"), "{}", stderr(&out));
    assert!(!env.home_path().join("skills/pdf-tools").exists());
    assert!(quarantine_is_empty(&env));
}
