//! The agent's side of `delegate_task`: each task becomes a recorded child (a `subagent` session
//! with `parent_session_id`) started through the child API, with a focused system prompt of its
//! own, the parent's provider and credential pool, the parent's tools minus the blocked ones,
//! `delegation.max_iterations`, the configured timeouts, and no one to ask. At most
//! `delegation.max_concurrent_children` run at once; reports come back in task order; the
//! parent's cancellation reaches every child; each child's progress is forwarded to the parent's
//! event stream as one line per child.

use std::collections::BTreeSet;
use std::sync::Arc;

use async_trait::async_trait;
use serde::Serialize;
use tokio::sync::Semaphore;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::agent::child::{ChildResult, ChildSpec, ChildStart, ChildStatus, ParentLink};
use crate::agent::{AgentEvent, Services};
use crate::config::delegation::{BLOCKED_TOOLS, DelegationConfig};
use crate::tools::AgentRole;
use crate::tools::delegate::{DelegateTask, Delegator, TaskReport};

const CHILD_PROMPT: &str = include_str!("../prompts/delegate_child.md.j2");

/// Runs the children of one agent's `delegate_task` calls.
pub(crate) struct AgentDelegator {
    pub services: Arc<Services>,
    pub parent: ParentLink,
    /// The tools the parent may use (a child never gets more).
    pub parent_tools: Vec<String>,
    pub parent_toolsets: Vec<String>,
    /// The parent runs in `--yolo`.
    pub parent_yolo: bool,
    pub events: UnboundedSender<AgentEvent>,
}

/// What the tasks of one `delegate_task` call share.
struct Batch {
    template: String,
    budget: u32,
    cfg: DelegationConfig,
    /// At most `max_concurrent_children` run at once.
    slots: Semaphore,
    /// The parent's turn.
    cancel: CancellationToken,
}

#[derive(Serialize)]
struct PromptContext<'a> {
    goal: &'a str,
    context: Option<&'a str>,
    cwd: String,
    os: &'static str,
    date: String,
}

impl AgentDelegator {
    /// The child prompt template: a user copy in `$HERMES_HOME/prompts/` wins (read off the
    /// runtime, once per batch).
    async fn template(&self) -> String {
        let user = self
            .services
            .config
            .home
            .prompts_dir()
            .join("delegate_child.md.j2");
        crate::util::offload::offload("read the child prompt template", move || {
            std::fs::read_to_string(user).ok()
        })
        .await
        .ok()
        .flatten()
        .filter(|t| !t.trim().is_empty())
        .unwrap_or_else(|| CHILD_PROMPT.to_string())
    }

    /// The child's system prompt.
    fn system_prompt(&self, template: &str, task: &DelegateTask) -> Result<String, String> {
        let ctx = PromptContext {
            goal: &task.goal,
            context: task.context.as_deref(),
            cwd: self.parent.cwd.display().to_string(),
            os: std::env::consts::OS,
            date: chrono::Local::now().format("%A, %B %d, %Y").to_string(),
        };
        crate::template::render(template, &ctx)
            .map_err(|e| format!("cannot render the child's system prompt: {e}"))
    }

    fn spec(
        &self,
        template: &str,
        index: usize,
        task: &DelegateTask,
        cfg: &DelegationConfig,
        budget: u32,
    ) -> Result<ChildSpec, String> {
        // The child may delegate further only while the depth allows it.
        let child_depth = self.parent.depth + 1;
        let allowed: BTreeSet<String> = self
            .parent_tools
            .iter()
            .filter(|t| {
                !BLOCKED_TOOLS.contains(&t.as_str())
                    || (*t == "delegate_task" && child_depth < cfg.max_depth)
            })
            .cloned()
            .collect();
        Ok(ChildSpec {
            label: format!(
                "task {index}: {}",
                crate::util::truncate_chars(&task.goal, 60)
            ),
            goal: task.goal.clone(),
            role: AgentRole::Delegate,
            toolsets: self.child_toolsets(task, cfg),
            only_tools: Some(allowed),
            max_iterations: budget,
            timeout: cfg.child_timeout,
            stall_timeout: cfg.stall_timeout,
            start: ChildStart::Fresh {
                system_prompt: self.system_prompt(template, task)?,
            },
            recorded: true,
            yolo: cfg.inherit_approvals && self.parent_yolo,
            ticket: None,
        })
    }

