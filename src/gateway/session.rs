//! One chat session's worker: a FIFO inbox drained one turn at a time. It owns the session's
//! `Agent` (created through the public API, resumed from state.db via the routing table),
//! answers approval questions through the chat (`/approve`, `/deny`, timeout → deny), closes each
//! inbound update together with its answer in the delivery ledger, and delivers. Idle workers
//! exit and drop their agent; the next message resumes it from state.db, so memory stays flat.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::json;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::agent::{Agent, AgentError, AgentEvent, TurnExit};
use crate::gateway::ledger::{OutboundNew, deliver, send_with_retry};
use crate::gateway::platform::{MessageEvent, SendOptions};
use crate::gateway::runner::PlatformCtx;
use crate::security::approval::ApprovalChoice;

/// Live controls of a session, reachable from the intake while a turn runs.
#[derive(Default)]
pub struct SessionControl {
    /// Cancels the running turn (`/stop`).
    pub turn: Mutex<Option<CancellationToken>>,
    /// The answer channel of an approval question waiting in the chat.
    pub approval: Mutex<Option<oneshot::Sender<ApprovalChoice>>>,
    pub busy: AtomicBool,
    /// Messages in the inbox not yet started.
    pub queued: AtomicUsize,
    /// The inbox was full and the chat was told so; the next message that finds room clears
    /// it (so a burst of refused messages gets one notice).
    pub refusing: AtomicBool,
}

impl SessionControl {
    /// Answers a waiting approval question; false if none is waiting.
    pub fn answer(&self, choice: ApprovalChoice) -> bool {
        let waiting = lock(&self.approval).take();
        match waiting {
            Some(tx) => tx.send(choice).is_ok(),
            None => false,
        }
    }

