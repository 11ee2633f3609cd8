//! The editor's sessions: each is an `Agent` on a state.db session with source `acp`, opened by
//! `session/new`, `session/load`, `session/resume` or `session/fork` and kept for the
//! connection's life. Listing reads state.db, so sessions from earlier connections (and crashed
//! ones) are found again; the model option offers the provider's `/models` list and switches the
//! session's client; the mode (`modes.rs`) sets what the session does without asking. A fork is
//! a new session holding a copy of the stored conversation, its parent recorded in
//! `parent_session_id` as Python Hermes does. When the editor offers its file system, each
//! session's file tools read and write through it (`editor_fs.rs`).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CurrentModeUpdate, ForkSessionResponse, ListSessionsResponse, LoadSessionResponse, McpServer,
    NewSessionResponse, ResumeSessionResponse, SessionConfigOption, SessionConfigOptionCategory,
    SessionConfigOptionValue, SessionConfigSelectOption, SessionInfo, SessionModeState,
    SessionNotification, SessionUpdate, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, SetSessionModeRequest, SetSessionModeResponse,
};
use agent_client_protocol::{Client, Error};
use tokio_util::sync::CancellationToken;

use super::editor_fs::{EditorFiles, Offered};
use super::{AcpSetup, invalid, mcp_servers, modes, rpc_error, updates};
use crate::agent::{Agent, AgentOptions, Services};
use crate::llm::LlmClient;
use crate::security::approval::ApprovalGate;
use crate::sessions::NewSession;

/// `sessions.source` of editor sessions.
pub const SOURCE: &str = "acp";
/// Sessions per `session/list` page.
const PAGE: usize = 50;
/// The config option that picks the model.
const MODEL_OPTION: &str = "model";
/// How long the provider's model list may take.
const MODELS_TIMEOUT: Duration = Duration::from_secs(3);

/// One open session: its agent (locked while a turn runs), the running turn's cancel token,
/// and its mode with the approval gate the mode sets (changeable while a turn runs).
pub struct AcpSession {
    pub agent: tokio::sync::Mutex<Agent>,
    pub turn: Mutex<Option<CancellationToken>>,
    pub cwd: std::path::PathBuf,
    mode: Mutex<&'static str>,
    gate: Arc<ApprovalGate>,
}

impl AcpSession {
    fn mode(&self) -> &'static str {
        *self.mode.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set_mode(&self, mode: &'static str) {
        modes::apply(mode, &self.gate, &self.cwd);
        *self.mode.lock().unwrap_or_else(PoisonError::into_inner) = mode;
    }
}

/// The connection's state.
pub struct AcpServer {
    pub services: Arc<Services>,
    client: Result<Arc<dyn LlmClient>, String>,
    options: AgentOptions,
    sessions: Mutex<HashMap<String, Arc<AcpSession>>>,
    models: tokio::sync::OnceCell<Vec<String>>,
    /// The editor's file system, as offered in `initialize`.
    offered: Mutex<Offered>,
}

impl AcpServer {
    pub fn new(setup: AcpSetup) -> Self {
        AcpServer {
            services: setup.services,
            client: setup.client,
            options: setup.options,
            sessions: Mutex::new(HashMap::new()),
            models: tokio::sync::OnceCell::new(),
            offered: Mutex::new(Offered::default()),
        }
    }

    /// Records what the editor offers (`initialize`); sessions opened later use it.
    pub fn set_offered(&self, offered: Offered) {
        *self.offered.lock().unwrap_or_else(PoisonError::into_inner) = offered;
    }

    /// Why no model can be called, when none can.
    pub fn provider_error(&self) -> Option<String> {
        self.client.as_ref().err().cloned()
    }

    fn client(&self) -> Result<Arc<dyn LlmClient>, Error> {
        self.client
            .clone()
            .map_err(|why| rpc_error(-32000, format!("authentication required: {why}")))
    }

    pub fn session(&self, id: &str) -> Result<Arc<AcpSession>, Error> {
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned()
            .ok_or_else(|| {
                invalid(format!(
                    "no open session `{id}`: create one with session/new or open it with session/load"
                ))
            })
    }

    fn options_for(&self, cwd: &Path) -> Result<AgentOptions, Error> {
        if !cwd.is_absolute() || !cwd.is_dir() {
            return Err(invalid(format!(
                "cwd `{}` is not an absolute path to a directory",
                cwd.display()
            )));
        }
        Ok(AgentOptions {
            source: SOURCE.to_string(),
            cwd: cwd.to_path_buf(),
            interactive: true,
            ..self.options.clone()
        })
    }

