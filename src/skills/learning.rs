//! The learning loop: a `TurnExtension` that counts tool iterations since the model last wrote a
//! skill, and after a turn that crossed `skills.creation_nudge_interval` (default 10) starts a
//! background review agent (same client, only the `skills` toolset, its own small budget, no one
//! to answer) that may create a skill or — preferably — patch an existing one.
//!
//! The review never blocks the user: it is spawned, not awaited. Front ends that are about to
//! exit call [`wait_for_reviews`] for a bounded time so a review that is nearly done can finish.
//!
//! The review's writes are restricted in `manage.rs`. It is recognised by its session id, which
//! is registered here while it runs ([`is_review_session`]); that keeps `ToolContext` unchanged.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::agent::session_counts::SessionCounts;
use crate::agent::{Agent, TurnExit, TurnExtension, TurnInfo, TurnOutcome, background};
use crate::config::Config;
use crate::llm::{Message, ToolCall};
use crate::tools::ToolOutput;

const REVIEW_PROMPT: &str = include_str!("../prompts/skill_review.md");
/// Iteration budget of one review.
const REVIEW_BUDGET: u32 = 16;
const DEFAULT_NUDGE_INTERVAL: u64 = 10;
/// How long an exiting front end waits for running reviews by default.
const DEFAULT_EXIT_WAIT: Duration = Duration::from_secs(5);

/// Review session id → (how many reviews use it, skills it has viewed).
/// Per review session: how many reviews use the id, and the skills it has viewed.
type ReviewMap = HashMap<String, (usize, BTreeSet<String>)>;

static REVIEWS: LazyLock<Mutex<ReviewMap>> = LazyLock::new(|| Mutex::new(HashMap::new()));
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// True while `session_id` belongs to a running background review.
pub fn is_review_session(session_id: &str) -> bool {
    lock_reviews().contains_key(session_id)
}

/// Remembers that a review viewed `skill` (read-before-write).
pub fn note_viewed(session_id: &str, skill: &str) {
    if let Some(entry) = lock_reviews().get_mut(session_id) {
        entry.1.insert(skill.to_string());
    }
}

/// Whether the review `session_id` has viewed `skill`.
pub fn has_viewed(session_id: &str, skill: &str) -> bool {
    lock_reviews()
        .get(session_id)
        .is_some_and(|(_, seen)| seen.contains(skill))
}

fn lock_reviews() -> std::sync::MutexGuard<'static, ReviewMap> {
    REVIEWS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Registers a review session for as long as it lives.
pub(crate) struct Registration(String);

impl Registration {
    pub(crate) fn new(session_id: &str) -> Self {
        lock_reviews().entry(session_id.to_string()).or_default().0 += 1;
        Registration(session_id.to_string())
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut reviews = lock_reviews();
        if let Some(entry) = reviews.get_mut(&self.0) {
            entry.0 -= 1;
            if entry.0 == 0 {
                reviews.remove(&self.0);
            }
        }
    }
}

/// Counts running reviews (for [`wait_for_reviews`]).
struct InFlight;