    /// Interrupts the running turn; false if none is running.
    pub fn stop(&self) -> bool {
        match lock(&self.turn).as_ref() {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The per-session worker loop.
pub async fn run_worker(
    ctx: Arc<PlatformCtx>,
    key: String,
    mut inbox: mpsc::UnboundedReceiver<MessageEvent>,
    control: Arc<SessionControl>,
) {
    let mut agent: Option<Agent> = None;
    loop {
        let event = tokio::select! {
            _ = ctx.shutdown.cancelled() => break,
            e = inbox.recv() => e,
            _ = tokio::time::sleep(ctx.settings.idle_evict) => {
                // Leave only if nothing slipped in: the intake sends under the same lock.
                let mut sessions = lock(&ctx.sessions);
                if inbox.is_empty() {
                    sessions.remove(&key);
                    tracing::debug!(%key, "idle session evicted from memory");
                    drop(sessions);
                    if let Some(a) = agent.take() {
                        ctx.live_agents.fetch_sub(1, Ordering::SeqCst);
                        ctx.trimmer.note_freed();
                        ctx.hooks.emit(
                            "session:end",
                            json!({"platform": ctx.adapter.platform(), "session_id": a.session_id(),
                                   "session_key": key, "reason": "idle"}),
                        );
                    }
                    break;
                }
                continue;
            }
        };
        let Some(event) = event else { break };
        control.queued.fetch_sub(1, Ordering::SeqCst);
        control.busy.store(true, Ordering::SeqCst);
        // Bounded parallelism: a burst of new chats must not build a thousand agents at once.
        let permit = tokio::select! {
            _ = ctx.shutdown.cancelled() => break,
            p = ctx.turn_slots.clone().acquire_owned() => p.ok(),
        };
        let had = agent.is_some();
        // A panic in this chat's turn stays in this chat: it gets an error reply, its agent is
        // dropped (the conversation is in state.db; the next message resumes it) and every
        // other chat goes on (see `crate::panics`).
        let (reply, streamed) = match crate::panics::catch(handle(
            &ctx, &key, &mut agent, &event, &control,
        ))
        .await
        {
            Ok(done) => done,
            Err(panic) => {
                tracing::error!(%key, %panic, "the turn panicked; the chat gets an error reply");
                agent = None;
                *lock(&control.turn) = None;
                lock(&control.approval).take();
                (Some(crashed_reply(&panic)), None)
            }
        };
        drop(permit);
        control.busy.store(false, Ordering::SeqCst);
        match (had, agent.is_some()) {
            (false, true) => {
                ctx.live_agents.fetch_add(1, Ordering::SeqCst);
            }
            (true, false) => {
                ctx.live_agents.fetch_sub(1, Ordering::SeqCst);
            }
            _ => {}
        }
        // Past `max_live_sessions`, a finished agent leaves memory at once (its session is in
        // state.db; the next message resumes it).
        if agent.is_some()
            && ctx.live_agents.load(Ordering::SeqCst) > ctx.settings.max_live_sessions
        {
            agent = None;
            ctx.live_agents.fetch_sub(1, Ordering::SeqCst);
            ctx.trimmer.note_freed();
        }
        finish(&ctx, &key, &event, reply, streamed).await;
    }
    if agent.is_some() {
        ctx.live_agents.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Closes the inbound update with its answer in one transaction, then delivers.
async fn finish(
    ctx: &Arc<PlatformCtx>,
    key: &str,
    event: &MessageEvent,
    reply: Option<String>,
    streamed: Option<String>,
) {
    let platform = ctx.adapter.platform().to_string();
    let update_id = event.platform_update_id;
    let out = reply
        .filter(|t| !t.trim().is_empty())
        .map(|text| OutboundNew {
            platform: platform.clone(),
            chat_id: event.source.chat_id.clone(),
            thread_id: event.source.thread_id.clone(),
            reply_to: event.message_id.clone(),
            session_key: key.to_string(),
            update_id: Some(update_id),
            text,
            stream_message_id: streamed,
        });
    let new = out.clone();
    let id = match ctx
        .services
        .store
        .call(move |s| s.gateway_complete_turn(&platform, update_id, new.as_ref()))
        .await
    {
        Ok(id) => id,
        Err(e) => {
            tracing::error!(%key, update_id, error = %e, "cannot record the finished turn");
            return;
        }
    };
    if let (Some(id), Some(new)) = (id, out) {
        let row = crate::gateway::ledger::OutboundRow {
            id,
            new,
            chunks_sent: 0,
            message_ids: Vec::new(),
        };
        ctx.deliver_tracked(row).await;
    }
}

/// Runs one inbox item; returns the answer to deliver and the id of the message it was
/// streamed into, if any.
async fn handle(
    ctx: &Arc<PlatformCtx>,
    key: &str,
    agent: &mut Option<Agent>,
    event: &MessageEvent,
    control: &Arc<SessionControl>,
) -> (Option<String>, Option<String>) {
    if let Some((name, _)) = event.command()
        && (name == "new" || name == "reset")
    {
        if let Some(old) = agent.take() {
            let _ = old.end("new_session").await;
        }
        return match open(ctx, key, event, true).await {
            Ok(a) => {
                ctx.hooks.emit(
                    "session:reset",
                    json!({"platform": ctx.adapter.platform(), "user_id": event.source.user_id,
                           "session_id": a.session_id(), "session_key": key}),
                );
                *agent = Some(a);
                (Some("Started a new conversation.".into()), None)
            }
            Err(e) => (
                Some(format!("Could not start a new conversation: {e}")),
                None,
            ),
        };
    }
    if agent.is_none() {
        match open(ctx, key, event, false).await {
            Ok(a) => *agent = Some(a),
            Err(e) => {
                tracing::error!(%key, error = %e, "cannot open the session's agent");
                let text = format!("Sorry, I could not open this conversation: {e}");
                return (Some(text), None);
            }
        }
    }
    let Some(agent) = agent.as_mut() else {
        return (None, None);
    };
    let _ = ctx.adapter.typing(&event.source.chat_id).await;
    let platform = ctx.adapter.platform().to_string();
    ctx.hooks.emit(
        "agent:start",
        json!({"platform": platform, "user_id": event.source.user_id,
               "chat_id": event.source.chat_id, "thread_id": event.source.thread_id,
               "chat_type": event.source.chat_type.as_str(), "session_id": agent.session_id(),
               "message": truncate(&event.text, 500)}),
    );
    // A child of the gateway's shutdown: SIGTERM cancels the running turn (its commands are
    // stopped and recorded as interrupted) instead of only dropping it.
    let cancel = ctx.shutdown.child_token();
    *lock(&control.turn) = Some(cancel.clone());
    let (tx, rx) = mpsc::unbounded_channel::<AgentEvent>();
    let listener = tokio::spawn(listen(
        ctx.clone(),
        event.clone(),
        agent.session_id().to_string(),
        rx,
        control.clone(),
    ));
    // Tagged with the update id: a redelivery after a crash is recognised, not answered twice.
    let tag = format!("update:{}", event.platform_update_id);
    let result = agent
        .run_turn_tagged(&event.text, Some(&tag), &tx, &cancel)
        .await;
    drop(tx);
    let streamed = listener.await.unwrap_or(None);
    *lock(&control.turn) = None;
    // An unanswered question dies with its turn.
    lock(&control.approval).take();
    let text = match result {
        Ok(outcome) => match outcome.exit {
            TurnExit::Interrupted if outcome.text.trim().is_empty() => "Stopped.".to_string(),
            _ => outcome.text,
        },
        Err(e) => {
            tracing::warn!(%key, error = %e, "turn failed");
            format!(
                "Sorry, that failed: {}",
                crate::security::redact::redact(&e.to_string())
            )
        }
    };
    ctx.hooks.emit(
        "agent:end",
        json!({"platform": platform, "user_id": event.source.user_id,
               "session_id": agent.session_id(), "response": truncate(&text, 500)}),
    );
    (Some(text), streamed)
}

/// Consumes a turn's events: asks approval questions in the chat, keeps the chat "typing", and
/// when streaming is on previews the answer in one message edited at the configured interval.
/// Returns the id of that message (the final answer is delivered into it).
async fn listen(
    ctx: Arc<PlatformCtx>,
    event: MessageEvent,
    session_id: String,
    mut rx: mpsc::UnboundedReceiver<AgentEvent>,
    control: Arc<SessionControl>,
) -> Option<String> {
    let chat = event.source.chat_id.clone();
    let mut preview = Preview::new(&ctx, &event);
    // One `agent:step` per batch of tool calls (the tools the model asked for in one reply).
    let mut running: Vec<String> = Vec::new();
    let mut batch: Vec<String> = Vec::new();
    let mut step = 0u32;
    while let Some(ev) = rx.recv().await {
        match ev {
            AgentEvent::TextDelta(delta) => preview.push(&delta).await,
            AgentEvent::Retrying {
                discarded_partial: true,
                ..
            }
            | AgentEvent::Switched {
                discarded_partial: true,
                ..
            } => preview.discard(),
            AgentEvent::ApprovalNeeded { request, respond } => {
                let timeout = ctx.settings.approval_timeout;
                // The chat is another service: a token in the command must not reach it.
                let redactor = &ctx.services.shield.redactor;
                let reasons = redactor.redact_string(request.reasons.join("; "));
                let text = format!(
                    "⚠️ Approval needed to run:\n{}\nReason: {reasons}\nReply /approve or /deny within {}s (no answer = deny).",
                    redactor.redact(&request.command),
                    timeout.as_secs()
                );
                let options = SendOptions {
                    thread_id: event.source.thread_id.clone(),
                    reply_to: None,
                };
                let (answer_tx, answer_rx) = oneshot::channel();
                *lock(&control.approval) = Some(answer_tx);
                if let Err(e) = send_with_retry(ctx.adapter.as_ref(), &chat, &text, &options).await
                {
                    tracing::warn!(error = %e, "cannot ask for approval; denying");
                }
                let choice = match tokio::time::timeout(timeout, answer_rx).await {
                    Ok(Ok(choice)) => choice,
                    _ => {
                        lock(&control.approval).take();
                        let note = "No answer in time: the command was refused.";
                        let _ = send_with_retry(ctx.adapter.as_ref(), &chat, note, &options).await;
                        ApprovalChoice::Deny
                    }
                };
                let _ = respond.send(choice);
            }
            AgentEvent::ToolStart { id, name, .. } => {
                running.push(id);
                batch.push(name);
                let _ = ctx.adapter.typing(&chat).await;
            }
            AgentEvent::ToolEnd { id, .. } => {
                running.retain(|r| *r != id);
                if running.is_empty() && !batch.is_empty() {
                    step += 1;
                    let tools = std::mem::take(&mut batch);
                    ctx.hooks.emit(
                        "agent:step",
                        json!({"platform": ctx.adapter.platform(), "user_id": event.source.user_id,
                               "session_id": session_id, "iteration": step, "tool_names": tools}),
                    );
                }
            }
            _ => {}
        }
    }
    preview.message_id
}

/// A streamed answer shown by editing one message.
struct Preview<'a> {
    ctx: &'a PlatformCtx,
    event: &'a MessageEvent,
    enabled: bool,
    text: String,
    message_id: Option<String>,
    last: std::time::Instant,
}

impl<'a> Preview<'a> {
    fn new(ctx: &'a PlatformCtx, event: &'a MessageEvent) -> Self {
        Preview {
            ctx,
            event,
            enabled: ctx.settings.streaming && ctx.adapter.can_edit(),
            text: String::new(),
            message_id: None,
            last: std::time::Instant::now(),
        }
    }

    fn discard(&mut self) {
        self.text.clear();
    }

    async fn push(&mut self, delta: &str) {
        if !self.enabled {
            return;
        }
        self.text.push_str(delta);
        if self.last.elapsed() < self.ctx.settings.stream_interval || self.text.trim().is_empty() {
            return;
        }
        self.last = std::time::Instant::now();
        let shown = format!("{} ▌", self.text.trim_end());
        let adapter = self.ctx.adapter.as_ref();
        // Past one message the preview stops; the final delivery chunks the whole answer.
        if adapter.message_len(&shown) > adapter.max_message_len() {
            return;
        }
        let chat = &self.event.source.chat_id;
        match &self.message_id {
            Some(mid) => {
                if let Err(e) = adapter.edit(chat, mid, &shown).await {
                    tracing::debug!(error = %e, "preview edit failed");
                }
            }
            None => {
                let options = SendOptions {
                    thread_id: self.event.source.thread_id.clone(),
                    reply_to: self.event.message_id.clone(),
                };
                match adapter.send(chat, &shown, &options).await {
                    Ok(sent) => self.message_id = Some(sent.message_id),
                    Err(e) => {
                        tracing::debug!(error = %e, "preview send failed; streaming off");
                        self.enabled = false;
                    }
                }
            }
        }
    }
}

/// The session's agent: the routed state.db session resumed, or a new one (always new on `/new`).
async fn open(
    ctx: &Arc<PlatformCtx>,
    key: &str,
    event: &MessageEvent,
    fresh: bool,
) -> Result<Agent, AgentError> {
    let store = ctx.services.store.clone();
    let k = key.to_string();
    let existing = if fresh {
        None
    } else {
        store.call(move |s| s.gateway_routed_session(&k)).await?
    };
    let options = ctx.agent_options.clone();
    let agent = match existing {
        Some(row) => Agent::resume(ctx.services.clone(), ctx.client.clone(), row, options).await?,
        None => {
            let a = Agent::start(ctx.services.clone(), ctx.client.clone(), options).await?;
            let (k, id) = (key.to_string(), a.session_id().to_string());
            store.call(move |s| s.gateway_set_route(&k, &id)).await?;
            ctx.hooks.emit(
                "session:start",
                json!({"platform": ctx.adapter.platform(), "user_id": event.source.user_id,
                       "session_id": a.session_id(), "session_key": key}),
            );
            a
        }
    };
    Ok(agent)
}

/// What a chat is told when its turn panicked.
fn crashed_reply(panic: &str) -> String {
    format!(
        "Sorry, something broke inside hermes while answering this (internal error: {}). The conversation is kept; send the message again, or /new to start over.",
        crate::security::redact::redact(&truncate(panic, 300))
    )
}

fn truncate(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

/// Delivery of a ledger row, used by the worker and the runner's recovery sweep.
pub async fn deliver_row(ctx: &PlatformCtx, row: crate::gateway::ledger::OutboundRow) {
    let id = row.id;
    if let Err(e) = deliver(ctx.adapter.as_ref(), &ctx.services.store, row).await {
        tracing::warn!(id, error = %e, "delivery incomplete; it stays pending and is retried");
    }
}