    /// The task's toolsets (the parent's by default) plus, with `inherit_mcp_toolsets`, the
    /// parent's MCP toolsets, an editor's per-session servers included (Python Hermes: a child
    /// keeps the parent's MCP servers even when
    /// the task names its toolsets). What the child may call is still bounded by the parent's
    /// tools (`only_tools`).
    fn child_toolsets(&self, task: &DelegateTask, cfg: &DelegationConfig) -> Vec<String> {
        let mut toolsets = task
            .toolsets
            .clone()
            .unwrap_or_else(|| self.parent_toolsets.clone());
        if cfg.inherit_mcp_toolsets {
            // The editor's servers (ACP) too: their tools are in the parent's session only.
            let session = self.parent.session_mcp.as_ref().map(|m| m.tools());
            let mcp: BTreeSet<String> = self
                .parent_tools
                .iter()
                .filter_map(|name| {
                    self.services
                        .tools
                        .get(name)
                        .or_else(|| session.as_ref()?.get(name).cloned())
                })
                .map(|tool| tool.toolset().to_string())
                .filter(|set| set.starts_with("mcp-"))
                .collect();
            for set in mcp {
                if !toolsets.contains(&set) {
                    toolsets.push(set);
                }
            }
        }
        toolsets
    }

    /// Runs one task to its report, forwarding progress.
    async fn run_one(&self, index: usize, task: DelegateTask, batch: &Batch) -> TaskReport {
        let goal = crate::util::truncate_chars(&task.goal, 60).to_string();
        let cancel = &batch.cancel;
        let permit = tokio::select! {
            p = batch.slots.acquire() => p.ok(),
            _ = cancel.cancelled() => None,
        };
        if permit.is_none() {
            return not_started(ChildStatus::Cancelled, "cancelled before it started");
        }
        let spec = match self.spec(&batch.template, index, &task, &batch.cfg, batch.budget) {
            Ok(s) => s,
            Err(e) => return not_started(ChildStatus::Failed, &e),
        };
        let mut parent = self.parent.clone();
        parent.cancel = cancel.clone();
        let handle = self.services.spawn_child(parent, spec);
        let mut progress = handle.progress();
        let result = handle.result();
        tokio::pin!(result);
        let result = loop {
            tokio::select! {
                r = &mut result => break r,
                changed = progress.changed() => {
                    if changed.is_err() {
                        break result.await;
                    }
                    let line = progress.borrow_and_update().line.clone();
                    let _ = self.events.send(AgentEvent::ChildProgress {
                        task: index,
                        goal: goal.clone(),
                        line,
                        status: None,
                    });
                }
            }
        };
        let _ = self.events.send(AgentEvent::ChildProgress {
            task: index,
            goal,
            line: result
                .error
                .clone()
                .unwrap_or_else(|| crate::util::truncate_chars(&result.text, 80).to_string()),
            status: Some(result.status.as_str()),
        });
        report(result)
    }
}

#[async_trait]
impl Delegator for AgentDelegator {
    async fn run(
        &self,
        tasks: Vec<DelegateTask>,
        max_iterations: Option<u32>,
        cancel: CancellationToken,
    ) -> Vec<TaskReport> {
        let cfg = self.services.config.delegation.clone();
        let batch = Batch {
            template: self.template().await,
            budget: max_iterations.unwrap_or(cfg.max_iterations),
            slots: Semaphore::new(cfg.max_concurrent_children),
            cfg,
            cancel,
        };
        let runs = tasks
            .into_iter()
            .enumerate()
            .map(|(i, task)| self.run_one(i, task, &batch));
        futures::future::join_all(runs).await
    }
}

fn not_started(status: ChildStatus, why: &str) -> TaskReport {
    TaskReport {
        status: status.as_str(),
        summary: String::new(),
        error: Some(why.to_string()),
        api_calls: 0,
        input_tokens: 0,
        output_tokens: 0,
        cost_usd: None,
        files_written: Vec::new(),
        duration_seconds: 0.0,
        session_id: String::new(),
    }
}

fn report(r: ChildResult) -> TaskReport {
    TaskReport {
        status: r.status.as_str(),
        summary: r.text,
        error: r.error,
        api_calls: r.api_calls,
        input_tokens: r.usage.input_tokens,
        output_tokens: r.usage.output_tokens,
        cost_usd: r.cost_usd,
        files_written: r
            .files_written
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
        duration_seconds: r.duration.as_secs_f64(),
        session_id: r.session_id,
    }
}
