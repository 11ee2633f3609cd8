//! `ContextCompressor`: keeps a long conversation inside the model's context window without
//! losing it.
//!
//! When the prompt grows past a threshold of the window, the middle of the history is replaced by
//! a structured summary written by the (auxiliary) model: the first turns (the head) and a
//! token-sized tail stay verbatim, tool calls stay next to their results, the last user message
//! is always kept. Later compactions update the earlier summary instead of stacking summaries.
//! If the summary call fails, a deterministic summary is built from the messages themselves.
//! Nothing is deleted: the caller archives the replaced rows (`SessionStore::archive_and_compact`)
//! where session_search still finds them.
//!
//! Anti-thrash: automatic compaction stops after two ineffective compactions in a row (the real
//! prompt count stayed over the threshold, or there was nothing to compact) until a prompt fits
//! again; after a failed summary call the model is not asked again for 10 minutes, and two
//! fallback summaries in a row pause automatic compaction for that time. A manual `/compress`
//! clears all of that; an overflow error compacts regardless.
//!
//! This file owns the configuration, the trigger and the orchestration; `select` picks what is
//! kept, `prune` shortens old tool results, `summary` writes the summary, `persist` makes a
//! compaction durable in state.db (`ContextCompressor::compress_session`).

mod config;
#[cfg(test)]
mod config_tests;
mod persist;
mod prune;
mod select;
mod summary;
#[cfg(test)]
mod tests;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::llm::{LlmClient, Message, Role, ToolSchema, Usage};
use crate::sessions::store::CompressionFailure;

pub use config::{CompressorConfig, DEFAULT_CONTEXT_LENGTH, known_context_length};
pub use persist::CompactError;
pub use summary::{SUMMARY_END, SUMMARY_PREFIX};

/// After a failed summary call, automatic compactions use the fallback summary this long.
const SUMMARY_FAILURE_COOLDOWN: Duration = Duration::from_secs(600);
/// Anti-thrash limits.
const MAX_INEFFECTIVE: u32 = 2;
const MAX_FALLBACK_STREAK: u32 = 2;
/// Rough token overhead of one message's framing (role, separators).
const MESSAGE_OVERHEAD_TOKENS: u64 = 4;

/// Rough token count of one message (bytes / 4: a fair English average that over- rather than
/// under-counts CJK text).
pub fn estimate_message_tokens(m: &Message) -> u64 {
    let mut bytes = m.wire_content().map_or(0, str::len);
    for c in &m.tool_calls {
        bytes += c.id.len() + c.name.len() + c.arguments.len() + 16;
    }
    bytes += m.tool_call_id.as_deref().map_or(0, str::len);
    (bytes as u64).div_ceil(4) + MESSAGE_OVERHEAD_TOKENS
}

/// The prompt tokens a provider reported. Our `Usage` follows OpenAI (input includes cached
/// tokens); a provider that reports cache tokens apart (Anthropic) shows more cache than input.
pub fn prompt_tokens(usage: &Usage) -> u64 {
    let cached = usage.cache_read_tokens + usage.cache_write_tokens;
    if cached > usage.input_tokens {
        usage.input_tokens + cached
    } else {
        usage.input_tokens
    }
}

/// Why a compaction runs; decides which guards apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger<'a> {
    /// The prompt passed the threshold (`should_compress` said yes).
    Threshold,
    /// The provider rejected the request as too large; runs even when anti-thrash would block.
    Overflow,
    /// `/compress [focus]`: clears the anti-thrash state and the summary-failure cooldown.
    Manual { focus: Option<&'a str> },
}

/// The outcome of one compaction. When `archived == 0` nothing changed (`messages` is the input).
#[derive(Debug, Clone, PartialEq)]
pub struct Compaction {
    /// The new history: head, summary (standalone or merged into the next user message), tail.
    pub messages: Vec<Message>,
    /// The summary text (without our prefix and end marker).
    pub summary: String,
    /// The summary was built from the messages because the model call failed or is cooling down.
    pub used_fallback: bool,
    /// Why the model summary was not used (redacted), to tell the user.
    pub summary_error: Option<String>,
    /// How many input messages are no longer in `messages` verbatim.
    pub archived: usize,
    /// Index in the input where the verbatim tail starts (`input.len()` when the tail is empty).
    pub kept_from: usize,
}

