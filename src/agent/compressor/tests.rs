//! Unit tests of the compressor against a fake `LlmClient`: summaries, fallback, pair
//! integrity, head/tail protection, iterative updates, anti-thrash, estimates, configuration.

use std::collections::VecDeque;
use std::sync::Mutex;

use futures::StreamExt;

use super::*;
use crate::llm::{
    ChatRequest, FailoverReason, LlmError, LlmEvent, LlmResponse, LlmStream, Provider, ToolCall,
};

/// Answers each call with the next scripted reply and records the requests.
struct FakeClient {
    provider: Provider,
    replies: Mutex<VecDeque<Result<String, LlmError>>>,
    requests: Mutex<Vec<ChatRequest>>,
}

impl FakeClient {
    fn new(replies: Vec<Result<String, LlmError>>) -> Self {
        FakeClient {
            provider: Provider::new("custom", "main-model", "http://127.0.0.1:9/v1", None),
            replies: Mutex::new(replies.into()),
            requests: Mutex::new(Vec::new()),
        }
    }
    fn requests(&self) -> Vec<ChatRequest> {
        self.requests.lock().unwrap().clone()
    }
}

#[async_trait::async_trait]
impl LlmClient for FakeClient {
    async fn stream(&self, request: ChatRequest) -> Result<LlmStream, LlmError> {
        self.requests.lock().unwrap().push(request);
        let reply = self.replies.lock().unwrap().pop_front().unwrap_or_else(|| {
            Err(LlmError::new(
                FailoverReason::ServerError,
                "script exhausted",
            ))
        });
        let text = reply?;
        let (a, b) = text.split_at(text.len() / 2);
        let done = LlmResponse {
            message: Message::assistant(Some(text.clone()), Vec::new()),
            usage: Usage::default(),
            model: None,
        };
        let events = vec![
            Ok(LlmEvent::TextDelta(a.to_string())),
            Ok(LlmEvent::TextDelta(b.to_string())),
            Ok(LlmEvent::Done(done)),
        ];
        Ok(futures::stream::iter(events).boxed())
    }
    fn provider(&self) -> &Provider {
        &self.provider
    }
}

fn small_window() -> CompressorConfig {
    CompressorConfig {
        context_length: 16_000,
        ..CompressorConfig::default()
    }
}

fn call(id: &str, cmd: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "terminal".into(),
        arguments: format!(r#"{{"command":"{cmd}"}}"#),
    }
}

/// `turns` user turns, each: user ask, assistant with two tool calls, two results, answer.
fn session(turns: usize, output_chars: usize) -> Vec<Message> {
    let mut h = Vec::new();
    for t in 0..turns {
        h.push(Message::user(format!(
            "request number {t}: please check the build"
        )));
        let (c1, c2) = (
            call(&format!("a{t}"), &format!("cargo test {t}")),
            call(&format!("b{t}"), "ls src"),
        );
        h.push(Message::assistant(
            Some(format!("checking {t}")),
            vec![c1.clone(), c2.clone()],
        ));
        h.push(Message::tool_result(
            &c1,
            format!("{}\n[exit code: 0]", "o".repeat(output_chars)),
        ));
        h.push(Message::tool_result(&c2, format!("main.rs lib.rs {t}")));
        h.push(Message::assistant(
            Some(format!("answer {t}: all good")),
            Vec::new(),
        ));
    }
    h
}

/// Every tool result answers a call of the assistant message right before its result group,
/// and every call has exactly one result.
fn assert_pairs_valid(msgs: &[Message]) {
    let mut open: Vec<String> = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        match m.role {
            Role::Tool => {
                let id = m.tool_call_id.clone().unwrap_or_default();
                let pos = open.iter().position(|o| *o == id);
                assert!(pos.is_some(), "orphan tool result {id} at {i}");
                open.remove(pos.unwrap_or_default());
            }
            _ => {
                assert!(
                    open.is_empty(),
                    "calls {open:?} without results before message {i}"
                );
                open = m.tool_calls.iter().map(|c| c.id.clone()).collect();
            }
        }
    }
    assert!(open.is_empty(), "calls {open:?} without results at the end");
}

fn summary_count(msgs: &[Message]) -> usize {
    msgs.iter()
        .filter(|m| {
            m.content
                .as_deref()
                .is_some_and(|c| c.starts_with(SUMMARY_PREFIX))
        })
        .count()
}

