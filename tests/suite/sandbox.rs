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
fn last_tool_result(mock: &MockLlm) -> String {
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
fn run_terminal(env: &TestEnv, args: Value, extra_env: &[(&str, &str)]) -> String {
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
    env.write("bomb.sh", "f(){ f & f & }; f\n");
    let started = Instant::now();
    let result = run_terminal(&env, json!({"command": "bash bomb.sh", "timeout": 3}), &[]);
    assert!(
        result.contains("Resource temporarily unavailable") || result.contains("fork"),
        "the bomb never hit the limit: {result}"
    );
    // It ended (the shell exited and its pid namespace went with it, or the timeout), and the
    // model got the result.
    assert!(
        result.contains("[exit code:") || result.contains("killed after timeout 3s"),
        "{result}"
    );
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

const DOCKER_IMAGE: &str = "hermes-test-busybox:latest";

/// Why the docker backend cannot be tested here, if it cannot (scripts/test-setup starts dockerd
/// and builds the image).
fn docker_unavailable() -> Option<String> {
    let info = std::process::Command::new("docker").arg("info").output();
    match info {
        Ok(o) if o.status.success() => {}
        Ok(_) => return Some("dockerd is not running (scripts/test-setup starts it)".into()),
        Err(e) => return Some(format!("the docker client is not installed: {e}")),
    }
    let image = std::process::Command::new("docker")
        .args(["image", "inspect", DOCKER_IMAGE])
        .output();
    match image {
        Ok(o) if o.status.success() => None,
        _ => Some(format!(
            "the test image {DOCKER_IMAGE} is missing (scripts/test-setup builds it)"
        )),
    }
}

#[test]
fn docker_backend_runs_in_a_container_with_limits_and_removes_it() {
    if let Some(why) = docker_unavailable() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let env = TestEnv::new();
    env.config(&format!(
        "terminal:\n  backend: docker\n  docker_image: {DOCKER_IMAGE}\n  max_processes: 64\n  network: off\n"
    ));
    let mock = MockLlm::with_script([
        Reply::tool_call(
            "c1",
            "terminal",
            json!({"command": "echo id=$(hostname); echo pids=$(cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max); ls /sys/class/net; echo made > in-container.txt; exit 7"}),
        ),
        Reply::tool_call(
            "c2",
            "terminal",
            json!({"command": "echo again=$(hostname)"}),
        ),
        Reply::text("done"),
    ]);
    let out = env
        .cmd(&mock.base_url())
        .env("OPENAI_API_KEY", "sk-fake-docker-secret")
        .args(["--yolo", "-z", "go"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = mock.requests();
    let first = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(first.contains("pids=64"), "{first}");
    assert!(first.contains("[exit code: 7]"), "{first}");
    // network none: loopback only.
    assert!(first.contains("lo") && !first.contains("eth0"), "{first}");
    let id = first
        .lines()
        .find_map(|l| l.strip_prefix("id="))
        .unwrap()
        .trim()
        .to_string();
    // The second command ran in the same (session) container.
    let second = last_tool_result(&mock);
    assert!(second.contains(&format!("again={id}")), "{second}");
    // The working directory was mounted.
    assert_eq!(
        std::fs::read_to_string(env.cwd.path().join("in-container.txt")).unwrap(),
        "made\n"
    );
    // hermes exited: its container is gone.
    let inspect = std::process::Command::new("docker")
        .args(["inspect", &id])
        .output()
        .unwrap();
    assert!(!inspect.status.success(), "container {id} is still there");
}

/// An sshd on 127.0.0.1 for one test (killed on drop), accepting one generated key.
struct TestSshd {
    child: std::process::Child,
    dir: tempfile::TempDir,
    port: u16,
}

impl TestSshd {
    fn start() -> Result<TestSshd, String> {
        let sshd = std::path::Path::new("/usr/sbin/sshd");
        if !sshd.exists() {
            return Err(
                "sshd is not installed (scripts/test-setup installs openssh-server)".into(),
            );
        }
        if !std::path::Path::new("/run/sshd").exists() {
            return Err("/run/sshd is missing (scripts/test-setup creates it)".into());
        }
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        for key in ["host_key", "user_key"] {
            let ok = std::process::Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(dir.path().join(key))
                .status()
                .map_err(|e| format!("ssh-keygen: {e}"))?;
            if !ok.success() {
                return Err("ssh-keygen failed".into());
            }
        }
        std::fs::copy(
            dir.path().join("user_key.pub"),
            dir.path().join("authorized_keys"),
        )
        .map_err(|e| e.to_string())?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let d = dir.path().display();
        let config = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\n\
             PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n\
             PermitRootLogin yes\nPidFile none\n"
        );
        std::fs::write(dir.path().join("sshd_config"), config).map_err(|e| e.to_string())?;
        let child = std::process::Command::new(sshd)
            .args(["-D", "-e", "-f"])
            .arg(dir.path().join("sshd_config"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start sshd: {e}"))?;
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > deadline {
                return Err("sshd did not start listening".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(TestSshd { child, dir, port })
    }
}

impl Drop for TestSshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn ssh_backend_runs_on_the_host_with_output_and_exit_code() {
    let sshd = match TestSshd::start() {
        Ok(s) => s,
        Err(why) => {
            eprintln!("SKIPPED: {why}");
            return;
        }
    };
    let env = TestEnv::new();
    let user = String::from_utf8(
        std::process::Command::new("id")
            .arg("-un")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    env.config(&format!(
        "terminal:\n  backend: ssh\n  ssh_host: 127.0.0.1\n  ssh_port: {}\n  ssh_user: {}\n  ssh_key: {}\n",
        sshd.port,
        user.trim(),
        sshd.dir.path().join("user_key").display()
    ));
    let result = run_terminal(
        &env,
        json!({"command": "echo remote-$((6*7)) in $(pwd); echo oops >&2; exit 3"}),
        &[],
    );
    assert!(
        result.contains(&format!("remote-42 in {}", env.cwd.path().display())),
        "{result}"
    );
    assert!(result.contains("[stderr]\noops"), "{result}");
    assert!(result.ends_with("[exit code: 3]"), "{result}");

    // A timed-out command is killed on the remote side too (ssh's stdin closes).
    let marker = env.cwd.path().join("remote-marker");
    let result = run_terminal(
        &env,
        json!({"command": format!("sleep 2; touch {}", marker.display()), "timeout": 1}),
        &[],
    );
    assert!(result.contains("killed after timeout 1s"), "{result}");
    std::thread::sleep(Duration::from_millis(2500));
    assert!(!marker.exists(), "the remote command outlived its timeout");
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
    assert_eq!(json[1]["title"], "terminal");

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
