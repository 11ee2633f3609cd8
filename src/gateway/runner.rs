//! The gateway runner: supervises each platform adapter (connect, long-poll, reconnect with
//! backoff, terminal vs retryable errors, health in state.db), records every inbound update
//! before acting on it (duplicates ignored, also across restarts), authorises senders, handles
//! the control commands that must bypass a busy session (`/stop`, `/approve`, `/deny`) and routes
//! everything else to the session's FIFO inbox. On start it first finishes what a previous run
//! left: pending deliveries, then accepted-but-unanswered messages. The adapter rules (ids
//! unique across restarts or an id epoch; `receive` waits) are enforced by `runner_rules.rs`.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::agent::{AgentOptions, Services};
use crate::gateway::hooks::{CommandDecision, Hooks};
use crate::gateway::ledger::{InboundRecord, OutboundRow, send_with_retry};
use crate::gateway::pairing::{self, PairingRequest};
use crate::gateway::platform::{
    AdapterError, ChatType, MessageEvent, PlatformAdapter, SendOptions, build_session_key,
};
use crate::gateway::runner_rules::{EmptyBatches, IdSpace};
use crate::gateway::session::{SessionControl, deliver_row, lock, run_worker};
pub use crate::gateway::settings::{Authorizer, GatewaySettings};
use crate::llm::LlmClient;
use crate::security::approval::ApprovalChoice;
use crate::sessions::StoreError;

/// Refusals to one unknown user are sent at most this often.
const REFUSAL_INTERVAL: Duration = Duration::from_secs(600);
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// Pending deliveries (e.g. after a rate-limit storm) are retried this often.
const SWEEP_INTERVAL: Duration = Duration::from_secs(30);

/// A live session: its inbox and controls.
pub struct SessionHandle {
    pub inbox: mpsc::UnboundedSender<MessageEvent>,
    pub control: Arc<SessionControl>,
}

/// Everything one platform's intake and its session workers share.
pub struct PlatformCtx {
    pub adapter: Arc<dyn PlatformAdapter>,
    pub services: Arc<Services>,
    pub client: Arc<dyn LlmClient>,
    pub agent_options: AgentOptions,
    pub settings: GatewaySettings,
    pub auth: Authorizer,
    pub hooks: Arc<Hooks>,
    pub sessions: Mutex<HashMap<String, SessionHandle>>,
    pub shutdown: CancellationToken,
    /// Permits for running turns (`max_concurrent_turns`).
    pub turn_slots: Arc<tokio::sync::Semaphore>,
    /// Agents currently held by session workers.
    pub live_agents: std::sync::atomic::AtomicUsize,
    /// Told when an agent leaves memory, so the freed heap goes back to the OS.
    pub trimmer: Arc<crate::gateway::memory_trim::Trimmer>,
    /// Ledger rows being delivered right now (the sweep must not send them a second time).
    in_flight: Mutex<HashSet<i64>>,
    refused: Mutex<HashMap<String, Instant>>,
}

impl PlatformCtx {
    pub fn new(
        adapter: Arc<dyn PlatformAdapter>,
        services: Arc<Services>,
        client: Arc<dyn LlmClient>,
        agent_options: AgentOptions,
        hooks: Arc<Hooks>,
        trimmer: Arc<crate::gateway::memory_trim::Trimmer>,
        shutdown: CancellationToken,
    ) -> Self {
        // Sessions are labelled with their platform; someone in the chat can answer approvals.
        let mut agent_options = agent_options;
        agent_options.source = adapter.platform().to_string();
        agent_options.interactive = true;
        let settings = GatewaySettings::from_config(&services.config);
        let auth = Authorizer::from_config(&services.config, adapter.platform());
        let turn_slots = Arc::new(tokio::sync::Semaphore::new(settings.max_concurrent_turns));
        PlatformCtx {
            adapter,
            services,
            client,
            agent_options,
            settings,
            auth,
            hooks,
            trimmer,
            sessions: Mutex::new(HashMap::new()),
            shutdown,
            turn_slots,
            live_agents: std::sync::atomic::AtomicUsize::new(0),
            in_flight: Mutex::new(HashSet::new()),
            refused: Mutex::new(HashMap::new()),
        }
    }