impl Compaction {
    /// Nothing was compacted.
    pub fn is_noop(&self) -> bool {
        self.archived == 0
    }
}

/// Per-session compressor state (one per `Agent`).
#[derive(Debug)]
pub struct ContextCompressor {
    cfg: CompressorConfig,
    threshold_tokens: u64,
    compactions: u32,
    ineffective: u32,
    fallback_streak: u32,
    /// Wall-clock time (it is persisted across restarts) until which the summary model rests.
    summary_cooldown_until: Option<SystemTime>,
    last_summary_error: Option<String>,
    /// A compaction happened and no real prompt count has been seen since.
    awaiting_check: bool,
    last_prompt_tokens: u64,
}

impl ContextCompressor {
    pub fn new(cfg: CompressorConfig) -> Self {
        ContextCompressor {
            threshold_tokens: cfg.threshold_tokens(),
            cfg,
            compactions: 0,
            ineffective: 0,
            fallback_streak: 0,
            summary_cooldown_until: None,
            last_summary_error: None,
            awaiting_check: false,
            last_prompt_tokens: 0,
        }
    }

    pub fn config(&self) -> &CompressorConfig {
        &self.cfg
    }

    pub fn threshold_tokens(&self) -> u64 {
        self.threshold_tokens
    }

    /// Compactions done by this compressor.
    pub fn compactions(&self) -> u32 {
        self.compactions
    }

    /// The last prompt size the provider reported (0 before the first response).
    pub fn last_prompt_tokens(&self) -> u64 {
        self.last_prompt_tokens
    }

    /// The summary-failure state to persist after a compaction
    /// (`SessionStore::set_compression_failure`).
    pub fn failure_state(&self) -> CompressionFailure {
        CompressionFailure {
            cooldown_until: self
                .summary_cooldown_until
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map(|d| d.as_secs_f64()),
            error: self.last_summary_error.clone(),
            fallback_streak: self.fallback_streak,
        }
    }

    /// Restores what [`Self::failure_state`] saved (on resume), so a restart within the cooldown
    /// does not ask a summary model that just failed.
    pub fn restore_failure_state(&mut self, state: &CompressionFailure) {
        // A corrupt or far-future value must not silence the summary model for good.
        let latest = SystemTime::now() + SUMMARY_FAILURE_COOLDOWN;
        self.summary_cooldown_until = state
            .cooldown_until
            .and_then(|t| Duration::try_from_secs_f64(t).ok())
            .and_then(|d| UNIX_EPOCH.checked_add(d))
            .map(|t| t.min(latest));
        self.last_summary_error = state.error.clone();
        self.fallback_streak = state.fallback_streak;
    }

    /// Automatic compaction is paused by the anti-thrash guard.
    /// Repeated fallbacks only block while the summary model rests, so that automatic
    /// compaction resumes (and retries the model) once the cooldown is over.
    pub fn is_blocked(&self) -> bool {
        let resting = self
            .summary_cooldown_until
            .is_some_and(|until| SystemTime::now() < until);
        self.ineffective >= MAX_INEFFECTIVE
            || (self.fallback_streak >= MAX_FALLBACK_STREAK && resting)
    }

    /// Whether a prompt of `prompt_tokens` (the provider's count, or [`Self::estimate_tokens`]
    /// before a call) should be compacted first.
    pub fn should_compress(&self, prompt_tokens: u64) -> bool {
        self.cfg.enabled && !self.is_blocked() && prompt_tokens >= self.threshold_tokens
    }

    /// Rough size of a request: system prompt, messages and tool schemas, bytes / 4.
    pub fn estimate_tokens(messages: &[Message], system: &str, tools: &[ToolSchema]) -> u64 {
        let schemas: usize = tools
            .iter()
            .map(|t| t.name.len() + t.description.len() + t.parameters.to_string().len() + 32)
            .sum();
        let fixed = ((system.len() + schemas) as u64).div_ceil(4);
        fixed + messages.iter().map(estimate_message_tokens).sum::<u64>()
    }

