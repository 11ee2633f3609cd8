//! One `session/prompt`: the session's agent runs a turn while its events become session
//! updates — text and reasoning deltas as message and thought chunks, tool calls with status
//! and file locations, the `todo` list as a plan — and an approval question becomes the
//! editor's `session/request_permission`. The turn's cancel token is the session's until the
//! turn ends, so `session/cancel` stops it (a running command is killed and recorded).

use std::sync::{Arc, PoisonError};

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, PromptRequest, PromptResponse,
    RequestPermissionOutcome, RequestPermissionRequest, SessionNotification, SessionUpdate,
    StopReason, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::session::AcpSession;
use super::{AcpServer, invalid, rpc_error, updates};
use crate::agent::{AgentEvent, TurnExit};
use crate::security::approval::{ApprovalChoice, ApprovalRequest, EDIT_REASON};
use crate::security::redact::Redactor;

/// The longest permission-question title (characters) an editor is shown; the full command,
/// redacted, is in the question's `rawInput`.
const TITLE_MAX: usize = 200;

/// Permission option ids, and the answer each one means.
const OPTIONS: [(&str, &str, PermissionOptionKind, ApprovalChoice); 4] = [
    (
        "allow_once",
        "Allow once",
        PermissionOptionKind::AllowOnce,
        ApprovalChoice::Once,
    ),
    (
        "allow_session",
        "Allow for this session",
        PermissionOptionKind::AllowAlways,
        ApprovalChoice::Session,
    ),
    (
        "allow_always",
        "Always allow (saved to config.yaml)",
        PermissionOptionKind::AllowAlways,
        ApprovalChoice::Always,
    ),
    (
        "reject",
        "Reject",
        PermissionOptionKind::RejectOnce,
        ApprovalChoice::Deny,
    ),
];

/// Clears the session's cancel token when the turn ends, however it ends.
struct TurnGuard(Arc<AcpSession>);

