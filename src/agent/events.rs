//! `AgentEvent`: everything a front end (REPL, one-shot, gateway, tests) learns about a turn.

use std::time::Duration;

use crate::llm::{FailoverReason, Usage};
use crate::security::approval::{ApprovalChoice, ApprovalRequest};

/// Emitted by `Agent::run_turn` in order. Front ends render them; they never drive the loop
/// except through `ApprovalNeeded`'s responder.
#[derive(Debug)]
pub enum AgentEvent {
    /// Streamed answer text.
    TextDelta(String),
    /// Streamed reasoning text (rendered dimmed or hidden).
    ReasoningDelta(String),
    /// A model call failed and will be retried after `delay`. Text already streamed for this
    /// call is discarded (`discarded_partial`), so front ends should drop what they showed.
    Retrying {
        reason: FailoverReason,
        attempt: u32,
        delay: Duration,
        discarded_partial: bool,
        message: String,
    },
    /// A call failed and the agent switched to another key or provider (`message` says which).
    Switched {
        reason: FailoverReason,
        message: String,
        discarded_partial: bool,
    },
    /// Earlier messages were folded into a summary (originals stay in state.db, searchable).
    /// `note` explains a fallback summary or a compaction that could not be saved.
    Compacted {
        archived: usize,
        used_fallback: bool,
        note: Option<String>,
    },
    /// A tool call is starting.
    ToolStart {
        id: String,
        name: String,
        /// Short human-readable argument summary (e.g. the path or command).
        summary: String,
    },
    /// A tool call finished.
    ToolEnd {
        id: String,
        name: String,
        duration: Duration,
        is_error: bool,
    },
    /// A dangerous command needs the user's decision; send the answer through `respond`.
    ApprovalNeeded {
        request: ApprovalRequest,
        respond: tokio::sync::oneshot::Sender<ApprovalChoice>,
    },
    /// Usage of one model call.
    Usage(Usage),
    /// The iteration budget ran out; a final summary is being requested.
    BudgetExhausted { used: u32 },
    /// What a delegated child is doing now (one line per child, replaced as it goes), and its
    /// status once it ended.
    ChildProgress {
        /// The task's index in its `delegate_task` batch.
        task: usize,
        goal: String,
        line: String,
        /// `completed | failed | timeout | stalled | cancelled` once the child ended.
        status: Option<&'static str>,
    },
}
