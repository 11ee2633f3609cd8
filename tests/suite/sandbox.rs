//! The terminal's containment, through the real binary with a scripted model: the sandbox backend
//! stops a fork bomb with its process limit, keeps the (fake) home and everything outside the
//! working directory read-only, cuts the network when asked; every backend scrubs the
//! environment; SIGTERM/SIGKILL of hermes stop a running command and the transcript says so.
//!
//! Tests that need the sandbox skip with a message naming the reason when the kernel refuses
//! namespaces (and the fork bomb only runs when a process limit really applies).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::harness::{TestEnv, stderr, stdout};
use crate::support::mock_llm::{MockLlm, Reply};

/// Why the sandbox cannot run here, if it cannot.
fn sandbox_unavailable() -> Option<String> {
    let out = std::process::Command::new("bwrap")
        .args([
            "--ro-bind",
            "/",
            "/",
            "--unshare-pid",
            "--cap-drop",
            "ALL",
            "true",
        ])
        .output();
    match out {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!(
            "bwrap refuses to run: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Some(format!("bwrap is not installed: {e}")),
    }
}

macro_rules! require_sandbox {
    () => {
        if let Some(why) = sandbox_unavailable() {
            eprintln!("SKIPPED: {why}");
            return;
        }
    };
}

/// The content of the last tool result the model was sent.
pub(crate) fn last_tool_result(mock: &MockLlm) -> String {
    let requests = mock.requests();
    let messages = requests
        .last()
        .and_then(|r| r["messages"].as_array().cloned())
        .unwrap_or_default();
    messages
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// Runs one `terminal` call through `hermes --yolo -z` and returns the result the model got.
pub(crate) fn run_terminal(env: &TestEnv, args: Value, extra_env: &[(&str, &str)]) -> String {
    let mock = MockLlm::with_script([
        Reply::tool_call("c1", "terminal", args),
        Reply::text("done"),
    ]);
    let mut cmd = env.cmd(&mock.base_url());
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    let out = cmd.args(["--yolo", "-z", "go"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // The turn went on after the command: the model answered.
    assert_eq!(stdout(&out), "done\n");
    last_tool_result(&mock)
}

#[test]
fn fork_bomb_is_stopped_by_the_process_limit_and_the_turn_goes_on() {
    require_sandbox!();
    let env = TestEnv::new();
    env.config("terminal:\n  backend: sandbox\n  max_processes: 64\n");
    let doctor = env.bare_cmd().arg("doctor").output().unwrap();
    let report = stdout(&doctor);
    if !report.contains("processes ≤ 64") {
        eprintln!(
            "SKIPPED: no process limit applies here (never run a fork bomb without one):\n{report}"
        );
        return;
    }
    // A script file: what a deny list cannot read, the limit must still stop.
    // The script stays (sleep) so the bomb has time to reach the limit before the command ends.
    env.write("bomb.sh", "f(){ f & f & }; f; sleep 10\n");
    let started = Instant::now();
    let result = run_terminal(&env, json!({"command": "bash bomb.sh", "timeout": 5}), &[]);
    assert!(
        result.contains("Resource temporarily unavailable") || result.contains("fork"),
        "the bomb never hit the limit: {result}"
    );
    // The timeout ended it (with everything it forked), and the model got the result.
    assert!(result.contains("killed after timeout 5s"), "{result}");
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn rm_rf_home_leaves_the_fake_home_intact() {
    require_sandbox!();
    let env = TestEnv::new();
    env.config("terminal:\n  backend: sandbox\n");
    // A fake home outside /tmp (the sandbox's /tmp is private, so a home there is not even seen).
    let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let keep = home.path().join("keep.txt");
    std::fs::write(&keep, "precious").unwrap();
    let home_var = home.path().display().to_string();
    // A script file: the approval floor refuses `rm -rf ~` written out; the sandbox must hold
    // when a variant gets past it.
    env.write("wipe.sh", "rm -rf ~; echo rc=$?\n");
    let result = run_terminal(
        &env,
        json!({"command": "bash wipe.sh"}),
        &[("HOME", &home_var)],
    );
    assert!(result.contains("Read-only file system"), "{result}");
    assert_eq!(std::fs::read_to_string(&keep).unwrap(), "precious");
}

#[test]
fn only_the_working_directory_and_a_private_tmp_are_writable() {
    require_sandbox!();
    let env = TestEnv::new();
    // HERMES_HOME (= HOME) outside /tmp, so the sandbox sees it (its /tmp is private).
    let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let home_var = home.path().display().to_string();
    std::fs::write(
        home.path().join("config.yaml"),
        "terminal:\n  backend: sandbox\n",
    )
    .unwrap();
    std::fs::write(home.path().join(".env"), "SECRET_FOR_TEST=s3cr3t-value\n").unwrap();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("escaped");
    let tmp_name = format!("hermes-sandbox-test-{}", std::process::id());
    let command = format!(
        "echo x > {}; echo x > ~/planted; echo x > /tmp/{tmp_name} && echo tmp-ok; \
         mount -o remount,rw / 2>/dev/null || echo no-remount; echo in > inside.txt && echo cwd-ok; \
         echo envsize=$(cat ~/.env | wc -c); echo approvals-off >> ~/config.yaml",
        target.display()
    );
    let result = run_terminal(
        &env,
        json!({"command": command}),
        &[("HOME", &home_var), ("HERMES_HOME", &home_var)],
    );
    assert!(
        result.contains("tmp-ok") && result.contains("cwd-ok"),
        "{result}"
    );
    assert!(result.contains("no-remount"), "{result}");
    // Hidden (an empty file in its place), not merely redacted afterwards.
    assert!(result.contains("envsize=0"), "{result}");
    assert!(!result.contains("s3cr3t-value"), "{result}");
    assert!(
        !std::fs::read_to_string(home.path().join("config.yaml"))
            .unwrap()
            .contains("approvals-off")
    );
    assert!(!target.exists());
    assert!(!home.path().join("planted").exists());
    // /tmp inside was private.
    assert!(!std::path::Path::new("/tmp").join(&tmp_name).exists());
    assert_eq!(
        std::fs::read_to_string(env.cwd.path().join("inside.txt")).unwrap(),
        "in\n"
    );
}

#[test]
fn network_off_blocks_a_local_server_that_network_on_reaches() {
    require_sandbox!();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let command = format!(
        "(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo connected || echo refused"
    );
    let env = TestEnv::new();
    env.config("terminal:\n  backend: sandbox\n  network: off\n");
    let result = run_terminal(&env, json!({"command": command}), &[]);
    assert!(result.contains("refused"), "{result}");

    let env = TestEnv::new();
    env.config("terminal:\n  backend: sandbox\n  network: on\n");
    let result = run_terminal(&env, json!({"command": command}), &[]);
    assert!(result.contains("connected"), "{result}");
}

#[test]
fn commands_see_no_secret_variables_unless_passed_through() {
    let secrets = [
        ("OPENAI_API_KEY", "sk-fake-openai-0123456789"),
        ("TELEGRAM_BOT_TOKEN", "123456:fake-telegram-token"),
        ("GITHUB_TOKEN", "ghp_fakegithubtoken0123456789"),
        ("API_SERVER_KEY", "fake-api-server-key"),
    ];
    for backend in ["local", "sandbox"] {
        if backend == "sandbox" && sandbox_unavailable().is_some() {
            eprintln!("SKIPPED (sandbox part): {}", sandbox_unavailable().unwrap());
            continue;
        }
        let env = TestEnv::new();
        env.config(&format!(
            "terminal:\n  backend: {backend}\n  env_passthrough: [MY_TOOL_TOKEN]\n"
        ));
        let mut vars = secrets.to_vec();
        vars.push(("MY_TOOL_TOKEN", "listed-by-the-user"));
        // The passed-through value reaches the command; the model sees it redacted (it is a
        // secret hermes loaded), so the command compares it itself.
        let command = "env; [ \"$MY_TOOL_TOKEN\" = listed-by-the-user ] && echo passthrough-ok";
        let result = run_terminal(&env, json!({"command": command}), &vars);
        assert!(result.contains("PATH="), "{backend}: {result}");
        for (name, value) in secrets {
            assert!(
                !result.contains(value) && !result.contains(name),
                "{backend}: {name} leaked: {result}"
            );
        }
        assert!(
            result.contains("MY_TOOL_TOKEN=[REDACTED]") && result.contains("passthrough-ok"),
            "{backend}: {result}"
        );
        assert!(
            !result.contains("MY_TOOL_TOKEN=listed"),
            "{backend}: {result}"
        );
    }
}

fn wait_for_requests(mock: &MockLlm, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while mock.request_count() < n {
        assert!(Instant::now() < deadline, "hermes never called the model");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Starts `sleep 3; touch marker` through hermes and sends `signal` once it runs.
fn signal_during_command(signal: libc::c_int) -> (TestEnv, MockLlm, std::process::Output) {
    let env = TestEnv::new();
    let marker = env.cwd.path().join("marker");
    let mock = MockLlm::with_script([
        Reply::tool_call(
            "c1",
            "terminal",
            json!({"command": format!("sleep 3; touch {}", marker.display())}),
        ),
        Reply::text("after resume"),
    ]);
    let child = env
        .spawnable(&mock.base_url(), &["--yolo", "-z", "wait"])
        .spawn()
        .unwrap();
    wait_for_requests(&mock, 1);
    // The call is dispatched once its started marker exists.
    let started_dir = env.home_path().join("run/started");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !started_dir.exists() {
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: signalling our own child.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
    let out = child.wait_with_output().unwrap();
    // Past the moment the command would have touched the marker.
    std::thread::sleep(Duration::from_millis(3500));
    assert!(!marker.exists(), "the command outlived hermes");
    (env, mock, out)
}

#[test]
fn sigterm_stops_the_running_command_and_records_it_interrupted() {
    let (env, mock, out) = signal_during_command(libc::SIGTERM);
    assert_eq!(
        out.status.code(),
        Some(128 + libc::SIGTERM),
        "{}",
        stderr(&out)
    );
    let rows = env.rows();
    let roles: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "tool"]);
    let result = rows[2].1.clone().unwrap();
    assert!(result.contains("interrupted"), "{result}");
    assert_eq!(mock.request_count(), 1);
}

#[test]
fn sigkill_kills_the_command_and_resume_says_it_was_killed() {
    let (env, mock, out) = signal_during_command(libc::SIGKILL);
    assert_eq!(out.status.code(), None);
    let id = env.session_ids().pop().unwrap();
    let out = env
        .cmd(&mock.base_url())
        .args(["-r", &id, "-z", "status?"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "after resume\n");
    let result = last_tool_result(&mock);
    assert!(
        result.contains("hermes was killed while this was running; its effects are unknown"),
        "{result}"
    );
    assert!(!result.contains("not run"), "{result}");
}

/// Whether `pid` is gone (or only a zombie waiting for its reaper).
fn dead(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Without a cgroup, the background children of a local command die with a SIGKILLed hermes
/// too (the command's supervisor; before it only the shell did).
#[test]
fn sigkill_of_hermes_kills_a_local_commands_background_children_without_a_cgroup() {
    let env = TestEnv::new();
    env.config("terminal:\n  backend: local\n");
    let dir = env.cwd.path();
    let (bg, fg) = (dir.join("bg.pid"), dir.join("fg.pid"));
    let command = format!(
        "sh -c 'sleep 30 & echo $! > {}; sleep 30 & echo $! > {}; wait'",
        bg.display(),
        fg.display()
    );
    let mock = MockLlm::with_script([
        Reply::tool_call("c1", "terminal", json!({"command": command})),
        Reply::text("never"),
    ]);
    let mut child = env
        .spawnable(&mock.base_url(), &["--yolo", "-z", "go"])
        .env("HERMES_TERMINAL_CGROUPS", "off")
        .spawn()
        .unwrap();
    let read_pid = |p: &std::path::Path| {
        std::fs::read_to_string(p)
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok())
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    let pids = loop {
        if let (Some(a), Some(b)) = (read_pid(&bg), read_pid(&fg)) {
            break [a, b];
        }
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(pids.iter().all(|p| !dead(*p)), "the sleeps are not running");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !pids.iter().all(|p| dead(*p)) {
        if Instant::now() > deadline {
            for p in pids {
                // SAFETY: cleaning up the test's own survivors before failing.
                unsafe { libc::kill(p, libc::SIGKILL) };
            }
            panic!("a background child outlived the SIGKILLed hermes: {pids:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_limit_that_cannot_apply_is_said_once_on_stderr_and_in_doctor() {
    let env = TestEnv::new();
    env.config("terminal:\n  backend: local\n  network: off\n  max_processes: 100\n");
    let doctor = env.bare_cmd().arg("doctor").output().unwrap();
    assert!(doctor.status.success(), "{}", stderr(&doctor));
    let report = stdout(&doctor);
    assert!(
        report.contains("backend      local (terminal.backend: local)"),
        "{report}"
    );
    assert!(report.contains("not applied"), "{report}");
    assert!(
        report.contains("terminal.network: off needs the sandbox"),
        "{report}"
    );
    let json: Value = serde_json::from_slice(
        &env.bare_cmd()
            .args(["doctor", "--json"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert_eq!(json["sections"][1]["title"], "terminal");

    let mock = MockLlm::with_script([
        Reply::tool_call("c1", "terminal", json!({"command": "echo one"})),
        Reply::tool_call("c2", "terminal", json!({"command": "echo two"})),
        Reply::text("done"),
    ]);
    let out = env
        .cmd(&mock.base_url())
        .args(["--yolo", "-z", "go"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "done\n");
    let err = stderr(&out);
    assert_eq!(
        err.matches("terminal.network: off needs the sandbox")
            .count(),
        1,
        "{err}"
    );
}

#[test]
fn sigterm_to_the_repl_stops_the_command_and_ends_the_session() {
    use std::io::Write;
    let env = TestEnv::new();
    let marker = env.cwd.path().join("marker");
    let mock = MockLlm::with_script([Reply::tool_call(
        "c1",
        "terminal",
        json!({"command": format!("sleep 3; touch {}", marker.display())}),
    )]);
    let mut child = env.spawn_repl(&mock.base_url(), &["--yolo", "chat"]);
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"run it\n").unwrap();
    let started_dir = env.home_path().join("run/started");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !started_dir.exists() {
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: signalling our own child.
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) },
        0
    );
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    assert_eq!(
        out.status.code(),
        Some(128 + libc::SIGTERM),
        "{}",
        stderr(&out)
    );
    std::thread::sleep(Duration::from_millis(3500));
    assert!(!marker.exists(), "the command outlived the REPL");
    let rows = env.rows();
    let result = rows.last().unwrap().1.clone().unwrap();
    assert_eq!(rows.last().unwrap().0, "tool");
    assert!(result.contains("interrupted"), "{result}");
}
