//! The gateway under load and faults: a panic stays in its chat (a crashing tool becomes an
//! error result; a crashing turn becomes an error reply) while other chats are served; a flood
//! into one chat is capped (`gateway.max_queued_per_chat`) with one "busy" notice per burst,
//! answered in order, and does not starve another chat.

use std::sync::Arc;
use std::time::{Duration, Instant};

use hermes::agent::{AgentOptions, Services};
use hermes::config::{Config, EnvVars, HermesHome};
use hermes::llm::{ChatRequest, LlmClient, LlmError, LlmStream, Provider};
use hermes::sessions::SessionStore;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::gateway_support::{Gw, allowed_users};
use crate::support::fake_telegram::{FakeTelegram, TOKEN};
use crate::support::mock_llm::{MockLlm, Reply};

const WAIT: Duration = Duration::from_secs(30);

#[test]
fn a_panicking_tool_fails_its_call_and_every_chat_goes_on() {
    let mut gw = Gw::new([
        Reply::tool_call("c1", "test_crash", json!({"message": "kaboom"})),
        Reply::text("the tool broke, sorry"),
        Reply::text("hello B"),
        Reply::text("still here, A"),
    ]);
    gw.config("toolsets: [crash]\ncustom_toolsets:\n  crash:\n    tools: [test_crash, todo]\n");
    std::fs::write(gw.env.home_path().join(".env"), "HERMES_TEST_TOOLS=1\n").unwrap();
    gw.start();
    gw.tg.push_text(100, "please crash");
    let sends = gw.tg.wait_sends(WAIT, |s| !s.is_empty());
    assert_eq!(sends[0].chat_id, 100);
    assert_eq!(sends[0].text, "the tool broke, sorry");
    // The model got the crash as the call's error result.
    let requests = gw.llm.requests();
    let result = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("a tool result")
        .to_string();
    assert!(
        result.contains("crashed") && result.contains("kaboom"),
        "{result}"
    );
    gw.tg.push_text(101, "hi");
    let sends = gw
        .tg
        .wait_sends(WAIT, |s| s.iter().any(|m| m.chat_id == 101));
    assert!(sends.iter().any(|m| m.text == "hello B"), "{sends:#?}");
    // The crashing chat keeps its conversation.
    gw.tg.push_text(100, "again");
    let sends = gw.tg.wait_sends(WAIT, |s| s.len() >= 3);
    assert_eq!(sends[2].text, "still here, A");
    let status = gw.stop();
    assert!(status.success(), "{status:?}");
}

/// A client that panics when the user's message says "explode", else asks the mock.
struct Explosive {
    inner: Arc<dyn LlmClient>,
}

#[async_trait::async_trait]
impl LlmClient for Explosive {
    async fn stream(&self, request: ChatRequest) -> Result<LlmStream, LlmError> {
        let last = request
            .messages
            .last()
            .and_then(|m| m.content.clone())
            .unwrap_or_default();
        if last.contains("explode") {
            panic!("the model client exploded");
        }
        self.inner.stream(request).await
    }

    fn provider(&self) -> &Provider {
        self.inner.provider()
    }
}

#[test]
fn a_panicking_turn_answers_its_chat_with_an_error_and_others_are_served() {
    let home = tempfile::tempdir().unwrap();
    let tg = FakeTelegram::start();
    let mock = MockLlm::with_script([Reply::text("hello B"), Reply::text("A is back")]);
    let mut env = EnvVars::default();
    env.set("TELEGRAM_BOT_TOKEN", TOKEN);
    env.set("TELEGRAM_ALLOWED_USERS", allowed_users());
    env.set("TELEGRAM_API_BASE_URL", tg.base_url());
    env.set("TELEGRAM_POLL_TIMEOUT", "1");
    let config = Config::defaults(HermesHome::new(home.path()), env);
    let store = SessionStore::open(&home.path().join("state.db")).unwrap();
    let services = Arc::new(Services::new(Arc::new(config), Arc::new(store)));
    let real =
        hermes::llm::client_for(&Provider::new("custom", "m", &mock.base_url(), None)).unwrap();
    let client: Arc<dyn LlmClient> = Arc::new(Explosive { inner: real });
    let options = AgentOptions {
        source: "telegram".into(),
        cwd: home.path().to_path_buf(),
        toolsets: vec!["todo".into()],
        max_iterations: 10,
        yolo: false,
        interactive: true,
        ephemeral: false,
    };
    let platforms = hermes::gateway::configured(&services.config, None).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let shutdown = CancellationToken::new();
    let gateway = rt.spawn(hermes::gateway::run(
        services,
        client,
        options,
        platforms,
        shutdown.clone(),
    ));
    tg.wait_polls(0, 1, WAIT);

    tg.push_text(100, "please explode");
    let sends = tg.wait_sends(WAIT, |s| !s.is_empty());
    assert_eq!(sends[0].chat_id, 100);
    assert!(
        sends[0].text.contains("something broke inside hermes")
            && sends[0].text.contains("exploded"),
        "{sends:#?}"
    );
    tg.push_text(101, "hi");
    let sends = tg.wait_sends(WAIT, |s| s.iter().any(|m| m.chat_id == 101));
    assert!(sends.iter().any(|m| m.text == "hello B"), "{sends:#?}");
    // The chat that crashed is served again (its agent is rebuilt from state.db).
    tg.push_text(100, "calm now");
    let sends = tg.wait_sends(WAIT, |s| s.iter().any(|m| m.text == "A is back"));
    assert!(sends.len() >= 3, "{sends:#?}");
    assert!(!gateway.is_finished(), "the gateway is still running");
    shutdown.cancel();
    let result = rt.block_on(gateway).unwrap();
    assert!(result.is_ok(), "{result:?}");
}

