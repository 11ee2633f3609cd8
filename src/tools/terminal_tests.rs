//! Tests for the `terminal` tool: exit codes, workdir, output caps, binary output, and that
//! timeouts and interrupts kill the whole process group (grandchildren included).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::tools::test_support::{TestEnv, env, env_with};

/// True once `pid` no longer runs (gone, or a zombie nobody reaped yet).
fn dead(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // The state letter follows the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
    }
}

fn read_pid(path: &Path) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        assert!(Instant::now() < deadline, "pid file never written");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The `local` backend: these tests follow host pids, which a sandbox's pid namespace renames.
fn local() -> TestEnv {
    env_with(|c| c.terminal.exec.backend = crate::config::terminal::BackendChoice::Local)
}

async fn wait_dead(pid: i32, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if dead(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    dead(pid)
}

#[tokio::test]
async fn exit_code_stdout_and_stderr() {
    let t = env();
    let out = t
        .ok(
            "terminal",
            json!({"command": "echo out; echo err >&2; exit 3"}),
        )
        .await;
    assert_eq!(out, "out\n[stderr]\nerr\n[exit code: 3]");
    let out = t.ok("terminal", json!({"command": "true"})).await;
    assert_eq!(out, "(no output)\n[exit code: 0]");
}

#[tokio::test]
async fn runs_in_workdir_without_stdin() {
    let t = env();
    std::fs::create_dir(t.path("sub")).unwrap();
    let out = t
        .ok(
            "terminal",
            json!({"command": "pwd; cat; echo done", "workdir": "sub"}),
        )
        .await;
    assert!(
        out.starts_with(&format!("{}\n", t.path("sub").display())),
        "{out}"
    );
    assert!(out.contains("done\n[exit code: 0]"), "{out}");
    let err = t
        .err("terminal", json!({"command": "pwd", "workdir": "missing"}))
        .await;
    assert!(
        err.contains("workdir missing is not an existing directory"),
        "{err}"
    );
    let err = t.err("terminal", json!({"command": "  "})).await;
    assert!(err.contains("command is empty"), "{err}");
}

async fn timeout_kills(t: &TestEnv, script: &str) {
    let pid_file = t.path("gc.pid");
    let started = Instant::now();
    let command = format!(
        "{script} sleep 300 & echo $! > {}; wait",
        pid_file.display()
    );
    let out = t
        .ok("terminal", json!({"command": command, "timeout": 1}))
        .await;
    assert!(out.contains("[killed after timeout 1s"), "{out}");
    let pid = read_pid(&pid_file);
    assert!(
        wait_dead(pid, Duration::from_secs(3)).await,
        "grandchild {pid} survived"
    );
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn timeout_kills_the_grandchild() {
    let t = local();
    timeout_kills(&t, "").await;
}

#[tokio::test]
async fn timeout_escalates_to_sigkill_when_sigterm_is_ignored() {
    let t = local();
    // SIG_IGN is inherited across fork and exec, so both bash and sleep ignore SIGTERM.
    timeout_kills(&t, "trap '' TERM;").await;
}

#[tokio::test]
async fn cancel_kills_the_group_and_reports_interruption() {
    let t = local();
    let pid_file = t.path("gc.pid");
    let command = format!("sleep 300 & echo $! > {}; wait", pid_file.display());
    let cancel = t.ctx.cancel.clone();
    let pid_path = pid_file.clone();
    tokio::spawn(async move {
        let _ = tokio::task::spawn_blocking(move || read_pid(&pid_path)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let out = t
        .call("terminal", json!({"command": command, "timeout": 60}))
        .await;
    assert!(
        out.is_error && out.content.contains("interrupted"),
        "{}",
        out.content
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    let pid = read_pid(&pid_file);
    assert!(
        wait_dead(pid, Duration::from_secs(4)).await,
        "grandchild {pid} survived"
    );
}

/// Both interrupt paths, deterministically: the tool sees the token itself, or its future is
/// dropped (what `dispatch` does when its own select wins) and the guard cleans up.
#[tokio::test]
async fn interrupt_paths_kill_the_group() {
    use crate::tools::registry::{ToolError, TypedTool};
    use crate::tools::terminal::{Terminal, TerminalArgs};
    let t = local();
    let args = |pid_file: &Path| TerminalArgs {
        command: format!("sleep 300 & echo $! > {}; wait", pid_file.display()),
        timeout: Some(60),
        workdir: None,
    };

    let pid_file = t.path("a.pid");
    let cancel = t.ctx.cancel.clone();
    let watched = pid_file.clone();
    tokio::spawn(async move {
        let _ = tokio::task::spawn_blocking(move || read_pid(&watched)).await;
        cancel.cancel();
    });
    let result = Terminal.run(args(&pid_file), &t.ctx).await;
    assert_eq!(result, Err(ToolError::Cancelled));
    let pid = read_pid(&pid_file);
    assert!(
        wait_dead(pid, Duration::from_secs(3)).await,
        "grandchild {pid} survived"
    );

    let t = local();
    let pid_file = t.path("b.pid");
    let run = Terminal.run(args(&pid_file), &t.ctx);
    assert!(
        tokio::time::timeout(Duration::from_millis(500), run)
            .await
            .is_err()
    );
    let pid = read_pid(&pid_file);
    assert!(
        wait_dead(pid, Duration::from_secs(4)).await,
        "grandchild {pid} survived the drop"
    );
}

#[tokio::test]
async fn binary_output_is_decoded_with_a_note() {
    let t = env();
    let out = t
        .ok(
            "terminal",
            json!({"command": r"printf 'a\xff\x00b\n'; head -c 3000 /dev/urandom >&2"}),
        )
        .await;
    assert!(out.starts_with("a\u{FFFD}\u{FFFD}b\n"), "{out}");
    assert!(out.contains("[output contained non-UTF-8 bytes"), "{out}");
    assert!(out.ends_with("[exit code: 0]"), "{out}");
}

#[tokio::test]
async fn output_is_capped_with_head_and_tail() {
    let t = env_with(|c| c.tool_output.max_bytes = 2_000);
    let out = t.ok("terminal", json!({"command": "seq 1 100000"})).await;
    assert!(out.starts_with("1\n2\n3\n"), "{}", &out[..40]);
    assert!(out.contains("bytes omitted"), "{out}");
    assert!(out.contains("\n100000\n[exit code: 0]"), "{out}");
    assert!(out.len() < 2_300, "{}", out.len());
}

#[tokio::test]
async fn background_process_holding_the_pipe_does_not_hang() {
    let t = local();
    let started = Instant::now();
    let pid_file = t.path("bg.pid");
    let command = format!("sleep 30 & echo $! > {}; echo fg", pid_file.display());
    let out = t
        .ok("terminal", json!({"command": command, "timeout": 20}))
        .await;
    assert!(out.starts_with("fg\n"), "{out}");
    assert!(
        out.contains("background processes still hold the output"),
        "{out}"
    );
    assert!(out.ends_with("[exit code: 0]"), "{out}");
    assert!(started.elapsed() < Duration::from_secs(5));
    let pid = read_pid(&pid_file);
    // Without a cgroup (not root, no delegation) the background sleep outlives the command.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
}

#[tokio::test]
async fn blocked_commands_never_run() {
    use crate::config::ApprovalMode;
    use crate::tools::test_support::env_with_approvals;
    // A user deny rule blocks even with approvals off.
    let t = env_with_approvals(ApprovalMode::Off, vec!["marker-file".into()]);
    let err = t
        .err("terminal", json!({"command": "touch marker-file"}))
        .await;
    assert!(!err.is_empty());
    assert!(!t.path("marker-file").exists(), "a blocked command ran");
    // A dangerous command with no one to ask is denied.
    let t = env_with_approvals(ApprovalMode::Manual, Vec::new());
    std::fs::create_dir_all(t.path("victim/inner")).unwrap();
    let command = format!("rm -rf {}", t.path("victim").display());
    let err = t.err("terminal", json!({"command": command})).await;
    assert!(!err.is_empty());
    assert!(t.path("victim/inner").is_dir(), "a blocked command ran");
}

#[test]
fn a_shell_is_found() {
    assert!(super::find_shell().is_some());
    let t = env();
    let tool = crate::tools::registry::ToolRegistry::discover();
    let terminal = tool.get("terminal").unwrap();
    assert!(terminal.check_available(&t.ctx.config).is_ok());
    assert!(!terminal.read_only());
}

/// In the sandbox a timed-out command's background work dies with it (pid namespace + cgroup).
#[tokio::test]
async fn sandbox_timeout_kills_background_work() {
    if let Err(why) = &crate::security::sandbox::detect::machine().bwrap {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let t = env_with(|c| c.terminal.exec.backend = crate::config::terminal::BackendChoice::Sandbox);
    let late = t.path("late");
    let command = format!("(sleep 2; touch {}) & sleep 30", late.display());
    let out = t
        .ok("terminal", json!({"command": command, "timeout": 1}))
        .await;
    assert!(out.contains("[killed after timeout 1s"), "{out}");
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(!late.exists(), "background work outlived the command");
}