    /// Delivers a ledger row unless another task is already delivering it.
    pub async fn deliver_tracked(&self, row: OutboundRow) {
        let id = row.id;
        if !lock(&self.in_flight).insert(id) {
            return;
        }
        deliver_row(self, row).await;
        lock(&self.in_flight).remove(&id);
    }

    async fn state(&self, key: &str, value: String) {
        let key = format!("{}.{key}", self.adapter.platform());
        if let Err(e) = self
            .services
            .store
            .call(move |s| s.gateway_set_state(&key, &value))
            .await
        {
            tracing::warn!(error = %e, "cannot record gateway state");
        }
    }

    async fn notify(&self, event: &MessageEvent, text: &str) {
        let options = SendOptions {
            thread_id: event.source.thread_id.clone(),
            reply_to: event.message_id.clone(),
        };
        let chat = &event.source.chat_id;
        if let Err(e) = send_with_retry(self.adapter.as_ref(), chat, text, &options).await {
            tracing::warn!(chat, error = %e, "cannot send a notice");
        }
    }

    /// Sends a notice without holding up the intake: a rate-limited send (Telegram can ask for
    /// 30 s) must not delay every other chat's messages behind it.
    fn notify_later(self: &Arc<Self>, event: &MessageEvent, text: String) {
        let (ctx, event) = (self.clone(), event.clone());
        tokio::spawn(async move { ctx.notify(&event, &text).await });
    }

