//! Child agents: the one way to run an agent inside an agent (background reviews, `delegate_task`,
//! later cron and ACP). A caller describes the child in a [`ChildSpec`] and gets a
//! [`ChildHandle`] from [`Services::spawn_child`]: progress (the latest line, watchable), `cancel()`,
//! and exactly one terminal [`ChildResult`] — completed, failed, timeout, stalled or cancelled —
//! with the child's final text, usage, cost and the files it wrote.
//!
//! Every child is supervised: a wall-clock timeout, a stall timeout (no event from the child's
//! loop for that long — a model that never answers or only sends keep-alives), and the parent's
//! cancellation (a child token of the parent's turn), so a child never outlives its reason to run
//! and never ends without telling its parent why. `Services` keeps the set of running children
//! so a front end can wait for them (bounded) at exit.
//!
//! A child that forks the conversation sends the parent's exact tools array and messages as the
//! byte-identical prefix of its first request (the provider's prompt cache hits); what it may
//! use is enforced when it calls (`Agent::run_tools` refuses the rest), not by sending a
//! different tools array.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::agent::failover::Failover;
use crate::agent::{Agent, AgentError, AgentEvent, AgentOptions, Services, TurnExit, db, spend};
use crate::llm::{LlmClient, Message, Role, ToolSchema, Usage};
use crate::sessions::NewSession;
use crate::tools::AgentRole;
use crate::turn::Ticket;

/// How long a front end waits at exit for running children (the answer is already out).
pub const EXIT_WAIT: Duration = Duration::from_secs(20);
/// How long a cancelled or timed-out child may take to record its interruption before it is
/// dropped where it stands.
const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// How a child starts its conversation.
pub enum ChildStart {
    /// Continues the parent's conversation (background reviews): the parent's frozen system
    /// prompt, tools array and messages, byte for byte.
    Fork {
        system_prompt: String,
        history: Vec<Message>,
        tool_schemas: Vec<ToolSchema>,
    },
    /// A conversation of its own (delegation) with this system prompt; the tools array is
    /// the child's allowed tools.
    Fresh { system_prompt: String },
}

/// What to run.
pub struct ChildSpec {
    /// For logs and progress lines.
    pub label: String,
    /// The child's first user message (its goal, or a review's instructions).
    pub goal: String,
    pub role: AgentRole,
    /// The toolsets the child may use.
    pub toolsets: Vec<String>,
    /// Narrows the toolsets' tools to these names (delegation: the parent's tools minus the
    /// blocked ones).
    pub only_tools: Option<BTreeSet<String>>,
    pub max_iterations: u32,
    /// Wall-clock limit for the whole child.
    pub timeout: Option<Duration>,
    /// Ends the child when its loop reports nothing for this long.
    pub stall_timeout: Option<Duration>,
    pub start: ChildStart,
    /// A `subagent` session with `parent_session_id` in state.db; otherwise nothing is written
    /// and its spend goes to the parent's ledger row.
    pub recorded: bool,
    /// Dangerous commands run without asking (only when the parent is in yolo and
    /// `delegation.approvals: inherit`); otherwise they are denied — a child never asks.
    pub yolo: bool,
    /// A place in the review line: the child waits for a running slot before it starts.
    pub ticket: Option<Ticket>,
}

/// Whose child it is.
#[derive(Clone)]
pub struct ParentLink {
    pub session_id: String,
    pub client: Arc<dyn LlmClient>,
    pub cwd: PathBuf,
    /// The parent's depth (0 for the user's agent).
    pub depth: u32,
    /// Cancelling this (the parent's turn being interrupted) cancels the child.
    pub cancel: CancellationToken,
    /// MCP servers the parent's session brought (an editor's, over ACP): a child whose
    /// toolsets name theirs gets their tools, as it gets the process's.
    pub session_mcp: Option<Arc<crate::mcp::client::SessionMcp>>,
}

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildStatus {
    Completed,
    Failed,
    Timeout,
    Stalled,
    Cancelled,
}

