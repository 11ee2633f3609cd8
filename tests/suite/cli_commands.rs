//! The commands a new user reaches for, through the real binary: help that shows only what a
//! command takes, Python Hermes commands we lack, `hermes logs`, `hermes completion`.

use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant};

use crate::support::harness::{TestEnv, stderr, stdout};
use crate::support::mock_llm::{MockLlm, Reply};

#[test]
fn chat_flags_stay_out_of_other_subcommands_help() {
    let env = TestEnv::new();
    for sub in [
        vec!["sessions", "list", "--help"],
        vec!["doctor", "--help"],
        vec!["logs", "--help"],
    ] {
        let out = env.bare_cmd().args(&sub).output().unwrap();
        assert!(out.status.success(), "{sub:?}: {}", stderr(&out));
        let help = stdout(&out);
        for flag in ["--model", "--yolo", "--resume", "--provider", "--max-turns"] {
            assert!(!help.contains(flag), "{sub:?} help shows {flag}:\n{help}");
        }
    }
    // …while `chat` and the top level still take them.
    let chat = stdout(&env.bare_cmd().args(["chat", "--help"]).output().unwrap());
    assert!(
        chat.contains("--model") && chat.contains("--yolo"),
        "{chat}"
    );
    let top = stdout(&env.bare_cmd().arg("--help").output().unwrap());
    assert!(top.contains("--model") && top.contains("--resume"), "{top}");
}

#[test]
fn model_flag_after_chat_is_used() {
    let mock = MockLlm::with_script([Reply::text("ok")]);
    let env = TestEnv::new();
    let out = env
        .bare_cmd()
        .env("CUSTOM_BASE_URL", mock.base_url())
        .args(["--provider", "custom", "-m", "outer-model"])
        .args(["chat", "-m", "inner-model", "-Q", "-q", "hi"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = mock.requests();
    assert_eq!(requests[0]["model"], "inner-model");
}

#[test]
fn python_hermes_commands_we_lack_say_so() {
    let env = TestEnv::new();
    for (args, needle) in [
        (vec!["cron", "list"], "`hermes cron` is not available yet"),
        (vec!["kanban"], "`hermes kanban` is not available yet"),
        (
            vec!["-m", "x", "dashboard"],
            "`hermes dashboard` is not available yet",
        ),
    ] {
        let out = env.bare_cmd().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!err.contains("unrecognized"), "{err}");
    }
    // A typo is still clap's error, with its suggestion.
    let out = env.bare_cmd().arg("sesions").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("sessions"));
}

#[test]
fn every_json_flag_has_help_text() {
    let env = TestEnv::new();
    let top = stdout(&env.bare_cmd().arg("--help").output().unwrap());
    // Every subcommand (and sub-subcommand) help that offers --json explains it.
    let mut pending: Vec<Vec<String>> = commands_in(&top).into_iter().map(|c| vec![c]).collect();
    let mut seen = 0;
    while let Some(path) = pending.pop() {
        let out = env.bare_cmd().args(&path).arg("--help").output().unwrap();
        let help = stdout(&out);
        seen += 1;
        for line in help.lines().filter(|l| l.contains("--json")) {
            let text = line.trim_start().trim_start_matches("--json").trim();
            assert!(
                !text.is_empty(),
                "`hermes {} --json` has no help",
                path.join(" ")
            );
        }
        for sub in commands_in(&help) {
            let mut next = path.clone();
            next.push(sub);
            pending.push(next);
        }
    }
    assert!(seen > 10, "walked only {seen} help pages");
}

/// The subcommand names listed under "Commands:" in a help page.
fn commands_in(help: &str) -> Vec<String> {
    help.split("\nCommands:\n")
        .nth(1)
        .map(|rest| {
            rest.lines()
                .take_while(|l| l.starts_with("  "))
                .filter_map(|l| l.split_whitespace().next())
                .filter(|w| *w != "help")
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn completion_scripts_for_three_shells() {
    let env = TestEnv::new();
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef hermes"),
        ("fish", "complete -c hermes"),
    ] {
        let out = env.bare_cmd().args(["completion", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}: {}", stderr(&out));
        let script = stdout(&out);
        assert!(script.contains(marker), "{shell}");
        assert!(script.contains("sessions"), "{shell}");
    }
    let out = env
        .bare_cmd()
        .args(["completion", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

fn write_log(env: &TestEnv, text: &str) {
    let dir = env.home_path().join("logs");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("agent.log"), text).unwrap();
}

const LOG: &str = "2026-01-01T00:00:00Z  INFO hermes::agent: one\n\
2026-01-01T00:00:01Z DEBUG hermes::llm: two\n\
2026-01-01T00:00:02Z  WARN hermes::llm: three session=abc\n\
2026-01-01T00:00:03Z ERROR hermes::tools: four session=xyz\n";

#[test]
fn logs_tail_and_filter() {
    let env = TestEnv::new();
    write_log(&env, LOG);
    let run = |args: &[&str]| {
        let out = env.bare_cmd().arg("logs").args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        stdout(&out)
    };
    let last2 = run(&["-n", "2"]);
    assert!(last2.starts_with("2026-01-01T00:00:02Z") && last2.contains("four"));
    assert_eq!(last2.lines().count(), 2);
    let warn = run(&["--level", "warning"]);
    assert_eq!(warn.lines().count(), 2, "{warn}");
    assert!(!warn.contains("one") && !warn.contains("two"));
    assert_eq!(run(&["--session", "abc"]).lines().count(), 1);
    assert!(run(&["list"]).contains("agent.log"));

    let out = env
        .bare_cmd()
        .args(["logs", "--level", "loud"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("unknown log level"));
    let out = env.bare_cmd().args(["logs", "nope"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("nope.log"), "{}", stderr(&out));
}

#[test]
fn logs_follow_prints_new_lines() {
    let env = TestEnv::new();
    write_log(&env, LOG);
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_hermes"));
    cmd.env_clear()
        .env("HERMES_HOME", env.home_path())
        .env("HOME", env.home_path())
        .args(["logs", "-f", "-n", "1", "--level", "error"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(lines.next().unwrap().unwrap().contains("four"));
    let log = env.home_path().join("logs/agent.log");
    let mut appended = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    use std::io::Write;
    writeln!(appended, "2026-01-01T00:00:04Z  INFO hermes::x: quiet").unwrap();
    writeln!(appended, "2026-01-01T00:00:05Z ERROR hermes::x: five").unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let next = lines.next().unwrap().unwrap();
    assert!(Instant::now() < deadline);
    assert!(next.contains("five"), "{next}");
    let _ = child.kill();
    let _ = child.wait();
}
