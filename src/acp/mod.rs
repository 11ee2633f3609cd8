//! `hermes acp`: the Agent Client Protocol over stdio, so editors (Zed and others) drive hermes
//! sessions. JSON-RPC framing and dispatch come from the `agent-client-protocol` crate (v1);
//! this module answers its requests with hermes's own pieces:
//!
//! - `initialize` (capabilities: load, list, embedded context), `authenticate` (nothing to do
//!   when a provider resolved; a clear error saying how to configure one otherwise);
//! - `session/new|load|resume|list|fork|close` on state.db sessions with source `acp`
//!   (`session.rs`; a fork copies the conversation and records its parent; close lets an open
//!   session go, with the MCP servers the editor brought for it);
//! - MCP servers the editor lists for a session run for that session only (`mcp_servers.rs`);
//! - `session/set_mode`: what a session does without asking (`modes.rs`; no mode passes the
//!   hardline floor, the deny rules or the protected paths);
//! - `session/prompt` runs one turn of the session's `Agent` and streams it as session updates
//!   (`turn.rs`, translations in `updates.rs`); `session/cancel` fires the turn's cancel token,
//!   which kills a running command as SIGINT does in the terminal;
//! - `session/set_config_option` with `model` switches the model for later turns;
//! - dangerous commands and file edits (`write_file`, `patch`) are asked through the editor's
//!   `session/request_permission` (the run mode is `RunMode::Acp`; no answer within
//!   `approvals.timeout` is a denial).
//!
//! When the editor offers `fs.readTextFile` / `fs.writeTextFile`, the file tools' final reads
//! and writes go through `fs/read_text_file` / `fs/write_text_file` (`editor_fs.rs`) — after the
//! path policy, the edit question and the checkpoint, which still run in hermes. stdout carries
//! protocol frames only; logs go to `$HERMES_HOME/logs`.

mod editor_fs;
mod mcp_servers;
mod modes;
mod session;
mod turn;
pub mod updates;

use std::sync::Arc;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AuthMethod, AuthMethodAgent, AuthenticateRequest, AuthenticateResponse,
    CancelNotification, ForkSessionRequest, ForkSessionResponse, Implementation, InitializeRequest,
    InitializeResponse, ListSessionsRequest, ListSessionsResponse, LoadSessionRequest,
    LoadSessionResponse, NewSessionRequest, NewSessionResponse, PromptCapabilities, PromptRequest,
    PromptResponse, ResumeSessionRequest, ResumeSessionResponse, SessionCapabilities,
    SessionForkCapabilities, SessionListCapabilities, SessionResumeCapabilities,
    SetSessionConfigOptionRequest, SetSessionConfigOptionResponse, SetSessionModeRequest,
    SetSessionModeResponse,
};
use agent_client_protocol::v1::schema::{
    CloseSessionRequest, CloseSessionResponse, SessionCloseCapabilities,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, ErrorCode, Lines};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

use crate::agent::Services;
use crate::llm::LlmClient;

pub use session::AcpServer;

/// The auth method offered when no provider is configured.
const SETUP_METHOD: &str = "hermes-setup";

/// Why `hermes acp` stopped.
#[derive(Debug, thiserror::Error)]
pub enum AcpError {
    #[error("the editor connection failed: {0}")]
    Protocol(String),
}

/// A JSON-RPC error with a readable message.
pub(crate) fn rpc_error(code: i32, message: impl Into<String>) -> agent_client_protocol::Error {
    agent_client_protocol::Error::new(ErrorCode::from(code), message)
}

/// -32602: the request names something that does not exist or is malformed.
pub(crate) fn invalid(message: impl Into<String>) -> agent_client_protocol::Error {
    rpc_error(-32602, message)
}

/// What `hermes acp` runs with: the process's services, the resolved model client (or why
/// none resolved) and the agent options every session starts from.
pub struct AcpSetup {
    pub services: Arc<Services>,
    pub client: Result<Arc<dyn LlmClient>, String>,
    pub options: crate::agent::AgentOptions,
}

/// Serves ACP on stdin/stdout until the editor closes stdin.
pub async fn serve_stdio(setup: AcpSetup) -> Result<(), AcpError> {
    let incoming = futures::stream::unfold(
        tokio::io::BufReader::new(tokio::io::stdin()).lines(),
        |mut lines| async move {
            match lines.next_line().await {
                Ok(Some(line)) => Some((Ok(line), lines)),
                Ok(None) => None,
                Err(e) => Some((Err(e), lines)),
            }
        },
    );
    let outgoing =
        futures::sink::unfold(tokio::io::stdout(), async move |mut out, line: String| {
            out.write_all(line.as_bytes()).await?;
            out.write_all(b"\n").await?;
            out.flush().await?;
            Ok::<_, std::io::Error>(out)
        });
    serve(setup, Lines::new(Box::pin(outgoing), Box::pin(incoming))).await
}