impl ChildStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ChildStatus::Completed => "completed",
            ChildStatus::Failed => "failed",
            ChildStatus::Timeout => "timeout",
            ChildStatus::Stalled => "stalled",
            ChildStatus::Cancelled => "cancelled",
        }
    }
}

/// The one terminal result of a child.
#[derive(Debug, Clone)]
pub struct ChildResult {
    pub status: ChildStatus,
    /// The child's final answer (or what it had when it was stopped).
    pub text: String,
    /// Why it did not complete, in words a user can act on.
    pub error: Option<String>,
    pub api_calls: u32,
    pub usage: Usage,
    /// Estimated from `budget.prices`; `None` when the model has no price.
    pub cost_usd: Option<f64>,
    /// Files the child wrote or patched (successful calls only).
    pub files_written: Vec<PathBuf>,
    /// The child's session id (a state.db row only when recorded).
    pub session_id: String,
    pub duration: Duration,
}

/// The latest thing a child did, for one progress line per child.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChildProgress {
    pub line: String,
    pub tool_calls: u32,
}

/// A running child.
pub struct ChildHandle {
    pub label: String,
    progress: watch::Receiver<ChildProgress>,
    cancel: CancellationToken,
    result: oneshot::Receiver<ChildResult>,
}

impl ChildHandle {
    /// Stops the child; its result will say `cancelled`.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// A receiver of the child's latest progress.
    pub fn progress(&self) -> watch::Receiver<ChildProgress> {
        self.progress.clone()
    }

    /// Waits for the child's terminal result.
    pub async fn result(self) -> ChildResult {
        let label = self.label;
        self.result.await.unwrap_or_else(|_| ChildResult {
            status: ChildStatus::Failed,
            text: String::new(),
            error: Some(format!(
                "the child `{label}` stopped without a result (its task ended unexpectedly)"
            )),
            api_calls: 0,
            usage: Usage::default(),
            cost_usd: None,
            files_written: Vec::new(),
            session_id: String::new(),
            duration: Duration::ZERO,
        })
    }
}

/// The children running in this process (held by `Services`).
#[derive(Default)]
pub struct Children {
    state: Arc<ChildrenState>,
}

#[derive(Default)]
struct ChildrenState {
    running: Mutex<HashMap<u64, CancellationToken>>,
    next_id: std::sync::atomic::AtomicU64,
    idle: Notify,
}

/// Removes a child from the running set when its task ends, however it ends (also when the
/// task is dropped before it first runs). Owned, so it is taken before the task is spawned:
/// a front end that waits for idle right after starting a review must see it running.
struct Running {
    set: Arc<ChildrenState>,
    id: u64,
}

impl ChildrenState {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, CancellationToken>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let mut running = self.set.lock();
        running.remove(&self.id);
        if running.is_empty() {
            self.set.idle.notify_waiters();
        }
    }
}

impl Children {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, CancellationToken>> {
        self.state.lock()
    }

    fn enter(&self, cancel: CancellationToken) -> Running {
        let id = self
            .state
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.lock().insert(id, cancel);
        Running {
            set: self.state.clone(),
            id,
        }
    }

    /// Children running now.
    pub fn running(&self) -> usize {
        self.lock().len()
    }

    /// Cancels every running child.
    pub fn cancel_all(&self) {
        for token in self.lock().values() {
            token.cancel();
        }
    }

    /// Waits up to `max` for every child to end; returns how many are still running.
    pub async fn wait_idle(&self, max: Duration) -> usize {
        let deadline = tokio::time::Instant::now() + max;
        loop {
            let idle = self.state.idle.notified();
            let left = self.running();
            if left == 0 {
                return 0;
            }
            if tokio::time::timeout_at(deadline, idle).await.is_err() {
                let left = self.running();
                if left > 0 {
                    tracing::info!(running = left, "exiting with child agents still running");
                }
                return left;
            }
        }
    }
}