#[tokio::test]
async fn model_summary_replaces_the_middle() {
    let mut history = session(30, 1_500);
    history[6].content = Some("my key is sk-abcdefghijklmnopqrstuvwx".into());
    let client = FakeClient::new(vec![Ok("## Goal\nkeep the build green".into())]);
    let mut c = ContextCompressor::new(small_window());
    let out = c
        .compress(&history, &client, "main-model", Trigger::Threshold)
        .await;

    assert!(!out.used_fallback && out.summary_error.is_none());
    assert_eq!(out.summary, "## Goal\nkeep the build green");
    assert!(out.archived > 0 && out.messages.len() < history.len());
    assert_eq!(summary_count(&out.messages), 1);
    // Head protected: the first user message and its tool group stay (results shortened).
    assert_eq!(out.messages[0], history[0]);
    assert_eq!(out.messages[1], history[1]);
    assert!(
        out.messages[2]
            .content
            .as_deref()
            .unwrap_or("")
            .starts_with("[terminal] ran `cargo test 0`")
    );
    // Tail protected: verbatim from kept_from to the end.
    let tail = &history[out.kept_from..];
    assert_eq!(&out.messages[out.messages.len() - tail.len()..], tail);
    assert!(tail.iter().any(|m| m.role == Role::User));
    assert_pairs_valid(&out.messages);
    // Much smaller than before.
    let before: u64 = history.iter().map(estimate_message_tokens).sum();
    let after: u64 = out.messages.iter().map(estimate_message_tokens).sum();
    assert!(after * 3 < before, "{after} vs {before}");

    let reqs = client.requests();
    assert_eq!(reqs.len(), 1);
    assert!(reqs[0].tools.is_empty());
    let prompt = reqs[0].messages[0].content.clone().unwrap_or_default();
    assert!(prompt.contains("## Completed Actions") && prompt.contains("[USER]: request number 5"));
    assert!(prompt.contains("[Tool calls:\n  terminal("));
    assert!(
        !prompt.contains("sk-abcdefghijklmnopqrstuvwx"),
        "secret leaked to the summariser"
    );
    assert!(!prompt.contains("PREVIOUS CHECKPOINT"));
}

#[tokio::test]
async fn summary_failure_gives_a_fallback_then_cools_down() {
    let history = session(30, 1_500);
    let client = FakeClient::new(vec![Err(LlmError::new(FailoverReason::Overloaded, "busy"))]);
    let mut c = ContextCompressor::new(small_window());
    let out = c
        .compress(&history, &client, "main-model", Trigger::Threshold)
        .await;
    assert!(out.used_fallback);
    assert!(out.summary_error.as_deref().unwrap_or("").contains("busy"));
    assert!(out.summary.contains("## User requests") && out.summary.contains("request number"));
    assert!(out.summary.contains("terminal ×"));
    assert!(out.summary.chars().count() <= 8_000);
    assert_pairs_valid(&out.messages);
    assert_eq!(summary_count(&out.messages), 1);

    // Within the cooldown the model is not asked again; the second fallback blocks auto mode.
    let more = [out.messages.clone(), session(30, 1_500)].concat();
    let out2 = c
        .compress(&more, &client, "main-model", Trigger::Threshold)
        .await;
    assert!(out2.used_fallback);
    assert_eq!(client.requests().len(), 1);
    assert!(c.is_blocked());
    assert!(!c.should_compress(1_000_000));
    // The earlier fallback checkpoint is carried into the new one.
    assert!(out2.summary.contains("## Earlier checkpoint"));

    // /compress clears the guards and asks the model again.
    let client_ok = FakeClient::new(vec![Ok("fresh".into())]);
    let out3 = c
        .compress(
            &more,
            &client_ok,
            "main-model",
            Trigger::Manual {
                focus: Some("tests"),
            },
        )
        .await;
    assert!(!out3.used_fallback);
    assert!(!c.is_blocked());
    let prompt = client_ok.requests()[0].messages[0]
        .content
        .clone()
        .unwrap_or_default();
    assert!(prompt.contains("FOCUS") && prompt.contains("\"tests\""));
}

