//! `LoopGuard`: notices a model going in circles within one turn and says so — first with a note
//! attached to the tool result, then (when hard stops are on) by ending the turn.
//!
//! Signals (counts from config `tool_loop_guardrails`, Python Hermes' keys and defaults):
//! the same call failing again (`exact_failure`), one tool failing over and over
//! (`same_tool_failure`), an identical call returning an identical result (`idempotent_no_progress`),
//! and two calls alternating with unchanged results (A-B-A-B ping-pong).

use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use serde_json::Value;

use crate::config::file::LoopGuardFile;
use crate::llm::ToolCall;
use crate::tools::ToolOutput;

/// Thresholds for one kind of signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    pub exact_failure: u32,
    pub same_tool_failure: u32,
    pub idempotent_no_progress: u32,
}

/// `tool_loop_guardrails` settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoopGuardConfig {
    pub warnings_enabled: bool,
    pub hard_stop_enabled: bool,
    pub warn_after: Thresholds,
    pub hard_stop_after: Thresholds,
    /// Full A-B cycles before a ping-pong counts.
    pub ping_pong_cycles: u32,
}

impl LoopGuardConfig {
    /// From the typed `tool_loop_guardrails` section. `hard_stop_default` applies when the key
    /// is absent: on for runs with no one watching (`-z`, cron, gateway), off in the REPL.
    pub fn from_file(section: &LoopGuardFile, hard_stop_default: bool) -> Self {
        let count = |v: Option<u32>, default: u32| v.filter(|v| *v > 0).unwrap_or(default);
        let (w, h) = (&section.warn_after, &section.hard_stop_after);
        LoopGuardConfig {
            warnings_enabled: section.warnings_enabled.unwrap_or(true),
            hard_stop_enabled: section.hard_stop_enabled.unwrap_or(hard_stop_default),
            warn_after: Thresholds {
                exact_failure: count(w.exact_failure, 2),
                same_tool_failure: count(w.same_tool_failure, 3),
                idempotent_no_progress: count(w.idempotent_no_progress, 2),
            },
            hard_stop_after: Thresholds {
                exact_failure: count(h.exact_failure, 5),
                same_tool_failure: count(h.same_tool_failure, 8),
                idempotent_no_progress: count(h.idempotent_no_progress, 5),
            },
            ping_pong_cycles: 3,
        }
    }
}

/// What the loop should do after a batch of tool calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoopVerdict {
    Continue,
    /// Append this note to the last tool result so the model changes approach.
    Warn(String),
    /// End the turn with this message.
    Stop(String),
}

/// Per-turn memory of calls and results.
#[derive(Debug)]
pub struct LoopGuard {
    config: LoopGuardConfig,
    exact_failures: HashMap<u64, u32>,
    tool_failure_streak: HashMap<String, u32>,
    identical_results: HashMap<(u64, u64), u32>,
    /// Signature (call, result) of every call so far, for ping-pong detection.
    recent: Vec<(u64, u64)>,
}

fn hash_of(parts: &[&str]) -> u64 {
    let mut h = DefaultHasher::new();
    parts.hash(&mut h);
    h.finish()
}

/// A call's identity: its name and its arguments with JSON formatting differences removed.
fn call_key(call: &ToolCall) -> u64 {
    let args = serde_json::from_str::<Value>(&call.arguments)
        .map(|v| v.to_string())
        .unwrap_or_else(|_| call.arguments.clone());
    hash_of(&[&call.name, &args])
}

impl LoopGuard {
    pub fn new(config: LoopGuardConfig) -> Self {
        LoopGuard {
            config,
            exact_failures: HashMap::new(),
            tool_failure_streak: HashMap::new(),
            identical_results: HashMap::new(),
            recent: Vec::new(),
        }
    }

    /// Records one response's calls and their outputs (same order) and judges the turn so far.
    pub fn observe(&mut self, calls: &[ToolCall], outputs: &[ToolOutput]) -> LoopVerdict {
        let mut worst = LoopVerdict::Continue;
        for (call, output) in calls.iter().zip(outputs) {
            let key = call_key(call);
            let result = hash_of(&[&output.content]);
            self.recent.push((key, result));
            let verdict = self.judge_one(call, key, result, output.is_error);
            worst = more_severe(worst, verdict);
        }
        more_severe(worst, self.ping_pong())
    }

    fn judge_one(&mut self, call: &ToolCall, key: u64, result: u64, failed: bool) -> LoopVerdict {
        let (warn, stop) = (self.config.warn_after, self.config.hard_stop_after);
        let mut verdict = LoopVerdict::Continue;
        if failed {
            let n = bump(&mut self.exact_failures, key);
            verdict = more_severe(
                verdict,
                self.grade(
                    n,
                    warn.exact_failure,
                    stop.exact_failure,
                    &format!("the identical {} call has now failed {n} times", call.name),
                ),
            );
            let streak = bump(&mut self.tool_failure_streak, call.name.clone());
            verdict = more_severe(
                verdict,
                self.grade(
                    streak,
                    warn.same_tool_failure,
                    stop.same_tool_failure,
                    &format!("{} has failed {streak} times in a row", call.name),
                ),
            );
        } else {
            self.tool_failure_streak.remove(&call.name);
        }
        let n = bump(&mut self.identical_results, (key, result));
        if n >= 2 {
            verdict = more_severe(
                verdict,
                self.grade(
                    n,
                    warn.idempotent_no_progress,
                    stop.idempotent_no_progress,
                    &format!(
                        "the identical {} call returned the identical result {n} times",
                        call.name
                    ),
                ),
            );
        }
        verdict
    }

