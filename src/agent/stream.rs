//! One streaming model call: forwards deltas as `AgentEvent`s, stops on cancellation (dropping
//! the stream aborts the HTTP request), and reports how the call ended.

use futures::StreamExt;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::agent::AgentEvent;
use crate::llm::{ChatRequest, FailoverReason, LlmClient, LlmError, LlmEvent, LlmResponse};

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
                let _ = events.send(AgentEvent::TextDelta(t));
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
