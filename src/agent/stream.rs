//! One streaming model call: forwards deltas as `AgentEvent`s, stops on cancellation (dropping
//! the stream aborts the HTTP request), and reports how the call ended. Answer deltas pass a
//! `StreamRedactor` first, so no front end (REPL, gateway, API server) shows a secret that the
//! persisted answer hides, even one split across two deltas.

use futures::StreamExt;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::agent::AgentEvent;
use crate::llm::{ChatRequest, FailoverReason, LlmClient, LlmError, LlmEvent, LlmResponse};
use crate::security::redact::Redactor;
use crate::security::redact_stream::StreamRedactor;

/// A model call that did not produce a response.
pub(crate) enum CallFailure {
    Cancelled {
        partial_text: String,
    },
    Failed(LlmError),
    /// Stopped before the call by a spend cap.
    Capped(String),
}

/// Streams one model call, forwarding deltas as events.
pub(crate) async fn stream_once(
    client: &dyn LlmClient,
    request: ChatRequest,
    events: &UnboundedSender<AgentEvent>,
    cancel: &CancellationToken,
    redactor: &Redactor,
) -> Result<LlmResponse, CallFailure> {
    let mut shown = StreamRedactor::new(redactor);
    let result = forward(client, request, events, cancel, &mut shown).await;
    // Whatever way the call ended, what arrived is let out (the held tail, redacted).
    if let Some(rest) = shown.finish() {
        let _ = events.send(AgentEvent::TextDelta(rest));
    }
    result
}

async fn forward(
    client: &dyn LlmClient,
    request: ChatRequest,
    events: &UnboundedSender<AgentEvent>,
    cancel: &CancellationToken,
    shown: &mut StreamRedactor<'_>,
) -> Result<LlmResponse, CallFailure> {
    let mut stream = tokio::select! {
        s = client.stream(request) => s.map_err(CallFailure::Failed)?,
        _ = cancel.cancelled() => return Err(CallFailure::Cancelled { partial_text: String::new() }),
    };
    let mut partial_text = String::new();
    loop {
        let item = tokio::select! {
            item = stream.next() => item,
            // Dropping the stream (on return) aborts the HTTP request.
            _ = cancel.cancelled() => return Err(CallFailure::Cancelled { partial_text }),
        };
        match item {
            Some(Ok(LlmEvent::TextDelta(t))) => {
                partial_text.push_str(&t);
                if let Some(ready) = shown.push(&t) {
                    let _ = events.send(AgentEvent::TextDelta(ready));
                }
            }
            Some(Ok(LlmEvent::ReasoningDelta(t))) => {
                let _ = events.send(AgentEvent::ReasoningDelta(t));
            }
            Some(Ok(LlmEvent::ToolCallStart { .. })) => {}
            Some(Ok(LlmEvent::Done(response))) => return Ok(response),
            Some(Err(mut e)) => {
                e.partial |= !partial_text.is_empty();
                return Err(CallFailure::Failed(e));
            }
            None => {
                let mut e = LlmError::new(
                    FailoverReason::ServerError,
                    "the response stream ended without a final message",
                );
                e.partial = !partial_text.is_empty();
                return Err(CallFailure::Failed(e));
            }
        }
    }
}
