//! The supervisor of a `local` command: what makes its whole process tree die with hermes.
//!
//! `PR_SET_PDEATHSIG` on the shell kills the shell when hermes is SIGKILLed, but not what the
//! shell started (`sleep 30 & sleep 30`: the death signal is not inherited across fork), and a
//! cgroup, where one is writable, is only swept at the next start. So a local command runs under
//! a small supervisor: the process hermes spawns forks once more before exec; the child becomes
//! the shell, the parent stays behind as the supervisor. It is the shell's
//! `PR_SET_CHILD_SUBREAPER` (orphaned descendants are re-parented to it, so it can find them) and
//! gets `SIGUSR1` as its own parent-death signal: when hermes dies it kills every process of its
//! process group and every descendant, round after round until none is left (a fork bomb races),
//! then exits. When the shell exits normally it exits with the same status, leaving what the
//! shell left running to the terminal tool as before (pipe grace, cgroup, process-group kill).
//! A long-lived child that owns everything it starts (an MCP stdio server: `install_owning`)
//! has its tree killed when it exits too, and `stop_tree` asks a live supervisor for the same
//! kill at any time: that is how hermes stops such a child on a normal shutdown, a reload or an
//! idle stop, with the guarantee a SIGKILL of hermes already had.
//!
//! Why a fork inside `pre_exec` rather than re-executing hermes as a hidden subcommand: it costs
//! one fork instead of an exec and a runtime start, and it works wherever the library runs (its
//! own unit tests included, whose binary is not `hermes`). The price is that the supervisor runs
//! in a forked copy of a multi-threaded process, so it only makes async-signal-safe system calls
//! on memory prepared before the fork (no allocation, no locks): /proc is read with `getdents64`
//! into a buffer allocated beforehand.

use std::io;

/// The supervisor's parent-death signal (the "kill the tree now" request).
const DEATH_SIGNAL: libc::c_int = libc::SIGUSR1;
/// Rounds of "kill what is left" before giving up on a process that keeps forking.
const KILL_ROUNDS: usize = 1000;
/// Scratch space for directory entries and one `stat` file.
const SCRATCH: usize = 32 * 1024;

/// Makes `cmd` run under a supervisor (see the module doc). Must be the last `pre_exec` step
/// registered: the fork happens there, and the steps before it (cgroup, rlimits) then hold for
/// both the supervisor and the command.
pub fn install(cmd: &mut tokio::process::Command) {
    install_with(cmd, false);
}

/// As `install`, for a command that owns what it starts: when it exits, the supervisor kills
/// its process group and every descendant before exiting itself. The spawned process (the
/// supervisor) must lead its own process group (`process_group(0)`), and the caller stops the
/// tree with `stop_tree`, never with a SIGKILL of the supervisor (that kills only the command).
pub fn install_owning(cmd: &mut tokio::process::Command) {
    install_with(cmd, true);
}

fn install_with(cmd: &mut tokio::process::Command, kill_on_exit: bool) {
    // SAFETY: getpid has no preconditions.
    let hermes = unsafe { libc::getpid() };
    let mut scratch = vec![0u8; SCRATCH];
    // SAFETY: the closure runs in the forked child; it and `supervise` only make
    // async-signal-safe system calls on memory allocated before the fork.
    unsafe {
        cmd.pre_exec(move || fork_supervisor(hermes, kill_on_exit, &mut scratch));
    }
}