impl Services {
    /// Starts a child of `parent` described by `spec`. Never fails here: a child that cannot
    /// start ends with a `failed` result saying why.
    pub fn spawn_child(self: &Arc<Self>, parent: ParentLink, spec: ChildSpec) -> ChildHandle {
        let cancel = parent.cancel.child_token();
        let (progress_tx, progress) = watch::channel(ChildProgress::default());
        let (result_tx, result) = oneshot::channel();
        let handle = ChildHandle {
            label: spec.label.clone(),
            progress,
            cancel: cancel.clone(),
            result,
        };
        let services = self.clone();
        let running = self.children.enter(cancel.clone());
        let task = async move {
            let _running = running;
            let label = spec.label.clone();
            let result = run_child(&services, parent, spec, cancel, progress_tx).await;
            tracing::info!(
                child = %label,
                status = result.status.as_str(),
                api_calls = result.api_calls,
                error = result.error.as_deref().unwrap_or(""),
                answer = %crate::util::truncate_chars(&result.text, 200),
                "child agent finished"
            );
            // Nobody may be waiting (a background review): the result is then only logged.
            let _ = result_tx.send(result);
        };
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn(task);
            }
            Err(_) => tracing::warn!(child = %handle.label, "no async runtime: child not started"),
        }
        handle
    }
}

