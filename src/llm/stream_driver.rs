//! The half of a streaming call every wire protocol shares: the idle and whole-request deadlines,
//! the answer-size cap, the queue of decoded events, marking errors `partial` once output was
//! shown, and ending with exactly one `Done` or one error. A protocol supplies a [`WireStream`]
//! that decodes its chunks. Dropping the driver drops the HTTP body stream, which closes the
//! connection.
//!
//! Hostile or broken servers, and what ends them: a server that never answers hits the request
//! deadline (`agent.request_timeout`); one that sends only SSE keep-alive comments sends no
//! chunk (comments never reach the wire decoder as events), so it hits the idle timeout
//! (`agent.stream_idle_timeout`); one that streams an endless answer hits the answer cap
//! (`agent.max_answer_mb`) instead of growing memory without bound.

use std::collections::VecDeque;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use tokio::time::{Instant, timeout_at};

use crate::llm::{FailoverReason, LlmError, LlmEvent, LlmResponse, LlmStream};

/// Once the answer is whole, how long to wait for the stream's own end marker.
pub(crate) const AFTER_FINISH_GRACE: Duration = Duration::from_secs(10);

/// `now + timeout`, saturating: a configured timeout of "forever" must not overflow `Instant`.
pub(crate) fn after(timeout: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(timeout)
        .unwrap_or_else(|| now + Duration::from_secs(10 * 365 * 24 * 3600))
}

/// The bounds of one streamed call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StreamLimits {
    /// Longest silence between two chunks (keep-alive comments are silence).
    pub idle: Duration,
    /// When the whole call must be over.
    pub deadline: Instant,
    /// Most answer bytes accepted.
    pub max_answer: usize,
}

impl StreamLimits {
    /// The provider's limits for a call whose deadline is `deadline`.
    pub(crate) fn of(provider: &crate::llm::Provider, deadline: Instant) -> Self {
        StreamLimits {
            idle: provider.stream_idle_timeout,
            deadline,
            max_answer: provider.max_answer_bytes,
        }
    }
}

/// The error for an answer that passed the cap. Not retryable: the same request would most
/// likely stream the same runaway answer again.
fn answer_too_large(max: usize, complete: bool) -> LlmError {
    let end = if complete {
        "after its finish marker"
    } else {
        "and no [DONE] or finish marker had arrived"
    };
    LlmError::new(
        FailoverReason::FormatError,
        format!(
            "the answer passed the cap of {:.1} MiB (agent.max_answer_mb) {end}; hermes stopped reading it",
            max as f64 / (1024.0 * 1024.0)
        ),
    )
}

/// One protocol's decoding of an open stream.
pub(crate) trait WireStream: Send + 'static {
    type Chunk: Send + 'static;
    type Error: Send + 'static;

    /// The answer is already whole (a finish reason or stop event was seen).
    fn is_complete(&self) -> bool;
    /// Decodes one chunk into events; `Ok(true)` when the answer just finished.
    fn push(&mut self, chunk: Self::Chunk, out: &mut Vec<LlmEvent>) -> Result<bool, LlmError>;
    /// The body ended: flush what is buffered; `Ok(true)` when the answer is whole, else the
    /// error that says what was missing.
    fn end(&mut self, out: &mut Vec<LlmEvent>) -> Result<(), LlmError>;
    /// A transport error in the middle of the stream.
    fn interrupted(&self, error: Self::Error) -> LlmError;
    /// The final response (events that must precede `Done` go to `out`).
    fn finish(&mut self, out: &mut Vec<LlmEvent>) -> LlmResponse;
    /// Adds the endpoint and scrubs the key from an error before it leaves the client.
    fn finish_error(&self, error: LlmError) -> LlmError;
    /// Bytes of answer received so far (text, reasoning and tool-call arguments), which is what
    /// the answer cap measures.
    fn answer_bytes(&self) -> usize;
}

/// Drives one open stream with a [`WireStream`].
pub(crate) struct Driver<W: WireStream> {
    inner: BoxStream<'static, Result<W::Chunk, W::Error>>,
    wire: W,
    queue: VecDeque<Result<LlmEvent, LlmError>>,
    finished: bool,
    /// Whether any delta already reached the caller (errors are then `partial`).
    emitted: bool,
    idle: Duration,
    deadline: Instant,
    /// Most answer bytes accepted before the stream is cut.
    max_answer: usize,
}

