//! Benchmark of the context compressor (library level, no network).
//!
//! `cargo bench --bench compaction` prints: the time one compaction takes without the summary
//! call (an instant fake client answers it) on a 30-turn coding session at a 16K window, and for
//! a simulated 30-turn session (3 tool rounds a turn) the total request payload with compaction
//! vs. without, plus the largest single request in estimated tokens against the window.
//! Payload = the bytes of every message's text and tool-call arguments sent, summed over calls.
//! Figures are printed, not asserted: the targets live in issue 5 and the closing notes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use futures::StreamExt;
use hermes::agent::compressor::{CompressorConfig, ContextCompressor, Trigger};
use hermes::llm::{
    ChatRequest, LlmClient, LlmError, LlmEvent, LlmResponse, LlmStream, Message, Provider,
    ToolCall, Usage,
};

const WINDOW: u64 = 16_000;
const SYSTEM_BYTES: usize = 6_000;

/// Answers every call at once with a fixed ~1 KB summary.
struct InstantClient(Provider);

#[async_trait::async_trait]
impl LlmClient for InstantClient {
    async fn stream(&self, _request: ChatRequest) -> Result<LlmStream, LlmError> {
        let text = format!(
            "## Goal\nship it\n## Completed Actions\n{}",
            "1. did things\n".repeat(70)
        );
        let done = LlmResponse {
            message: Message::assistant(Some(text), Vec::new()),
            usage: Usage::default(),
            model: None,
        };
        Ok(futures::stream::iter(vec![Ok(LlmEvent::Done(done))]).boxed())
    }
    fn provider(&self) -> &Provider {
        &self.0
    }
}

/// One tool round: the assistant reads/edits a file, the tool answers with ~1.5 KB.
fn round(turn: usize, r: usize) -> [Message; 2] {
    let call = ToolCall {
        id: format!("call_{turn}_{r}"),
        name: if r.is_multiple_of(2) {
            "read_file"
        } else {
            "patch"
        }
        .into(),
        arguments: format!(r#"{{"path":"src/module_{turn}.rs","offset":{}}}"#, r * 40),
    };
    let output = format!(
        "{}\n",
        format!("{turn:>4} | let value_{r} = compute({r});").repeat(45)
    );
    [
        Message::assistant(
            Some(format!("Looking at module {turn}.")),
            vec![call.clone()],
        ),
        Message::tool_result(&call, output),
    ]
}

fn payload(messages: &[Message]) -> usize {
    SYSTEM_BYTES
        + messages
            .iter()
            .map(|m| {
                m.wire_content().map_or(0, str::len)
                    + m.tool_calls
                        .iter()
                        .map(|c| c.arguments.len() + c.name.len())
                        .sum::<usize>()
            })
            .sum::<usize>()
}

/// Simulates the session; returns (total payload bytes, largest request tokens, compactions, time spent compacting).
async fn simulate(client: &InstantClient, compaction: bool) -> (usize, u64, u32, Duration) {
    let cfg = CompressorConfig {
        context_length: WINDOW,
        enabled: compaction,
        ..CompressorConfig::default()
    };
    let mut compressor = ContextCompressor::new(cfg);
    let system = "s".repeat(SYSTEM_BYTES);
    let mut history: Vec<Message> = Vec::new();
    let (mut total, mut largest, mut spent) = (0usize, 0u64, Duration::ZERO);
    for turn in 0..30 {
        history.push(Message::user(format!(
            "Turn {turn}: please fix the bug in module {turn} and run the tests."
        )));
        for r in 0..4 {
            let estimate = ContextCompressor::estimate_tokens(&history, &system, &[]);
            if compressor.should_compress(estimate) {
                let t = Instant::now();
                let out = compressor
                    .compress(&history, client, "m", Trigger::Threshold)
                    .await;
                spent += t.elapsed();
                history = out.messages;
            }
            let size = ContextCompressor::estimate_tokens(&history, &system, &[]);
            largest = largest.max(size);
            total += payload(&history);
            if r < 3 {
                history.extend(round(turn, r));
            } else {
                history.push(Message::assistant(
                    Some(format!("Fixed module {turn}; tests pass.")),
                    Vec::new(),
                ));
            }
        }
    }
    (total, largest, compressor.compactions(), spent)
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = InstantClient(Provider::new("custom", "m", "http://127.0.0.1:9/v1", None));

    // One compaction of a full 30-turn session, repeated.
    let mut history = Vec::new();
    for turn in 0..30 {
        history.push(Message::user(format!("Turn {turn}: fix module {turn}.")));
        for r in 0..3 {
            history.extend(round(turn, r));
        }
        history.push(Message::assistant(Some("done".into()), Vec::new()));
    }
    let runs = 50;
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let mut c = ContextCompressor::new(CompressorConfig {
                context_length: WINDOW,
                ..CompressorConfig::default()
            });
            let t = Instant::now();
            let out = rt.block_on(c.compress(&history, &client, "m", Trigger::Threshold));
            let spent = t.elapsed();
            assert!(!out.is_noop());
            spent
        })
        .collect();
    times.sort();
    println!(
        "compaction of a 30-turn session ({} messages, {} KB) at a {WINDOW}-token window: median {:?} (target ≤ 5 ms; includes an instant summary call)",
        history.len(),
        payload(&history) / 1024,
        times[runs / 2]
    );

    let (with, largest_with, n, spent) = rt.block_on(simulate(&client, true));
    let (without, largest_without, _, _) = rt.block_on(simulate(&client, false));
    println!("simulated 30-turn session, 4 calls a turn:");
    println!(
        "  payload with compaction:    {:>9} bytes, largest request ~{largest_with} tokens, {n} compactions, {spent:?} compacting",
        with
    );
    println!(
        "  payload without compaction: {:>9} bytes, largest request ~{largest_without} tokens",
        without
    );
    println!(
        "  ratio {:.2}; window {WINDOW} tokens: largest request {} the window",
        with as f64 / without as f64,
        if largest_with <= WINDOW {
            "fits"
        } else {
            "EXCEEDS"
        }
    );
}