#[tokio::test]
async fn failure_state_survives_a_restart() {
    let client = FakeClient::new(vec![Err(LlmError::new(
        FailoverReason::ServerError,
        "boom",
    ))]);
    let mut c = ContextCompressor::new(small_window());
    c.compress(&session(30, 1_500), &client, "m", Trigger::Threshold)
        .await;
    let state = c.failure_state();
    assert_eq!(state.fallback_streak, 1);
    assert!(state.error.as_deref().unwrap_or("").contains("boom"));
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let until = state.cooldown_until.unwrap_or(0.0);
    assert!(
        until > now + 590.0 && until < now + 610.0,
        "{until} vs {now}"
    );

    // A new process restores it: still cooling down, so the model is not asked.
    let mut restarted = ContextCompressor::new(small_window());
    restarted.restore_failure_state(&state);
    let fresh = FakeClient::new(vec![Ok("s".into())]);
    let out = restarted
        .compress(&session(30, 1_500), &fresh, "m", Trigger::Threshold)
        .await;
    assert!(out.used_fallback && fresh.requests().is_empty());
    assert!(restarted.is_blocked(), "second fallback in a row");
    // Once the cooldown is over, automatic compaction resumes.
    let mut rested = CompressionFailure {
        cooldown_until: Some(now - 1.0),
        ..restarted.failure_state()
    };
    restarted.restore_failure_state(&rested);
    assert!(!restarted.is_blocked());
    rested.cooldown_until = Some(now + 100.0);
    restarted.restore_failure_state(&rested);
    assert!(restarted.is_blocked());
    // Hostile stored values neither panic nor block for longer than one cooldown.
    for bad in [f64::NAN, -5.0, f64::INFINITY, 1e300] {
        let mut c = ContextCompressor::new(small_window());
        c.restore_failure_state(&CompressionFailure {
            cooldown_until: Some(bad),
            ..Default::default()
        });
        let until = c.failure_state().cooldown_until.unwrap_or(0.0);
        assert!(until <= now + 610.0, "{bad} → {until}");
    }
    // An expired cooldown asks the model again.
    let mut later = ContextCompressor::new(small_window());
    later.restore_failure_state(&CompressionFailure {
        cooldown_until: Some(now - 1.0),
        ..state
    });
    let out = later
        .compress(&session(30, 1_500), &fresh, "m", Trigger::Threshold)
        .await;
    assert!(!out.used_fallback && later.failure_state() == CompressionFailure::default());
}

#[tokio::test]
async fn iterative_compaction_updates_the_previous_summary() {
    let client = FakeClient::new(vec![
        Ok("first checkpoint text".into()),
        Ok("second checkpoint text".into()),
    ]);
    let mut c = ContextCompressor::new(small_window());
    let first = c
        .compress(&session(30, 1_500), &client, "m", Trigger::Threshold)
        .await;
    let grown = [first.messages.clone(), session(30, 1_500)].concat();
    let second = c.compress(&grown, &client, "m", Trigger::Threshold).await;

    let reqs = client.requests();
    let prompt = reqs[1].messages[0].content.clone().unwrap_or_default();
    assert!(
        prompt.contains("PREVIOUS CHECKPOINT:\nfirst checkpoint text"),
        "{prompt}"
    );
    assert!(
        !prompt.contains(SUMMARY_PREFIX),
        "the old wrapper must not be re-summarised"
    );
    assert_eq!(summary_count(&second.messages), 1);
    assert_eq!(second.summary, "second checkpoint text");
    // The head is protected only once: the summary now comes first.
    assert!(
        second.messages[0]
            .content
            .as_deref()
            .unwrap_or("")
            .starts_with(SUMMARY_PREFIX)
    );
    assert_pairs_valid(&second.messages);
}

#[tokio::test]
async fn tool_pairs_survive_every_cut() {
    for turns in [3usize, 5, 8, 13, 21] {
        for output in [10usize, 900, 5_000, 30_000] {
            for protect_first_n in [0usize, 1, 2, 3, 4] {
                let cfg = CompressorConfig {
                    protect_first_n,
                    ..small_window()
                };
                let client = FakeClient::new(vec![Ok("s".into())]);
                let mut c = ContextCompressor::new(cfg);
                let mut history = session(turns, output);
                // A turn still in progress: the last message is a tool result.
                let open = call("open", "make");
                history.push(Message::user("last ask"));
                history.push(Message::assistant(None, vec![open.clone()]));
                history.push(Message::tool_result(&open, "x".repeat(output)));
                let out = c.compress(&history, &client, "m", Trigger::Overflow).await;
                assert_pairs_valid(&out.messages);
                let texts: Vec<&str> = out
                    .messages
                    .iter()
                    .filter_map(|m| m.content.as_deref())
                    .collect();
                assert!(
                    texts.iter().any(|t| t.ends_with("last ask")),
                    "last user message lost ({turns}, {output})"
                );
                assert_eq!(out.messages.last(), history.last());
            }
        }
    }
}

#[tokio::test]
async fn hostile_pairs_in_the_input_are_repaired() {
    let c1 = call("c1", "ls");
    let mut history = vec![Message::tool_result(
        &call("ghost", "x"),
        "orphan at the start",
    )];
    history.extend(session(20, 2_000));
    history.push(Message::user("and now?"));
    history.push(Message::assistant(None, vec![c1]));
    let client = FakeClient::new(vec![Ok("s".into())]);
    let out = ContextCompressor::new(small_window())
        .compress(&history, &client, "m", Trigger::Threshold)
        .await;
    assert_pairs_valid(&out.messages);
}