/// Builds the child's agent, runs its one turn under supervision and sums it up.
async fn run_child(
    services: &Arc<Services>,
    parent: ParentLink,
    mut spec: ChildSpec,
    cancel: CancellationToken,
    progress: watch::Sender<ChildProgress>,
) -> ChildResult {
    let started = Instant::now();
    let ticket = spec.ticket.take();
    let _slot = match &ticket {
        Some(t) => tokio::select! {
            slot = t.run_slot() => slot,
            _ = cancel.cancelled() => None,
        },
        None => None,
    };
    let mut result = ChildResult {
        status: ChildStatus::Failed,
        text: String::new(),
        error: None,
        api_calls: 0,
        usage: Usage::default(),
        cost_usd: None,
        files_written: Vec::new(),
        session_id: String::new(),
        duration: Duration::ZERO,
    };
    if cancel.is_cancelled() {
        result.status = ChildStatus::Cancelled;
        result.error = Some("cancelled before it started".into());
        return result;
    }
    let mut agent = match build_child(services, &parent, &spec).await {
        Ok(a) => a,
        Err(e) => {
            result.error = Some(format!("the child could not start: {e}"));
            result.duration = started.elapsed();
            return result;
        }
    };
    result.session_id = agent.session_id().to_string();
    let first_new = agent.history().len();
    let (events, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let deadline = spec.timeout.map(|t| tokio::time::Instant::now() + t);
    let mut last_event = tokio::time::Instant::now();
    let mut stopped: Option<ChildStatus> = None;
    let mut state = ChildProgress::default();
    let outcome = {
        let turn = agent.run_turn(&spec.goal, &events, &cancel);
        tokio::pin!(turn);
        loop {
            let stall_at = spec.stall_timeout.map(|s| last_event + s);
            let wake = match (deadline, stall_at) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            tokio::select! {
                r = &mut turn => break Some(r),
                Some(event) = rx.recv() => {
                    last_event = tokio::time::Instant::now();
                    if note_progress(&mut state, &event) {
                        progress.send_replace(state.clone());
                    }
                }
                _ = sleep_until(wake), if wake.is_some() && stopped.is_none() => {
                    let now = tokio::time::Instant::now();
                    stopped = Some(if deadline.is_some_and(|d| now >= d) {
                        ChildStatus::Timeout
                    } else {
                        ChildStatus::Stalled
                    });
                    cancel.cancel();
                    // The loop records the interruption and answers pending tool calls.
                    break tokio::time::timeout(CANCEL_GRACE, &mut turn).await.ok();
                }
            }
        }
    };
    result.usage = agent.session_usage();
    result.cost_usd = spend::PriceTable::from_config(&services.config.file.budget)
        .cost(agent.model(), &result.usage);
    result.files_written = files_written(&agent.history()[first_new..], &parent.cwd);
    result.duration = started.elapsed();
    match outcome {
        Some(Ok(turn)) => {
            result.api_calls = turn.api_calls;
            result.text = turn.text;
            result.status = match (stopped, turn.exit) {
                (Some(s), _) => s,
                (None, TurnExit::Completed | TurnExit::BudgetExhausted) => ChildStatus::Completed,
                (None, TurnExit::Interrupted) => ChildStatus::Cancelled,
                (None, TurnExit::LoopStopped | TurnExit::SpendCapped) => ChildStatus::Failed,
            };
            if result.status == ChildStatus::Failed {
                result.error = Some(result.text.clone());
            }
        }
        Some(Err(e)) => {
            result.status = stopped.unwrap_or(ChildStatus::Failed);
            result.error = Some(e.to_string());
        }
        None => result.status = stopped.unwrap_or(ChildStatus::Cancelled),
    }
    if result.error.is_none() {
        result.error = match result.status {
            ChildStatus::Timeout => Some(format!(
                "no answer within the child's time limit of {:?}",
                spec.timeout.unwrap_or_default()
            )),
            ChildStatus::Stalled => Some(format!(
                "the child made no progress for {:?} (the model stopped answering)",
                spec.stall_timeout.unwrap_or_default()
            )),
            ChildStatus::Cancelled => Some("cancelled: the parent was interrupted".into()),
            _ => None,
        };
    }
    if spec.recorded {
        // The child's session says how it ended (`completed`, `timeout`, ...).
        if let Err(e) = agent.end(result.status.as_str()).await {
            tracing::warn!(error = %e, "cannot mark the child's session ended");
        }
    }
    drop(ticket);
    result
}

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Updates the progress line from one of the child's events; true when it changed.
fn note_progress(state: &mut ChildProgress, event: &AgentEvent) -> bool {
    let line = match event {
        AgentEvent::ToolStart { name, summary, .. } => {
            state.tool_calls += 1;
            if summary.is_empty() {
                name.clone()
            } else {
                format!("{name} {summary}")
            }
        }
        AgentEvent::Retrying { message, .. } => format!("retrying: {message}"),
        AgentEvent::BudgetExhausted { .. } => "budget used up, summarising".into(),
        _ => return false,
    };
    state.line = crate::util::truncate_chars(&line, 100).to_string();
    true
}

/// The child's agent: the allowed tools for dispatch, the parent's client, a state.db row
/// when recorded.
async fn build_child(
    services: &Arc<Services>,
    parent: &ParentLink,
    spec: &ChildSpec,
) -> Result<Agent, AgentError> {
    // The toolsets of the parent's own MCP servers (an editor's) are theirs, not the process's.
    let theirs = parent
        .session_mcp
        .as_ref()
        .map(|m| m.toolsets())
        .unwrap_or_default();
    let process: Vec<String> = spec
        .toolsets
        .iter()
        .filter(|t| !theirs.contains(*t))
        .cloned()
        .collect();
    let mut tools = services.tools.select(&services.config, &process)?;
    if let Some(mcp) = &parent.session_mcp {
        mcp.add_tools(&services.config, &mut tools, |set| {
            spec.toolsets.iter().any(|t| t == set)
        });
    }
    if let Some(only) = &spec.only_tools {
        tools.retain(|name| only.contains(name));
    }
    let (system_prompt, history, schemas) = match &spec.start {
        ChildStart::Fork {
            system_prompt,
            history,
            tool_schemas,
        } => (system_prompt.clone(), history.clone(), tool_schemas.clone()),
        ChildStart::Fresh { system_prompt } => (system_prompt.clone(), Vec::new(), tools.schemas()),
    };
    let provider = parent.client.provider().clone();
    // A delegated child uses the parent's credential pool (from the cached auth.json); a review
    // makes a handful of calls on the parent's key and never rotates.
    let (failover, client) = if spec.role == AgentRole::Delegate {
        let (failover, rekeyed) = Failover::new(
            &services.config,
            &services.credentials,
            &services.http,
            &provider,
        )
        .await;
        (failover, rekeyed.unwrap_or_else(|| parent.client.clone()))
    } else {
        (Failover::fixed(&provider), parent.client.clone())
    };
    let options = AgentOptions {
        source: "subagent".to_string(),
        cwd: parent.cwd.clone(),
        toolsets: spec.toolsets.clone(),
        max_iterations: spec.max_iterations,
        yolo: spec.yolo,
        interactive: false,
        ephemeral: !spec.recorded,
    };
    let session_id = if spec.recorded {
        let new = NewSession {
            id: crate::sessions::new_session_id(),
            source: "subagent".into(),
            model: Some(provider.model.clone()),
            model_config: None,
            billing_provider: Some(provider.name.clone()),
            billing_base_url: Some(provider.base_url.clone()),
            cwd: Some(parent.cwd.display().to_string()),
            parent_session_id: Some(parent.session_id.clone()),
            system_prompt: Some(system_prompt.clone()),
        };
        let id = new.id.clone();
        db(&services.store, move |s| s.create_session(&new)).await?;
        id
    } else {
        format!(
            "{}-child-{:06x}",
            parent.session_id,
            rand::random::<u32>() & 0xff_ffff
        )
    };
    let mut agent = Agent::assemble(
        services.clone(),
        client,
        failover,
        options,
        tools,
        session_id.clone(),
        system_prompt,
        history,
        None,
    );
    agent.tool_schemas = schemas;
    agent.role = spec.role;
    agent.depth = parent.depth + 1;
    // A recorded child pays into its own row (the parent's caps, /usage and insights add its
    // children); an ephemeral one into the parent's. Either way the parent's caps apply.
    agent.ledger_session = if spec.recorded {
        session_id
    } else {
        parent.session_id.clone()
    };
    agent.cap_session = parent.session_id.clone();
    Ok(agent)
}

/// Paths of successful `write_file` / `patch` calls in `messages`, resolved against `cwd`.
fn files_written(messages: &[Message], cwd: &std::path::Path) -> Vec<PathBuf> {
    let failed: BTreeSet<&str> = messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .filter(|m| {
            m.content
                .as_deref()
                .is_some_and(|c| c.trim_start().starts_with("{\"error\""))
        })
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    let mut files = BTreeSet::new();
    for call in messages.iter().flat_map(|m| &m.tool_calls) {
        if !matches!(call.name.as_str(), "write_file" | "patch")
            || failed.contains(call.id.as_str())
        {
            continue;
        }
        let args: serde_json::Value = serde_json::from_str(&call.arguments).unwrap_or_default();
        if let Some(path) = args["path"].as_str().filter(|p| !p.is_empty()) {
            let p = PathBuf::from(path);
            files.insert(if p.is_absolute() { p } else { cwd.join(p) });
        }
    }
    files.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolCall;

    #[test]
    fn files_written_skips_failed_calls_and_resolves_paths() {
        let call = |id: &str, name: &str, path: &str| ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: serde_json::json!({ "path": path }).to_string(),
        };
        let (a, b, c) = (
            call("a", "write_file", "out.txt"),
            call("b", "patch", "/abs/x.rs"),
            call("c", "write_file", "bad.txt"),
        );
        let messages = vec![
            Message::assistant(None, vec![a.clone(), b.clone(), c.clone()]),
            Message::tool_result(&a, "{\"ok\":true}"),
            Message::tool_result(&b, "patched"),
            Message::tool_result(&c, "{\"error\":\"denied\"}"),
        ];
        let files = files_written(&messages, std::path::Path::new("/work"));
        assert_eq!(
            files,
            vec![PathBuf::from("/abs/x.rs"), PathBuf::from("/work/out.txt")]
        );
    }

    #[tokio::test]
    async fn children_set_waits_and_cancels() {
        let set = Children::default();
        assert_eq!(set.wait_idle(Duration::from_millis(10)).await, 0);
        let token = CancellationToken::new();
        let running = set.enter(token.clone());
        assert_eq!(set.running(), 1);
        assert_eq!(set.wait_idle(Duration::from_millis(20)).await, 1);
        set.cancel_all();
        assert!(token.is_cancelled());
        drop(running);
        assert_eq!(set.wait_idle(Duration::from_millis(20)).await, 0);
    }
}
