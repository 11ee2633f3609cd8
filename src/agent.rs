//! `Agent`: THE conversation loop. It persists, calls the model, dispatches tools and reports
//! what happens as `AgentEvent`s; it does not contain the client, the registry or the store.
//!
//! One turn: persist the user message → loop { budget → model call (with retries) → persist the
//! assistant message → run its tool calls → persist each result } → final answer. When the budget
//! is spent, one tool-less call asks for a summary. Cancellation aborts the in-flight request or
//! tools, records what happened, and leaves every tool call answered so the session resumes.

pub mod budget;
pub mod child;
mod compaction;
pub mod compressor;
pub mod credentials;
mod delegation;
mod event_prompt;
pub mod events;
pub mod extension;
pub mod failover;
pub mod loop_guard;
pub mod prompt;
pub mod spend;
pub mod started_calls;
mod stream;
mod title;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

pub use crate::turn::{TurnExtension, TurnInfo};
pub use budget::IterationBudget;
pub use events::AgentEvent;

use compressor::{ContextCompressor, Trigger};
use event_prompt::EventPrompt;
use failover::{Failover, FailoverStep};
use stream::{CallFailure, stream_once};

use crate::config::Config;
use crate::llm::retry::RetryPolicy;
use crate::llm::{
    ChatRequest, FailoverReason, LlmClient, LlmError, LlmResponse, Message, Role, ToolCall,
    ToolSchema, Usage,
};
use crate::security::approval::{ApprovalGate, ApprovalPrompt, NoPrompt};
use crate::sessions::{NewSession, SessionRow, SessionStore, StoreError};
use crate::skills::SkillStore;
use crate::tools::registry::ToolsetError;
use crate::tools::{AgentRole, SessionScratch, ToolContext, ToolOutput, ToolRegistry};
use crate::turn::Admission;

