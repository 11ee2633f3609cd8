//! Turning `AgentEvent`s into terminal lines: one line per tool call with its duration, retry
//! notices, budget notices. Streaming text is written by the REPL itself.

use std::collections::HashMap;
use std::time::Duration;

use crate::agent::AgentEvent;

/// How often a running child's line is repeated with its newest activity.
const CHILD_LINE_EVERY: Duration = Duration::from_secs(5);

/// Remembers each tool call's argument summary until its end event arrives, and when each
/// delegated child's line was last shown.
#[derive(Debug, Default)]
pub struct ProgressLines {
    pending: HashMap<String, String>,
    children: HashMap<usize, std::time::Instant>,
}

impl ProgressLines {
    /// The line to print for an event, if it deserves one.
    pub fn line_for(&mut self, event: &AgentEvent) -> Option<String> {
        match event {
            AgentEvent::ToolStart { id, summary, .. } => {
                self.pending.insert(id.clone(), summary.clone());
                None
            }
            AgentEvent::ToolEnd {
                id,
                name,
                duration,
                is_error,
            } => {
                let summary = self.pending.remove(id).unwrap_or_default();
                let mark = if *is_error { "✗" } else { "▸" };
                let sep = if summary.is_empty() { "" } else { " " };
                Some(format!(
                    "  {mark} {name}{sep}{summary}  ({})",
                    format_duration(*duration)
                ))
            }
            AgentEvent::Retrying {
                reason,
                attempt,
                delay,
                discarded_partial,
                ..
            } => {
                let note = if *discarded_partial {
                    " — the partial answer above is discarded"
                } else {
                    ""
                };
                Some(format!(
                    "  ↻ {reason}: retrying in {} (attempt {}){note}",
                    format_duration(*delay),
                    attempt + 1
                ))
            }
            AgentEvent::Switched {
                reason,
                message,
                discarded_partial,
            } => {
                let note = if *discarded_partial {
                    " — the partial answer above is discarded"
                } else {
                    ""
                };
                Some(format!("  ⇄ {reason}: {message}{note}"))
            }
            AgentEvent::Compacted {
                archived,
                used_fallback,
                note,
            } => Some(match (archived, used_fallback, note) {
                (0, _, Some(why)) => format!("  ⚠ compaction skipped: {why}"),
                (n, true, why) => format!(
                    "  ⇣ compacted {n} earlier messages with a summary built from them (the summary model failed: {}); originals stay searchable",
                    why.as_deref().unwrap_or("unknown error")
                ),
                (n, false, _) => format!(
                    "  ⇣ compacted {n} earlier messages into a summary; originals stay searchable"
                ),
            }),
            AgentEvent::BudgetExhausted { used } => Some(format!(
                "  ⚠ iteration budget spent after {used} model calls; asking for a summary"
            )),
            // One line per child: its activity at most every few seconds, then how it ended.
            AgentEvent::ChildProgress {
                task,
                goal,
                line,
                status,
            } => {
                let now = std::time::Instant::now();
                match status {
                    Some(status) => {
                        self.children.remove(task);
                        let mark = if *status == "completed" { "✓" } else { "✗" };
                        Some(format!("  ⑂ {mark} child {task} ({goal}) {status}: {line}"))
                    }
                    None => {
                        let due = self
                            .children
                            .get(task)
                            .is_none_or(|at| now.duration_since(*at) >= CHILD_LINE_EVERY);
                        due.then(|| {
                            self.children.insert(*task, now);
                            format!("  ⑂ child {task} ({goal}): {line}")
                        })
                    }
                }
            }
            _ => None,
        }
    }
}

/// `850 ms`, `1.2 s`, `2 m 05 s`.
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{:.1} s", d.as_secs_f64())
    } else {
        format!("{} m {:02} s", ms / 60_000, (ms / 1000) % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::FailoverReason;

    #[test]
    fn progress_lines_snapshot() {
        let mut p = ProgressLines::default();
        let events = [
            AgentEvent::ToolStart {
                id: "a".into(),
                name: "read_file".into(),
                summary: "hello.txt".into(),
            },
            AgentEvent::ToolEnd {
                id: "a".into(),
                name: "read_file".into(),
                duration: Duration::from_millis(3),
                is_error: false,
            },
            AgentEvent::ToolStart {
                id: "b".into(),
                name: "terminal".into(),
                summary: "cargo test".into(),
            },
            AgentEvent::ToolEnd {
                id: "b".into(),
                name: "terminal".into(),
                duration: Duration::from_millis(12_345),
                is_error: true,
            },
            AgentEvent::Retrying {
                reason: FailoverReason::RateLimit,
                attempt: 1,
                delay: Duration::from_millis(1500),
                discarded_partial: true,
                message: String::new(),
            },
            AgentEvent::BudgetExhausted { used: 90 },
            AgentEvent::TextDelta("ignored".into()),
        ];
        let lines: Vec<String> = events.iter().filter_map(|e| p.line_for(e)).collect();
        insta::assert_snapshot!(lines.join("\n"));
    }

    #[test]
    fn one_line_per_child_then_how_it_ended() {
        let mut p = ProgressLines::default();
        let event =
            |task: usize, line: &str, status: Option<&'static str>| AgentEvent::ChildProgress {
                task,
                goal: format!("goal {task}"),
                line: line.into(),
                status,
            };
        let lines: Vec<String> = [
            event(0, "read_file a.txt", None),
            event(1, "terminal ls", None),
            // Within a few seconds of its last line: not repeated.
            event(0, "read_file b.txt", None),
            event(0, "found it", Some("completed")),
            event(1, "no answer within 1.5s", Some("timeout")),
        ]
        .iter()
        .filter_map(|e| p.line_for(e))
        .collect();
        assert_eq!(
            lines,
            [
                "  ⑂ child 0 (goal 0): read_file a.txt",
                "  ⑂ child 1 (goal 1): terminal ls",
                "  ⑂ ✓ child 0 (goal 0) completed: found it",
                "  ⑂ ✗ child 1 (goal 1) timeout: no answer within 1.5s",
            ]
        );
    }

    #[test]
    fn durations() {
        assert_eq!(format_duration(Duration::from_millis(5)), "5 ms");
        assert_eq!(format_duration(Duration::from_millis(61_000)), "1 m 01 s");
    }
}
