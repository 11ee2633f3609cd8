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
    install(
        &env,
        "dogfood/adversarial-ux-test",
        "Break the UX on purpose",
    );
    let tea = install(&env, "kitchen/brew-tea", "Steep green tea");

    let rows = list(&env);
    let nested = find(&rows, "adversarial-ux-test")
        .unwrap_or_else(|| panic!("nested skill not listed: {rows:?}"));
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
    assert_eq!(
        find(&rows, "brew-tea").unwrap()["description"],
        "Steep hot   tea"
    );

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

mod lifecycle {
    use serde_json::{Value, json};

    use super::list;
    use crate::support::harness::{TestEnv, stderr, stdout};
    use crate::support::mock_llm::{MockLlm, Reply};

    const TEA: &str = "---\nname: brew-tea\ndescription: Steep green tea without bitterness\n---\n# Brew tea\n1. Heat water to 80 C.\n2. Steep for 2 minutes.\n";
    const TWIN: &str = "---\nname: green-tea-howto\ndescription: Brew green tea at the right temperature, never bitter, steeping 2 minutes\n---\n# Green tea\n1. Water at 80 C.\n";

    fn run_z(env: &TestEnv, mock: &MockLlm, prompt: &str) {
        let out = env
            .cmd(&mock.base_url())
            .args(["-z", prompt])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }

    fn last_tool_result(mock: &MockLlm, i: usize) -> String {
        mock.requests()[i]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .rev()
            .find(|m| m["role"] == "tool")
            .and_then(|m| m["content"].as_str().map(str::to_string))
            .unwrap_or_default()
    }

    fn usage(env: &TestEnv) -> Value {
        serde_json::from_str(
            &std::fs::read_to_string(env.home_path().join("skills/.usage.json")).unwrap(),
        )
        .unwrap()
    }

    fn create(name: &str, content: &str, force: bool) -> Reply {
        Reply::tool_call(
            "c1",
            "skill_manage",
            json!({"action": "create", "name": name, "content": content, "force": force}),
        )
    }

    #[test]
    fn near_twin_refused_probation_counted_and_listed() {
        let env = TestEnv::new();
        env.config("skills:\n  probation_uses: 2\n  creation_nudge_interval: 0\nmemory:\n  nudge_interval: 0\n");

        // Created on probation, with Python Hermes's agent marker.
        let mock = MockLlm::with_script([create("brew-tea", TEA, false), Reply::text("Saved.")]);
        run_z(&env, &mock, "remember how to brew tea");
        let result = last_tool_result(&mock, 1);
        assert!(
            result.contains("on probation until used successfully 2 times"),
            "{result}"
        );
        let u = usage(&env);
        assert_eq!(u["brew-tea"]["probation"], true);
        assert_eq!(u["brew-tea"]["created_by"], "agent");
        let rows = list(&env);
        let row = super::find(&rows, "brew-tea").unwrap();
        assert_eq!(
            (row["probation"].clone(), row["use_count"].clone()),
            (json!(true), json!(0))
        );

        // A near-twin is refused with the candidate to patch and how to force.
        let mock = MockLlm::with_script([
            create("green-tea-howto", TWIN, false),
            Reply::text("Patched instead."),
        ]);
        run_z(&env, &mock, "save a green tea skill");
        let refusal: Value = serde_json::from_str(&last_tool_result(&mock, 1)).unwrap();
        let refusal = refusal["error"].as_str().unwrap_or_default();
        assert!(
            refusal.contains("the existing skill `brew-tea` looks like the same one")
                && refusal.contains("action=\"patch\"")
                && refusal.contains("force=true"),
            "{refusal}"
        );
        assert!(!env.home_path().join("skills/green-tea-howto").exists());
        // … and created when the model insists it is different.
        let mock = MockLlm::with_script([
            create("green-tea-howto", TWIN, true),
            Reply::text("Created."),
        ]);
        run_z(&env, &mock, "it is different, save it");
        assert!(
            env.home_path()
                .join("skills/green-tea-howto/SKILL.md")
                .is_file()
        );

        // Two turns that load the skill and answer end its probation.
        for turn in 0..2 {
            let mock = MockLlm::with_script([
                Reply::tool_call("c1", "skill_view", json!({"name": "brew-tea"})),
                Reply::text("Heat to 80 C."),
            ]);
            run_z(&env, &mock, "how do I brew tea?");
            let viewed: Value = serde_json::from_str(&last_tool_result(&mock, 1)).unwrap();
            // Still unproven while these turns run: the count moves when each one ends.
            assert_eq!(viewed["probation"], true, "turn {turn}: {viewed}");
        }
        let u = usage(&env);
        assert_eq!(u["brew-tea"]["successful_uses"], 2, "{u}");
        assert!(u["brew-tea"].get("probation").is_none(), "{u}");
        let rows = list(&env);
        let row = super::find(&rows, "brew-tea").unwrap();
        assert_eq!(row["probation"], false);
        assert_eq!(row["use_count"], 2);
        assert_eq!(
            super::find(&rows, "green-tea-howto").unwrap()["probation"],
            true
        );

        // The text listing shows counts and probation.
        let out = env.bare_cmd().args(["skills", "list"]).output().unwrap();
        let text = stdout(&out);
        let line = |name: &str| {
            text.lines()
                .find(|l| l.contains(name))
                .unwrap_or_default()
                .to_string()
        };
        assert!(
            line("brew-tea").contains("2 uses") && !line("brew-tea").contains("probation"),
            "{text}"
        );
        assert!(
            line("green-tea-howto").contains("[probation 0/2]"),
            "{text}"
        );
    }
}
