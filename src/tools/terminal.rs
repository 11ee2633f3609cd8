//! The `terminal` tool (foreground): asks the approval gate, runs `bash -c` (or `sh -c`) through
//! the configured backend (`security::sandbox`: limits, scrubbed environment, sandbox/docker/ssh)
//! in its own process group with no stdin, captures bounded stdout/stderr, and on timeout or
//! interrupt kills the whole group (SIGTERM, grace, SIGKILL) and whatever the backend still
//! holds (cgroup, container) so no grandchild outlives the call.
//! A non-zero exit is a normal result: the model needs to see the output either way.

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::security::approval::Verdict;
use crate::security::sandbox;
use crate::tools::proc_output::{self, Capture, GroupGuard, KILL_GRACE};
use crate::tools::registry::{ToolContext, ToolError, TypedTool};

/// Longest foreground run allowed (reference §6.2).
pub const MAX_TIMEOUT_SECS: u64 = 600;
/// After the shell exits, how long to keep reading pipes that background processes may hold.
const PIPE_GRACE: Duration = Duration::from_millis(1000);

pub struct Terminal;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct TerminalArgs {
    pub command: String,
    /// Seconds (max 600)
    pub timeout: Option<u64>,
    pub workdir: Option<String>,
}

impl TypedTool for Terminal {
    type Args = TerminalArgs;
    const NAME: &'static str = "terminal";
    const TOOLSET: &'static str = "terminal";
    const DESCRIPTION: &'static str = "Run a shell command (bash -c) and return its output and exit code. No stdin: use non-interactive flags.";

    fn check_available(&self, _config: &crate::config::Config) -> Result<(), String> {
        find_shell()
            .map(|_| ())
            .ok_or_else(|| "neither bash nor sh was found on PATH".to_string())
    }

    async fn run(&self, args: TerminalArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let command = args.command;
        if command.trim().is_empty() {
            return Err(ToolError::Respond(
                "command is empty; give a shell command to run".into(),
            ));
        }
        if let Verdict::Blocked(msg) = ctx.approvals.check(&command, ctx.prompt.as_ref()).await {
            return Err(ToolError::Respond(msg));
        }
        let dir = match args.workdir.as_deref().filter(|w| !w.trim().is_empty()) {
            Some(w) => {
                let dir = ctx.resolve(w);
                if !dir.is_dir() {
                    return Err(ToolError::Respond(format!(
                        "workdir {w} is not an existing directory; create it first or omit workdir to run in {}",
                        ctx.cwd.display()
                    )));
                }
                dir
            }
            None => ctx.cwd.clone(),
        };
        let requested = args
            .timeout
            .filter(|t| *t > 0)
            .unwrap_or(ctx.config.terminal.timeout.max(1));
        let timeout = requested.min(MAX_TIMEOUT_SECS);
        let mut notes = Vec::new();
        // Checkpoint of the tree before a command that may change files (issue 11 §5).
        notes.extend(ctx.checkpoints.before_command(&dir, &command).await);
        if requested > MAX_TIMEOUT_SECS {
            notes.push(format!(
                "[timeout capped at {MAX_TIMEOUT_SECS}s; long-running jobs belong in the background]"
            ));
        }
        let Some(shell) = find_shell() else {
            return Err(ToolError::Respond(
                "no shell available: neither bash nor sh was found on PATH".into(),
            ));
        };
        let cap = ctx.config.tool_output.max_bytes.max(1024);
        let request = sandbox::Request {
            shell: &shell,
            command: &command,
            cwd: &ctx.cwd,
            workdir: &dir,
            timeout: Duration::from_secs(timeout),
        };
        let launch = sandbox::launch(&ctx.config, &ctx.scratch.terminal, &request)
            .await
            .map_err(|e| ToolError::Respond(e.to_string()))?;
        let run = Run {
            shell: &shell,
            dir: &dir,
            timeout: Duration::from_secs(timeout),
            cap,
        };
        let finished = run.execute(launch, &ctx.cancel).await?;
        Ok(finished.render(cap, timeout, notes))
    }
}

crate::register_tool!(Terminal);

/// `bash` if it is on PATH, else `sh`.
pub fn find_shell() -> Option<PathBuf> {
    ["bash", "sh"].iter().find_map(|name| find_on_path(name))
}

/// The first executable called `name` on PATH.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

struct Run<'a> {
    shell: &'a Path,
    dir: &'a Path,
    timeout: Duration,
    cap: usize,
}

enum End {
    Exited(ExitStatus),
    TimedOut,
}

struct Finished {
    end: End,
    stdout: Capture,
    stderr: Capture,
    /// Background processes kept the output pipes open after the shell exited.
    pipes_held: bool,
}