    /// Puts an accepted message in its session's inbox (spawning the worker if needed).
    fn dispatch(self: &Arc<Self>, key: String, event: MessageEvent) -> usize {
        let mut sessions = lock(&self.sessions);
        let handle = sessions.entry(key.clone()).or_insert_with(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            let control = Arc::new(SessionControl::default());
            tokio::spawn(run_worker(self.clone(), key.clone(), rx, control.clone()));
            SessionHandle { inbox: tx, control }
        });
        let ahead = handle.control.queued.fetch_add(1, Ordering::SeqCst)
            + usize::from(handle.control.busy.load(Ordering::SeqCst));
        if handle.inbox.send(event).is_err() {
            // The worker is gone (shutdown): the message stays queued in state.db for next start.
            handle.control.queued.fetch_sub(1, Ordering::SeqCst);
            sessions.remove(&key);
            return 0;
        }
        ahead
    }

    fn control(&self, key: &str) -> Option<Arc<SessionControl>> {
        lock(&self.sessions).get(key).map(|h| h.control.clone())
    }

    /// Takes one inbound event from the wire: record first, then act.
    async fn intake(self: &Arc<Self>, mut event: MessageEvent) -> Result<(), StoreError> {
        let platform = self.adapter.platform().to_string();
        let key = build_session_key(&event.source, self.settings.group_sessions_per_user);
        // Redeliveries stop here, before hooks or anything else could act on them twice.
        let (p, id) = (platform.clone(), event.platform_update_id);
        if self
            .services
            .store
            .call(move |s| s.gateway_inbound_seen(&p, id))
            .await?
        {
            tracing::info!(update_id = id, "duplicate update ignored");
            return Ok(());
        }
        let mut command = event.command();
        let for_us = event.source.chat_type == ChatType::Dm
            || !self.settings.require_mention
            || event.addressed
            || command.is_some();
        if !for_us {
            // Group chatter not addressed to the bot: remembered (so never replayed), not answered.
            self.record(&key, &event, false).await?;
            return Ok(());
        }
        let authorised = self.authorised(event.source.user_id.as_deref()).await;
        if authorised && let Some((name, args)) = command.clone() {
            let ctx = json!({"platform": platform, "user_id": event.source.user_id,
                             "command": name, "raw_command": event.text, "args": args, "raw_args": args});
            match self.hooks.command(&name, ctx).await {
                CommandDecision::Allow => {}
                CommandDecision::Deny(msg) | CommandDecision::Handled(msg) => {
                    if self.record(&key, &event, false).await? {
                        self.notify(&event, &msg).await;
                    }
                    return Ok(());
                }
                CommandDecision::Rewrite(text) => {
                    event.text = text;
                    command = event.command();
                }
            }
        }
        let control_cmd = command
            .as_ref()
            .map(|(n, _)| n.as_str())
            .filter(|n| matches!(*n, "stop" | "approve" | "deny" | "yes" | "no"));
        let wants_turn = authorised && !event.text.is_empty() && control_cmd.is_none();
        // A full inbox refuses the message here, before it is recorded as queued, so it is
        // never replayed either. Only this intake loop adds to an inbox: the check holds.
        let full = wants_turn && self.inbox_full(&key);
        let queued = wants_turn && !full;
        if !self.record(&key, &event, queued).await? {
            tracing::info!(
                update_id = event.platform_update_id,
                "duplicate update ignored"
            );
            return Ok(());
        }
        if event.text.is_empty() {
            return Ok(());
        }
        if !authorised {
            let user = event.source.user_id.clone().unwrap_or_default();
            let now = Instant::now();
            let recent = {
                let mut refused = lock(&self.refused);
                refused.retain(|_, t| now.duration_since(*t) < REFUSAL_INTERVAL);
                let seen = refused.contains_key(&user);
                if !seen {
                    refused.insert(user.clone(), now);
                }
                seen
            };
            tracing::warn!(%platform, %user, "message from an unauthorised user refused");
            let silent = event.source.chat_type == ChatType::Dm && !self.settings.dm_pairing;
            if !recent && !silent {
                let text = self.refusal(&event, &user).await;
                self.notify(&event, &text).await;
            }
            return Ok(());
        }
        if let Some(name) = control_cmd {
            let control = self.control(&key);
            let reply = match name {
                "stop" => match control.map(|c| c.stop()) {
                    Some(true) => "Stopping the current turn.",
                    _ => "Nothing is running.",
                },
                _ => {
                    let choice = if matches!(name, "approve" | "yes") {
                        ApprovalChoice::Once
                    } else {
                        ApprovalChoice::Deny
                    };
                    match control.map(|c| c.answer(choice)) {
                        Some(true) if choice == ApprovalChoice::Deny => "Denied.",
                        Some(true) => "Approved.",
                        _ => "Nothing is waiting for approval.",
                    }
                }
            };
            self.notify(&event, reply).await;
            return Ok(());
        }
        if full {
            // One notice per burst: the first refused message says so for the ones after it.
            let first = self
                .control(&key)
                .is_some_and(|c| !c.refusing.swap(true, Ordering::SeqCst));
            tracing::info!(%key, update_id = event.platform_update_id, "inbox full; message refused");
            if first {
                let cap = self.settings.max_queued_per_chat;
                let text = format!(
                    "Busy — this message was not queued: {cap} messages are already waiting. Messages sent before those are answered are not queued either; send it again later."
                );
                self.notify_later(&event, text);
            }
            return Ok(());
        }
        let ahead = self.dispatch(key.clone(), event.clone());
        if let Some(c) = self.control(&key) {
            c.refusing.store(false, Ordering::SeqCst);
        }
        // One notice per burst: when the first message lines up behind a running turn. The
        // messages after it join the same line without a notice each (a flood of 500 messages
        // must not become 500 sends, which delayed every other chat behind the rate limit).
        if ahead == 1 {
            let text = "Queued; I will answer after the current reply (and messages you send meanwhile, in order).";
            self.notify_later(&event, text.to_string());
        }
        Ok(())
    }

    /// True when the session's inbox holds `max_queued_per_chat` messages not yet started.
    fn inbox_full(&self, key: &str) -> bool {
        self.control(key)
            .is_some_and(|c| c.queued.load(Ordering::SeqCst) >= self.settings.max_queued_per_chat)
    }

    /// Allowed by configuration, or paired through a DM pairing code.
    async fn authorised(&self, user: Option<&str>) -> bool {
        if self.auth.allows(user) {
            return true;
        }
        let Some(user) = user.map(String::from) else {
            return false;
        };
        let platform = self.adapter.platform().to_string();
        self.services
            .store
            .call(move |s| s.pairing_is_approved(&platform, &user))
            .await
            .unwrap_or(false)
    }

    /// The one reply an unknown user gets: in a DM, a pairing code when the limits allow.
    async fn refusal(&self, event: &MessageEvent, user: &str) -> String {
        let platform = self.adapter.platform().to_string();
        let up = crate::gateway::platform::env_prefix(&platform);
        let base = format!("Sorry, you are not authorised to use this bot (your user id: {user}).");
        let pairing_off = self
            .services
            .config
            .env
            .get(&format!("{up}_PAIRING"))
            .is_some_and(|v| matches!(v.trim().to_lowercase().as_str(), "off" | "false" | "0"));
        if event.source.chat_type != ChatType::Dm || pairing_off || user.is_empty() {
            return format!("{base} Ask the bot's owner to add it to {up}_ALLOWED_USERS.");
        }
        let (p, u, name, code) = (
            platform.clone(),
            user.to_string(),
            event.source.user_name.clone(),
            pairing::new_code(),
        );
        let issued = self
            .services
            .store
            .call(move |s| s.pairing_request(&p, &u, name.as_deref(), &code))
            .await;
        match issued {
            Ok(PairingRequest::New(code)) => format!(
                "{base} Your pairing code is {code} (valid for 1 hour): ask the bot's owner to run `hermes pairing approve {platform} {code}`."
            ),
            Ok(PairingRequest::TooSoon) => {
                format!(
                    "{base} Your pairing code was already sent; ask the bot's owner to approve it."
                )
            }
            Ok(PairingRequest::TooMany) => {
                format!("{base} Too many pairing requests are waiting; try again later.")
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot issue a pairing code");
                format!("{base} Ask the bot's owner to add it to {up}_ALLOWED_USERS.")
            }
        }
    }

    async fn record(
        &self,
        key: &str,
        event: &MessageEvent,
        queued: bool,
    ) -> Result<bool, StoreError> {
        let rec = InboundRecord {
            platform: self.adapter.platform().to_string(),
            update_id: event.platform_update_id,
            chat_id: event.source.chat_id.clone(),
            session_key: key.to_string(),
            event_json: serde_json::to_string(event)
                .map_err(|e| StoreError::Task(format!("cannot encode the inbound message: {e}")))?,
        };
        self.services
            .store
            .call(move |s| s.gateway_record_inbound(&rec, queued))
            .await
    }

    /// Finishes a previous run's work: pending deliveries, then queued messages.
    async fn recover(self: &Arc<Self>) -> Result<(), StoreError> {
        let platform = self.adapter.platform().to_string();
        let p = platform.clone();
        let pending = self
            .services
            .store
            .call(move |s| s.gateway_pending_outbound(&p))
            .await?;
        for row in pending {
            self.deliver_tracked(row).await;
        }
        let queued = self
            .services
            .store
            .call(move |s| s.gateway_queued_inbound(&platform))
            .await?;
        for rec in queued {
            match serde_json::from_str::<MessageEvent>(&rec.event_json) {
                Ok(event) => {
                    self.dispatch(rec.session_key, event);
                }
                Err(e) => {
                    tracing::error!(update_id = rec.update_id, error = %e, "unreadable queued message skipped")
                }
            }
        }
        Ok(())
    }

    async fn sweep(self: &Arc<Self>) {
        let p = self.adapter.platform().to_string();
        match self
            .services
            .store
            .call(move |s| s.gateway_pending_outbound(&p))
            .await
        {
            Ok(rows) => {
                for row in rows {
                    let ctx = self.clone();
                    tokio::spawn(async move { ctx.deliver_tracked(row).await });
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot list pending deliveries"),
        }
    }
}

/// Runs one platform until shutdown or a terminal error.
pub async fn supervise(ctx: Arc<PlatformCtx>) -> Result<(), AdapterError> {
    let platform = ctx.adapter.platform().to_string();
    let mut backoff = Duration::from_secs(1);
    loop {
        let connected = tokio::select! {
            _ = ctx.shutdown.cancelled() => return Ok(()),
            r = ctx.adapter.connect() => r,
        };
        match connected {
            Ok(()) => break,
            Err(e) if e.is_terminal() => {
                ctx.state("status", format!("stopped: {e}")).await;
                return Err(e);
            }
            Err(e) => {
                ctx.state("status", format!("reconnecting: {e}")).await;
                tracing::warn!(%platform, error = %e, ?backoff, "connect failed; retrying");
                tokio::select! {
                    _ = ctx.shutdown.cancelled() => return Ok(()),
                    _ = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
    ctx.state("status", "connected".into()).await;
    ctx.state("pid", std::process::id().to_string()).await;
    if let Err(e) = ctx.recover().await {
        tracing::error!(%platform, error = %e, "recovery of the previous run failed");
    }
    let cursor_key = crate::sessions::SessionStore::gateway_cursor_key(&platform);
    let ck = cursor_key.clone();
    let mut cursor: Option<i64> = ctx
        .services
        .store
        .call(move |s| s.gateway_get_state(&ck))
        .await
        .ok()
        .flatten()
        .and_then(|v| v.parse().ok());
    let mut backoff = Duration::from_secs(1);
    let mut last_sweep = Instant::now();
    let mut ids = IdSpace::new(&platform);
    let mut empties = EmptyBatches::default();
    loop {
        match ids.sync(ctx.adapter.as_ref(), &ctx.services.store).await {
            Ok(true) => cursor = None,
            Ok(false) => {}
            Err(e) => {
                // Without the id base no update can be recorded safely: wait, then retry.
                tracing::error!(%platform, error = %e, "cannot record the id epoch");
                tokio::select! {
                    _ = ctx.shutdown.cancelled() => break,
                    _ = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(MAX_BACKOFF);
                continue;
            }
        }
        let asked = Instant::now();
        let received = tokio::select! {
            _ = ctx.shutdown.cancelled() => break,
            r = ctx.adapter.receive(cursor) => r,
        };
        match received {
            Ok(events) => {
                backoff = Duration::from_secs(1);
                ctx.state("last_ok", format!("{:.3}", crate::gateway::unix_now()))
                    .await;
                if let Some(delay) = empties.after(&platform, events.is_empty(), asked.elapsed()) {
                    tokio::select! {
                        _ = ctx.shutdown.cancelled() => break,
                        _ = tokio::time::sleep(delay) => {}
                    }
                }
                let mut advanced = false;
                let asked_with = cursor;
                for mut event in events {
                    let next = ctx.adapter.cursor_after(&event);
                    if !ids.place(&mut event, asked_with) {
                        cursor = Some(next);
                        advanced = true;
                        continue;
                    }
                    if let Err(e) = ctx.intake(event).await {
                        // Not recorded: do not move the cursor past it, it comes back next poll.
                        tracing::error!(%platform, error = %e, "cannot record an inbound message");
                        break;
                    }
                    cursor = Some(next);
                    advanced = true;
                }
                if advanced && let Some(c) = cursor {
                    let (k, v) = (cursor_key.clone(), c.to_string());
                    if let Err(e) = ctx
                        .services
                        .store
                        .call(move |s| s.gateway_set_state(&k, &v))
                        .await
                    {
                        tracing::warn!(error = %e, "cannot persist the poll cursor");
                    }
                }
                if last_sweep.elapsed() >= SWEEP_INTERVAL {
                    last_sweep = Instant::now();
                    ctx.sweep().await;
                }
            }
            Err(e) if e.is_terminal() => {
                ctx.state("status", format!("stopped: {e}")).await;
                tracing::error!(%platform, error = %e, "adapter stopped");
                return Err(e);
            }
            Err(e) => {
                let delay = match &e {
                    AdapterError::RateLimited { retry_after, .. } => *retry_after,
                    _ => backoff,
                };
                ctx.state("last_error", e.to_string()).await;
                tracing::warn!(%platform, error = %e, ?delay, "poll failed; retrying");
                tokio::select! {
                    _ = ctx.shutdown.cancelled() => break,
                    _ = tokio::time::sleep(delay) => {}
                }
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
    ctx.state("status", "stopped".into()).await;
    ctx.adapter.disconnect().await;
    Ok(())
}
