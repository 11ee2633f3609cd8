//! `hermes mcp serve` driven by an MCP client (rmcp): over the child's stdio (tools listed,
//! conversations listed and read by gateway key or session id, full-text search, the events
//! feed with a long poll that wakes on a new message, channels, a send that says why it cannot),
//! and over Streamable HTTP with and without the bearer key; a non-loopback bind without a key
//! is refused.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use hermes::llm::{Message, ToolCall};
use hermes::sessions::{NewSession, SessionStore};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ClientConfig};
use serde_json::{Value, json};

use crate::support::harness::{TestEnv, stderr};

const KEY: &str = "test-key-0123456789abcdef";

fn session(store: &SessionStore, id: &str, source: &str, title: Option<&str>) {
    store
        .create_session(&NewSession {
            id: id.into(),
            source: source.into(),
            model: Some("test-model".into()),
            ..NewSession::default()
        })
        .unwrap();
    if let Some(t) = title {
        store.set_title(id, t).unwrap();
    }
}

/// A telegram chat routed to `tg1` and a terminal session `cli1`, with messages.
fn seed(env: &TestEnv) -> SessionStore {
    let store = SessionStore::open(&env.home_path().join("state.db")).unwrap();
    session(&store, "tg1", "telegram", Some("Ops chat"));
    store
        .append_message("tg1", &Message::user("is the zeppelin deployment done?"))
        .unwrap();
    store
        .append_message(
            "tg1",
            &Message::assistant(Some("Yes, it finished at noon.".into()), vec![]),
        )
        .unwrap();
    store
        .gateway_set_route("agent:main:telegram:dm:42", "tg1")
        .unwrap();
    session(&store, "cli1", "cli", None);
    store
        .append_message("cli1", &Message::user("list the files"))
        .unwrap();
    let call = ToolCall {
        id: "c1".into(),
        name: "terminal".into(),
        arguments: "{\"command\":\"ls\"}".into(),
    };
    store
        .append_message("cli1", &Message::assistant(None, vec![call.clone()]))
        .unwrap();
    store
        .append_message("cli1", &Message::tool_result(&call, "a.txt"))
        .unwrap();
    store
        .append_message(
            "cli1",
            &Message::assistant(Some("One file: a.txt".into()), vec![]),
        )
        .unwrap();
    store
}

