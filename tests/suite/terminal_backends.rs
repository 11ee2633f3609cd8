//! The `docker` and `ssh` terminal backends for real: a container from a tiny image built with
//! `docker import` (scripts/test-setup), and an sshd on 127.0.0.1 with a generated key. Each test
//! skips with a message naming what is missing (no daemon, no image, no sshd).

use std::time::{Duration, Instant};

use serde_json::json;

use crate::suite::sandbox::{last_tool_result, run_terminal};
use crate::support::harness::{TestEnv, stderr};
use crate::support::mock_llm::{MockLlm, Reply};

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
            json!({"command": "echo id=$(hostname); echo cpu=$(ulimit -t); echo pids=$(cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max); ls /sys/class/net; echo made > in-container.txt; exit 7"}),
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
    // CPU time ≤ the command's timeout (terminal.timeout defaults to 180 s).
    assert!(first.contains("cpu=180\n"), "{first}");
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
        // sshd cannot bind port 0 and say which port it got, so a free port is picked here and
        // handed over. Another test's server may take it in between: then sshd fails to bind
        // and exits, and merely connecting to the port would reach that other server. So this
        // waits for sshd's own "Server listening" line and picks another port if it lost.
        let mut lost = Vec::new();
        for _ in 0..5 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map_err(|e| e.to_string())?
                .port();
            match Self::spawn(&dir, port)? {
                Ok(child) => return Ok(TestSshd { child, dir, port }),
                Err(why) => lost.push(why),
            }
        }
        Err(format!("sshd could not bind a free port: {lost:?}"))
    }

    /// Starts sshd on `port`: `Ok(Ok(child))` once it listens, `Ok(Err(log))` if it exited
    /// (the port was taken), `Err` if it cannot be tested at all.
    fn spawn(
        dir: &tempfile::TempDir,
        port: u16,
    ) -> Result<Result<std::process::Child, String>, String> {
        use std::io::BufRead;
        let d = dir.path().display();
        let config = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\n\
             PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n\
             PermitRootLogin yes\nPidFile none\n"
        );
        std::fs::write(dir.path().join("sshd_config"), config).map_err(|e| e.to_string())?;
        let mut child = std::process::Command::new("/usr/sbin/sshd")
            .args(["-D", "-e", "-f"])
            .arg(dir.path().join("sshd_config"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start sshd: {e}"))?;
        // `-e` logs to stderr; a thread reads it to the end so sshd never blocks on the pipe.
        let log = child.stderr.take().ok_or("sshd has no stderr")?;
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(log).lines() {
                let Ok(line) = line else { break };
                let _ = tx.send(line);
            }
        });
        let listening = format!("Server listening on 127.0.0.1 port {port}.");
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut seen = Vec::new();
        loop {
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(line) if line.contains(&listening) => return Ok(Ok(child)),
                Ok(line) => seen.push(line),
                // stderr closed: sshd exited (it could not bind).
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    let _ = child.wait();
                    return Ok(Err(seen.join("\n")));
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!("sshd did not start listening: {seen:?}"));
                }
            }
        }
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
        json!({"command": "echo remote-$((6*7)) in $(pwd); echo limits $(ulimit -t) $( (ulimit -u || ulimit -p) 2>/dev/null) $(ulimit -f); echo oops >&2; exit 3", "timeout": 77}),
        &[],
    );
    // The remote limits apply: CPU time = the timeout, processes, file size (1 GiB in the
    // 512-byte blocks of a POSIX sh).
    assert!(result.contains("limits 77 512 2097152\n"), "{result}");
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
