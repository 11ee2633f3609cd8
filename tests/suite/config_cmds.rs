//! `hermes config …`, `hermes tools …` and profiles, through the real binary.

use crate::support::harness::{TestEnv, stderr, stdout};
use crate::support::mock_llm::{MockLlm, Reply};

const COMMENTED: &str = "# my settings\nmodel: test-model   # the default model\n\nagent:\n  # the budget per turn\n  max_turns: 90\n  api_max_retries: 2\ntoolsets:\n- hermes-cli\n";

fn config_text(env: &TestEnv) -> String {
    std::fs::read_to_string(env.home_path().join("config.yaml")).unwrap()
}

#[test]
fn config_set_keeps_comments_and_order_and_refuses_bad_values() {
    let env = TestEnv::new();
    env.config(COMMENTED);
    let out = env
        .bare_cmd()
        .args(["config", "set", "agent.max_turns", "7"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        config_text(&env),
        COMMENTED.replace("max_turns: 90", "max_turns: 7")
    );
    let out = env
        .bare_cmd()
        .args(["config", "get", "agent.max_turns"])
        .output()
        .unwrap();
    assert_eq!(stdout(&out).trim(), "7");

    // A value of the wrong type, a typo and zero turns are refused; the file is unchanged.
    let before = config_text(&env);
    for (key, value, says) in [
        ("agent.max_turns", "lots", "agent.max_turns"),
        ("agent.max_turns", "0", "at least 1"),
        ("agent.max_turn", "5", "did you mean `max_turns`"),
        ("model.provider", "x", "holds a value"),
    ] {
        let out = env
            .bare_cmd()
            .args(["config", "set", key, value])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{key}={value} accepted");
        assert!(stderr(&out).contains(says), "{}", stderr(&out));
        assert_eq!(config_text(&env), before);
    }

    // Nested insert creates the parent block; unset removes only that key.
    let out = env
        .bare_cmd()
        .args(["config", "set", "memory.memory_char_limit", "500"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(config_text(&env).ends_with("memory:\n  memory_char_limit: 500\n"));
    let out = env
        .bare_cmd()
        .args(["config", "unset", "agent.api_max_retries"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = config_text(&env);
    assert!(
        text.contains("  # the budget per turn\n  max_turns: 7\ntoolsets:"),
        "{text}"
    );
    let out = env.bare_cmd().args(["config", "check"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("ok"));
}

#[cfg(unix)]
#[test]
fn config_set_keeps_the_file_mode() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new();
    env.config(COMMENTED);
    let path = env.home_path().join("config.yaml");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = env
        .bare_cmd()
        .args(["config", "set", "terminal.timeout", "30"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

#[test]
fn config_commands_repair_a_broken_file_and_show_hides_secrets() {
    let env = TestEnv::new();
    env.config(
        "model:\n  default: m\n  api_key: sk-live-abcdefghijklmnop1234\nagent:\n  max_turn: 3\n",
    );
    // Other commands refuse to start; `config unset` repairs it.
    let out = env.bare_cmd().args(["sessions", "list"]).output().unwrap();
    assert!(!out.status.success());
    let out = env.bare_cmd().args(["config", "check"]).output().unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("agent.max_turn"), "{}", stderr(&out));
    let out = env
        .bare_cmd()
        .args(["config", "unset", "agent.max_turn"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let out = env.bare_cmd().args(["config", "show"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let shown = stdout(&out);
    assert!(!shown.contains("abcdefghijklmnop"), "{shown}");
    assert!(shown.contains("default: m"), "{shown}");
    let out = env
        .bare_cmd()
        .args(["config", "get", "model.api_key"])
        .output()
        .unwrap();
    assert!(!stdout(&out).contains("abcdefghijklmnop"));
    let out = env.bare_cmd().args(["config", "path"]).output().unwrap();
    assert_eq!(
        stdout(&out).trim(),
        env.home_path().join("config.yaml").display().to_string()
    );
}

#[test]
fn config_edit_runs_the_editor_then_checks() {
    let env = TestEnv::new();
    env.config(COMMENTED);
    let editor = env.home_path().join("fake-editor.sh");
    std::fs::write(
        &editor,
        "#!/bin/sh\nprintf 'agent:\\n  max_turns: 4\\n' > \"$1\"\n",
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&editor, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let out = env
        .bare_cmd()
        .env("EDITOR", &editor)
        .args(["config", "edit"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("ok"));
    assert_eq!(config_text(&env), "agent:\n  max_turns: 4\n");
}

#[test]
fn tools_disable_is_listed_persisted_and_honoured() {
    let env = TestEnv::new();
    env.config(COMMENTED);
    let out = env.bare_cmd().args(["tools", "list"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let list = stdout(&out);
    let line = |list: &str, tool: &str| {
        list.lines()
            .find(|l| l.split_whitespace().next() == Some(tool))
            .unwrap_or_else(|| panic!("{tool} missing from {list}"))
            .to_string()
    };
    assert!(line(&list, "read_file").contains("enabled"), "{list}");

    let out = env
        .bare_cmd()
        .args(["tools", "disable", "read_file"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(config_text(&env).contains("disabled_tools: [\"read_file\"]"));
    assert!(config_text(&env).starts_with("# my settings\n"));
    let out = env.bare_cmd().args(["tools", "list"]).output().unwrap();
    assert!(line(&stdout(&out), "read_file").contains("disabled"));

    // The agent is not offered the tool.
    let mock = MockLlm::with_script([Reply::text("ok")]);
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "hi"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let names: Vec<String> = mock.requests()[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(!names.iter().any(|n| n == "read_file"), "{names:?}");
    assert!(names.iter().any(|n| n == "write_file"), "{names:?}");

    let out = env
        .bare_cmd()
        .args(["tools", "enable", "read_file"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let out = env.bare_cmd().args(["tools", "list"]).output().unwrap();
    assert!(line(&stdout(&out), "read_file").contains("enabled"));

    let out = env
        .bare_cmd()
        .args(["tools", "disable", "read_fil"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("did you mean `read_file`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_profile_has_its_own_state_and_clone_copies_config_and_skills() {
    let env = TestEnv::new();
    env.config("agent:\n  max_turns: 11\n");
    let skill = env.home_path().join("skills/notes/SKILL.md");
    std::fs::create_dir_all(skill.parent().unwrap()).unwrap();
    std::fs::write(
        &skill,
        "---\nname: notes\ndescription: Take notes.\n---\nBody.\n",
    )
    .unwrap();

    let out = env
        .bare_cmd()
        .args(["profile", "create", "work", "--clone"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let work = env.home_path().join("profiles/work");
    assert_eq!(
        std::fs::read_to_string(work.join("config.yaml")).unwrap(),
        "agent:\n  max_turns: 11\n"
    );
    assert!(work.join("skills/notes/SKILL.md").is_file());
    let out = env
        .bare_cmd()
        .args(["profile", "create", "blank"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!env.home_path().join("profiles/blank/config.yaml").exists());

    // A conversation under -p work lands in the profile's own state.db.
    let mock = MockLlm::with_script([Reply::text("in the work profile")]);
    let out = env
        .cmd(&mock.base_url())
        .args(["-p", "work", "-z", "hi"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(work.join("state.db").is_file());
    let count = |db: &std::path::Path| -> i64 {
        if !db.exists() {
            return 0;
        }
        rusqlite::Connection::open(db)
            .unwrap()
            .query_row("SELECT count(*) FROM sessions", [], |r| r.get(0))
            .unwrap()
    };
    assert_eq!(count(&work.join("state.db")), 1);
    assert_eq!(count(&env.home_path().join("state.db")), 0);

    // `profile use` makes it sticky; `config path` follows; `-p default` overrides.
    let out = env
        .bare_cmd()
        .args(["profile", "use", "work"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let out = env.bare_cmd().args(["config", "path"]).output().unwrap();
    assert_eq!(
        stdout(&out).trim(),
        work.join("config.yaml").display().to_string()
    );
    let out = env
        .bare_cmd()
        .args(["-p", "default", "config", "path"])
        .output()
        .unwrap();
    assert_eq!(
        stdout(&out).trim(),
        env.home_path().join("config.yaml").display().to_string()
    );
    let out = env.bare_cmd().args(["profile", "list"]).output().unwrap();
    let list = stdout(&out);
    assert!(list.lines().any(|l| l.starts_with("* work")), "{list}");
    assert!(
        list.lines().any(|l| l.trim_start().starts_with("blank")),
        "{list}"
    );

    // Unknown profiles and deleting without -y (no terminal) are refused.
    let out = env
        .bare_cmd()
        .args(["-p", "nope", "sessions", "list"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("hermes profile create nope"),
        "{}",
        stderr(&out)
    );
    let out = env
        .bare_cmd()
        .args(["profile", "delete", "work"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(work.is_dir());
    let out = env
        .bare_cmd()
        .args(["profile", "delete", "work", "-y"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!work.exists());
    let out = env.bare_cmd().args(["config", "path"]).output().unwrap();
    assert_eq!(
        stdout(&out).trim(),
        env.home_path().join("config.yaml").display().to_string(),
        "deleting the sticky profile falls back to default"
    );
}

#[test]
fn config_set_of_an_api_key_goes_to_dotenv() {
    let env = TestEnv::new();
    env.config(COMMENTED);
    let out = env
        .bare_cmd()
        .args([
            "config",
            "set",
            "OPENAI_API_KEY",
            "sk-test-0123456789abcdef",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stdout(&out).contains("sk-test") && !stderr(&out).contains("sk-test"));
    assert_eq!(config_text(&env), COMMENTED, "config.yaml untouched");
    let dotenv = std::fs::read_to_string(env.home_path().join(".env")).unwrap();
    assert_eq!(dotenv, "OPENAI_API_KEY=sk-test-0123456789abcdef\n");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(env.home_path().join(".env"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
    }
}

#[test]
fn profile_flag_works_after_the_subcommand_and_stays_out_of_its_help() {
    let env = TestEnv::new();
    let out = env
        .bare_cmd()
        .args(["profile", "create", "work"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let work = env.home_path().join("profiles/work/config.yaml");
    for args in [
        &["-p", "work", "config", "path"][..],
        &["config", "path", "-p", "work"],
        &["config", "--profile=work", "path"],
    ] {
        let out = env.bare_cmd().args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert_eq!(stdout(&out).trim(), work.display().to_string(), "{args:?}");
    }
    let out = env.bare_cmd().arg("--help").output().unwrap();
    assert!(stdout(&out).contains("--profile"), "{}", stdout(&out));
    for sub in ["sessions", "config", "doctor"] {
        let out = env.bare_cmd().args([sub, "--help"]).output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(
            !stdout(&out).contains("--profile"),
            "{sub}: {}",
            stdout(&out)
        );
    }
}