#[test]
fn a_flood_is_capped_with_one_busy_notice_and_does_not_starve_another_chat() {
    // The first turn runs until `/stop`, so the whole flood arrives while the chat is busy.
    let first = Reply::text("never").delay(Duration::from_secs(120));
    let rest = (1..=101).map(|i| Reply::text(format!("answer {i}")));
    let mut gw = Gw::new(std::iter::once(first).chain(rest));
    // One turn at a time across all chats, so fairness between the chats is what is tested.
    // Background reviews off: every model request here is a chat turn.
    gw.config(
        "max_concurrent_sessions: 1\ngateway:\n  max_queued_per_chat: 100\nmemory:\n  nudge_interval: 0\nskills:\n  creation_nudge_interval: 0\n",
    );
    gw.start();
    gw.tg.push_text(100, "message 0");
    let start = Instant::now();
    while gw.llm.request_count() == 0 {
        assert!(start.elapsed() < WAIT);
        std::thread::sleep(Duration::from_millis(10));
    }
    let flood: Vec<i64> = (1..=150)
        .map(|i| gw.tg.push_text(100, &format!("message {i}")))
        .map(|update| gw.tg.message_id(update).unwrap())
        .collect();
    gw.tg.push_text(101, "I am the other chat");
    // Every update recorded: the flood and the other chat's message are all in.
    let start = Instant::now();
    loop {
        let n: i64 = gw
            .env
            .db()
            .query_row("SELECT COUNT(*) FROM gateway_inbound", [], |r| r.get(0))
            .unwrap_or(0);
        if n >= 152 {
            eprintln!("152 updates taken in within {:?}", start.elapsed());
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "{n} recorded");
        std::thread::sleep(Duration::from_millis(50));
    }
    gw.tg.push_text(100, "/stop");
    let sends = gw.tg.wait_sends(Duration::from_secs(90), |s| {
        s.iter()
            .filter(|m| m.chat_id == 100 && m.text.starts_with("answer"))
            .count()
            >= 100
            && s.iter().any(|m| m.chat_id == 101)
    });
    let to_a: Vec<_> = sends.iter().filter(|m| m.chat_id == 100).collect();
    let queued: Vec<_> = to_a
        .iter()
        .filter(|m| m.text.starts_with("Queued"))
        .collect();
    let busy: Vec<_> = to_a.iter().filter(|m| m.text.starts_with("Busy")).collect();
    assert_eq!(queued.len(), 1, "one queued notice per burst: {queued:#?}");
    assert_eq!(busy.len(), 1, "one busy notice per burst: {busy:#?}");
    assert!(busy[0].text.contains("not queued"), "{}", busy[0].text);
    // The notice answers the first refused message (#101) and covers the 49 after it.
    assert_eq!(busy[0].reply_to, Some(flood[100]));
    // The 100 queued messages are answered, in order, each quoting its message.
    let answered: Vec<i64> = to_a
        .iter()
        .filter(|m| m.text.starts_with("answer"))
        .filter_map(|m| m.reply_to)
        .collect();
    assert_eq!(answered, &flood[..100], "answered in order");
    // The refused 50 never reached the model.
    let users: Vec<String> = gw
        .llm
        .requests()
        .iter()
        .map(|r| {
            r["messages"]
                .as_array()
                .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
                .map(|m| m["content"].to_string())
                .unwrap_or_default()
        })
        .collect();
    assert_eq!(users.len(), 102, "{users:?}");
    assert!(
        !users.iter().any(|u| u.contains("message 101")),
        "{users:?}"
    );
    // Fair scheduling: the other chat's turn comes right after the busy chat's running turn.
    let other = users
        .iter()
        .position(|u| u.contains("I am the other chat"))
        .expect("the other chat reached the model");
    assert_eq!(other, 1, "the other chat waited {other} turns: {users:?}");
    let status = gw.stop();
    assert!(status.success(), "{status:?}");
}