    /// A-B-A-B...: the last `2 × cycles` signatures alternate between two distinct ones.
    fn ping_pong(&self) -> LoopVerdict {
        let needed = 2 * self.config.ping_pong_cycles as usize;
        if self.recent.len() < needed {
            return LoopVerdict::Continue;
        }
        let tail = &self.recent[self.recent.len() - needed..];
        let (a, b) = (tail[0], tail[1]);
        let alternating = a != b
            && tail
                .iter()
                .enumerate()
                .all(|(i, s)| *s == if i % 2 == 0 { a } else { b });
        if !alternating {
            return LoopVerdict::Continue;
        }
        let what = format!(
            "two calls have alternated {} times with unchanged results (ping-pong)",
            self.config.ping_pong_cycles
        );
        if self.config.hard_stop_enabled {
            LoopVerdict::Stop(stop_message(&what))
        } else if self.config.warnings_enabled {
            LoopVerdict::Warn(warn_message(&what))
        } else {
            LoopVerdict::Continue
        }
    }

    fn grade(&self, n: u32, warn_at: u32, stop_at: u32, what: &str) -> LoopVerdict {
        if self.config.hard_stop_enabled && n >= stop_at {
            LoopVerdict::Stop(stop_message(what))
        } else if self.config.warnings_enabled && n >= warn_at {
            LoopVerdict::Warn(warn_message(what))
        } else {
            LoopVerdict::Continue
        }
    }
}

fn bump<K: Eq + Hash>(map: &mut HashMap<K, u32>, key: K) -> u32 {
    let n = map.entry(key).or_insert(0);
    *n += 1;
    *n
}

fn more_severe(a: LoopVerdict, b: LoopVerdict) -> LoopVerdict {
    match (&a, &b) {
        (LoopVerdict::Stop(_), _) => a,
        (_, LoopVerdict::Stop(_)) => b,
        (LoopVerdict::Warn(_), _) => a,
        (_, LoopVerdict::Warn(_)) => b,
        _ => a,
    }
}

fn warn_message(what: &str) -> String {
    format!(
        "[hermes loop guard: {what}. Repeating it will not help: change the arguments, try a different approach, or explain to the user what is blocking you.]"
    )
}

fn stop_message(what: &str) -> String {
    format!(
        "Stopped this turn because the agent was going in circles: {what}. The conversation is kept; rephrase the request or give more guidance (limits: tool_loop_guardrails in config.yaml)."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, args: &str) -> ToolCall {
        ToolCall {
            id: "x".into(),
            name: name.into(),
            arguments: args.into(),
        }
    }

    fn out(text: &str, is_error: bool) -> ToolOutput {
        ToolOutput {
            content: text.into(),
            is_error,
            fatal: false,
        }
    }

    fn guard(hard: bool) -> LoopGuard {
        LoopGuard::new(LoopGuardConfig::from_file(&LoopGuardFile::default(), hard))
    }

    #[test]
    fn repeated_failure_warns_then_stops() {
        let mut g = guard(true);
        let c = call("read_file", r#"{"path": "a"}"#);
        assert_eq!(
            g.observe(std::slice::from_ref(&c), &[out("nope", true)]),
            LoopVerdict::Continue
        );
        assert!(matches!(
            g.observe(std::slice::from_ref(&c), &[out("nope", true)]),
            LoopVerdict::Warn(_)
        ));
        for _ in 0..2 {
            assert!(matches!(
                g.observe(std::slice::from_ref(&c), &[out("nope", true)]),
                LoopVerdict::Warn(_)
            ));
        }
        // Formatting differences in the arguments do not hide the repetition.
        let same = call("read_file", r#"{"path":"a"}"#);
        let v = g.observe(&[same], &[out("nope", true)]);
        assert!(
            matches!(&v, LoopVerdict::Stop(m) if m.contains("failed 5 times")),
            "{v:?}"
        );
    }

    #[test]
    fn without_hard_stop_it_only_warns() {
        let mut g = guard(false);
        let c = call("terminal", r#"{"command": "make"}"#);
        for _ in 0..10 {
            let v = g.observe(std::slice::from_ref(&c), &[out("error", true)]);
            assert!(!matches!(v, LoopVerdict::Stop(_)));
        }
    }

    #[test]
    fn progress_is_not_a_loop() {
        let mut g = guard(true);
        for i in 0..20 {
            let c = call("read_file", &format!(r#"{{"path": "f{i}"}}"#));
            assert_eq!(
                g.observe(&[c], &[out(&format!("content {i}"), false)]),
                LoopVerdict::Continue
            );
        }
    }

    #[test]
    fn ping_pong_is_detected() {
        let mut g = guard(true);
        let a = call("read_file", r#"{"path": "a"}"#);
        let b = call("read_file", r#"{"path": "b"}"#);
        let mut verdicts = Vec::new();
        for _ in 0..3 {
            verdicts.push(g.observe(std::slice::from_ref(&a), &[out("A", false)]));
            verdicts.push(g.observe(std::slice::from_ref(&b), &[out("B", false)]));
        }
        assert!(
            matches!(verdicts.last(), Some(LoopVerdict::Stop(m)) if m.contains("ping-pong")),
            "{verdicts:?}"
        );
    }

    #[test]
    fn config_overrides_defaults() {
        let file: LoopGuardFile = serde_saphyr::from_str(
            "hard_stop_enabled: true\nhard_stop_after:\n  exact_failure: 2\n",
        )
        .unwrap();
        let mut g = LoopGuard::new(LoopGuardConfig::from_file(&file, false));
        let c = call("x", "{}");
        g.observe(std::slice::from_ref(&c), &[out("e", true)]);
        assert!(matches!(
            g.observe(&[c], &[out("e", true)]),
            LoopVerdict::Stop(_)
        ));
    }
}