/// Serves ACP over `transport` (stdio in the binary; a channel in tests).
pub async fn serve(
    setup: AcpSetup,
    transport: impl agent_client_protocol::ConnectTo<agent_client_protocol::Agent> + 'static,
) -> Result<(), AcpError> {
    let server = Arc::new(AcpServer::new(setup));
    let (s1, s2, s3, s4, s5, s6, s7, s8, s9) = (
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
    );
    agent_client_protocol::Agent
        .v1()
        .name("hermes")
        .on_receive_request(
            async move |req: InitializeRequest,
                        responder: Responder<InitializeResponse>,
                        _cx: ConnectionTo<Client>| {
                responder.respond(initialize(&s1, &req))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |_req: AuthenticateRequest,
                        responder: Responder<AuthenticateResponse>,
                        _cx: ConnectionTo<Client>| {
                match s2.provider_error() {
                    None => responder.respond(AuthenticateResponse::new()),
                    Some(why) => responder.respond_with_error(rpc_error(-32000, why)),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: NewSessionRequest,
                        responder: Responder<NewSessionResponse>,
                        cx: ConnectionTo<Client>| {
                let server = s3.clone();
                answer_later(responder, async move {
                    server.new_session(&req.cwd, &req.mcp_servers, &cx).await
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: LoadSessionRequest,
                        responder: Responder<LoadSessionResponse>,
                        cx: ConnectionTo<Client>| {
                let server = s4.clone();
                answer_later(responder, async move {
                    server
                        .load_session(&req.session_id.0, &req.cwd, &req.mcp_servers, &cx)
                        .await
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: ResumeSessionRequest,
                        responder: Responder<ResumeSessionResponse>,
                        cx: ConnectionTo<Client>| {
                let server = s9.clone();
                answer_later(responder, async move {
                    server
                        .resume_session(&req.session_id.0, &req.cwd, &req.mcp_servers, &cx)
                        .await
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: ListSessionsRequest,
                        responder: Responder<ListSessionsResponse>,
                        _cx: ConnectionTo<Client>| {
                let server = s5.clone();
                answer_later(responder, async move {
                    server
                        .list_sessions(req.cwd.as_deref(), req.cursor.as_deref())
                        .await
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: PromptRequest,
                        responder: Responder<PromptResponse>,
                        cx: ConnectionTo<Client>| {
                let server = s6.clone();
                answer_later(
                    responder,
                    async move { turn::prompt(&server, req, cx).await },
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |note: CancelNotification, _cx: ConnectionTo<Client>| {
                s7.cancel(&note.session_id.0);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |req: SetSessionConfigOptionRequest,
                        responder: Responder<SetSessionConfigOptionResponse>,
                        _cx: ConnectionTo<Client>| {
                let server = s8.clone();
                answer_later(
                    responder,
                    async move { server.set_config_option(req).await },
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let server = server.clone();
                async move |req: ForkSessionRequest,
                            responder: Responder<ForkSessionResponse>,
                            cx: ConnectionTo<Client>| {
                    let server = server.clone();
                    answer_later(responder, async move {
                        server
                            .fork_session(&req.session_id.0, &req.cwd, &req.mcp_servers, &cx)
                            .await
                    })
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let server = server.clone();
                async move |req: SetSessionModeRequest,
                            responder: Responder<SetSessionModeResponse>,
                            cx: ConnectionTo<Client>| {
                    match server.set_mode(&req, &cx).await {
                        Ok(r) => responder.respond(r),
                        Err(e) => responder.respond_with_error(e),
                    }
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let server = server.clone();
                async move |req: CloseSessionRequest,
                            responder: Responder<CloseSessionResponse>,
                            _cx: ConnectionTo<Client>| {
                    let server = server.clone();
                    answer_later(responder, async move {
                        server.close_session(&req.session_id.0).await?;
                        Ok(CloseSessionResponse::new())
                    })
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_to(transport)
        .await
        .map_err(|e| AcpError::Protocol(e.to_string()))
}

/// Answers `responder` with what `work` gives, from a task beside the dispatch loop: session
/// set-up reads files and a turn runs long, while `session/cancel` and permission answers must
/// keep arriving.
fn answer_later<T>(
    responder: Responder<T>,
    work: impl Future<Output = Result<T, agent_client_protocol::Error>> + Send + 'static,
) -> Result<(), agent_client_protocol::Error>
where
    T: agent_client_protocol::JsonRpcResponse + Send + 'static,
{
    tokio::spawn(async move {
        let answered = match work.await {
            Ok(r) => responder.respond(r),
            Err(e) => responder.respond_with_error(e),
        };
        if let Err(e) = answered {
            tracing::debug!(error = %e, "cannot answer the editor (gone?)");
        }
    });
    Ok(())
}

fn initialize(server: &AcpServer, req: &InitializeRequest) -> InitializeResponse {
    server.set_offered(editor_fs::Offered::from_capabilities(
        &req.client_capabilities,
    ));
    let caps = AgentCapabilities::new()
        .load_session(true)
        .mcp_capabilities(mcp_servers::capabilities())
        .prompt_capabilities(PromptCapabilities::new().embedded_context(true))
        .session_capabilities(
            SessionCapabilities::new()
                .list(SessionListCapabilities::new())
                .resume(SessionResumeCapabilities::new())
                .fork(SessionForkCapabilities::new())
                .close(SessionCloseCapabilities::new()),
        );
    let auth = match server.provider_error() {
        None => Vec::new(),
        Some(why) => vec![AuthMethod::Agent(
            AuthMethodAgent::new(SETUP_METHOD, "Configure a model provider").description(why),
        )],
    };
    // hermes speaks v1: a client offering a later version is answered with v1.
    let version = req.protocol_version.min(ProtocolVersion::V1);
    InitializeResponse::new(version)
        .agent_capabilities(caps)
        .auth_methods(auth)
        .agent_info(Implementation::new("hermes", env!("CARGO_PKG_VERSION")).title("Hermes Agent"))
}