/// Asks the supervisor `pid` (the process hermes spawned) to kill its whole tree and exit.
/// The caller must know `pid` is its child not yet reaped (so the pid is not someone else's).
/// Its signal is blocked from before the spawn returns, so it is never lost nor fatal.
pub fn stop_tree(pid: u32) -> io::Result<()> {
    let pid = libc::pid_t::try_from(pid).map_err(io::Error::other)?;
    // SAFETY: kill with a plain pid and signal.
    if unsafe { libc::kill(pid, DEATH_SIGNAL) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Forks: the child returns (and goes on to exec the command), the parent supervises it.
///
/// # Safety
/// Only in a freshly forked child, before exec.
unsafe fn fork_supervisor(
    hermes: libc::pid_t,
    kill_on_exit: bool,
    scratch: &mut [u8],
) -> io::Result<()> {
    // SAFETY: fork in a single-threaded child (the pre_exec context).
    let command = unsafe { libc::fork() };
    if command < 0 {
        return Err(io::Error::last_os_error());
    }
    if command == 0 {
        // The command's side: it dies with its supervisor (who else would kill it).
        // SAFETY: prctl with constant arguments.
        unsafe {
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            );
        }
        return Ok(());
    }
    // SAFETY: the supervisor's side; never returns.
    unsafe { supervise(command, hermes, kill_on_exit, scratch) }
}

/// The supervisor's life: wait for the command, or kill the tree when hermes dies (or asks).
///
/// # Safety
/// Only in a forked child: it closes descriptors and exits the process.
unsafe fn supervise(
    command: libc::pid_t,
    hermes: libc::pid_t,
    kill_on_exit: bool,
    scratch: &mut [u8],
) -> ! {
    // SAFETY: plain system calls on local values (see the module doc).
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            DEATH_SIGNAL as libc::c_ulong,
            0,
            0,
            0,
        );
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in [
            DEATH_SIGNAL,
            libc::SIGCHLD,
            // Group signals from the terminal tool are for the command, which gets them itself;
            // the supervisor stays until the command has ended.
            libc::SIGTERM,
            libc::SIGINT,
            libc::SIGHUP,
            libc::SIGQUIT,
            libc::SIGPIPE,
        ] {
            libc::sigaddset(&mut set, sig);
        }
        libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        release_descriptors();
        loop {
            // hermes died before the death signal was armed, or it was missed.
            if libc::getppid() != hermes {
                kill_tree(scratch);
                libc::_exit(128 + libc::SIGKILL);
            }
            let mut status = 0;
            loop {
                let pid = libc::waitpid(-1, &mut status, libc::WNOHANG);
                if pid == command {
                    if kill_on_exit {
                        kill_tree(scratch);
                    }
                    exit_like(status);
                }
                if pid <= 0 {
                    break;
                }
            }
            // Wake on a signal, or poll (a SIGCHLD before the mask was set is not queued).
            let timeout = libc::timespec {
                tv_sec: 0,
                tv_nsec: 200_000_000,
            };
            if libc::sigtimedwait(&set, std::ptr::null_mut(), &timeout) == DEATH_SIGNAL {
                kill_tree(scratch);
                libc::_exit(128 + libc::SIGKILL);
            }
        }
    }
}

/// Stdio to /dev/null and every other descriptor closed: the supervisor must not hold the
/// command's output pipes open (their EOF ends the capture) nor the spawn's error pipe (the
/// spawning side waits for it to close).
///
/// # Safety
/// Only in the forked supervisor.
unsafe fn release_descriptors() {
    // SAFETY: open/dup2/close on descriptors this process owns.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        if null >= 0 {
            for fd in 0..3 {
                libc::dup2(null, fd);
            }
            if null > 2 {
                libc::close(null);
            }
        }
        if libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) != 0 {
            // Kernels before 5.9: close what the soft limit allows.
            let mut lim = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            let top = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
                lim.rlim_cur.min(65_536) as libc::c_int
            } else {
                1024
            };
            for fd in 3..top {
                libc::close(fd);
            }
        }
    }
}

/// Ends the supervisor the way the command ended (same exit code or same signal).
///
/// # Safety
/// Only in the forked supervisor.
unsafe fn exit_like(status: libc::c_int) -> ! {
    // SAFETY: signal/sigprocmask/kill on this process, then _exit.
    unsafe {
        if libc::WIFSIGNALED(status) {
            let sig = libc::WTERMSIG(status);
            libc::signal(sig, libc::SIG_DFL);
            let mut one: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut one);
            libc::sigaddset(&mut one, sig);
            libc::sigprocmask(libc::SIG_UNBLOCK, &one, std::ptr::null_mut());
            libc::kill(libc::getpid(), sig);
            libc::_exit(128 + sig);
        }
        libc::_exit(libc::WEXITSTATUS(status));
    }
}

/// SIGKILL to every process of the supervisor's group and every child of it (descendants whose
/// parent is killed are re-parented to the supervisor, the subreaper, and found next round).
///
/// # Safety
/// Only in the forked supervisor.
unsafe fn kill_tree(scratch: &mut [u8]) {
    // SAFETY: getpid/getpgrp have no preconditions; the rest is in `kill_round`.
    let (me, group) = unsafe { (libc::getpid(), libc::getpgrp()) };
    for _ in 0..KILL_ROUNDS {
        // SAFETY: see `kill_round`.
        let killed = unsafe { kill_round(me, group, scratch) };
        // Reap what died so it is not seen again as a zombie child.
        // SAFETY: waitpid on our own children.
        while unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) } > 0 {}
        if killed == 0 {
            return;
        }
    }
}