impl<W: WireStream> Driver<W> {
    pub(crate) fn new(
        inner: BoxStream<'static, Result<W::Chunk, W::Error>>,
        wire: W,
        limits: StreamLimits,
    ) -> Self {
        Driver {
            inner,
            wire,
            queue: VecDeque::new(),
            finished: false,
            emitted: false,
            idle: limits.idle,
            deadline: limits.deadline,
            max_answer: limits.max_answer,
        }
    }

    pub(crate) fn into_stream(self) -> LlmStream {
        futures::stream::unfold(self, |mut driver| async move {
            driver.next().await.map(|item| (item, driver))
        })
        .boxed()
    }

    async fn next(&mut self) -> Option<Result<LlmEvent, LlmError>> {
        loop {
            if let Some(item) = self.queue.pop_front() {
                if matches!(item, Ok(ref event) if !matches!(event, LlmEvent::Done(_))) {
                    self.emitted = true;
                }
                return Some(item);
            }
            if self.finished {
                return None;
            }
            self.step().await;
        }
    }

    /// Waits for the next chunk (or the end, or a deadline) and queues what it produces.
    async fn step(&mut self) {
        let complete = self.wire.is_complete();
        let quiet = if complete {
            self.idle.min(AFTER_FINISH_GRACE)
        } else {
            self.idle
        };
        let limit = after(quiet).min(self.deadline);
        match timeout_at(limit, self.inner.next()).await {
            // The answer is whole; a missing end marker or a trailing hiccup does not spoil it.
            Err(_) | Ok(Some(Err(_))) if complete => self.succeed(),
            Err(_) if limit == self.deadline => self.fail(LlmError::new(
                FailoverReason::Timeout,
                "the answer did not finish within the provider's request timeout",
            )),
            Err(_) => self.fail(LlmError::new(
                FailoverReason::Timeout,
                format!(
                    "the server sent nothing for {quiet:?} while streaming (stream idle timeout)"
                ),
            )),
            Ok(Some(Err(e))) => {
                let err = self.wire.interrupted(e);
                self.fail(err);
            }
            Ok(Some(Ok(chunk))) => {
                let mut events = Vec::new();
                let pushed = self.wire.push(chunk, &mut events);
                self.queue.extend(events.into_iter().map(Ok));
                match pushed {
                    Err(err) => self.fail(err),
                    Ok(true) => self.succeed(),
                    Ok(false) if self.wire.answer_bytes() > self.max_answer => {
                        let err = answer_too_large(self.max_answer, self.wire.is_complete());
                        self.fail(err);
                    }
                    Ok(false) => {}
                }
            }
            Ok(None) => {
                let mut events = Vec::new();
                let ended = self.wire.end(&mut events);
                self.queue.extend(events.into_iter().map(Ok));
                match ended {
                    Ok(()) => self.succeed(),
                    Err(err) => self.fail(err),
                }
            }
        }
    }

    fn succeed(&mut self) {
        if self.finished {
            return;
        }
        let mut events = Vec::new();
        let response = self.wire.finish(&mut events);
        self.queue.extend(events.into_iter().map(Ok));
        self.queue.push_back(Ok(LlmEvent::Done(response)));
        self.finished = true;
    }

    fn fail(&mut self, err: LlmError) {
        let mut err = self.wire.finish_error(err);
        err.partial = self.emitted || self.queue.iter().any(|item| item.is_ok());
        self.queue.push_back(Err(err));
        self.finished = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_error_says_the_size_and_whether_the_end_had_arrived() {
        let open = answer_too_large(16 * 1024 * 1024, false);
        assert!(open.body.contains("16.0 MiB"), "{}", open.body);
        assert!(open.body.contains("no [DONE]"), "{}", open.body);
        assert!(
            !open.reason.is_retryable(),
            "the same request would run away again"
        );
        let done = answer_too_large(1024 * 1024, true);
        assert!(
            done.body.contains("after its finish marker"),
            "{}",
            done.body
        );
    }
}
