//! Bounded capture of a child process's output, and process-group termination.
//!
//! `Capture` keeps the first and the last `limit` bytes of a stream however much is written
//! (a runaway `yes` cannot exhaust memory) and renders a head + tail view within a byte budget.
//! `signal_group` / `GroupGuard` make sure a command's whole process group — grandchildren
//! included — dies on timeout, interrupt, or when the tool future is dropped.

use std::collections::VecDeque;
use std::time::Duration;

/// Time between SIGTERM and SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_millis(1500);

/// First and last `limit` bytes of a stream, plus its total length.
#[derive(Debug)]
pub struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: usize,
    limit: usize,
}

impl Capture {
    pub fn new(limit: usize) -> Self {
        Capture {
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
            limit: limit.max(1),
        }
    }

    pub fn total(&self) -> usize {
        self.total
    }

    pub fn push(&mut self, mut data: &[u8]) {
        self.total += data.len();
        let room = self.limit.saturating_sub(self.head.len());
        let into_head = room.min(data.len());
        self.head.extend_from_slice(&data[..into_head]);
        data = &data[into_head..];
        if data.is_empty() {
            return;
        }
        if data.len() >= self.limit {
            self.tail.clear();
            data = &data[data.len() - self.limit..];
        }
        self.tail.extend(data);
        let excess = self.tail.len().saturating_sub(self.limit);
        self.tail.drain(..excess);
    }

    /// The last `n` bytes of the stream (`n` ≤ what is retained).
    fn last_bytes(&self, n: usize) -> Vec<u8> {
        if self.tail.len() >= n {
            return self
                .tail
                .iter()
                .skip(self.tail.len() - n)
                .copied()
                .collect();
        }
        // The tail directly follows the head here (nothing was dropped between them).
        let from_head = n - self.tail.len();
        let mut out = self.head[self.head.len().saturating_sub(from_head)..].to_vec();
        out.extend(self.tail.iter());
        out
    }

    /// Text of at most about `budget` bytes: all of it, or head + marker + tail.
    /// Returns the text and whether invalid UTF-8 (or NUL bytes) had to be replaced.
    pub fn render(&self, budget: usize) -> (String, bool) {
        if self.total <= budget && self.tail.is_empty() {
            return decode(&self.head);
        }
        let head_n = floor_boundary(&self.head, (budget * 7 / 10).min(self.head.len()));
        let tail_bytes = self.last_bytes((budget * 2 / 10).min(self.total));
        let tail_start = tail_bytes
            .iter()
            .position(|&b| !is_continuation(b))
            .unwrap_or(tail_bytes.len());
        let (head, lossy_head) = decode(&self.head[..head_n]);
        let (tail, lossy_tail) = decode(&tail_bytes[tail_start..]);
        let omitted = self.total - head_n - (tail_bytes.len() - tail_start);
        (
            format!("{head}\n[... {omitted} bytes omitted ...]\n{tail}"),
            lossy_head || lossy_tail,
        )
    }
}

fn is_continuation(b: u8) -> bool {
    b & 0b1100_0000 == 0b1000_0000
}

/// Largest cut ≤ `at` that does not split a UTF-8 character.
fn floor_boundary(bytes: &[u8], mut at: usize) -> usize {
    while at > 0 && at < bytes.len() && is_continuation(bytes[at]) {
        at -= 1;
    }
    at
}

fn decode(bytes: &[u8]) -> (String, bool) {
    let (text, lossy) = match std::str::from_utf8(bytes) {
        Ok(s) => (s.to_string(), false),
        Err(_) => (String::from_utf8_lossy(bytes).into_owned(), true),
    };
    if text.contains('\0') {
        (text.replace('\0', "\u{FFFD}"), true)
    } else {
        (text, lossy)
    }
}

/// Splits a byte budget between stdout and stderr: stderr keeps at least a quarter when both
/// are large, and whatever stdout does not need.
pub fn split_budget(out_len: usize, err_len: usize, cap: usize) -> (usize, usize) {
    if out_len + err_len <= cap {
        return (out_len, err_len);
    }
    let err_budget = err_len.min((cap / 4).max(cap.saturating_sub(out_len)));
    (cap - err_budget, err_budget)
}