/// One pass over /proc: kills the live members of `group` and the children of `me`. Returns
/// how many were signalled.
///
/// # Safety
/// Only in the forked supervisor (raw descriptors, no allocation).
unsafe fn kill_round(me: libc::pid_t, group: libc::pid_t, scratch: &mut [u8]) -> usize {
    let (dents, stat) = scratch.split_at_mut(SCRATCH - 512);
    // SAFETY: open/getdents64/close on a descriptor we own; entries parsed within bounds.
    unsafe {
        let dir = libc::open(
            c"/proc".as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        );
        if dir < 0 {
            return 0;
        }
        let mut killed = 0;
        loop {
            let n = libc::syscall(libc::SYS_getdents64, dir, dents.as_mut_ptr(), dents.len());
            if n <= 0 {
                break;
            }
            let n = n as usize;
            let mut at = 0;
            while at + 19 < n {
                let reclen = u16::from_ne_bytes([dents[at + 16], dents[at + 17]]) as usize;
                if reclen == 0 {
                    break;
                }
                let name = &dents[at + 19..(at + reclen).min(n)];
                if let Some(pid) = parse_pid(name)
                    && pid != me
                    && let Some((state, ppid, pgrp)) = read_stat(pid, stat)
                    && state != b'Z'
                    && (ppid == me || pgrp == group)
                {
                    libc::kill(pid, libc::SIGKILL);
                    killed += 1;
                }
                at += reclen;
            }
        }
        libc::close(dir);
        killed
    }
}

/// A NUL-terminated directory entry name that is all digits, as a pid.
fn parse_pid(name: &[u8]) -> Option<libc::pid_t> {
    let mut pid: libc::pid_t = 0;
    let mut digits = 0;
    for &b in name {
        if b == 0 {
            break;
        }
        if !b.is_ascii_digit() {
            return None;
        }
        pid = pid
            .checked_mul(10)?
            .checked_add(libc::pid_t::from(b - b'0'))?;
        digits += 1;
    }
    (digits > 0).then_some(pid)
}

/// (state, parent pid, process group) from `/proc/<pid>/stat`, read into `buf`.
///
/// # Safety
/// Raw open/read/close; no allocation.
unsafe fn read_stat(pid: libc::pid_t, buf: &mut [u8]) -> Option<(u8, libc::pid_t, libc::pid_t)> {
    let mut path = [0u8; 32];
    let mut len = 0;
    for &b in b"/proc/" {
        path[len] = b;
        len += 1;
    }
    let mut digits = [0u8; 12];
    let mut d = 0;
    let mut v = pid;
    loop {
        digits[d] = b'0' + (v % 10) as u8;
        d += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    while d > 0 {
        d -= 1;
        path[len] = digits[d];
        len += 1;
    }
    for &b in b"/stat\0" {
        path[len] = b;
        len += 1;
    }
    // SAFETY: `path` is NUL-terminated; `buf` is ours.
    let n = unsafe {
        let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return None;
        }
        let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
        libc::close(fd);
        n
    };
    if n <= 0 {
        return None;
    }
    parse_stat(&buf[..n as usize])
}

/// `pid (comm) S ppid pgrp …` → (S, ppid, pgrp); `comm` may hold spaces and parentheses.
fn parse_stat(text: &[u8]) -> Option<(u8, libc::pid_t, libc::pid_t)> {
    let close = text.iter().rposition(|&b| b == b')')?;
    let mut fields = text[close + 1..]
        .split(|&b| b == b' ')
        .filter(|f| !f.is_empty());
    let state = *fields.next()?.first()?;
    let ppid = parse_pid(fields.next()?)?;
    let pgrp = parse_pid(fields.next()?)?;
    Some((state, ppid, pgrp))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_are_parsed_whatever_the_command_name() {
        assert_eq!(
            parse_stat(b"4242 (sh) S 4241 4240 4240 0 -1"),
            Some((b'S', 4241, 4240))
        );
        assert_eq!(parse_stat(b"7 (a) b) (c) Z 1 7 7 0"), Some((b'Z', 1, 7)));
        assert_eq!(parse_stat(b"garbage"), None);
        assert_eq!(parse_pid(b"123\0\0"), Some(123));
        assert_eq!(parse_pid(b"self\0"), None);
    }

    #[test]
    fn our_own_stat_is_read() {
        let me = std::process::id() as libc::pid_t;
        let mut buf = vec![0u8; 512];
        // SAFETY: reading /proc into our own buffer.
        let (state, ppid, _) = unsafe { read_stat(me, &mut buf) }.unwrap();
        assert!(state == b'R' || state == b'S', "{}", state as char);
        // SAFETY: getppid has no preconditions.
        assert_eq!(ppid, unsafe { libc::getppid() });
    }
}