/// Sent (not persisted) when the iteration budget is spent, asking for a final summary.
const BUDGET_SUMMARY_REQUEST: &str = "[The tool-call budget for this turn is used up. Do not call any more tools. Reply now with a summary of what you found and did, and what is still left to do.]";
/// How long `TurnExtension::before_turn` may take before the turn goes on without it.
pub(crate) const BEFORE_TURN_TIMEOUT: Duration = Duration::from_secs(8);
/// Compactions tried for one call that the provider rejects as too large.
const MAX_OVERFLOW_COMPACTIONS: u32 = 3;
/// Appended to a partial answer that the user interrupted.
const INTERRUPTED_NOTE: &str = "[interrupted by the user]";

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The model call failed and retries (if any) are exhausted.
    #[error("{0}")]
    Llm(#[from] LlmError),
    #[error("{0}")]
    Store(#[from] StoreError),
    #[error("{0}")]
    Toolset(#[from] ToolsetError),
    #[error("{0}")]
    Prompt(#[from] prompt::PromptError),
    /// A tool asked to abort the turn.
    #[error("the turn was stopped by the {tool} tool: {message}")]
    ToolFatal { tool: String, message: String },
    #[error("internal error: {0}")]
    Internal(String),
}

/// The process's state, shared by every agent (and child agents). There are no process-global
/// statics for any of it: a test can build two `Services` side by side.
pub struct Services {
    pub config: Arc<Config>,
    pub store: Arc<SessionStore>,
    /// Subsystems that take part in every turn (memory, skills, ...).
    pub extensions: Vec<Arc<dyn TurnExtension>>,
    /// Protected paths and the secret redactor, built once per process.
    pub shield: Arc<crate::security::shield::Shield>,
    /// The skill store; its parse cache serves the prompt build and the skills tools.
    pub skills: SkillStore,
    /// Every tool linked into the binary (discovered once) and those registered at run time
    /// (MCP); sessions select theirs from it.
    pub tools: Arc<crate::tools::ToolCatalog>,
    /// The MCP servers of `mcp_servers:` (started when the first session opens).
    pub mcp: Arc<crate::mcp::McpClients>,
    /// auth.json, read once and re-read only when the file changes.
    pub credentials: credentials::AuthFile,
    /// The HTTP client model clients made during the process share (key rotation, fallback).
    pub http: reqwest::Client,
    /// The line background reviews join (at most 2 running, 8 admitted).
    pub reviews: Admission,
    /// Child agents running now (reviews, delegation); front ends wait for them at exit.
    pub children: child::Children,
}

impl Services {
    pub fn new(config: Arc<Config>, store: Arc<SessionStore>) -> Self {
        Services {
            shield: Arc::new(crate::security::shield::Shield::for_config(&config)),
            skills: SkillStore::from_config(&config),
            tools: Arc::new(crate::tools::ToolCatalog::discover()),
            mcp: Arc::default(),
            credentials: credentials::AuthFile::new(config.home.root().join("auth.json")),
            http: shared_http(),
            reviews: Admission::default(),
            children: child::Children::default(),
            config,
            store,
            extensions: Vec::new(),
        }
    }

    /// Starts the MCP supervisors (once). Never waits: a session takes the servers that have
    /// answered when it freezes its tools (`mcp::client::freeze_tools`).
    pub fn connect_mcp(&self) {
        if self.config.file.mcp_servers.is_empty() {
            return;
        }
        self.mcp.start(&crate::mcp::client::context(
            &self.config,
            &self.tools,
            &self.http,
        ));
    }

    /// A session's tools array, frozen now, with the MCP servers still missing for its
    /// `tool_search` (see `mcp::client::freeze_tools`).
    fn freeze_tools(
        &self,
        toolsets: &[String],
        session_mcp: Option<&crate::mcp::client::SessionMcp>,
        mut unsettled: Vec<(
            Arc<crate::mcp::client::Server>,
            Arc<crate::tools::ToolCatalog>,
        )>,
    ) -> Result<
        (
            ToolRegistry,
            Option<Arc<dyn crate::tools::deferred::LateTools>>,
        ),
        AgentError,
    > {
        unsettled.extend(session_mcp.map(|m| m.unsettled()).unwrap_or_default());
        Ok(crate::mcp::client::freeze_tools(
            &self.config,
            &self.tools,
            session_mcp,
            toolsets,
            unsettled,
        )?)
    }

    /// Builds a session's frozen system prompt off the async runtime (it scans the skill tree
    /// and reads SOUL.md, memory and the project's context file).
    pub async fn build_prompt(
        &self,
        cwd: &std::path::Path,
        tool_names: &[&str],
    ) -> Result<String, AgentError> {
        let inputs = prompt::PromptInputs::current(cwd, tool_names);
        let (config, skills) = (self.config.clone(), self.skills.clone());
        crate::util::offload::offload("build the system prompt", move || {
            prompt::build_system_prompt_with(&config, &skills, &inputs)
        })
        .await
        .map_err(|e| AgentError::Internal(e.to_string()))?
        .map_err(AgentError::from)
    }
}

/// The process's HTTP client (bounded idle pool, rustls installed).
pub fn shared_http() -> reqwest::Client {
    crate::llm::http::client_builder(Duration::from_secs(10))
        .build()
        .unwrap_or_else(|e| {
            tracing::warn!(error = %e, "cannot build the shared HTTP client; using a default one");
            reqwest::Client::new()
        })
}

/// How an agent is set up by its front end.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// `sessions.source` (`cli`, `telegram`, `subagent`, ...).
    pub source: String,
    pub cwd: PathBuf,
    pub toolsets: Vec<String>,
    /// Iteration budget per turn (90 for a parent).
    pub max_iterations: u32,
    pub yolo: bool,
    /// Whether someone can answer approval questions (false for `-z`, cron).
    pub interactive: bool,
    /// Nothing is written to state.db (background review agents).
    pub ephemeral: bool,
}

/// Why a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnExit {
    Completed,
    /// The budget ran out and the answer is the model's summary.
    BudgetExhausted,
    Interrupted,
    /// The loop guard ended a turn that was going in circles; `text` says why.
    LoopStopped,
    /// A spend cap would have been passed by the next call; `text` says which and how to raise it.
    SpendCapped,
}

/// The result of one turn.
#[derive(Debug, Clone)]
pub struct TurnOutcome {
    pub text: String,
    pub exit: TurnExit,
    pub api_calls: u32,
    pub usage: Usage,
}

/// One conversation (session) with its frozen prompt, history and per-session state.
pub struct Agent {
    services: Arc<Services>,
    client: Arc<dyn LlmClient>,
    session_id: String,
    system_prompt: String,
    history: Vec<Message>,
    tools: ToolRegistry,
    tool_schemas: Vec<ToolSchema>,
    approvals: Arc<ApprovalGate>,
    scratch: Arc<SessionScratch>,
    checkpoints: Arc<crate::checkpoints::Checkpointer>,
    retry: RetryPolicy,
    options: AgentOptions,
    session_usage: Usage,
    prices: spend::PriceTable,
    caps: spend::SpendCaps,
    /// The session whose ledger pays for this agent's calls (the parent's, for a background fork).
    ledger_session: String,
    /// The session whose spend caps this agent's calls obey (with its children's spend): its
    /// own, or its parent's for a child.
    cap_session: String,
    /// Key rotation and provider fallback.
    failover: Failover,
    compressor: ContextCompressor,
    /// The user's agent, or which kind of child.
    role: AgentRole,
    /// Agents above this one (0 for the user's agent).
    depth: u32,
    /// MCP servers this session brought (ACP); stopped when the agent is dropped.
    session_mcp: Option<Arc<crate::mcp::client::SessionMcp>>,
}

impl Agent {
    /// Starts a new session: builds and stores the frozen system prompt.
    pub async fn start(
        services: Arc<Services>,
        client: Arc<dyn LlmClient>,
        options: AgentOptions,
    ) -> Result<Self, AgentError> {
        Self::start_with_mcp(services, client, options, None).await
    }

    /// `start`, with MCP servers this session brings (an editor's, over ACP) beside the
    /// process's; the agent keeps them running while it lives.
    pub async fn start_with_mcp(
        services: Arc<Services>,
        client: Arc<dyn LlmClient>,
        options: AgentOptions,
        session_mcp: Option<Arc<crate::mcp::client::SessionMcp>>,
    ) -> Result<Self, AgentError> {
        services.connect_mcp();
        let unsettled = services.mcp.unsettled();
        let toolsets = crate::mcp::client::session_toolsets(&services.tools, &options.toolsets);
        let tools = services.tools.select(&services.config, &toolsets)?;
        let system_prompt = services.build_prompt(&options.cwd, &tools.names()).await?;
        let (failover, rekeyed) = Failover::new(
            &services.config,
            &services.credentials,
            &services.http,
            client.provider(),
        )
        .await;
        let client = rekeyed.unwrap_or(client);
        let provider = client.provider().clone();
        let new = NewSession {
            id: crate::sessions::new_session_id(),
            source: options.source.clone(),
            model: Some(provider.model.clone()),
            model_config: None,
            billing_provider: Some(provider.name.clone()),
            billing_base_url: Some(provider.base_url.clone()),
            cwd: Some(options.cwd.display().to_string()),
            parent_session_id: None,
            system_prompt: Some(system_prompt.clone()),
        };
        let session_id = new.id.clone();
        db(&services.store, move |s| s.create_session(&new)).await?;
        // Frozen after the prompt build: MCP servers that answered meanwhile are in.
        let (tools, late) =
            services.freeze_tools(&options.toolsets, session_mcp.as_deref(), unsettled)?;
        let mut agent = Self::assemble(
            services,
            client,
            failover,
            options,
            tools,
            session_id,
            system_prompt,
            Vec::new(),
            late,
        );
        agent.session_mcp = session_mcp;
        Ok(agent)
    }

    /// Resumes a stored session: the stored system prompt is reused byte for byte.
    pub async fn resume(
        services: Arc<Services>,
        client: Arc<dyn LlmClient>,
        session: SessionRow,
        options: AgentOptions,
    ) -> Result<Self, AgentError> {
        Self::resume_with_mcp(services, client, session, options, None).await
    }

    /// `resume`, with MCP servers this session brings (see `start_with_mcp`).
    pub async fn resume_with_mcp(
        services: Arc<Services>,
        client: Arc<dyn LlmClient>,
        session: SessionRow,
        options: AgentOptions,
        session_mcp: Option<Arc<crate::mcp::client::SessionMcp>>,
    ) -> Result<Self, AgentError> {
        services.connect_mcp();
        let unsettled = services.mcp.unsettled();
        let toolsets = crate::mcp::client::session_toolsets(&services.tools, &options.toolsets);
        let tools = services.tools.select(&services.config, &toolsets)?;
        let id = session.id.clone();
        let stored = db(&services.store, move |s| s.messages(&id)).await?;
        let mut history: Vec<Message> = stored.into_iter().map(|m| m.message).collect();
        // A crash between a tool call and its result leaves the call unanswered; providers
        // reject such a history, so the missing results are recorded now.
        let started = started_calls::take(services.config.home.root(), &session.id);
        for result in unanswered_calls(&history, &started) {
            let (id, msg) = (session.id.clone(), result.clone());
            db(&services.store, move |s| s.append_message(&id, &msg)).await?;
            history.push(result);
        }
        let system_prompt = match session.system_prompt.filter(|p| !p.is_empty()) {
            Some(p) => p,
            None => {
                // A session row without a prompt (e.g. written by a crash before the prompt was
                // stored): build one now and freeze it from here on.
                let p = services.build_prompt(&options.cwd, &tools.names()).await?;
                let (id, text) = (session.id.clone(), p.clone());
                db(&services.store, move |s| s.set_system_prompt(&id, &text)).await?;
                p
            }
        };
        let id = session.id.clone();
        db(&services.store, move |s| s.reopen_session(&id)).await?;
        let (failover, rekeyed) = Failover::new(
            &services.config,
            &services.credentials,
            &services.http,
            client.provider(),
        )
        .await;
        let client = rekeyed.unwrap_or(client);
        let store = services.store.clone();
        let (tools, late) =
            services.freeze_tools(&options.toolsets, session_mcp.as_deref(), unsettled)?;
        let mut agent = Self::assemble(
            services,
            client,
            failover,
            options,
            tools,
            session.id,
            system_prompt,
            history,
            late,
        );
        agent.session_mcp = session_mcp;
        if let Err(e) = agent
            .compressor
            .load_session_state(&store, &agent.session_id)
            .await
        {
            tracing::warn!(error = %e, "cannot restore the compaction state; starting fresh");
        }
        Ok(agent)
    }

    #[allow(clippy::too_many_arguments)]
    fn assemble(
        services: Arc<Services>,
        client: Arc<dyn LlmClient>,
        failover: Failover,
        options: AgentOptions,
        tools: ToolRegistry,
        session_id: String,
        system_prompt: String,
        history: Vec<Message>,
        late: Option<Arc<dyn crate::tools::deferred::LateTools>>,
    ) -> Self {
        let config = &services.config;
        let approvals = Arc::new(ApprovalGate::for_agent(
            config,
            &options.source,
            options.interactive,
            options.yolo,
            client.clone(),
        ));
        let retry = RetryPolicy::from_config(config);
        let checkpoints = Arc::new(crate::checkpoints::Checkpointer::for_config(config));
        let prices = spend::PriceTable::from_config(&config.file.budget);
        let caps = spend::SpendCaps::from_config(&config.file.budget);
        // A child pays into its parent's row or its own; `child.rs` sets that.
        let ledger_session = session_id.clone();
        let compressor_config =
            compressor::CompressorConfig::from_config(config, &client.provider().model);
        // Many MCP tools in a small window: their schemas wait behind tool_search.
        // MCP servers still connecting at freeze time: reached through tool_search too.
        let tools =
            crate::tools::deferred::apply(tools, config, compressor_config.context_length, late);
        let tool_schemas = tools.schemas();
        let compressor = ContextCompressor::new(compressor_config);
        Agent {
            services,
            client,
            cap_session: session_id.clone(),
            session_id,
            system_prompt,
            history,
            tools,
            tool_schemas,
            approvals,
            scratch: Arc::new(SessionScratch::default()),
            checkpoints,
            retry,
            options,
            session_usage: Usage::default(),
            prices,
            caps,
            ledger_session,
            failover,
            compressor,
            role: AgentRole::Primary,
            depth: 0,
            session_mcp: None,
        }
    }

    pub fn session_id(&self) -> &str {
        &self.session_id
    }
    /// The working directory of the session's tools.
    pub fn cwd(&self) -> &std::path::Path {
        &self.options.cwd
    }
    pub fn system_prompt(&self) -> &str {
        &self.system_prompt
    }
    pub fn history(&self) -> &[Message] {
        &self.history
    }
    pub fn client(&self) -> Arc<dyn LlmClient> {
        self.client.clone()
    }
    pub fn model(&self) -> &str {
        &self.client.provider().model
    }
    pub fn tool_names(&self) -> Vec<&str> {
        self.tools.names()
    }
    /// Token totals of this process's turns in the session.
    pub fn session_usage(&self) -> Usage {
        self.session_usage
    }
    pub fn approvals(&self) -> &ApprovalGate {
        &self.approvals
    }
    /// The session's approval gate, shared: a front end may change it while a turn runs (an
    /// editor's session mode).
    pub fn approval_gate(&self) -> Arc<ApprovalGate> {
        self.approvals.clone()
    }
    /// The session's scratch state (its todo list), for front ends that show the plan.
    pub fn scratch(&self) -> Arc<SessionScratch> {
        self.scratch.clone()
    }

    /// Switches the model/provider for later turns (the system prompt stays frozen).
    pub async fn set_client(&mut self, client: Arc<dyn LlmClient>) -> Result<(), AgentError> {
        let (id, model) = (self.session_id.clone(), client.provider().model.clone());
        db(&self.services.store, move |s| s.set_model(&id, &model)).await?;
        let (failover, rekeyed) = Failover::new(
            &self.services.config,
            &self.services.credentials,
            &self.services.http,
            client.provider(),
        )
        .await;
        self.failover = failover;
        self.client = rekeyed.unwrap_or(client);
        Ok(())
    }

    /// The text of the last user message, if any (for `/retry`).
    pub fn last_user_text(&self) -> Option<String> {
        self.history
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .and_then(|m| m.content.clone())
    }

    /// `Some(answer)` when the last user message carries `tag`: `Some(Some(text))` if a final
    /// answer follows it, `Some(None)` if the turn never finished.
    fn replayed_turn(&self, tag: &str) -> Option<Option<String>> {
        let at = self.history.iter().rposition(|m| m.role == Role::User)?;
        if self.history[at].platform_message_id.as_deref() != Some(tag) {
            return None;
        }
        let answer = self.history[at + 1..]
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant && m.tool_calls.is_empty())
            .and_then(|m| m.content.clone());
        Some(answer)
    }

    /// Hides the last user turn and everything after it (`/undo`); returns messages hidden.
    pub async fn undo(&mut self) -> Result<usize, AgentError> {
        let id = self.session_id.clone();
        let hidden = db(&self.services.store, move |s| s.rewind_last_user_turn(&id)).await?;
        let id = self.session_id.clone();
        let stored = db(&self.services.store, move |s| s.messages(&id)).await?;
        self.history = stored.into_iter().map(|m| m.message).collect();
        Ok(hidden)
    }

    /// Marks the session ended (it can still be resumed).
    pub async fn end(&self, reason: &str) -> Result<(), AgentError> {
        let (id, reason) = (self.session_id.clone(), reason.to_string());
        db(&self.services.store, move |s| s.end_session(&id, &reason)).await?;
        Ok(())
    }

    /// Runs one user turn to its end. Events go to `events`; `cancel` interrupts.
    pub async fn run_turn(
        &mut self,
        user_text: &str,
        events: &UnboundedSender<AgentEvent>,
        cancel: &CancellationToken,
    ) -> Result<TurnOutcome, AgentError> {
        self.run_turn_tagged(user_text, None, events, cancel).await
    }

    /// Like [`Agent::run_turn`] for a message that carries its platform's id (gateway). When
    /// that message is already the session's last user message — a redelivery after a crash —
    /// it is not stored again: a stored answer is returned as is, without a model call, and a
    /// missing one is produced by continuing the turn.
    /// The answer is redacted like the persisted one (a front end delivers it as is).
    pub async fn run_turn_tagged(
        &mut self,
        user_text: &str,
        platform_message_id: Option<&str>,
        events: &UnboundedSender<AgentEvent>,
        cancel: &CancellationToken,
    ) -> Result<TurnOutcome, AgentError> {
        let mut outcome = self
            .run_turn_unredacted(user_text, platform_message_id, events, cancel)
            .await?;
        let text = std::mem::take(&mut outcome.text);
        outcome.text = self.services.shield.redactor.redact_string(text);
        Ok(outcome)
    }

    async fn run_turn_unredacted(
        &mut self,
        user_text: &str,
        platform_message_id: Option<&str>,
        events: &UnboundedSender<AgentEvent>,
        cancel: &CancellationToken,
    ) -> Result<TurnOutcome, AgentError> {
        let seen = platform_message_id.and_then(|tag| self.replayed_turn(tag));
        if let Some(Some(answer)) = &seen {
            return Ok(TurnOutcome {
                text: answer.clone(),
                exit: TurnExit::Completed,
                api_calls: 0,
                usage: Usage::default(),
            });
        }
        // 1. The user's message is durable before anything else can fail.
        let user_row = if seen.is_some() {
            None
        } else {
            let mut message = Message::user(user_text);
            message.platform_message_id = platform_message_id.map(str::to_string);
            self.persist(message).await?
        };
        self.checkpoints.begin_turn(user_text);
        if let Some(client) = self.failover.start_turn() {
            self.client = client;
        }
        let info = self.turn_info(user_text);
        if seen.is_none() {
            self.gather_context(&info, user_row).await?;
        }

        let budget = IterationBudget::new(self.options.max_iterations);
        let mut guard = loop_guard::LoopGuard::new(loop_guard::LoopGuardConfig::from_file(
            &self.services.config.file.tool_loop_guardrails,
            !self.options.interactive,
        ));
        let mut turn = TurnOutcome {
            text: String::new(),
            exit: TurnExit::Completed,
            api_calls: 0,
            usage: Usage::default(),
        };
        let prompt: Arc<dyn ApprovalPrompt> = if self.options.interactive {
            Arc::new(EventPrompt {
                events: events.clone(),
            })
        } else {
            Arc::new(NoPrompt)
        };

        while budget.consume() {
            let response = match self.call_model(true, None, events, cancel, &mut turn).await {
                Ok(r) => r,
                Err(CallFailure::Cancelled { partial_text }) => {
                    return self.finish_interrupted(partial_text, turn).await;
                }
                Err(CallFailure::Capped(message)) => return Ok(capped(turn, message)),
                Err(CallFailure::Failed(e)) => return Err(e.into()),
            };
            let calls = response.message.tool_calls.clone();
            let text = response.message.content.clone().unwrap_or_default();
            self.persist(response.message).await?;
            if calls.is_empty() {
                self.title_after_exchange(&text).await;
                turn.text = text;
                self.notify_turn_end(&info, &turn);
                return Ok(turn);
            }
            let mut outputs = self.run_tools(&calls, events, cancel, &prompt).await;
            let verdict = guard.observe(&calls, &outputs);
            if let (loop_guard::LoopVerdict::Warn(note), Some(last)) =
                (&verdict, outputs.last_mut())
            {
                last.content = format!("{}\n\n{note}", last.content);
            }
            for (call, output) in calls.iter().zip(&outputs) {
                self.persist(Message::tool_result(call, output.content.clone()))
                    .await?;
            }
            if !self.options.ephemeral {
                let (home, session) = (
                    self.services.config.home.root().to_path_buf(),
                    self.session_id.clone(),
                );
                // Awaited: a clear still pending could remove the next call's marker.
                let cleared = crate::util::offload::offload("clear started calls", move || {
                    started_calls::clear(&home, &session)
                });
                if let Err(e) = cleared.await {
                    tracing::warn!("{e}");
                }
            }
            for ext in &self.services.extensions {
                ext.after_iteration(&info, &calls, &outputs);
            }
            if let loop_guard::LoopVerdict::Stop(message) = verdict {
                tracing::warn!(%message, "loop guard stopped the turn");
                turn.exit = TurnExit::LoopStopped;
                turn.text = message;
                return Ok(turn);
            }
            if cancel.is_cancelled() {
                turn.exit = TurnExit::Interrupted;
                turn.text = text;
                return Ok(turn);
            }
            if let Some((call, output)) = calls.iter().zip(&outputs).find(|(_, o)| o.fatal) {
                return Err(AgentError::ToolFatal {
                    tool: call.name.clone(),
                    message: output.content.clone(),
                });
            }
        }

        // The budget is spent: one last call without tools, asking for a summary.
        let _ = events.send(AgentEvent::BudgetExhausted {
            used: budget.used(),
        });
        let ask = Message::user(BUDGET_SUMMARY_REQUEST);
        match self
            .call_model(false, Some(ask), events, cancel, &mut turn)
            .await
        {
            Ok(mut response) => {
                // Tools were not offered; anything that still looks like a call is dropped.
                response.message.tool_calls.clear();
                turn.text = response.message.content.clone().unwrap_or_default();
                self.persist(response.message).await?;
                turn.exit = TurnExit::BudgetExhausted;
                self.notify_turn_end(&info, &turn);
                Ok(turn)
            }
            Err(CallFailure::Cancelled { partial_text }) => {
                self.finish_interrupted(partial_text, turn).await
            }
            Err(CallFailure::Capped(message)) => Ok(capped(turn, message)),
            Err(CallFailure::Failed(e)) => Err(e.into()),
        }
    }

    async fn finish_interrupted(
        &mut self,
        partial_text: String,
        mut turn: TurnOutcome,
    ) -> Result<TurnOutcome, AgentError> {
        if !partial_text.is_empty() {
            let mut msg = Message::assistant(
                Some(format!("{partial_text}\n{INTERRUPTED_NOTE}")),
                Vec::new(),
            );
            msg.finish_reason = Some("interrupted".into());
            self.persist(msg).await?;
        }
        turn.text = partial_text;
        turn.exit = TurnExit::Interrupted;
        Ok(turn)
    }

    /// One model call with retries. `extra` is appended to the request only (not persisted).
    async fn call_model(
        &mut self,
        with_tools: bool,
        extra: Option<Message>,
        events: &UnboundedSender<AgentEvent>,
        cancel: &CancellationToken,
        turn: &mut TurnOutcome,
    ) -> Result<LlmResponse, CallFailure> {
        self.maybe_compact(with_tools, extra.as_ref(), events).await;
        let mut request = self.build_request(with_tools, extra.as_ref());
        if let Some(message) = self.spend_cap_reached(&request).await {
            return Err(CallFailure::Capped(message));
        }
        match self.failover.before_call() {
            Ok(Some(client)) => {
                request.model = client.provider().model.clone();
                self.client = client;
            }
            Ok(None) => {}
            Err(err) => return Err(CallFailure::Failed(err)),
        }
        let mut attempt = 0u32;
        let mut overflow_compactions = 0u32;
        loop {
            attempt += 1;
            turn.api_calls += 1;
            match stream_once(
                self.client.as_ref(),
                request.clone(),
                events,
                cancel,
                &self.services.shield.redactor,
            )
            .await
            {
                Ok(mut response) => {
                    self.failover.note_success();
                    // A server that reports no usage (llama.cpp-style): count it ourselves.
                    let estimated = response.usage.total() == 0;
                    if estimated {
                        response.usage =
                            crate::llm::usage_estimate::estimate(&request, &response.message);
                    }
                    self.compressor.update_from_response(&response.usage);
                    self.record_usage(&response.usage, estimated, turn, events)
                        .await;
                    return Ok(response);
                }
                Err(CallFailure::Failed(err)) => {
                    // Too large for the window: compact and retry on the same model (≤ 3 times).
                    if err.reason == FailoverReason::ContextOverflow
                        && overflow_compactions < MAX_OVERFLOW_COMPACTIONS
                    {
                        overflow_compactions += 1;
                        if self.compact(Trigger::Overflow, events).await.is_some() {
                            let model = request.model.clone();
                            request = self.build_request(with_tools, extra.as_ref());
                            request.model = model;
                            attempt = 0;
                            continue;
                        }
                    }
                    let delay = self.retry.next_delay(&err, attempt);
                    let delay = match self.failover.on_error(&err, delay.is_some()) {
                        FailoverStep::Switch(client, message) => {
                            tracing::warn!(%message, reason = %err.reason, "model call failed: switching");
                            request.model = client.provider().model.clone();
                            self.client = client;
                            attempt = 0;
                            let _ = events.send(AgentEvent::Switched {
                                reason: err.reason,
                                message,
                                discarded_partial: err.partial,
                            });
                            continue;
                        }
                        FailoverStep::GiveUp(err) => {
                            tracing::warn!(reason = %err.reason, attempt, "model call failed: giving up");
                            return Err(CallFailure::Failed(err));
                        }
                        FailoverStep::Retry => match delay {
                            Some(d) => d,
                            None => return Err(CallFailure::Failed(err)),
                        },
                    };
                    tracing::info!(reason = %err.reason, attempt, ?delay, "model call failed: retrying");
                    let _ = events.send(AgentEvent::Retrying {
                        reason: err.reason,
                        attempt,
                        delay,
                        discarded_partial: err.partial,
                        message: err.to_string(),
                    });
                    tokio::select! {
                        _ = tokio::time::sleep(delay) => {}
                        _ = cancel.cancelled() => {
                            return Err(CallFailure::Cancelled { partial_text: String::new() });
                        }
                    }
                }
                Err(cancelled) => return Err(cancelled),
            }
        }
    }

    fn build_request(&self, with_tools: bool, extra: Option<&Message>) -> ChatRequest {
        let mut messages = self.history.clone();
        messages.extend(extra.cloned());
        ChatRequest {
            model: self.client.provider().model.clone(),
            system: self.system_prompt.clone(),
            messages,
            tools: if with_tools {
                self.tool_schemas.clone()
            } else {
                Vec::new()
            },
            max_tokens: None,
            temperature: None,
        }
    }

    async fn record_usage(
        &mut self,
        usage: &Usage,
        estimated: bool,
        turn: &mut TurnOutcome,
        events: &UnboundedSender<AgentEvent>,
    ) {
        turn.usage.add(usage);
        self.session_usage.add(usage);
        let _ = events.send(AgentEvent::Usage(*usage));
        let cost = self.prices.cost(&self.client.provider().model, usage);
        let (id, usage) = (self.ledger_session.clone(), *usage);
        // Token accounting must never fail a turn that already has its answer.
        if let Err(e) = db(&self.services.store, move |s| {
            s.record_usage(&id, &usage, 1, cost, estimated)
        })
        .await
        {
            tracing::warn!(error = %e, "cannot record token usage");
        }
    }

    /// The cap message when the next call (projected from the request size) would pass a cap.
    async fn spend_cap_reached(&self, request: &ChatRequest) -> Option<String> {
        if self.caps.is_empty() {
            return None;
        }
        let projected = spend::estimate_prompt_tokens(request);
        let (caps, prices) = (self.caps.clone(), self.prices.clone());
        let (id, model) = (self.cap_session.clone(), request.model.clone());
        let verdict = db(&self.services.store, move |s| {
            let Some(mut row) = s.session(&id)? else {
                return Ok(Ok(()));
            };
            // Caps count the session's delegated children too.
            for child in s.child_sessions(&id)? {
                row.input_tokens += child.input_tokens;
                row.output_tokens += child.output_tokens;
                if let Some(c) = child.estimated_cost_usd {
                    row.estimated_cost_usd = Some(row.estimated_cost_usd.unwrap_or(0.0) + c);
                }
            }
            caps.check(s, &row, &prices, &model, projected)
        })
        .await;
        match verdict {
            Ok(Ok(())) => None,
            Ok(Err(message)) => Some(message),
            Err(e) => {
                // An unreadable ledger must not silently disable the caps.
                Some(format!(
                    "Stopped before the next model call: the spend ledger cannot be read ({e})"
                ))
            }
        }
    }

    /// Runs the calls of one response: concurrently when all are read-only, else in order.
    /// Results come back in call order, one per call, even when interrupted.
    async fn run_tools(
        &self,
        calls: &[ToolCall],
        events: &UnboundedSender<AgentEvent>,
        cancel: &CancellationToken,
        prompt: &Arc<dyn ApprovalPrompt>,
    ) -> Vec<ToolOutput> {
        let ctx = ToolContext {
            config: self.services.config.clone(),
            cwd: self.options.cwd.clone(),
            session_id: self.session_id.clone(),
            call_id: String::new(),
            cancel: cancel.child_token(),
            approvals: self.approvals.clone(),
            prompt: prompt.clone(),
            scratch: self.scratch.clone(),
            shield: self.services.shield.clone(),
            checkpoints: self.checkpoints.clone(),
            skills: self.services.skills.clone(),
            role: self.role,
            depth: self.depth,
            delegator: Some(Arc::new(delegation::AgentDelegator {
                services: self.services.clone(),
                parent: self.parent_link(cancel.child_token()),
                parent_tools: self.tools.names().into_iter().map(String::from).collect(),
                parent_toolsets: self.options.toolsets.clone(),
                parent_yolo: self.options.yolo,
                events: events.clone(),
            })),
        };
        let run_one = |call: &ToolCall| {
            let ctx = ctx.clone();
            let call = call.clone();
            async move {
                let _ = events.send(AgentEvent::ToolStart {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    // Redacted before it is cut: a cut secret no longer matches a pattern.
                    summary: summarize_args(&self.services.shield.redactor.redact(&call.arguments)),
                });
                let started = Instant::now();
                let output = if ctx.cancel.is_cancelled() {
                    interrupted_output()
                } else if let Some(refusal) = self.refusal(&call.name) {
                    refusal
                } else {
                    if !self.options.ephemeral {
                        // A file write: off the runtime, but finished before the call starts.
                        let (home, session, id) = (
                            ctx.config.home.root().to_path_buf(),
                            ctx.session_id.clone(),
                            call.id.clone(),
                        );
                        let marked =
                            crate::util::offload::offload("mark a started call", move || {
                                started_calls::mark(&home, &session, &id)
                            });
                        if let Err(e) = marked.await {
                            tracing::warn!("{e}");
                        }
                    }
                    self.tools.dispatch(&call, &ctx).await
                };
                let _ = events.send(AgentEvent::ToolEnd {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    duration: started.elapsed(),
                    is_error: output.is_error,
                });
                output
            }
        };
        if calls.len() > 1 && self.tools.all_read_only(calls) {
            futures::future::join_all(calls.iter().map(run_one)).await
        } else {
            let mut outputs = Vec::with_capacity(calls.len());
            for call in calls {
                outputs.push(run_one(call).await);
            }
            outputs
        }
    }

    /// Appends to state.db first, then to the in-memory history. Returns the row id
    /// (`None` for an ephemeral agent, which writes nothing).
    async fn persist(&mut self, message: Message) -> Result<Option<i64>, AgentError> {
        // Redacted before it is stored, sent back to the model or exported.
        let message = self.services.shield.redact_message(message);
        let row = if self.options.ephemeral {
            None
        } else {
            let (id, msg) = (self.session_id.clone(), message.clone());
            Some(db(&self.services.store, move |s| s.append_message(&id, &msg)).await?)
        };
        self.history.push(message);
        Ok(row)
    }
}

