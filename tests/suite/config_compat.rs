//! A config.yaml written by Python Hermes 0.19 loads as it is (one "not supported yet" line on
//! stderr, nothing on stdout), and a key neither program knows is an error with "did you mean".

use crate::support::harness::{TestEnv, stderr, stdout};
use crate::support::mock_llm::{MockLlm, Reply};

const PYTHON_CONFIG: &str = include_str!("../fixtures/python-hermes-0.19-config.yaml");

#[test]
fn python_default_config_loads_with_one_warning_line() {
    let env = TestEnv::new();
    env.config(PYTHON_CONFIG);
    let out = env.bare_cmd().args(["sessions", "list"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("not supported yet"))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    let line = lines[0];
    let keys: Vec<&str> = line
        .strip_prefix("config.yaml: not supported yet: ")
        .unwrap_or_else(|| panic!("{line}"))
        .split(", ")
        .collect();
    // Python-only sections and keys inside sections we read are both named, each once.
    for key in [
        "browser",
        "tts",
        "agent.gateway_timeout",
        "terminal.modal_mode",
        "kanban",
    ] {
        assert!(keys.contains(&key), "{key} missing from {line}");
    }
    let mut unique = keys.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), keys.len(), "{line}");
    // Keys we implement are not listed.
    for key in [
        "agent",
        "agent.max_turns",
        "terminal.timeout",
        "approvals.mode",
        "memory",
        "memory.memory_char_limit",
        "delegation.max_iterations",
        "skills.external_dirs",
        "tool_loop_guardrails",
        "mcp",
        "delegation.inherit_mcp_toolsets",
    ] {
        assert!(!keys.contains(&key), "{key} in {line}");
    }
    assert!(!stdout(&out).contains("not supported"));
}

#[test]
fn typos_in_typed_sections_are_errors_with_did_you_mean() {
    for (yaml, key, hint) in [
        (
            "gateway:\n  streamin: true\n",
            "gateway.streamin",
            "streaming",
        ),
        (
            "memory:\n  memory_char_limt: 100\n",
            "memory.memory_char_limt",
            "memory_char_limit",
        ),
        (
            "skills:\n  external_dir: []\n",
            "skills.external_dir",
            "external_dirs",
        ),
        (
            "delegation:\n  max_iteration: 5\n",
            "delegation.max_iteration",
            "max_iterations",
        ),
        ("browsr:\n  headed: true\n", "browsr", "browser"),
        ("browser:\n  headded: true\n", "browser.headded", "headed"),
        (
            "budget:\n  sesion_usd: 1\n",
            "budget.sesion_usd",
            "session_usd",
        ),
        (
            "budget:\n  prices:\n    gpt-4o: {inptu: 1}\n",
            "budget.prices.gpt-4o.inptu",
            "input",
        ),
    ] {
        let env = TestEnv::new();
        env.config(yaml);
        let out = env.bare_cmd().args(["sessions", "list"]).output().unwrap();
        assert!(!out.status.success(), "{yaml} was accepted");
        let err = stderr(&out);
        assert!(err.contains("config.yaml"), "{err}");
        assert!(err.contains(&format!("`{key}`")), "{err}");
        assert!(err.contains(&format!("did you mean `{hint}`")), "{err}");
    }
}

#[test]
fn a_clean_config_prints_no_warning() {
    let env = TestEnv::new();
    env.config("agent:\n  max_turns: 7\nmemory:\n  memory_char_limit: 500\n");
    let out = env.bare_cmd().args(["sessions", "list"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("not supported"), "{}", stderr(&out));
}

#[test]
fn one_shot_with_the_python_config_keeps_stdout_for_the_answer() {
    let env = TestEnv::new();
    env.config(PYTHON_CONFIG);
    let mock = MockLlm::with_script([Reply::text("Hello from the mock.")]);
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "hi"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "Hello from the mock.");
    assert_eq!(stderr(&out).matches("not supported yet").count(), 1);
}

#[test]
fn doctor_lists_the_keys_not_supported_yet() {
    let env = TestEnv::new();
    env.config(PYTHON_CONFIG);
    let out = env.bare_cmd().args(["doctor", "--json"]).output().unwrap();
    let report = stdout(&out);
    assert!(report.contains("not supported yet: "), "{report}");
    assert!(report.contains("agent.gateway_timeout"), "{report}");
}

/// `hermes doctor --json`'s terminal backend row and config check details.
fn doctor_backend_and_config(env: &TestEnv) -> (String, String) {
    let out = env.bare_cmd().args(["doctor", "--json"]).output().unwrap();
    let report: serde_json::Value = serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("{e}: {} / {}", stdout(&out), stderr(&out)));
    let backend = report["sections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["title"] == "terminal")
        .and_then(|s| {
            s["rows"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r[0] == "backend")
        })
        .map(|r| r[1].as_str().unwrap().to_string())
        .unwrap_or_else(|| panic!("no backend row in {report}"));
    let config = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "config")
        .map(|c| c["details"].to_string())
        .unwrap_or_default();
    (backend, config)
}

/// A `-z` turn that writes one file; then the number of checkpoints `hermes checkpoints list`
/// shows.
fn checkpoints_after_a_write(env: &TestEnv) -> usize {
    let mock = MockLlm::with_script([
        Reply::tool_call(
            "w1",
            "write_file",
            serde_json::json!({"path": "notes.txt", "content": "new\n"}),
        ),
        Reply::text("written"),
    ]);
    env.write("notes.txt", "old\n");
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "rewrite notes.txt"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let out = env
        .bare_cmd()
        .args(["checkpoints", "list"])
        .output()
        .unwrap();
    stdout(&out).matches("rewrite notes.txt").count()
}