    /// Records the real prompt size of a response: under the threshold clears the ineffective
    /// count; still over it right after a compaction counts that compaction as ineffective.
    pub fn update_from_response(&mut self, usage: &Usage) {
        let prompt = prompt_tokens(usage);
        if prompt == 0 {
            return;
        }
        self.last_prompt_tokens = prompt;
        if prompt < self.threshold_tokens {
            self.ineffective = 0;
        } else if self.awaiting_check {
            self.ineffective += 1;
        }
        self.awaiting_check = false;
    }

    /// Compacts `history`. `model` is the main model; `auxiliary.compression.model` replaces it
    /// for the summary when configured. Never fails: a summary-call failure gives a fallback
    /// summary, and nothing to compact gives a no-op [`Compaction`].
    pub async fn compress(
        &mut self,
        history: &[Message],
        client: &dyn LlmClient,
        model: &str,
        trigger: Trigger<'_>,
    ) -> Compaction {
        let focus = match trigger {
            Trigger::Manual { focus } => {
                self.ineffective = 0;
                self.fallback_streak = 0;
                self.summary_cooldown_until = None;
                focus
            }
            Trigger::Threshold | Trigger::Overflow => None,
        };
        let Some(plan) = self.plan(history) else {
            self.ineffective += 1;
            return noop(history);
        };
        let middle: Vec<Message> = plan
            .middle
            .iter()
            .map(|&i| plan.stripped[i].1.clone())
            .collect();

        let (summary, summary_error) = self.summarize(&plan, &middle, client, model, focus).await;
        let used_fallback = summary_error.is_some();
        if used_fallback {
            self.fallback_streak += 1;
        } else {
            self.fallback_streak = 0;
            self.last_summary_error = None;
        }
        let messages = plan.assemble(&summary);
        self.compactions += 1;
        self.awaiting_check = true;
        if messages.iter().map(estimate_message_tokens).sum::<u64>() >= self.threshold_tokens {
            // Even the messages alone are over the threshold: the real count will be too.
            self.ineffective += 1;
            self.awaiting_check = false;
        }
        tracing::info!(
            archived = plan.archived,
            kept = messages.len(),
            used_fallback,
            "context compacted"
        );
        Compaction {
            archived: plan.archived,
            kept_from: plan.kept_from,
            messages,
            summary,
            used_fallback,
            summary_error,
        }
    }

    /// Works out what to keep and what to summarise; `None` when there is nothing to compact.
    fn plan(&self, history: &[Message]) -> Option<Plan> {
        let (previous, stripped) = strip_summaries(history);
        let msgs: Vec<Message> = stripped.iter().map(|(_, m)| m.clone()).collect();
        // The head is protected once; after that it is part of what the summary covers.
        let head_n = if self.compactions > 0 || previous.is_some() {
            0
        } else {
            self.cfg.protect_first_n
        };
        let floor = self.cfg.protect_last_n.clamp(3, 8);
        let split = select::split(&msgs, head_n, self.cfg.tail_budget(), floor);
        let middle: Vec<usize> = (split.head_end..split.tail_start)
            .filter(|i| Some(*i) != split.pinned_user)
            .collect();
        if middle.is_empty() {
            return None;
        }
        let kept = split.head_end
            + (msgs.len() - split.tail_start)
            + usize::from(split.pinned_user.is_some());
        let kept_from = stripped
            .get(split.tail_start)
            .map_or(history.len(), |(i, _)| *i);
        Some(Plan {
            archived: history.len().saturating_sub(kept),
            previous,
            stripped,
            split,
            middle,
            kept_from,
        })
    }

