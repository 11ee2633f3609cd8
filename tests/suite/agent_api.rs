//! The `Agent` through the public library API: a redelivered platform message (same id) is not
//! stored or answered twice, and a session left with an unanswered tool call resumes cleanly.

use std::sync::Arc;

use hermes::agent::{Agent, AgentOptions, Services};
use hermes::config::{Config, EnvVars, HermesHome};
use hermes::llm::{Message, Provider, ToolCall};
use hermes::sessions::{NewSession, SessionStore};
use tokio_util::sync::CancellationToken;

use crate::support::mock_llm::{MockLlm, Reply};

fn services(home: &std::path::Path) -> Arc<Services> {
    let config = Config::defaults(HermesHome::new(home), EnvVars::default());
    let store = SessionStore::open(&home.join("state.db")).unwrap();
    Arc::new(Services::new(Arc::new(config), Arc::new(store)))
}

fn options(cwd: &std::path::Path) -> AgentOptions {
    AgentOptions {
        source: "telegram".into(),
        cwd: cwd.to_path_buf(),
        toolsets: vec!["file".into()],
        max_iterations: 10,
        yolo: false,
        interactive: false,
        ephemeral: false,
    }
}

fn rows(home: &std::path::Path) -> Vec<(String, Option<String>)> {
    let db = rusqlite::Connection::open(home.join("state.db")).unwrap();
    let mut stmt = db
        .prepare("SELECT role, content FROM messages WHERE active = 1 ORDER BY id")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redelivered_message_is_answered_once() {
    let home = tempfile::tempdir().unwrap();
    let mock = MockLlm::with_script([Reply::text("the one answer")]);
    let services = services(home.path());
    let client =
        hermes::llm::client_for(&Provider::new("custom", "m", &mock.base_url(), None)).unwrap();
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let cancel = CancellationToken::new();

    let mut agent = Agent::start(services.clone(), client.clone(), options(home.path()))
        .await
        .unwrap();
    let first = agent
        .run_turn_tagged("hello", Some("update:7"), &tx, &cancel)
        .await
        .unwrap();
    assert_eq!(first.text, "the one answer");

    // After a crash the same update arrives again in a fresh process (a resumed agent).
    let row = services.store.session(agent.session_id()).unwrap().unwrap();
    let mut again = Agent::resume(services.clone(), client, row, options(home.path()))
        .await
        .unwrap();
    let second = again
        .run_turn_tagged("hello", Some("update:7"), &tx, &cancel)
        .await
        .unwrap();
    assert_eq!(second.text, "the one answer");
    assert_eq!(second.api_calls, 0);
    assert_eq!(mock.request_count(), 1);
    let stored = rows(home.path());
    assert_eq!(stored.len(), 2, "{stored:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dangling_tool_call_is_closed_on_resume() {
    let home = tempfile::tempdir().unwrap();
    let mock = MockLlm::with_script([Reply::text("carrying on")]);
    let services = services(home.path());
    let store = &services.store;
    store
        .create_session(&NewSession {
            id: "s1".into(),
            source: "cli".into(),
            system_prompt: Some("frozen".into()),
            ..Default::default()
        })
        .unwrap();
    let call = ToolCall {
        id: "call_1".into(),
        name: "read_file".into(),
        arguments: r#"{"path":"x"}"#.into(),
    };
    store
        .append_message("s1", &Message::user("read x"))
        .unwrap();
    store
        .append_message("s1", &Message::assistant(None, vec![call]))
        .unwrap();
    let client =
        hermes::llm::client_for(&Provider::new("custom", "m", &mock.base_url(), None)).unwrap();
    let row = store.session("s1").unwrap().unwrap();
    let mut agent = Agent::resume(services.clone(), client, row, options(home.path()))
        .await
        .unwrap();
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let out = agent
        .run_turn("go on", &tx, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(out.text, "carrying on");
    let sent = mock.requests()[0]["messages"].as_array().unwrap().clone();
    let roles: Vec<&str> = sent.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "user"]);
    assert_eq!(sent[3]["tool_call_id"], "call_1");
}