#[tokio::test]
async fn last_user_message_is_kept_when_one_turn_fills_the_window() {
    let mut history = vec![Message::user("build me a compiler")];
    for i in 0..40 {
        let c = call(&format!("c{i}"), "cargo build");
        history.push(Message::assistant(None, vec![c.clone()]));
        history.push(Message::tool_result(&c, "e".repeat(3_000)));
    }
    let client = FakeClient::new(vec![Ok("s".into())]);
    let cfg = CompressorConfig {
        protect_first_n: 0,
        ..small_window()
    };
    let out = ContextCompressor::new(cfg)
        .compress(&history, &client, "m", Trigger::Threshold)
        .await;
    assert!(!out.is_noop());
    let user = out.messages.iter().find(|m| {
        m.content
            .as_deref()
            .is_some_and(|c| c.ends_with("build me a compiler"))
    });
    let user = user.expect("the user's request was dropped");
    // It follows the summary, which was merged into it to keep roles alternating.
    assert!(
        user.content
            .as_deref()
            .unwrap_or("")
            .starts_with(SUMMARY_PREFIX)
    );
    assert_eq!(
        out.messages.iter().filter(|m| m.role == Role::User).count(),
        1
    );
    assert_pairs_valid(&out.messages);
}

#[tokio::test]
async fn merged_summary_keeps_api_content_and_is_unwrapped_later() {
    let mut history = session(20, 2_000);
    // Too big for the tail: the tail is the final question alone, so the summary merges into it.
    history.push(Message::assistant(Some("z".repeat(20_000)), Vec::new()));
    let mut last = Message::user("final question");
    last.api_content = Some("final question\n\n<memory-context>m</memory-context>".into());
    history.push(last);
    let client = FakeClient::new(vec![Ok("one".into()), Ok("two".into())]);
    let cfg = CompressorConfig {
        target_ratio: 0.1,
        ..small_window()
    };
    let mut c = ContextCompressor::new(cfg);
    let out = c.compress(&history, &client, "m", Trigger::Threshold).await;
    let merged = out
        .messages
        .iter()
        .find(|m| m.api_content.is_some())
        .expect("api copy kept");
    assert!(
        merged
            .api_content
            .as_deref()
            .unwrap_or("")
            .ends_with("<memory-context>m</memory-context>")
    );
    let (s, rest) = summary::parse(merged.content.as_deref().unwrap_or("")).expect("parsable");
    assert_eq!(
        (s.as_str(), rest.as_deref()),
        ("one", Some("final question"))
    );
    let (_, stripped) = strip_summaries(&out.messages);
    let restored = stripped
        .iter()
        .find(|(_, m)| m.content.as_deref() == Some("final question"));
    assert_eq!(
        restored.and_then(|(_, m)| m.api_content.clone()).as_deref(),
        Some("final question\n\n<memory-context>m</memory-context>")
    );
}

#[tokio::test]
async fn nothing_to_compact_is_a_counted_noop() {
    let history = session(1, 10);
    let client = FakeClient::new(vec![]);
    let mut c = ContextCompressor::new(small_window());
    let out = c.compress(&history, &client, "m", Trigger::Threshold).await;
    assert!(out.is_noop());
    assert_eq!(out.messages, history);
    assert!(client.requests().is_empty());
    assert!(!c.is_blocked());
    c.compress(&history, &client, "m", Trigger::Threshold).await;
    assert!(
        c.is_blocked(),
        "two no-ops in a row pause automatic compaction"
    );
}

#[tokio::test]
async fn ineffective_compactions_block_until_a_prompt_fits() {
    let client = FakeClient::new(vec![Ok("s".into()), Ok("s".into())]);
    let mut c = ContextCompressor::new(small_window());
    let over = Usage {
        input_tokens: 15_000,
        ..Usage::default()
    };
    let under = Usage {
        input_tokens: 5_000,
        ..Usage::default()
    };
    assert!(c.should_compress(13_600) && !c.should_compress(13_599));

    c.update_from_response(&over);
    assert!(
        !c.is_blocked(),
        "over the threshold without a compaction is not ineffective"
    );
    c.compress(&session(30, 1_500), &client, "m", Trigger::Threshold)
        .await;
    c.update_from_response(&over);
    c.compress(&session(30, 1_500), &client, "m", Trigger::Threshold)
        .await;
    c.update_from_response(&over);
    assert!(c.is_blocked() && !c.should_compress(50_000));
    c.update_from_response(&under);
    assert!(!c.is_blocked() && c.should_compress(50_000));
    assert_eq!(c.last_prompt_tokens(), 5_000);
}
