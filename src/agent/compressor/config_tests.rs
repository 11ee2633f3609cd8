//! Unit tests of the compressor's configuration, thresholds and token estimates.

use std::time::Duration;

use super::*;

fn small_window() -> CompressorConfig {
    CompressorConfig {
        context_length: 16_000,
        ..CompressorConfig::default()
    }
}

#[test]
fn disabled_compressor_never_triggers() {
    let c = ContextCompressor::new(CompressorConfig {
        enabled: false,
        ..small_window()
    });
    assert!(!c.should_compress(u64::MAX));
}

#[test]
fn token_estimates() {
    let m = Message::user("a".repeat(400));
    assert_eq!(estimate_message_tokens(&m), 100 + MESSAGE_OVERHEAD_TOKENS);
    let tools = vec![ToolSchema {
        name: "t".into(),
        description: "d".repeat(99),
        parameters: serde_json::json!({}),
    }];
    let total = ContextCompressor::estimate_tokens(&[m.clone(), m], &"s".repeat(40), &tools);
    // system 40 + schema (1 + 99 + 2 + 32) bytes = 174 → 44 tokens; two messages 208.
    assert_eq!(total, 44 + 2 * 104);
    // The API copy is what is sent, so it is what counts.
    let mut u = Message::user("x");
    u.api_content = Some("y".repeat(800));
    assert_eq!(estimate_message_tokens(&u), 200 + MESSAGE_OVERHEAD_TOKENS);
    assert_eq!(
        prompt_tokens(&Usage {
            input_tokens: 100,
            cache_read_tokens: 60,
            ..Usage::default()
        }),
        100
    );
    assert_eq!(
        prompt_tokens(&Usage {
            input_tokens: 10,
            cache_read_tokens: 900,
            ..Usage::default()
        }),
        910
    );
}

#[test]
fn thresholds_follow_the_window() {
    let t = |ctx: u64, pct: f64| {
        CompressorConfig {
            context_length: ctx,
            threshold: pct,
            ..CompressorConfig::default()
        }
        .threshold_tokens()
    };
    assert_eq!(t(16_000, 0.5), 13_600); // 64K floor ≥ window → 85%
    assert_eq!(t(128_000, 0.5), 96_000); // small window → 75%
    assert_eq!(t(200_000, 0.9), 180_000);
    assert_eq!(t(1_000_000, 0.5), 500_000);
    let cfg = CompressorConfig {
        context_length: 16_000,
        ..CompressorConfig::default()
    };
    assert_eq!(cfg.tail_budget(), 2_720);
}

#[test]
fn config_is_read_from_yaml() {
    let yaml = "model:\n  default: x\n  context_length: 32000\ncompression:\n  threshold: 0.6\n  target_ratio: '0.3'\n  protect_first_n: 1\n  enabled: true\nauxiliary:\n  compression:\n    model: cheap-model\n    timeout: 30\n";
    let cfg = crate::config::Config::from_yaml(
        crate::config::HermesHome::new("/tmp/none"),
        crate::config::EnvVars::default(),
        yaml,
        std::path::Path::new("config.yaml"),
    )
    .unwrap();
    let c = CompressorConfig::from_config(&cfg, "claude-sonnet-4");
    assert_eq!(c.context_length, 32_000);
    assert_eq!(
        (
            c.threshold,
            c.target_ratio,
            c.protect_first_n,
            c.protect_last_n
        ),
        (0.6, 0.3, 1, 20)
    );
    assert_eq!(c.summary_model.as_deref(), Some("cheap-model"));
    assert_eq!(c.summary_timeout, Duration::from_secs(30));

    let empty = crate::config::Config::defaults(
        crate::config::HermesHome::new("/tmp/none"),
        crate::config::EnvVars::default(),
    );
    let d = CompressorConfig::from_config(&empty, "anthropic/claude-opus-4");
    assert_eq!(d.context_length, 200_000);
    assert!(d.enabled && d.summary_model.is_none());
    assert_eq!(known_context_length("gpt-4o-mini"), 128_000);
    assert_eq!(known_context_length("openai/gpt-4.1"), 1_047_576);
    assert_eq!(
        known_context_length("some-local-thing"),
        DEFAULT_CONTEXT_LENGTH
    );
}