impl InFlight {
    fn enter() -> Self {
        IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
        InFlight
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Number of background reviews still running.
pub fn reviews_in_flight() -> usize {
    IN_FLIGHT.load(Ordering::SeqCst)
}

/// Waits until no review runs, at most `skills.review_exit_wait_seconds` (default 5 s).
/// Returns true when none is left running.
pub async fn wait_for_reviews(config: &Config) -> bool {
    let limit = skills_u64(config, "review_exit_wait_seconds")
        .map(Duration::from_secs)
        .unwrap_or(DEFAULT_EXIT_WAIT);
    let deadline = Instant::now() + limit;
    while reviews_in_flight() > 0 {
        if Instant::now() >= deadline {
            tracing::info!(
                running = reviews_in_flight(),
                "exiting with a skill review still running"
            );
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    true
}

fn skills_u64(config: &Config, key: &str) -> Option<u64> {
    config.raw.get("skills")?.get(key)?.as_u64()
}

/// `skills.creation_nudge_interval` (0 turns the loop off).
pub fn nudge_interval(config: &Config) -> u64 {
    skills_u64(config, "creation_nudge_interval").unwrap_or(DEFAULT_NUDGE_INTERVAL)
}

/// The review instructions (a user copy in `$HERMES_HOME/prompts/skill_review.md` wins).
fn review_prompt(config: &Config) -> String {
    std::fs::read_to_string(config.home.prompts_dir().join("skill_review.md"))
        .ok()
        .filter(|t| !t.trim().is_empty())
        .unwrap_or_else(|| REVIEW_PROMPT.to_string())
}

/// The extension registered in `cli::services()`.
#[derive(Default)]
pub struct SkillLearning {
    /// Tool iterations since the last skill write, per session.
    counts: Mutex<SessionCounts>,
}

impl SkillLearning {
    pub fn new() -> Self {
        Self::default()
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, SessionCounts> {
        self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl TurnExtension for SkillLearning {
    fn name(&self) -> &'static str {
        "skills-learning"
    }

    fn after_iteration(&self, info: &TurnInfo, calls: &[ToolCall], _outputs: &[ToolOutput]) {
        if info.ephemeral {
            return;
        }
        let mut counts = self.counts();
        if calls.iter().any(|c| c.name == "skill_manage") {
            counts.reset(&info.session_id);
        } else {
            counts.bump(&info.session_id);
        }
    }

    fn after_turn(&self, info: &TurnInfo, history: &[Message], outcome: &TurnOutcome) {
        if info.ephemeral || outcome.exit == TurnExit::Interrupted {
            return;
        }
        let interval = nudge_interval(&info.services.config);
        // The index is in the frozen prompt exactly when a skills tool is offered
        // (`prompt_index`'s contract): no skills tools, no learning loop.
        if interval == 0 || !info.system_prompt.contains(crate::skills::INDEX_MARKER) {
            return;
        }
        let Some(ticket) = self.counts().take_due_review(&info.session_id, interval) else {
            return;
        };
        spawn_review(info.clone(), history.to_vec(), ticket);
    }
}

fn spawn_review(info: TurnInfo, history: Vec<Message>, ticket: background::Ticket<'static>) {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        tracing::warn!("no async runtime: skill review skipped");
        return;
    };
    let in_flight = InFlight::enter();
    handle.spawn(async move {
        let _in_flight = in_flight;
        let _slot = ticket.run_slot().await;
        let cwd = std::env::current_dir().unwrap_or_else(|_| std::path::PathBuf::from("."));
        let prompt = review_prompt(&info.services.config);
        let mut agent = match Agent::ephemeral_from(&info, history, &["skills".to_string()], REVIEW_BUDGET, cwd) {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!(error = %e, "cannot start the skill review");
                return;
            }
        };
        let _registration = Registration::new(agent.session_id());
        // Nobody watches the review: its events go nowhere.
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        drop(rx);
        let cancel = CancellationToken::new();
        tracing::info!(session = %info.session_id, "background skill review started");
        match agent.run_turn(&prompt, &tx, &cancel).await {
            Ok(outcome) => tracing::info!(
                session = %info.session_id,
                calls = outcome.api_calls,
                answer = %crate::util::truncate_chars(&outcome.text, 200),
                "background skill review finished"
            ),
            Err(e) => tracing::warn!(session = %info.session_id, error = %e, "background skill review failed"),
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registrations_track_views_and_nest() {
        let a = Registration::new("s-fork-test");
        let b = Registration::new("s-fork-test");
        assert!(is_review_session("s-fork-test"));
        note_viewed("s-fork-test", "git-workflow");
        assert!(has_viewed("s-fork-test", "git-workflow"));
        assert!(!has_viewed("s-fork-test", "other"));
        drop(a);
        assert!(is_review_session("s-fork-test"));
        drop(b);
        assert!(!is_review_session("s-fork-test"));
        // Views are not recorded for sessions that are not reviews.
        note_viewed("plain", "x");
        assert!(!has_viewed("plain", "x"));
    }
}