impl Agent {
    /// A child that forked its parent's conversation sees the parent's whole tools array but may
    /// only use its own toolsets: any other tool is refused here, when it is called.
    fn refusal(&self, name: &str) -> Option<ToolOutput> {
        if self.tools.get(name).is_some() || !self.tool_schemas.iter().any(|t| t.name == name) {
            return None;
        }
        let who = match self.role {
            AgentRole::SkillReview => "the background skill review",
            AgentRole::MemoryReview => "the background memory review",
            AgentRole::Delegate => "this delegated task",
            AgentRole::Primary => "this session",
        };
        Some(ToolOutput {
            content: crate::tools::registry::error_json(&format!(
                "`{name}` is not available to {who}; it may only use: {}",
                self.tools.names().join(", ")
            )),
            is_error: true,
            fatal: false,
        })
    }
}

/// Results for the tool calls of the last assistant message that have none: "killed while
/// running" for those in `started`, "not run" for the others.
fn unanswered_calls(
    history: &[Message],
    started: &std::collections::HashSet<String>,
) -> Vec<Message> {
    let Some(at) = history
        .iter()
        .rposition(|m| m.role == Role::Assistant && !m.tool_calls.is_empty())
    else {
        return Vec::new();
    };
    // Only a dangling tail can be repaired in place (results must follow their call).
    if history[at + 1..].iter().any(|m| m.role != Role::Tool) {
        return Vec::new();
    }
    let answered: Vec<&str> = history[at + 1..]
        .iter()
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    history[at]
        .tool_calls
        .iter()
        .filter(|c| !answered.contains(&c.id.as_str()))
        .map(|c| {
            let text = if started_calls::was_started(started, &c.id) {
                started_calls::KILLED_TEXT
            } else {
                "not run: the session stopped before this call started"
            };
            Message::tool_result(c, crate::tools::registry::error_json(text))
        })
        .collect()
}

