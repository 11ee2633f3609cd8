//! Per-session counters kept by process-wide extensions (turns since the last memory write,
//! tool iterations since the last skill write). A gateway meets new sessions every day, and a
//! plain map would keep every one of them for the life of the process; this one keeps the
//! `MAX_SESSIONS` most recently touched and forgets the rest (a forgotten session starts
//! counting from zero again, which only delays its next review).

use std::collections::HashMap;

use crate::turn::admission::{Admission, Ticket};

/// Sessions remembered at once.
pub const MAX_SESSIONS: usize = 1024;

#[derive(Debug, Default)]
pub struct SessionCounts {
    /// session id → (count, tick of last touch).
    counts: HashMap<String, (u64, u64)>,
    tick: u64,
}

impl SessionCounts {
    /// The session's count (0 when unknown).
    pub fn get(&self, session: &str) -> u64 {
        self.counts.get(session).map_or(0, |(n, _)| *n)
    }

    /// Adds one and returns the new count.
    pub fn bump(&mut self, session: &str) -> u64 {
        let slot = self.touch(session);
        slot.0 += 1;
        slot.0
    }

    /// Starts the session's count again from zero.
    pub fn reset(&mut self, session: &str) {
        self.touch(session).0 = 0;
    }

    /// Once the session's count reached `interval`: a place in the background review line, and
    /// the count starts again. `None` when not due yet, or when the line is full (the count then
    /// stays, so the next turn asks again).
    pub fn take_due_review(
        &mut self,
        session: &str,
        interval: u64,
        line: &Admission,
    ) -> Option<Ticket> {
        if self.get(session) < interval {
            return None;
        }
        let Some(ticket) = line.admit() else {
            tracing::debug!(session, "background review deferred: reviews busy");
            return None;
        };
        self.reset(session);
        Some(ticket)
    }

    pub fn len(&self) -> usize {
        self.counts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    fn touch(&mut self, session: &str) -> &mut (u64, u64) {
        self.tick += 1;
        if !self.counts.contains_key(session) && self.counts.len() >= MAX_SESSIONS {
            let stalest = self
                .counts
                .iter()
                .min_by_key(|(_, (_, touched))| *touched)
                .map(|(k, _)| k.clone());
            if let Some(k) = stalest {
                self.counts.remove(&k);
            }
        }
        let slot = self.counts.entry(session.to_string()).or_insert((0, 0));
        slot.1 = self.tick;
        slot
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_bump_reset_and_forget_the_stalest_past_the_limit() {
        let mut c = SessionCounts::default();
        assert_eq!(c.get("a"), 0);
        assert_eq!(c.bump("a"), 1);
        assert_eq!(c.bump("a"), 2);
        c.reset("a");
        assert_eq!(c.get("a"), 0);
        c.bump("a");
        for i in 0..MAX_SESSIONS * 2 {
            c.bump(&format!("s{i}"));
            // "a" stays busy, so it is never the stalest.
            if i % 100 == 0 {
                c.bump("a");
            }
        }
        assert_eq!(c.len(), MAX_SESSIONS);
        assert!(c.get("a") > 1, "a busy session keeps its count");
        assert_eq!(c.get("s0"), 0, "the stalest were forgotten");
        assert_eq!(c.get(&format!("s{}", MAX_SESSIONS * 2 - 1)), 1);
    }
}
