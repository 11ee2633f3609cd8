//! The runner's side of the two rules every adapter follows (`platform::PlatformAdapter`):
//! `IdSpace` keeps update ids unique across restarts (an adapter whose ids restart names their
//! epoch; each new epoch's ids are shifted above every id recorded for the platform, and its
//! cursor starts afresh), and `EmptyBatches` backs off from a `receive` that returns empty
//! batches without waiting, so a broken adapter cannot spin a core.

use std::sync::Arc;
use std::time::Duration;

use crate::gateway::platform::{MessageEvent, PlatformAdapter};
use crate::sessions::{SessionStore, StoreError};

/// Where one platform's update ids live in state.db.
pub(crate) struct IdSpace {
    platform: String,
    /// The epoch entered last (`None`: ids are unique by themselves).
    epoch: Option<String>,
    entered: bool,
    /// Added to every id of the current epoch before it is recorded.
    base: i64,
    warned_below_cursor: bool,
}

impl IdSpace {
    pub(crate) fn new(platform: &str) -> Self {
        IdSpace {
            platform: platform.to_string(),
            epoch: None,
            entered: false,
            base: 0,
            warned_below_cursor: false,
        }
    }

    /// Called before every `receive`: enters the adapter's epoch when it changed. `Ok(true)`
    /// means the ids restarted and the cursor must start afresh (state.db's is already gone).
    pub(crate) async fn sync(
        &mut self,
        adapter: &dyn PlatformAdapter,
        store: &Arc<SessionStore>,
    ) -> Result<bool, StoreError> {
        let current = adapter.id_epoch();
        if self.entered && current == self.epoch {
            return Ok(false);
        }
        let Some(epoch) = current.clone() else {
            // Ids unique by themselves: stored as they come.
            self.epoch = None;
            self.entered = true;
            self.base = 0;
            return Ok(false);
        };
        let (p, e) = (self.platform.clone(), epoch.clone());
        let (base, changed) = store
            .call(move |s| s.gateway_enter_id_epoch(&p, &e))
            .await?;
        if changed {
            tracing::info!(platform = %self.platform, %epoch, base,
                "the platform's update ids restarted (new id epoch); the cursor starts afresh");
        }
        self.epoch = current;
        self.entered = true;
        self.base = base;
        Ok(changed)
    }

    /// Moves `event`'s id into the platform's id space (before it is recorded). `cursor` is the
    /// one `receive` was given. False when the id cannot be placed (it would overflow).
    pub(crate) fn place(&mut self, event: &mut MessageEvent, cursor: Option<i64>) -> bool {
        let raw = event.platform_update_id;
        if self.epoch.is_none()
            && let Some(c) = cursor
            && raw < c
            && !self.warned_below_cursor
        {
            self.warned_below_cursor = true;
            tracing::warn!(platform = %self.platform, update_id = raw, cursor = c,
                "update id below the cursor: if this platform's ids restart, its adapter must \
                 name their epoch (PlatformAdapter::id_epoch, rule 1) or messages are lost");
        }
        match self.base.checked_add(raw) {
            Some(id) => {
                event.platform_update_id = id;
                true
            }
            None => {
                tracing::error!(platform = %self.platform, update_id = raw, base = self.base,
                    "update id out of range; message skipped");
                false
            }
        }
    }
}

/// A batch returned sooner than this without a message did not wait (rule 2).
const NO_WAIT: Duration = Duration::from_millis(20);
/// Immediate empty batches tolerated in a row before backing off.
const TOLERATED: u32 = 3;
const FIRST_DELAY: Duration = Duration::from_millis(100);
const MAX_DELAY: Duration = Duration::from_secs(5);

/// Counts empty batches returned without a wait.
#[derive(Default)]
pub(crate) struct EmptyBatches {
    streak: u32,
}

impl EmptyBatches {
    /// After each successful `receive`: how long to wait before the next one, if at all.
    pub(crate) fn after(
        &mut self,
        platform: &str,
        empty: bool,
        took: Duration,
    ) -> Option<Duration> {
        if !empty || took >= NO_WAIT {
            self.streak = 0;
            return None;
        }
        self.streak += 1;
        if self.streak < TOLERATED {
            return None;
        }
        if self.streak == TOLERATED {
            tracing::warn!(%platform,
                "receive returned empty batches without waiting (PlatformAdapter rule 2: \
                 receive waits for messages); backing off");
        }
        let doublings = (self.streak - TOLERATED).min(16);
        Some((FIRST_DELAY * 2u32.pow(doublings)).min(MAX_DELAY))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn immediate_empty_batches_back_off_and_waiting_ones_do_not() {
        let mut e = EmptyBatches::default();
        let fast = Duration::from_millis(1);
        assert_eq!(e.after("p", true, fast), None);
        assert_eq!(e.after("p", true, fast), None);
        assert_eq!(e.after("p", true, fast), Some(FIRST_DELAY));
        assert_eq!(e.after("p", true, fast), Some(FIRST_DELAY * 2));
        for _ in 0..20 {
            e.after("p", true, fast);
        }
        assert_eq!(e.after("p", true, fast), Some(MAX_DELAY));
        // A message or a real wait ends the streak.
        assert_eq!(e.after("p", false, fast), None);
        assert_eq!(e.after("p", true, fast), None);
        let mut w = EmptyBatches::default();
        for _ in 0..10 {
            assert_eq!(w.after("p", true, Duration::from_millis(50)), None);
        }
    }

    #[test]
    fn ids_are_placed_above_the_base() {
        let mut ids = IdSpace::new("p");
        ids.base = 100;
        let mut event = MessageEvent {
            platform_update_id: 3,
            ..MessageEvent::default()
        };
        assert!(ids.place(&mut event, Some(2)));
        assert_eq!(event.platform_update_id, 103);
        ids.base = i64::MAX;
        assert!(!ids.place(&mut event, None));
    }
}