fn capped(mut turn: TurnOutcome, message: String) -> TurnOutcome {
    tracing::warn!(%message, "spend cap reached");
    turn.exit = TurnExit::SpendCapped;
    turn.text = message;
    turn
}

fn interrupted_output() -> ToolOutput {
    ToolOutput {
        content: crate::tools::registry::error_json(
            "not run: the user interrupted the turn before this call started",
        ),
        is_error: true,
        fatal: false,
    }
}

/// A short, single-line description of a call's arguments for progress lines.
fn summarize_args(arguments: &str) -> String {
    let value: serde_json::Value = match serde_json::from_str(arguments) {
        Ok(v) => v,
        Err(_) => return String::new(),
    };
    let pick = ["command", "path", "pattern", "query", "name"]
        .iter()
        .find_map(|k| value.get(*k).and_then(|v| v.as_str()).map(str::to_string));
    let text = pick.unwrap_or_else(|| {
        let s = value.to_string();
        if s == "{}" { String::new() } else { s }
    });
    let line = text.lines().next().unwrap_or("").to_string();
    let cut = crate::util::truncate_chars(&line, 80);
    if cut.len() < line.len() {
        format!("{cut}…")
    } else {
        cut.to_string()
    }
}

/// Runs a blocking store call off the async runtime.
pub(crate) async fn db<T, F>(store: &Arc<SessionStore>, f: F) -> Result<T, AgentError>
where
    T: Send + 'static,
    F: FnOnce(&SessionStore) -> Result<T, StoreError> + Send + 'static,
{
    store.call(f).await.map_err(AgentError::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dangling_tool_calls_get_not_run_results() {
        let call = |id: &str| ToolCall {
            id: id.into(),
            name: "terminal".into(),
            arguments: "{}".into(),
        };
        let mut history = vec![
            Message::user("go"),
            Message::assistant(None, vec![call("a"), call("b")]),
        ];
        history.push(Message::tool_result(&call("a"), "done"));
        let none = std::collections::HashSet::new();
        let fixed = unanswered_calls(&history, &none);
        assert_eq!(fixed.len(), 1);
        assert_eq!(fixed[0].tool_call_id.as_deref(), Some("b"));
        assert!(fixed[0].content.as_deref().unwrap().contains("not run"));
        let started = std::collections::HashSet::from(["b".to_string()]);
        let killed = unanswered_calls(&history, &started);
        assert!(
            killed[0]
                .content
                .as_deref()
                .unwrap()
                .contains(started_calls::KILLED_TEXT)
        );
        // Answered, or followed by later conversation: nothing to repair here.
        history.extend(fixed);
        assert!(unanswered_calls(&history, &none).is_empty());
        history.push(Message::user("next"));
        history.insert(2, Message::user("odd"));
        assert!(unanswered_calls(&history, &none).is_empty());
    }

    #[test]
    fn argument_summaries_are_short() {
        assert_eq!(summarize_args(r#"{"path":"a.txt"}"#), "a.txt");
        assert_eq!(summarize_args(r#"{"command":"ls\nrm x"}"#), "ls");
        assert_eq!(summarize_args("not json"), "");
        assert_eq!(summarize_args("{}"), "");
        let long = format!(r#"{{"command":"{}"}}"#, "x".repeat(200));
        assert!(summarize_args(&long).chars().count() <= 81);
    }
}