impl Drop for TurnGuard {
    fn drop(&mut self) {
        *self.0.turn.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

pub async fn prompt(
    server: &AcpServer,
    req: PromptRequest,
    cx: ConnectionTo<Client>,
) -> Result<PromptResponse, agent_client_protocol::Error> {
    let id = req.session_id.0.to_string();
    let session = server.session(&id)?;
    let text = updates::prompt_text(&req.prompt);
    if text.trim().is_empty() {
        return Err(invalid("the prompt has no text"));
    }
    let mut agent = session.agent.try_lock().map_err(|_| {
        invalid("a prompt is already running in this session: wait for it or cancel it")
    })?;
    let cancel = CancellationToken::new();
    *session.turn.lock().unwrap_or_else(PoisonError::into_inner) = Some(cancel.clone());
    let _guard = TurnGuard(session.clone());

    let (tx, rx) = mpsc::unbounded_channel::<AgentEvent>();
    let forward = tokio::spawn(forward(
        rx,
        cx.clone(),
        id.clone(),
        session.cwd.clone(),
        agent.scratch(),
        cancel.clone(),
        server.services.shield.clone(),
    ));
    let result = agent.run_turn(&text, &tx, &cancel).await;
    drop(tx);
    let streamed = forward.await.unwrap_or(false);
    let outcome = result.map_err(|e| rpc_error(-32603, format!("the turn failed: {e}")))?;
    // Answers that were not streamed (a loop stopped, a spend cap) still reach the editor.
    if !streamed && !outcome.text.trim().is_empty() {
        cx.send_notification(SessionNotification::new(
            id.clone(),
            SessionUpdate::AgentMessageChunk(updates::text_chunk(&outcome.text)),
        ))?;
    }
    let stop = match outcome.exit {
        TurnExit::Interrupted => StopReason::Cancelled,
        TurnExit::BudgetExhausted => StopReason::MaxTurnRequests,
        TurnExit::Completed | TurnExit::LoopStopped | TurnExit::SpendCapped => StopReason::EndTurn,
    };
    Ok(PromptResponse::new(stop))
}

/// Sends the turn's events to the editor; returns whether answer text was streamed.
async fn forward(
    mut rx: mpsc::UnboundedReceiver<AgentEvent>,
    cx: ConnectionTo<Client>,
    session_id: String,
    cwd: std::path::PathBuf,
    scratch: Arc<crate::tools::SessionScratch>,
    cancel: CancellationToken,
    shield: Arc<crate::security::shield::Shield>,
) -> bool {
    let mut streamed = false;
    // The call an approval question belongs to (the last command or edit that started).
    let mut last_asking: Option<String> = None;
    let send = |update: SessionUpdate| {
        if let Err(e) = cx.send_notification(SessionNotification::new(session_id.clone(), update)) {
            tracing::debug!(error = %e, "cannot send a session update (editor gone?)");
        }
    };
    while let Some(event) = rx.recv().await {
        match event {
            AgentEvent::TextDelta(text) => {
                streamed = true;
                send(SessionUpdate::AgentMessageChunk(updates::text_chunk(&text)));
            }
            AgentEvent::ReasoningDelta(text) => {
                send(SessionUpdate::AgentThoughtChunk(updates::text_chunk(&text)));
            }
            AgentEvent::ToolStart { id, name, summary } => {
                if matches!(
                    updates::tool_kind(&name),
                    ToolKind::Execute | ToolKind::Edit
                ) {
                    last_asking = Some(id.clone());
                }
                send(updates::tool_started(&id, &name, &summary, &cwd));
            }
            AgentEvent::ToolEnd {
                id, name, is_error, ..
            } => {
                send(updates::tool_finished(&id, is_error));
                if name == "todo" {
                    let list = scratch
                        .todos
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .clone();
                    send(updates::plan(&list));
                }
            }
            AgentEvent::ApprovalNeeded { request, respond } => {
                // Asked beside the stream, so updates keep flowing while the editor decides.
                let ask = ask_permission(
                    cx.clone(),
                    session_id.clone(),
                    last_asking.clone(),
                    request,
                    cancel.clone(),
                    shield.clone(),
                );
                tokio::spawn(async move {
                    let mut respond = respond;
                    // The gate stops waiting at its timeout (a denial); so does this question.
                    tokio::select! {
                        choice = ask => { let _ = respond.send(choice); }
                        _ = respond.closed() => {}
                    }
                });
            }
            AgentEvent::Retrying { message, .. } | AgentEvent::Switched { message, .. } => {
                tracing::info!(%message, "ACP turn: model call retried or switched");
            }
            _ => {}
        }
    }
    streamed
}

/// Asks the editor about a dangerous command; anything but an allow answer is a denial
/// (cancelled, an error, the editor gone). The gate's own timeout denies an editor that never
/// answers.
async fn ask_permission(
    cx: ConnectionTo<Client>,
    session_id: String,
    call_id: Option<String>,
    request: ApprovalRequest,
    cancel: CancellationToken,
    shield: Arc<crate::security::shield::Shield>,
) -> ApprovalChoice {
    let redactor = &shield.redactor;
    let (title, kind) = permission_title(&request, redactor);
    let call = ToolCallUpdate::new(
        call_id.unwrap_or_else(|| format!("approval-{}", rand::random::<u32>())),
        ToolCallUpdateFields::new()
            .title(title)
            .kind(kind)
            .status(ToolCallStatus::Pending)
            .raw_input(serde_json::json!({"command": redactor.redact(&request.command)})),
    );
    let options = OPTIONS
        .iter()
        .map(|(id, name, kind, _)| PermissionOption::new(*id, *name, *kind))
        .collect();
    let asked = cx
        .send_request(RequestPermissionRequest::new(session_id, call, options))
        .block_task();
    let answer = tokio::select! {
        r = asked => r,
        _ = cancel.cancelled() => return ApprovalChoice::Deny,
    };
    match answer {
        Ok(response) => match response.outcome {
            RequestPermissionOutcome::Selected(selected) => OPTIONS
                .iter()
                .find(|(id, ..)| *id == &*selected.option_id.0)
                .map(|(.., choice)| *choice)
                .unwrap_or(ApprovalChoice::Deny),
            _ => ApprovalChoice::Deny,
        },
        Err(e) => {
            tracing::warn!(error = %e, "the editor did not answer a permission request; denied");
            ApprovalChoice::Deny
        }
    }
}

/// The question's title: the command (or the edit) with secrets redacted, cut to `TITLE_MAX`
/// characters, then the reasons it is asked.
fn permission_title(request: &ApprovalRequest, redactor: &Redactor) -> (String, ToolKind) {
    let command = redactor.redact(&request.command);
    let cut = crate::util::truncate_chars(&command, TITLE_MAX);
    let command = if cut.len() < command.len() {
        format!("{cut}…")
    } else {
        cut.to_string()
    };
    if request.reasons.iter().any(|r| r == EDIT_REASON) {
        return (format!("Edit: {command}"), ToolKind::Edit);
    }
    let mut title = format!("Run `{command}`");
    if !request.reasons.is_empty() {
        let reasons = request.reasons.join("; ");
        title.push_str(&format!(" ({})", redactor.redact(&reasons)));
    }
    (title, ToolKind::Execute)
}