    /// The model's summary, or the fallback and why.
    async fn summarize(
        &mut self,
        plan: &Plan,
        middle: &[Message],
        client: &dyn LlmClient,
        model: &str,
        focus: Option<&str>,
    ) -> (String, Option<String>) {
        let previous = plan.previous.as_deref();
        let fallback = |why: String| (summary::fallback(previous, middle), Some(why));
        if let Some(until) = self.summary_cooldown_until {
            if SystemTime::now() < until {
                return fallback("the summary model failed recently; it is retried after a 10-minute pause or on /compress".to_string());
            }
            self.summary_cooldown_until = None;
        }
        let all: Vec<Message> = plan.stripped.iter().map(|(_, m)| m.clone()).collect();
        let calls = prune::calls_by_id(&all);
        let max_chars =
            (self.cfg.context_length.saturating_mul(2) as usize).clamp(16_000, 1_600_000);
        let turns = summary::fitted_transcript(middle, &calls, max_chars);
        let content_tokens: u64 = middle.iter().map(estimate_message_tokens).sum();
        let target = (content_tokens / 5)
            .min((self.cfg.context_length / 20).min(10_000))
            .max(2_000);
        let today = chrono::Local::now().format("%A, %B %d, %Y").to_string();
        let prompt = match summary::render_prompt(&turns, previous, focus, target, &today) {
            Ok(p) => p,
            Err(e) => return fallback(format!("the compaction summary template is invalid: {e}")),
        };
        let model = self.cfg.summary_model.as_deref().unwrap_or(model);
        let max_summary_chars = (target as usize).saturating_mul(8);
        match summary::call_model(
            client,
            model,
            prompt,
            self.cfg.summary_timeout,
            max_summary_chars,
        )
        .await
        {
            Ok(text) => (text, None),
            Err(e) => {
                tracing::warn!(error = %e, "compaction summary call failed; using the fallback summary");
                self.summary_cooldown_until = Some(SystemTime::now() + SUMMARY_FAILURE_COOLDOWN);
                self.last_summary_error = Some(e.to_string());
                fallback(e.to_string())
            }
        }
    }
}

/// What one compaction keeps and replaces.
struct Plan {
    previous: Option<String>,
    /// The history without summary messages, with each message's index in the input.
    stripped: Vec<(usize, Message)>,
    split: select::Split,
    /// Indices into `stripped` of the summarised messages.
    middle: Vec<usize>,
    archived: usize,
    kept_from: usize,
}

impl Plan {
    /// Head (tool results shortened), summary, pinned user message, tail; pairs repaired.
    fn assemble(&self, summary_text: &str) -> Vec<Message> {
        let all: Vec<Message> = self.stripped.iter().map(|(_, m)| m.clone()).collect();
        let calls = prune::calls_by_id(&all);
        let mut head: Vec<Message> = all[..self.split.head_end].to_vec();
        prune::prune_tool_results(&mut head, &calls);
        let mut rest: Vec<Message> = Vec::new();
        if let Some(p) = self.split.pinned_user {
            rest.push(all[p].clone());
        }
        rest.extend_from_slice(&all[self.split.tail_start..]);

        let wrapped = summary::wrap(summary_text);
        let mut out = head;
        match rest.first_mut() {
            // Two user messages in a row would break strict role alternation: merge.
            Some(next) if next.role == Role::User => {
                let merge = |text: &str| format!("{wrapped}\n\n{text}");
                next.content = Some(merge(next.content.as_deref().unwrap_or("")));
                next.api_content = next.api_content.as_deref().map(merge);
            }
            _ => out.push(Message::user(wrapped)),
        }
        out.extend(rest);
        select::repair_tool_pairs(&mut out);
        out
    }
}

/// Takes our (and Python's) summary messages out of `history`: returns the newest summary and
/// the remaining messages with their input indices. A summary merged into a user message leaves
/// that message with its own text.
fn strip_summaries(history: &[Message]) -> (Option<String>, Vec<(usize, Message)>) {
    let mut previous = None;
    let mut kept = Vec::with_capacity(history.len());
    for (i, m) in history.iter().enumerate() {
        let parsed = (m.role == Role::User)
            .then(|| m.content.as_deref().and_then(summary::parse))
            .flatten();
        match parsed {
            Some((text, rest)) => {
                previous = Some(text);
                if let Some(rest) = rest {
                    let mut m = m.clone();
                    m.content = Some(rest);
                    m.api_content = m
                        .api_content
                        .as_deref()
                        .and_then(summary::parse)
                        .and_then(|(_, api_rest)| api_rest);
                    kept.push((i, m));
                }
            }
            None => kept.push((i, m.clone())),
        }
    }
    (previous, kept)
}

fn noop(history: &[Message]) -> Compaction {
    Compaction {
        messages: history.to_vec(),
        summary: String::new(),
        used_fallback: false,
        summary_error: None,
        archived: 0,
        kept_from: 0,
    }
}