/// Sends `signal` to every process in group `pgid`. Errors (group already gone) are ignored.
pub fn signal_group(pgid: i32, signal: i32) {
    if pgid <= 1 {
        // Never signal "every process" (0 / -1 semantics) or init.
        return;
    }
    // SAFETY: killpg has no memory-safety preconditions; a stale id only yields ESRCH.
    unsafe {
        libc::killpg(pgid, signal);
    }
}

/// True while any process of group `pgid` exists.
pub fn group_alive(pgid: i32) -> bool {
    if pgid <= 1 {
        return false;
    }
    // SAFETY: signal 0 performs only the existence and permission check.
    unsafe { libc::killpg(pgid, 0) == 0 }
}

/// Kills the process group when dropped while armed: covers the tool future being dropped
/// (the turn was interrupted) before it could clean up itself.
pub struct GroupGuard {
    pgid: i32,
    armed: bool,
    tasks: Vec<tokio::task::AbortHandle>,
}

impl GroupGuard {
    pub fn new(pgid: i32) -> Self {
        GroupGuard {
            pgid,
            armed: true,
            tasks: Vec::new(),
        }
    }

    /// Tasks (output readers) to abort with the group.
    pub fn own(&mut self, task: tokio::task::AbortHandle) {
        self.tasks.push(task);
    }

    /// The command finished normally: its group is not signalled (the backend's cgroup or pid
    /// namespace, where there is one, still ends what the command left running).
    pub fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
        if !self.armed {
            return;
        }
        let pgid = self.pgid;
        signal_group(pgid, libc::SIGTERM);
        // Drop cannot wait; a short-lived thread finishes the job after the grace period.
        let _ = std::thread::Builder::new()
            .name("hermes-killpg".into())
            .spawn(move || {
                std::thread::sleep(KILL_GRACE);
                if group_alive(pgid) {
                    signal_group(pgid, libc::SIGKILL);
                }
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_is_kept_whole() {
        let mut c = Capture::new(100);
        c.push(b"hello\n");
        c.push(b"world\n");
        assert_eq!(c.render(100), ("hello\nworld\n".to_string(), false));
    }

    #[test]
    fn large_output_keeps_head_and_tail_in_bounded_memory() {
        let mut c = Capture::new(1000);
        for i in 0..100_000 {
            c.push(format!("line {i}\n").as_bytes());
        }
        assert!(c.head.len() <= 1000 && c.tail.len() <= 1000);
        let (text, lossy) = c.render(1000);
        assert!(!lossy);
        assert!(text.starts_with("line 0\nline 1\n"));
        assert!(text.ends_with("line 99999\n"));
        assert!(text.contains("bytes omitted"));
        assert!(text.len() < 1100, "{}", text.len());
    }

    #[test]
    fn cuts_never_split_characters_and_binary_is_flagged() {
        let mut c = Capture::new(64);
        c.push("é".repeat(200).as_bytes());
        let (text, lossy) = c.render(50);
        assert!(!lossy, "{text}");
        assert!(!text.contains('\u{FFFD}'));

        let mut c = Capture::new(64);
        c.push(b"\xff\xfe\x00binary");
        let (text, lossy) = c.render(64);
        assert!(lossy);
        assert!(text.ends_with("binary"));
        assert!(!text.contains('\0'));
    }

    #[test]
    fn budget_split_favours_the_bigger_stream_but_keeps_stderr() {
        assert_eq!(split_budget(10, 10, 100), (10, 10));
        assert_eq!(split_budget(1000, 10, 100), (90, 10));
        assert_eq!(split_budget(1000, 1000, 100), (75, 25));
        assert_eq!(split_budget(10, 1000, 100), (10, 90));
    }

    #[test]
    fn never_signals_special_groups() {
        signal_group(0, 0);
        signal_group(1, 0);
        assert!(!group_alive(0));
        assert!(!group_alive(-1));
    }
}