    /// Keeps `agent` open for the connection: in its initial mode, its file tools on the
    /// editor's file system when the editor offers one.
    fn keep(&self, agent: Agent, cwd: &Path, cx: &ConnectionTo<Client>) -> Arc<AcpSession> {
        let id = agent.session_id().to_string();
        let offered = *self.offered.lock().unwrap_or_else(PoisonError::into_inner);
        if offered.any() {
            let files = EditorFiles::new(cx.clone(), &id, offered);
            agent.scratch().files.set(Some(Arc::new(files)));
        }
        let session = Arc::new(AcpSession {
            gate: agent.approval_gate(),
            agent: tokio::sync::Mutex::new(agent),
            turn: Mutex::new(None),
            cwd: cwd.to_path_buf(),
            mode: Mutex::new(modes::DEFAULT),
        });
        session.set_mode(modes::initial(self.options.yolo));
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, session.clone());
        session
    }

    pub async fn new_session(
        &self,
        cwd: &Path,
        servers: &[McpServer],
        cx: &ConnectionTo<Client>,
    ) -> Result<NewSessionResponse, Error> {
        let client = self.client()?;
        let options = self.options_for(cwd)?;
        let model = client.provider().model.clone();
        let mcp = mcp_servers::start(&self.services, servers)?;
        let agent = Agent::start_with_mcp(self.services.clone(), client, options, mcp)
            .await
            .map_err(|e| rpc_error(-32603, format!("cannot start the session: {e}")))?;
        tracing::info!(session = agent.session_id(), cwd = %cwd.display(), "ACP session started");
        let id = agent.session_id().to_string();
        let session = self.keep(agent, cwd, cx);
        let options = self.config_options(&model).await;
        Ok(NewSessionResponse::new(id)
            .config_options(options)
            .modes(modes::state(session.mode())))
    }

    /// The stored session `id` as an open one (opened now unless this connection has it), its
    /// conversation replayed to the editor first when `replay` (`session/load`; a resume does
    /// not): the model options and the modes a load or resume answer carries.
    /// (A session this connection already has keeps the MCP servers it was opened with.)
    async fn open_stored(
        &self,
        id: &str,
        cwd: &Path,
        servers: &[McpServer],
        cx: &ConnectionTo<Client>,
        replay: bool,
    ) -> Result<(Vec<SessionConfigOption>, SessionModeState), Error> {
        let client = self.client()?;
        let options = self.options_for(cwd)?;
        let open = self
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned();
        let session = match open {
            Some(session) => session,
            None => {
                let row = self.stored_row(id).await?;
                let what = format!("session `{id}`");
                self.open_row(client, options, row, servers, cx, &what)
                    .await?
            }
        };
        let (history, model) = {
            let agent = session.agent.lock().await;
            (
                replay.then(|| agent.history().to_vec()),
                agent.model().to_string(),
            )
        };
        for update in history.iter().flat_map(|h| updates::replay(h, cwd)) {
            cx.send_notification(SessionNotification::new(id.to_string(), update))?;
        }
        let options = self.config_options(&model).await;
        Ok((options, modes::state(session.mode())))
    }

    /// Opens stored `row` as a session of this connection: the editor's MCP servers for it
    /// started, in the mode the editor last picked for it (one this build does not know is
    /// ignored), in `options.cwd`. `what` names it in an error.
    async fn open_row(
        &self,
        client: Arc<dyn LlmClient>,
        options: AgentOptions,
        row: crate::sessions::SessionRow,
        servers: &[McpServer],
        cx: &ConnectionTo<Client>,
        what: &str,
    ) -> Result<Arc<AcpSession>, Error> {
        let id = row.id.clone();
        let stored_mode = self
            .services
            .store
            .call(move |s| s.session_setting(&id, modes::KEY))
            .await
            .map_err(
                |e| tracing::warn!(session = %row.id, error = %e, "cannot read the session's mode"),
            )
            .ok()
            .flatten();
        let cwd = options.cwd.clone();
        let mcp = mcp_servers::start(&self.services, servers)?;
        let agent = Agent::resume_with_mcp(self.services.clone(), client, row, options, mcp)
            .await
            .map_err(|e| rpc_error(-32603, format!("cannot open {what}: {e}")))?;
        let session = self.keep(agent, &cwd, cx);
        if let Some(mode) = stored_mode.as_deref().and_then(|m| modes::known(m).ok()) {
            session.set_mode(mode);
        }
        Ok(session)
    }

    async fn stored_row(&self, id: &str) -> Result<crate::sessions::SessionRow, Error> {
        let wanted = id.to_string();
        self.services
            .store
            .call(move |s| s.session(&wanted))
            .await
            .map_err(|e| rpc_error(-32603, format!("cannot read state.db: {e}")))?
            .ok_or_else(|| invalid(format!("no session `{id}` in state.db")))
    }

    /// Opens a stored session and replays its conversation to the editor before answering.
    pub async fn load_session(
        &self,
        id: &str,
        cwd: &Path,
        servers: &[McpServer],
        cx: &ConnectionTo<Client>,
    ) -> Result<LoadSessionResponse, Error> {
        let (options, modes) = self.open_stored(id, cwd, servers, cx, true).await?;
        Ok(LoadSessionResponse::new()
            .config_options(options)
            .modes(modes))
    }

    /// Opens a stored session without replaying it (the editor still shows it).
    pub async fn resume_session(
        &self,
        id: &str,
        cwd: &Path,
        servers: &[McpServer],
        cx: &ConnectionTo<Client>,
    ) -> Result<ResumeSessionResponse, Error> {
        let (options, modes) = self.open_stored(id, cwd, servers, cx, false).await?;
        Ok(ResumeSessionResponse::new()
            .config_options(options)
            .modes(modes))
    }

    /// A new session in `cwd` with a copy of session `id`'s stored conversation (and its frozen
    /// system prompt, so the copy's requests start with the same bytes), in its stored mode;
    /// `parent_session_id` names `id`. A turn running in `id` is waited for, so the copy is whole.
    pub async fn fork_session(
        &self,
        id: &str,
        cwd: &Path,
        servers: &[McpServer],
        cx: &ConnectionTo<Client>,
    ) -> Result<ForkSessionResponse, Error> {
        let client = self.client()?;
        let options = self.options_for(cwd)?;
        let open = self
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned();
        let _running = match &open {
            Some(session) => Some(session.agent.lock().await),
            None => None,
        };
        let parent = self.stored_row(id).await?;
        let copy = NewSession {
            id: crate::sessions::new_session_id(),
            source: SOURCE.to_string(),
            model: parent.model.clone(),
            model_config: None,
            billing_provider: parent.billing_provider.clone(),
            billing_base_url: parent.billing_base_url.clone(),
            cwd: Some(cwd.display().to_string()),
            parent_session_id: Some(parent.id.clone()),
            system_prompt: parent.system_prompt.clone(),
        };
        let (from, new_id) = (parent.id.clone(), copy.id.clone());
        let row = self
            .services
            .store
            .call(move |s| {
                s.create_session(&copy)?;
                for stored in s.messages(&from)? {
                    s.append_message(&copy.id, &stored.message)?;
                }
                // The copy starts in the mode the editor picked for the original.
                if let Some(mode) = s.session_setting(&from, modes::KEY)? {
                    s.set_session_setting(&copy.id, modes::KEY, &mode)?;
                }
                s.session(&copy.id)
            })
            .await
            .map_err(|e| rpc_error(-32603, format!("cannot copy session `{id}`: {e}")))?
            .ok_or_else(|| rpc_error(-32603, format!("the copy of `{id}` vanished")))?;
        drop(_running);
        let what = format!("the copy of `{id}`");
        let session = self
            .open_row(client, options, row, servers, cx, &what)
            .await?;
        let model = session.agent.lock().await.model().to_string();
        tracing::info!(parent = id, session = %new_id, "ACP session forked");
        let options = self.config_options(&model).await;
        Ok(ForkSessionResponse::new(new_id)
            .config_options(options)
            .modes(modes::state(session.mode())))
    }

    /// `session/set_mode`: applies at once, also to a turn that is running, and is stored with
    /// the session (`modes::KEY`), so opening it again, from another connection too, keeps it.
    pub async fn set_mode(
        &self,
        req: &SetSessionModeRequest,
        cx: &ConnectionTo<Client>,
    ) -> Result<SetSessionModeResponse, Error> {
        let session = self.session(&req.session_id.0)?;
        let mode = modes::known(&req.mode_id.0).map_err(invalid)?;
        session.set_mode(mode);
        tracing::info!(session = %req.session_id.0, mode, "ACP session mode changed");
        let id = req.session_id.0.to_string();
        let stored = self
            .services
            .store
            .call(move |s| s.set_session_setting(&id, modes::KEY, mode))
            .await;
        match stored {
            Ok(true) => {}
            // Applied for this connection all the same.
            Ok(false) => {
                tracing::warn!(session = %req.session_id.0, "the session's model_config is not a JSON object: its mode is not stored")
            }
            Err(e) => {
                tracing::warn!(session = %req.session_id.0, error = %e, "cannot store the session's mode")
            }
        }
        cx.send_notification(SessionNotification::new(
            req.session_id.clone(),
            SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(mode)),
        ))?;
        Ok(SetSessionModeResponse::new())
    }

    /// Editor sessions, newest first, optionally only those in `cwd`; `cursor` is the offset.
    pub async fn list_sessions(
        &self,
        cwd: Option<&Path>,
        cursor: Option<&str>,
    ) -> Result<ListSessionsResponse, Error> {
        let offset: usize = match cursor {
            Some(c) => c
                .parse()
                .map_err(|_| invalid(format!("cursor `{c}` did not come from session/list")))?,
            None => 0,
        };
        let rows = self
            .services
            .store
            .call(|s| {
                let ids: Vec<(String, f64)> = s
                    .list_summaries(10_000)?
                    .into_iter()
                    .filter(|r| r.source == SOURCE)
                    .map(|r| (r.id, r.last_active))
                    .collect();
                let mut rows = Vec::with_capacity(ids.len());
                for (id, last) in ids {
                    if let Some(row) = s.session(&id)? {
                        rows.push((row, last));
                    }
                }
                Ok(rows)
            })
            .await
            .map_err(|e| rpc_error(-32603, format!("cannot read state.db: {e}")))?;
        let matching: Vec<_> = rows
            .into_iter()
            .filter(|(row, _)| {
                cwd.is_none_or(|c| row.cwd.as_deref() == Some(&*c.to_string_lossy()))
            })
            .collect();
        let total = matching.len();
        let sessions = matching
            .into_iter()
            .skip(offset)
            .take(PAGE)
            .map(|(row, last)| {
                let updated = chrono::DateTime::from_timestamp(last.trunc() as i64, 0)
                    .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
                SessionInfo::new(row.id, row.cwd.unwrap_or_default())
                    .title(row.title)
                    .updated_at(updated)
            })
            .collect();
        let next = (offset + PAGE < total).then(|| (offset + PAGE).to_string());
        Ok(ListSessionsResponse::new(sessions).next_cursor(next))
    }

    /// `session/close`: the session is let go — a running turn is cancelled and waited for,
    /// then its agent is dropped, which stops the MCP servers the editor brought for it. It
    /// stays in state.db; `session/load` opens it again.
    pub async fn close_session(&self, id: &str) -> Result<(), Error> {
        let session = self
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id)
            .ok_or_else(|| invalid(format!("no open session `{id}` to close")))?;
        let running = session
            .turn
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(token) = running {
            token.cancel();
        }
        drop(session.agent.lock().await);
        tracing::info!(session = id, "ACP session closed");
        Ok(())
    }

    /// Cancels the session's running turn, if any.
    pub fn cancel(&self, id: &str) {
        let Ok(session) = self.session(id) else {
            return;
        };
        let token = session
            .turn
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(token) = token {
            tracing::info!(session = id, "ACP turn cancelled by the editor");
            token.cancel();
        }
    }

    /// The models the editor can pick: the provider's list (once per connection) with the
    /// current one first; just the current one when the provider does not list models.
    async fn config_options(&self, current: &str) -> Vec<SessionConfigOption> {
        let listed = self
            .models
            .get_or_init(|| async {
                let Ok(client) = &self.client else {
                    return Vec::new();
                };
                let p = client.provider();
                crate::llm::provider::list_models(&p.base_url, p.api_key.as_deref(), MODELS_TIMEOUT)
                    .await
                    .unwrap_or_default()
            })
            .await;
        let mut ids = vec![current.to_string()];
        ids.extend(listed.iter().filter(|m| *m != current).cloned());
        let choices: Vec<SessionConfigSelectOption> = ids
            .iter()
            .map(|m| SessionConfigSelectOption::new(m.clone(), m.clone()))
            .collect();
        vec![
            SessionConfigOption::select(MODEL_OPTION, "Model", current.to_string(), choices)
                .category(SessionConfigOptionCategory::Model),
        ]
    }

    /// `model`: later turns use the chosen model on the same provider.
    pub async fn set_config_option(
        &self,
        req: SetSessionConfigOptionRequest,
    ) -> Result<SetSessionConfigOptionResponse, Error> {
        if req.config_id.0.as_ref() != MODEL_OPTION {
            return Err(invalid(format!(
                "unknown option `{}`: hermes offers `{MODEL_OPTION}`",
                req.config_id.0
            )));
        }
        let SessionConfigOptionValue::ValueId { value } = &req.value else {
            return Err(invalid("the model option takes a model id"));
        };
        let model = value.0.to_string();
        let session = self.session(&req.session_id.0)?;
        let mut provider = self.client()?.provider().clone();
        provider.model = model.clone();
        let client = crate::llm::client_for(&provider)
            .map_err(|e| invalid(format!("cannot use model `{model}`: {e}")))?;
        let mut agent = session.agent.try_lock().map_err(|_| {
            invalid("a prompt is running in this session: change the model after it ends")
        })?;
        agent
            .set_client(client)
            .await
            .map_err(|e| rpc_error(-32603, format!("cannot switch to `{model}`: {e}")))?;
        tracing::info!(session = %req.session_id.0, %model, "ACP session model changed");
        Ok(SetSessionConfigOptionResponse::new(
            self.config_options(&model).await,
        ))
    }
}