#[test]
fn python_defaults_do_not_switch_the_sandbox_or_checkpoints_off() {
    let env = TestEnv::new();
    env.config(PYTHON_CONFIG);
    let out = env.bare_cmd().args(["sessions", "list"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("Python Hermes defaults set aside"))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    for key in [
        "terminal.backend: local",
        "checkpoints.enabled: false",
        "approvals.mode: smart",
    ] {
        assert!(lines[0].contains(key), "{key} missing: {}", lines[0]);
    }
    assert!(lines[0].contains("hermes config set"), "{}", lines[0]);

    let (backend, config) = doctor_backend_and_config(&env);
    assert!(backend.contains("(terminal.backend: auto)"), "{backend}");
    assert!(
        config.contains("Python Hermes defaults set aside"),
        "{config}"
    );
    assert_eq!(checkpoints_after_a_write(&env), 1, "checkpoints are on");
}

#[test]
fn config_set_records_a_python_default_as_the_users_choice() {
    let env = TestEnv::new();
    env.config(PYTHON_CONFIG);
    for (key, value) in [
        ("terminal.backend", "local"),
        ("checkpoints.enabled", "false"),
    ] {
        let out = env
            .bare_cmd()
            .args(["config", "set", key, value])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let text = std::fs::read_to_string(env.home_path().join("config.yaml")).unwrap();
    assert!(
        text.starts_with(PYTHON_CONFIG.lines().next().unwrap()),
        "comments kept"
    );
    assert!(
        text.ends_with("hermes_explicit: [\"terminal.backend\",\"checkpoints.enabled\"]\n"),
        "{text}"
    );

    let out = env.bare_cmd().args(["sessions", "list"]).output().unwrap();
    let err = stderr(&out);
    let line = err
        .lines()
        .find(|l| l.contains("Python Hermes defaults set aside"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(line.contains("approvals.mode: smart"), "{line}");
    assert!(
        !line.contains("terminal.backend") && !line.contains("checkpoints.enabled"),
        "{line}"
    );
    let (backend, _) = doctor_backend_and_config(&env);
    assert!(backend.contains("(terminal.backend: local)"), "{backend}");
    assert_eq!(checkpoints_after_a_write(&env), 0, "checkpoints are off");

    // Unsetting the key forgets the choice too.
    let out = env
        .bare_cmd()
        .args(["config", "unset", "terminal.backend"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(env.home_path().join("config.yaml")).unwrap();
    assert!(
        text.ends_with("hermes_explicit: [\"checkpoints.enabled\"]\n"),
        "{text}"
    );
}

const PY_CONFIG_READER: &str = r#"
import json
from hermes_cli.config import (load_config, validate_config_structure, check_config_version,
                               save_config, read_raw_config)
c = load_config()
issues = [i.message for i in validate_config_structure(c)]
save_config(c)
raw = read_raw_config()
print(json.dumps({"explicit": c.get("hermes_explicit"), "backend": c["terminal"]["backend"],
                  "issues": issues, "version": list(check_config_version()),
                  "after_save": raw.get("hermes_explicit")}))
"#;

/// Python Hermes reads a config.yaml with our `hermes_explicit` list without a complaint, does
/// not take it for an old schema, and keeps it when it saves the file.
#[test]
fn python_hermes_keeps_and_ignores_the_choice_list() {
    let check = "python_hermes_keeps_and_ignores_the_choice_list";
    let Some(venv) = std::env::var_os("HERMES_PY_VENV") else {
        crate::support::cross_check::cannot_run(check, "HERMES_PY_VENV is not set");
        return;
    };
    let python = std::path::Path::new(&venv).join("bin/python");
    let env = TestEnv::new();
    env.config(PYTHON_CONFIG);
    let out = env
        .bare_cmd()
        .args(["config", "set", "terminal.backend", "local"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let out = std::process::Command::new(&python)
        .args(["-c", PY_CONFIG_READER])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", env.home_path())
        .env("HERMES_HOME", env.home_path())
        .output();
    let out = match out {
        Ok(out) if !String::from_utf8_lossy(&out.stderr).contains("ModuleNotFoundError") => out,
        Ok(out) => {
            crate::support::cross_check::cannot_run(check, &stderr(&out));
            return;
        }
        Err(e) => {
            crate::support::cross_check::cannot_run(check, &e.to_string());
            return;
        }
    };
    assert!(out.status.success(), "{}", stderr(&out));
    let last = stdout(&out).lines().last().unwrap_or_default().to_string();
    let v: serde_json::Value =
        serde_json::from_str(&last).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)));
    assert_eq!(
        v["explicit"],
        serde_json::json!(["terminal.backend"]),
        "{v}"
    );
    assert_eq!(v["backend"], "local", "{v}");
    assert_eq!(v["issues"], serde_json::json!([]), "{v}");
    assert_eq!(v["version"][0], v["version"][1], "not a legacy schema: {v}");
    assert_eq!(
        v["after_save"],
        serde_json::json!(["terminal.backend"]),
        "{v}"
    );
    // And hermes still honours it in the file Python rewrote.
    let out = env.bare_cmd().args(["sessions", "list"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        !stderr(&out).contains("terminal.backend: local"),
        "{}",
        stderr(&out)
    );
}
