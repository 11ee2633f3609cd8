//! The `ssh` backend: each command runs on `terminal.ssh_host` (`ssh_user`, `ssh_port`,
//! `ssh_key`) through the system `ssh` client, non-interactively (BatchMode: a missing key is an
//! error, never a password prompt). Output and exit code come back as for a local command.
//!
//! The remote side gets the same shape of limits through `ulimit` in a POSIX `sh` (processes,
//! file size, CPU time = the command's timeout), only the `terminal.env_passthrough` variables, and runs the command as a separate job
//! watched through ssh's stdin: when hermes stops the command (or dies), the connection closes,
//! the watcher reads EOF and kills the remote job's process group.

use crate::config::Config;

use super::Request;

/// `ssh` arguments for one command.
pub fn args(config: &Config, req: &Request<'_>) -> Result<Vec<String>, String> {
    let s = &config.terminal.exec;
    let host = s
        .ssh
        .host
        .as_deref()
        .ok_or("terminal.backend is ssh but terminal.ssh_host is not set")?;
    let mut a: Vec<String> = vec![
        "-T".into(),
        "-o".into(),
        "BatchMode=yes".into(),
        "-o".into(),
        "StrictHostKeyChecking=accept-new".into(),
        "-o".into(),
        "ConnectTimeout=10".into(),
        "-o".into(),
        "LogLevel=ERROR".into(),
    ];
    if let Some(port) = s.ssh.port {
        a.extend(["-p".into(), port.to_string()]);
    }
    if let Some(key) = &s.ssh.key {
        a.extend([
            "-i".into(),
            key.display().to_string(),
            "-o".into(),
            "IdentitiesOnly=yes".into(),
        ]);
    }
    if let Some(user) = &s.ssh.user {
        a.extend(["-l".into(), user.clone()]);
    }
    a.push(host.to_string());
    a.push("--".into());
    a.push(remote_script(config, req));
    Ok(a)
}

/// The script the remote login shell runs: `exec sh -c '…'`, so the limits are set with POSIX
/// `sh` semantics whatever the login shell is. (Found by the test against a real sshd: with the
/// limits in the login shell, `ulimit -u` is an error in dash, which calls it `-p`, and `ulimit
/// -f` counts 1024-byte blocks in bash but 512-byte blocks in dash and in bash as `sh`.)
fn remote_script(config: &Config, req: &Request<'_>) -> String {
    let s = &config.terminal.exec;
    let mut script = String::new();
    script.push_str(&format!(
        "cd {} 2>/dev/null || true; ",
        quote(&req.workdir.display().to_string())
    ));
    // bash and busybox call the process limit -u, dash -p (in bash, -p is the pipe size and
    // cannot be set, so the order matters).
    script.push_str(&format!(
        "ulimit -u {n} 2>/dev/null || ulimit -p {n} 2>/dev/null; ",
        n = s.max_processes
    ));
    if s.max_file_size_mb > 0 {
        // POSIX sh counts ulimit -f in 512-byte blocks.
        script.push_str(&format!(
            "ulimit -f {} 2>/dev/null; ",
            s.max_file_size_mb.saturating_mul(2048)
        ));
    }
    script.push_str(&format!(
        "ulimit -t {} 2>/dev/null; ",
        req.timeout.as_secs().max(1)
    ));
    for (k, v) in super::env::scrubbed(config, std::env::vars()) {
        if s.env_passthrough.contains(&k) || k == "PAGER" || k == "GIT_PAGER" {
            script.push_str(&format!("export {k}={}; ", quote(&v)));
        }
    }
    // The command gets its own process group (setsid where available); the watcher kills that
    // group when ssh's stdin closes (hermes stopped the command or died). A background job's
    // stdin is /dev/null in a shell without job control, so the watcher reads a copy (fd 3).
    script.push_str(&format!(
        "c={}; exec 3<&0; if command -v setsid >/dev/null 2>&1; then setsid sh -c \"$c\" </dev/null & \
         else sh -c \"$c\" </dev/null & fi; p=$!; \
         (cat <&3 >/dev/null; kill -9 -$p 2>/dev/null || kill -9 $p) >/dev/null 2>&1 & w=$!; \
         wait $p; rc=$?; kill $w 2>/dev/null; exit $rc",
        quote(req.command)
    ));
    format!("exec sh -c {}", quote(&script))
}

/// Single-quotes `s` for a POSIX shell.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The ssh client's own environment (agent socket, config lookup); never reaches the remote.
pub fn client_env() -> Vec<(String, String)> {
    std::env::vars()
        .filter(|(k, _)| {
            matches!(
                k.as_str(),
                "PATH" | "HOME" | "USER" | "SSH_AUTH_SOCK" | "LANG"
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{EnvVars, HermesHome};
    use std::path::Path;
    use std::time::Duration;

    #[test]
    fn arguments_name_host_port_key_and_quote_the_command() {
        let mut c = Config::defaults(HermesHome::new("/h"), EnvVars::default());
        c.terminal.exec.ssh.host = Some("box".into());
        c.terminal.exec.ssh.port = Some(2222);
        c.terminal.exec.ssh.user = Some("me".into());
        c.terminal.exec.ssh.key = Some("/k/id".into());
        let req = Request {
            shell: Path::new("/bin/sh"),
            command: "echo 'hi'",
            cwd: Path::new("/p"),
            workdir: Path::new("/p"),
            timeout: Duration::from_secs(30),
        };
        let a = args(&c, &req).unwrap();
        let joined = a.join(" ");
        assert!(
            joined.contains("-p 2222")
                && joined.contains("-i /k/id")
                && joined.contains("-l me box --"),
            "{joined}"
        );
        let script = a.last().unwrap();
        assert!(script.starts_with(r"exec sh -c 'cd '\''/p'\''"), "{script}");
        assert!(
            script.contains("ulimit -u 512 2>/dev/null || ulimit -p 512"),
            "{script}"
        );
        assert!(script.contains("ulimit -f 2097152 "), "{script}");
        // The command survives two levels of quoting: run the script's inner part for real.
        let inner = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "printf %s {}",
                script.trim_start_matches("exec sh -c ")
            ))
            .output()
            .unwrap();
        let inner = String::from_utf8(inner.stdout).unwrap();
        assert!(inner.contains(r"c='echo '\''hi'\'''; "), "{inner}");
        c.terminal.exec.ssh.host = None;
        assert!(args(&c, &req).is_err());
    }
}