fn text_of(result: &rmcp::model::CallToolResult) -> (Value, bool) {
    let v = serde_json::to_value(result).unwrap();
    let text = v["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let parsed = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (parsed, result.is_error == Some(true))
}

async fn call(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ClientConfig>,
    name: &'static str,
    args: Value,
) -> (Value, bool) {
    let args = args.as_object().cloned().unwrap_or_default();
    let result = client
        .call_tool(CallToolRequestParams::new(name).with_arguments(args))
        .await
        .unwrap();
    text_of(&result)
}

fn command(env: &TestEnv, args: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::from(env.bare_process());
    cmd.args(args).kill_on_drop(true);
    cmd
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_lists_reads_searches_and_follows_conversations_over_stdio() {
    let env = TestEnv::new();
    let store = seed(&env);
    let transport =
        rmcp::transport::TokioChildProcess::new(command(&env, &["mcp", "serve"])).unwrap();
    let client = ClientConfig::default().serve(transport).await.unwrap();

    let tools: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    for name in [
        "conversations_list",
        "conversation_get",
        "messages_read",
        "attachments_fetch",
        "conversations_search",
        "events_poll",
        "events_wait",
        "messages_send",
        "channels_list",
    ] {
        assert!(
            tools.contains(&name.to_string()),
            "{name} missing from {tools:?}"
        );
    }
    // Approvals cannot be reached from another process: not offered rather than faked.
    assert!(
        !tools.iter().any(|t| t.starts_with("permissions_")),
        "{tools:?}"
    );

    let (list, _) = call(&client, "conversations_list", json!({})).await;
    assert_eq!(list["count"], 2, "{list}");
    let tg = list["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["session_id"] == "tg1")
        .unwrap();
    assert_eq!(tg["session_key"], "agent:main:telegram:dm:42");
    assert_eq!(tg["platform"], "telegram");
    assert_eq!(tg["display_name"], "Ops chat");
    let (only_cli, _) = call(&client, "conversations_list", json!({"platform": "cli"})).await;
    assert_eq!(only_cli["count"], 1, "{only_cli}");
    assert_eq!(only_cli["conversations"][0]["session_key"], "cli1");

    let (got, _) = call(
        &client,
        "conversation_get",
        json!({"session_key": "agent:main:telegram:dm:42"}),
    )
    .await;
    assert_eq!(got["session_id"], "tg1");
    assert_eq!(got["chat_id"], "42");

    let (read, _) = call(&client, "messages_read", json!({"session_key": "cli1"})).await;
    let roles: Vec<&str> = read["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    // Tool rows and the tool-call-only assistant row are left out.
    assert_eq!(roles, ["user", "assistant"], "{read}");
    assert_eq!(read["messages"][1]["content"], "One file: a.txt");
    let (last_one, _) = call(
        &client,
        "messages_read",
        json!({"session_key": "agent:main:telegram:dm:42", "limit": 1}),
    )
    .await;
    assert_eq!(last_one["count"], 1);
    assert_eq!(last_one["total_in_session"], 2);
    assert_eq!(
        last_one["messages"][0]["content"],
        "Yes, it finished at noon."
    );

    let (missing, is_error) = call(&client, "messages_read", json!({"session_key": "nope"})).await;
    assert!(is_error, "{missing}");
    assert!(
        missing.as_str().unwrap().contains("Conversation not found"),
        "{missing}"
    );

    let (found, _) = call(
        &client,
        "conversations_search",
        json!({"query": "zeppelin"}),
    )
    .await;
    assert_eq!(found["count"], 1, "{found}");
    assert_eq!(found["results"][0]["session_id"], "tg1");
    assert!(
        found["results"][0]["snippet"]
            .as_str()
            .unwrap()
            .contains("zeppelin")
    );
    let (hostile, is_error) = call(
        &client,
        "conversations_search",
        json!({"query": "\"unbalanced AND ( NOT"}),
    )
    .await;
    assert!(!is_error, "FTS5 syntax is never an error: {hostile}");

    let (feed, _) = call(
        &client,
        "events_poll",
        json!({"after_cursor": 0, "limit": 2}),
    )
    .await;
    let events = feed["events"].as_array().unwrap();
    assert_eq!(events.len(), 2, "{feed}");
    assert_eq!(events[0]["type"], "message");
    assert_eq!(events[0]["session_key"], "agent:main:telegram:dm:42");
    let next = feed["next_cursor"].as_i64().unwrap();
    let latest = feed["latest_cursor"].as_i64().unwrap();
    let (rest, _) = call(&client, "events_poll", json!({"after_cursor": next})).await;
    assert_eq!(rest["events"].as_array().unwrap().len(), 2, "{rest}");

    let (quiet, _) = call(
        &client,
        "events_wait",
        json!({"after_cursor": latest, "timeout_ms": 100}),
    )
    .await;
    assert_eq!(quiet["reason"], "timeout", "{quiet}");
    // A message written by another process while the client waits wakes the long poll.
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        store
            .append_message("tg1", &Message::user("one more thing"))
            .unwrap();
    });
    let (woke, _) = call(
        &client,
        "events_wait",
        json!({"after_cursor": latest, "timeout_ms": 20000}),
    )
    .await;
    writer.join().unwrap();
    assert_eq!(woke["event"]["content"], "one more thing", "{woke}");
    assert_eq!(woke["event"]["session_id"], "tg1");

    let (channels, _) = call(&client, "channels_list", json!({})).await;
    assert_eq!(
        channels["channels"][0]["target"], "telegram:42",
        "{channels}"
    );
    assert_eq!(channels["channels"][0]["can_send"], false);
    let (sent, is_error) = call(
        &client,
        "messages_send",
        json!({"target": "telegram:42", "message": "hi"}),
    )
    .await;
    assert!(is_error, "{sent}");
    assert!(
        sent.as_str().unwrap().contains("TELEGRAM_BOT_TOKEN"),
        "{sent}"
    );

    client.cancel().await.unwrap();
}

/// Starts `hermes mcp serve --http 127.0.0.1:0` and returns it with its URL.
fn start_http(env: &TestEnv, key: Option<&str>) -> (std::process::Child, String) {
    let mut cmd = env.bare_process();
    cmd.args(["mcp", "serve", "--http", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(k) = key {
        cmd.env("MCP_SERVER_KEY", k);
    }
    let mut child = cmd.spawn().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let line = lines.next().unwrap().unwrap();
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .to_string();
    (child, url)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamable_http_needs_the_bearer_key_when_one_is_set() {
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

    let _ = rustls::crypto::ring::default_provider().install_default();
    let env = TestEnv::new();
    seed(&env);
    let (mut child, url) = start_http(&env, Some(KEY));

    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    let http = reqwest::Client::new();
    for auth in [None, Some("Bearer wrong-key-0123456789")] {
        let mut req = http
            .post(&url)
            .header("accept", "application/json, text/event-stream")
            .json(&initialize);
        if let Some(a) = auth {
            req = req.header("authorization", a);
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), 401, "auth {auth:?}");
    }

    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.clone()).auth_header(KEY),
    );
    let client = ClientConfig::default().serve(transport).await.unwrap();
    let (list, _) = call(&client, "conversations_list", json!({})).await;
    assert_eq!(list["count"], 2, "{list}");
    let (found, _) = call(
        &client,
        "conversations_search",
        json!({"query": "zeppelin"}),
    )
    .await;
    assert_eq!(found["results"][0]["session_id"], "tg1", "{found}");
    client.cancel().await.unwrap();
    let _ = child.kill();
    let _ = child.wait();

    // Without a key a loopback server answers anyone local; a browser origin is refused.
    let (mut child, url) = start_http(&env, None);
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.clone()),
    );
    let client = ClientConfig::default().serve(transport).await.unwrap();
    let (list, _) = call(
        &client,
        "conversations_list",
        json!({"platform": "telegram"}),
    )
    .await;
    assert_eq!(list["count"], 1, "{list}");
    client.cancel().await.unwrap();
    let from_page = http
        .post(&url)
        .header("accept", "application/json, text/event-stream")
        .header("origin", "http://evil.example")
        .json(&initialize)
        .send()
        .await
        .unwrap();
    assert!(
        from_page.status().is_client_error(),
        "{}",
        from_page.status()
    );
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_non_loopback_address_without_a_key_is_refused() {
    let env = TestEnv::new();
    let out = env
        .bare_cmd()
        .args(["mcp", "serve", "--http", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("MCP_SERVER_KEY") && err.contains("0.0.0.0"),
        "{err}"
    );

    let out = env
        .bare_cmd()
        .env("MCP_SERVER_KEY", "short")
        .args(["mcp", "serve", "--http", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("too short"), "{}", stderr(&out));
}
