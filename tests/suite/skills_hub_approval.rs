//! The agent's `skills_hub` install asks the user before anything is written, in each front end
//! that can ask: the REPL (asked on stdin: yes → installed and locked; no → nothing written,
//! quarantine empty) and a Telegram chat (`/approve` → installed; `/deny` or no answer before
//! `approvals.timeout` → nothing written). The upstream is a bare git repository made here.

use std::time::Duration;

use serde_json::{Value, json};

use super::gateway_support::Gw;
use super::skills_hub::{
    Upstream, commit_owned, lock, pdf_skill, quarantine_is_empty, tool_result,
};
use crate::support::fake_telegram::Sent;
use crate::support::harness::{TestEnv, stderr, stdout};
use crate::support::mock_llm::{MockLlm, Reply};

const WAIT: Duration = Duration::from_secs(30);

fn upstream() -> (Upstream, String) {
    let up = Upstream::new();
    commit_owned(&up, &pdf_skill("1"));
    let id = format!("{}#skills/pdf", up.location());
    (up, id)
}

fn install(call: &str, id: &str) -> Reply {
    Reply::tool_call(
        call,
        "skills_hub",
        json!({"action": "install", "identifier": id}),
    )
}

#[test]
fn repl_install_is_asked_and_follows_the_answer() {
    for (answer, installed) in [("y", true), ("n", false)] {
        let env = TestEnv::new();
        let (_up, id) = upstream();
        let mock = MockLlm::with_script([install("c1", &id), Reply::text("finished")]);
        let out = env
            .cmd(&mock.base_url())
            .env("HERMES_SKILLS_DEFAULT_TAPS", "0")
            .write_stdin(format!("install the pdf skill\n{answer}\n/quit\n"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let text = stdout(&out);
        // The question names the skill, its source's trust and the guard's verdict.
        assert!(
            text.contains("install skill `pdf-tools`")
                && text.contains("community")
                && text.contains("safe"),
            "{text}"
        );
        let skill = env.home_path().join("skills/pdf-tools/SKILL.md");
        assert_eq!(skill.exists(), installed, "answer {answer}: {text}");
        assert!(quarantine_is_empty(&env), "answer {answer}");
        let result = tool_result(&mock, 1);
        if installed {
            let result: Value = serde_json::from_str(&result).unwrap();
            assert_eq!(result["success"], true, "{result}");
            assert!(lock(&env)["installed"]["pdf-tools"]["commit"].is_string());
            assert!(
                env.home_path()
                    .join("skills/pdf-tools/scripts/fill.py")
                    .exists()
            );
        } else {
            assert!(result.contains("declined"), "{result}");
            assert!(lock(&env)["installed"]["pdf-tools"].is_null());
            assert!(!env.home_path().join("skills/pdf-tools").exists());
        }
    }
}

#[test]
fn gateway_install_waits_for_approve_and_deny_or_timeout_write_nothing() {
    let (_up, id) = upstream();
    let mut gw = Gw::new([
        install("c1", &id),
        Reply::text("after deny"),
        install("c2", &id),
        Reply::text("after timeout"),
        install("c3", &id),
        Reply::text("after approve"),
    ]);
    gw.config("approvals:\n  timeout: 2\n");
    gw.start();
    let skill = gw.env.home_path().join("skills/pdf-tools");
    let asked = |s: &[Sent], n: usize| {
        s.iter()
            .filter(|m| m.text.contains("Approval needed"))
            .count()
            >= n
    };

    gw.tg.push_text(42, "install the pdf skill (deny)");
    let sends = gw.tg.wait_sends(WAIT, |s| asked(s, 1));
    let question = sends
        .iter()
        .find(|m| m.text.contains("Approval needed"))
        .unwrap();
    assert!(question.text.contains("pdf-tools"), "{}", question.text);
    assert!(!skill.exists(), "nothing is written before the answer");
    gw.tg.push_text(42, "/deny");
    gw.tg
        .wait_sends(WAIT, |s| s.iter().any(|m| m.text == "after deny"));
    assert!(!skill.exists());
    assert!(quarantine_is_empty(&gw.env));
    assert!(tool_result(&gw.llm, 1).contains("declined"));

    gw.tg.push_text(42, "install the pdf skill (no answer)");
    gw.tg.wait_sends(WAIT, |s| asked(s, 2));
    gw.tg
        .wait_sends(WAIT, |s| s.iter().any(|m| m.text == "after timeout"));
    assert!(!skill.exists(), "a timeout refuses");
    assert!(quarantine_is_empty(&gw.env));
    assert!(lock(&gw.env)["installed"]["pdf-tools"].is_null());

    gw.tg.push_text(42, "install the pdf skill (approve)");
    gw.tg.wait_sends(WAIT, |s| asked(s, 3));
    gw.tg.push_text(42, "/approve");
    gw.tg
        .wait_sends(WAIT, |s| s.iter().any(|m| m.text == "after approve"));
    assert!(skill.join("SKILL.md").exists(), "approved in the chat");
    assert!(lock(&gw.env)["installed"]["pdf-tools"]["commit"].is_string());
    assert!(quarantine_is_empty(&gw.env));
    assert!(gw.stop().success());
}
