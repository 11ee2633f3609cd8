//! `CompressorConfig`: the `compression.*` settings, the model's context window (configured or
//! from a table of known model families) and the thresholds derived from them.

use std::time::Duration;

use crate::config::Config;

/// Threshold never below this many tokens (unless the window itself is smaller).
const MINIMUM_THRESHOLD_TOKENS: u64 = 64_000;
/// Windows smaller than this get a threshold of at least 75%.
const SMALL_WINDOW: u64 = 512_000;
const SMALL_WINDOW_MIN_PERCENT: f64 = 0.75;
/// Window assumed for a model we know nothing about.
pub const DEFAULT_CONTEXT_LENGTH: u64 = 128_000;

/// `compression.*` settings plus the window of the model in use.
#[derive(Debug, Clone, PartialEq)]
pub struct CompressorConfig {
    pub enabled: bool,
    /// Fraction of the window at which to compress (raised to ≥ 0.75 for windows < 512K).
    pub threshold: f64,
    /// Fraction of the threshold the verbatim tail may use (clamped to 0.10–0.80).
    pub target_ratio: f64,
    /// Messages kept verbatim at the start (first compaction only).
    pub protect_first_n: usize,
    /// Upper end of the tail's message floor (the floor is `max(3, min(this, 8))`).
    pub protect_last_n: usize,
    /// The model's context window in tokens.
    pub context_length: u64,
    /// `auxiliary.compression.model` when set (and not tied to another provider).
    pub summary_model: Option<String>,
    /// `auxiliary.compression.timeout`: how long the summary call may take.
    pub summary_timeout: Duration,
}

impl Default for CompressorConfig {
    fn default() -> Self {
        CompressorConfig {
            enabled: true,
            threshold: 0.5,
            target_ratio: 0.2,
            protect_first_n: 3,
            protect_last_n: 20,
            context_length: DEFAULT_CONTEXT_LENGTH,
            summary_model: None,
            summary_timeout: Duration::from_secs(120),
        }
    }
}

impl CompressorConfig {
    /// From `compression.*`, `model.context_length` (else [`known_context_length`]) and
    /// `auxiliary.compression.{model,provider,timeout}` of the loaded config.
    pub fn from_config(cfg: &Config, model: &str) -> Self {
        let d = CompressorConfig::default();
        let c = &cfg.file.compression;
        let aux = &cfg.file.auxiliary.compression;
        let context_length = cfg
            .model
            .context_length
            .filter(|n| *n >= 1_000)
            .unwrap_or_else(|| known_context_length(model));
        // A model on another provider needs its own client, which the caller owns; only a model
        // name for the main provider can be honoured here.
        let summary_model = aux
            .model
            .clone()
            .filter(|m| m != "auto" && aux.own_provider().is_none());
        let finite = |v: Option<f64>| v.filter(|n| n.is_finite());
        CompressorConfig {
            enabled: c.enabled.unwrap_or(d.enabled),
            threshold: finite(c.threshold).unwrap_or(d.threshold),
            target_ratio: finite(c.target_ratio).unwrap_or(d.target_ratio),
            protect_first_n: finite(c.protect_first_n)
                .map(|n| n.max(0.0) as usize)
                .unwrap_or(d.protect_first_n),
            protect_last_n: finite(c.protect_last_n)
                .map(|n| n.max(0.0) as usize)
                .unwrap_or(d.protect_last_n),
            context_length,
            summary_model,
            summary_timeout: finite(aux.timeout)
                .filter(|t| *t > 0.0)
                .map(Duration::from_secs_f64)
                .unwrap_or(d.summary_timeout),
        }
    }

    /// The prompt size (tokens) at which to compress.
    pub fn threshold_tokens(&self) -> u64 {
        let window = self.context_length.max(1);
        let mut pct = self.threshold.clamp(0.05, 0.95);
        if window < SMALL_WINDOW {
            pct = pct.max(SMALL_WINDOW_MIN_PERCENT);
        }
        let t = ((window as f64 * pct) as u64).max(MINIMUM_THRESHOLD_TOKENS);
        if t >= window {
            ((window as f64 * 0.85) as u64)
                .min(window.saturating_sub(1))
                .max(1)
        } else {
            t
        }
    }

    /// Tokens the verbatim tail may use.
    pub fn tail_budget(&self) -> u64 {
        (self.threshold_tokens() as f64 * self.target_ratio.clamp(0.10, 0.80)) as u64
    }
}

/// The context window of well-known model families; [`DEFAULT_CONTEXT_LENGTH`] otherwise.
pub fn known_context_length(model: &str) -> u64 {
    let m = model.to_lowercase();
    let name = m.rsplit('/').next().unwrap_or(&m);
    const TABLE: &[(&str, u64)] = &[
        ("claude", 200_000),
        ("gpt-4.1", 1_047_576),
        ("gpt-5", 400_000),
        ("gpt-4o", 128_000),
        ("gpt-4-turbo", 128_000),
        ("gpt-3.5", 16_385),
        ("o1", 200_000),
        ("o3", 200_000),
        ("o4", 200_000),
        ("gemini", 1_048_576),
        ("grok-4", 256_000),
        ("deepseek", 128_000),
        ("qwen", 131_072),
        ("llama", 131_072),
        ("hermes", 131_072),
    ];
    TABLE
        .iter()
        .find(|(prefix, _)| name.starts_with(prefix) || name.contains(&format!("-{prefix}")))
        .map(|(_, n)| *n)
        .unwrap_or(DEFAULT_CONTEXT_LENGTH)
}
