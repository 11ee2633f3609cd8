//! The provider check of `hermes doctor`, and the one-call helper `hermes setup` uses for its test
//! call: a real, tiny, timed request. The doctor's version offers one tool and expects the model to
//! call it, then feeds the result back and expects an answer — the round trip every turn makes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;

use super::{Check, Status};
use crate::cli::args::RunArgs;
use crate::config::Config;
use crate::llm::provider::ProviderError;
use crate::llm::{
    ChatRequest, FailoverReason, LlmClient, LlmError, LlmEvent, LlmResponse, Message, ToolCall,
    ToolSchema,
};

/// Longest wait for one call of the check (a cold local model can take a while to load).
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// The value the check's tool returns; the model is asked to repeat it.
const PONG: &str = "pong-7";

/// One whole model call, streamed and collected, bounded by `timeout`.
pub async fn complete(
    client: &dyn LlmClient,
    request: ChatRequest,
    timeout: Duration,
) -> Result<LlmResponse, LlmError> {
    let call = async {
        let mut stream = client.stream(request).await?;
        while let Some(item) = stream.next().await {
            if let LlmEvent::Done(response) = item? {
                return Ok(response);
            }
        }
        Err(LlmError::new(
            FailoverReason::ServerError,
            "the response stream ended without a final message",
        ))
    };
    tokio::time::timeout(timeout, call)
        .await
        .unwrap_or_else(|_| {
            Err(LlmError::new(
                FailoverReason::Timeout,
                format!("no complete answer within {} s", timeout.as_secs()),
            ))
        })
}

fn ping_tool() -> ToolSchema {
    ToolSchema {
        name: "ping".into(),
        description: "Health check: returns a word to repeat.".into(),
        parameters: serde_json::json!({"type": "object", "properties": {}, "required": []}),
    }
}

/// The provider that `hermes` with these flags would use answers a tool call and its result.
pub async fn check(config: &Config, args: &RunArgs) -> Check {
    let client = match crate::cli::setup::make_client(args, config, None).await {
        Ok(c) => c,
        Err(crate::cli::CliError::Provider(ProviderError::NothingConfigured { .. })) => {
            return Check::new(
                "provider",
                Status::Warn,
                "no provider configured: `hermes setup` chooses one",
            );
        }
        Err(e) => return Check::new("provider", Status::Fail, e.to_string()),
    };
    let p = client.provider();
    let label = format!("{} · {} at {}", p.name, p.model, p.base_url);
    match round_trip(client.clone()).await {
        Ok((elapsed, Some(answer))) => Check::new(
            "provider",
            Status::Ok,
            format!(
                "{label}: tool call and answer in {:.1} s",
                elapsed.as_secs_f64()
            ),
        )
        .with_details(vec![format!("answer: {answer}")]),
        Ok((elapsed, None)) => Check::new(
            "provider",
            Status::Warn,
            format!(
                "{label}: answered in {:.1} s but did not call the offered tool",
                elapsed.as_secs_f64()
            ),
        )
        .with_details(vec![
            "tools may not work with this model or server (llama.cpp needs --jinja)".into(),
        ]),
        Err(e) => Check::new("provider", Status::Fail, format!("{label}: no answer"))
            .with_details(vec![e.to_string()]),
    }
}

/// Call 1 offers `ping` and asks for it; call 2 returns its result. `Ok((time, None))` when the
/// model answered without calling the tool.
async fn round_trip(client: Arc<dyn LlmClient>) -> Result<(Duration, Option<String>), LlmError> {
    let started = Instant::now();
    let mut request = ChatRequest {
        model: client.provider().model.clone(),
        system: "You are a health check. Follow the instruction exactly.".into(),
        messages: vec![Message::user(
            "Call the `ping` tool now, then reply with exactly the word it returns.",
        )],
        tools: vec![ping_tool()],
        max_tokens: Some(200),
        temperature: Some(0.0),
    };
    let first = complete(client.as_ref(), request.clone(), CALL_TIMEOUT).await?;
    let calls: Vec<ToolCall> = first.message.tool_calls.clone();
    if calls.is_empty() {
        return Ok((started.elapsed(), None));
    }
    request.messages.push(first.message.clone());
    for c in &calls {
        let output = if c.name == "ping" {
            PONG.to_string()
        } else {
            format!("unknown tool `{}`", c.name)
        };
        request.messages.push(Message::tool_result(c, output));
    }
    let second = complete(client.as_ref(), request, CALL_TIMEOUT).await?;
    let answer = second
        .message
        .content
        .unwrap_or_default()
        .trim()
        .chars()
        .take(200)
        .collect::<String>();
    Ok((started.elapsed(), Some(answer)))
}