impl Run<'_> {
    async fn execute(
        &self,
        mut launch: sandbox::Launch,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<Finished, ToolError> {
        let stdin = if launch.keep_stdin_open {
            Stdio::piped()
        } else {
            Stdio::null()
        };
        let mut child = launch
            .command
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                ToolError::Respond(format!(
                    "cannot start {} in {}: {e}",
                    self.shell.display(),
                    self.dir.display()
                ))
            })?;
        // The child leads its own group, so the group id is its pid.
        let pgid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .unwrap_or(0);
        let mut guard = GroupGuard::new(pgid);
        let stdout = Arc::new(Mutex::new(Capture::new(self.cap)));
        let stderr = Arc::new(Mutex::new(Capture::new(self.cap)));
        let mut readers = Vec::new();
        if let Some(pipe) = child.stdout.take() {
            readers.push(tokio::spawn(pump(pipe, Arc::clone(&stdout))));
        }
        if let Some(pipe) = child.stderr.take() {
            readers.push(tokio::spawn(pump(pipe, Arc::clone(&stderr))));
        }
        for r in &readers {
            guard.own(r.abort_handle());
        }
        // Held open until the command ends (see `Launch::keep_stdin_open`).
        let stdin_pipe = child.stdin.take();

        let end = tokio::select! {
            status = child.wait() => match status {
                Ok(status) => End::Exited(status),
                Err(e) => {
                    terminate(pgid, &mut child, &launch).await;
                    return Err(ToolError::Respond(format!("lost track of the command: {e}")));
                }
            },
            () = tokio::time::sleep(self.timeout) => {
                terminate(pgid, &mut child, &launch).await;
                End::TimedOut
            },
            () = cancel.cancelled() => {
                terminate(pgid, &mut child, &launch).await;
                guard.disarm();
                return Err(ToolError::Cancelled);
            }
        };
        drop(stdin_pipe);
        guard.disarm();
        let drained = tokio::time::timeout(PIPE_GRACE, futures::future::join_all(readers)).await;
        // Dropping the guard aborts readers still blocked on pipes held by background processes.
        drop(guard);
        Ok(Finished {
            end,
            stdout: take(&stdout),
            stderr: take(&stderr),
            pipes_held: drained.is_err(),
        })
    }
}

fn take(shared: &Mutex<Capture>) -> Capture {
    let mut guard = shared.lock().unwrap_or_else(|p| p.into_inner());
    std::mem::replace(&mut *guard, Capture::new(1))
}

async fn pump<R: AsyncRead + Unpin>(mut pipe: R, sink: Arc<Mutex<Capture>>) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => sink
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(&buf[..n]),
        }
    }
}

/// SIGTERM to the group, a grace period for the leader and its descendants, then SIGKILL, and
/// the backend kills what escaped the group. Returns the leader's status if it was collected.
async fn terminate(
    pgid: i32,
    child: &mut tokio::process::Child,
    launch: &sandbox::Launch,
) -> Option<ExitStatus> {
    proc_output::signal_group(pgid, libc::SIGTERM);
    let deadline = Instant::now() + KILL_GRACE;
    let mut status = tokio::time::timeout(KILL_GRACE, child.wait())
        .await
        .ok()
        .and_then(Result::ok);
    while proc_output::group_alive(pgid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    if proc_output::group_alive(pgid) {
        proc_output::signal_group(pgid, libc::SIGKILL);
    }
    launch.kill_all().await;
    if status.is_none() {
        status = tokio::time::timeout(Duration::from_secs(5), child.wait())
            .await
            .ok()
            .and_then(Result::ok);
    }
    status
}

impl Finished {
    fn render(&self, cap: usize, timeout: u64, mut notes: Vec<String>) -> String {
        let (out_budget, err_budget) =
            proc_output::split_budget(self.stdout.total(), self.stderr.total(), cap);
        let (out, lossy_out) = self.stdout.render(out_budget);
        let (err, lossy_err) = self.stderr.render(err_budget);
        let mut text = String::new();
        if !out.is_empty() {
            text.push_str(&out);
            if !out.ends_with('\n') {
                text.push('\n');
            }
        }
        if !err.is_empty() {
            text.push_str("[stderr]\n");
            text.push_str(&err);
            if !err.ends_with('\n') {
                text.push('\n');
            }
        }
        if text.is_empty() {
            text.push_str("(no output)\n");
        }
        if lossy_out || lossy_err {
            notes.push("[output contained non-UTF-8 bytes, shown as \u{FFFD}]".into());
        }
        if self.pipes_held {
            notes.push(
                "[background processes still hold the output; later output was not captured]"
                    .into(),
            );
        }
        for note in notes {
            text.push_str(&note);
            text.push('\n');
        }
        match &self.end {
            End::Exited(status) => text.push_str(&status_line(status)),
            End::TimedOut => text.push_str(&format!(
                "[killed after timeout {timeout}s: the command did not finish; raise timeout (max {MAX_TIMEOUT_SECS}) or run less at once]"
            )),
        }
        text
    }
}

fn status_line(status: &ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("[exit code: {code}]"),
        (None, Some(sig)) => format!("[terminated by signal {sig}]"),
        (None, None) => "[exit status unknown]".into(),
    }
}

#[cfg(test)]
#[path = "terminal_tests.rs"]
mod tests;
