//! The two rules every platform adapter follows, through the real gateway runner
//! (`hermes::gateway::run`) with test-only adapters: an adapter whose update ids restart at 0
//! after a restart (it names its id epoch) loses no message and answers nothing twice, also
//! when it redelivers; an adapter whose `receive` returns empty batches without waiting is
//! backed off instead of spinning.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hermes::agent::{AgentOptions, Services};
use hermes::config::{Config, EnvVars, HermesHome};
use hermes::gateway::Platforms;
use hermes::gateway::platform::{
    AdapterError, ChatType, MessageEvent, PlatformAdapter, SendOptions, SendResult, SessionSource,
};
use hermes::llm::Provider;
use tokio_util::sync::CancellationToken;

use crate::support::mock_llm::{MockLlm, Reply};

const WAIT: Duration = Duration::from_secs(30);

/// What the platform's side holds: messages waiting (by this instance's ids) and what was sent.
#[derive(Default)]
struct Wire {
    inbox: Vec<MessageEvent>,
    /// Next `receive` ignores the cursor and returns everything again (a redelivery).
    replay: bool,
    receives: usize,
}

/// A platform whose ids count from 0 every time the adapter starts (a server without memory).
struct RestartChat {
    epoch: String,
    wire: Mutex<Wire>,
    sent: Arc<Mutex<Vec<String>>>,
}

impl RestartChat {
    fn start(epoch: &str, sent: &Arc<Mutex<Vec<String>>>) -> Arc<RestartChat> {
        Arc::new(RestartChat {
            epoch: epoch.to_string(),
            wire: Mutex::new(Wire::default()),
            sent: sent.clone(),
        })
    }

    fn push(&self, text: &str) {
        let mut wire = self.wire.lock().unwrap();
        let id = wire.inbox.len() as i64;
        wire.inbox.push(MessageEvent {
            text: text.into(),
            source: SessionSource {
                platform: "restart-chat".into(),
                chat_id: "7".into(),
                chat_type: ChatType::Dm,
                user_id: Some("7".into()),
                ..SessionSource::default()
            },
            message_id: Some(format!("m{id}")),
            platform_update_id: id,
            addressed: true,
            ..MessageEvent::default()
        });
    }

    fn redeliver_everything(&self) -> usize {
        let mut wire = self.wire.lock().unwrap();
        wire.replay = true;
        wire.receives
    }

    fn receives(&self) -> usize {
        self.wire.lock().unwrap().receives
    }
}

#[async_trait::async_trait]
impl PlatformAdapter for RestartChat {
    fn platform(&self) -> &str {
        "restart-chat"
    }
    fn max_message_len(&self) -> usize {
        4000
    }
    fn id_epoch(&self) -> Option<String> {
        Some(self.epoch.clone())
    }
    async fn connect(&self) -> Result<(), AdapterError> {
        Ok(())
    }
    async fn receive(&self, cursor: Option<i64>) -> Result<Vec<MessageEvent>, AdapterError> {
        // Long polling (rule 2): wait up to 200 ms for something after the cursor.
        let start = Instant::now();
        loop {
            {
                let mut wire = self.wire.lock().unwrap();
                let from = if std::mem::take(&mut wire.replay) {
                    0
                } else {
                    cursor.unwrap_or(0)
                };
                let batch: Vec<MessageEvent> = wire
                    .inbox
                    .iter()
                    .filter(|e| e.platform_update_id >= from)
                    .cloned()
                    .collect();
                if !batch.is_empty() || start.elapsed() > Duration::from_millis(200) {
                    wire.receives += 1;
                    return Ok(batch);
                }
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    async fn send(&self, _: &str, text: &str, _: &SendOptions) -> Result<SendResult, AdapterError> {
        let mut sent = self.sent.lock().unwrap();
        sent.push(text.to_string());
        Ok(SendResult {
            message_id: format!("s{}", sent.len()),
        })
    }
    async fn edit(&self, _: &str, _: &str, _: &str) -> Result<(), AdapterError> {
        Ok(())
    }
    async fn delete(&self, _: &str, _: &str) -> Result<(), AdapterError> {
        Ok(())
    }
    async fn typing(&self, _: &str) -> Result<(), AdapterError> {
        Ok(())
    }
}

fn services(home: &std::path::Path) -> Arc<Services> {
    let mut env = EnvVars::default();
    env.set("RESTART_CHAT_ALLOWED_USERS", "7");
    env.set("SPIN_CHAT_ALLOWED_USERS", "7");
    // Background reviews off: every model request is a chat turn.
    let yaml = "memory:\n  nudge_interval: 0\nskills:\n  creation_nudge_interval: 0\n";
    let config =
        Config::from_yaml(HermesHome::new(home), env, yaml, &home.join("config.yaml")).unwrap();
    let store = hermes::sessions::SessionStore::open(&home.join("state.db")).unwrap();
    Arc::new(Services::new(Arc::new(config), Arc::new(store)))
}

/// One run of the gateway with `adapter`, stopped by the returned token.
struct Run {
    rt: tokio::runtime::Runtime,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<Result<(), hermes::gateway::GatewayError>>,
}

impl Run {
    fn start(home: &std::path::Path, mock: &MockLlm, adapter: Arc<dyn PlatformAdapter>) -> Run {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let client =
            hermes::llm::client_for(&Provider::new("custom", "m", &mock.base_url(), None)).unwrap();
        let options = AgentOptions {
            source: "restart-chat".into(),
            cwd: home.to_path_buf(),
            toolsets: vec!["todo".into()],
            max_iterations: 5,
            yolo: false,
            interactive: true,
            ephemeral: false,
        };
        let platforms = Platforms {
            adapters: vec![adapter],
            api_server: None,
        };
        let shutdown = CancellationToken::new();
        let task = rt.spawn(hermes::gateway::run(
            services(home),
            client,
            options,
            platforms,
            shutdown.clone(),
        ));
        Run { rt, shutdown, task }
    }

    fn stop(self) {
        self.shutdown.cancel();
        let result = self.rt.block_on(self.task).unwrap();
        assert!(result.is_ok(), "{result:?}");
    }
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < WAIT, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn sent_count(sent: &Arc<Mutex<Vec<String>>>) -> usize {
    sent.lock().unwrap().len()
}

/// Pushes `text` and waits for its answer.
fn say(adapter: &RestartChat, sent: &Arc<Mutex<Vec<String>>>, text: &str) {
    let before = sent_count(sent);
    adapter.push(text);
    wait_until(&format!("the answer to {text:?}"), || {
        sent_count(sent) > before
    });
}

/// Makes the adapter redeliver everything and waits until the runner has polled past it.
fn redeliver(adapter: &RestartChat) {
    let at = adapter.redeliver_everything();
    wait_until("polls after the redelivery", || {
        adapter.receives() >= at + 3
    });
}

#[test]
fn an_adapter_whose_ids_restart_at_zero_loses_nothing_and_answers_nothing_twice() {
    let home = tempfile::tempdir().unwrap();
    let mock = MockLlm::with_script(["a1", "a2", "a3", "a4"].map(Reply::text));
    let sent = Arc::new(Mutex::new(Vec::new()));

    let first = RestartChat::start("boot-1", &sent);
    let run = Run::start(home.path(), &mock, first.clone());
    say(&first, &sent, "one");
    say(&first, &sent, "two");
    redeliver(&first);
    run.stop();

    // The platform restarted: its ids count from 0 again, under a new epoch.
    let second = RestartChat::start("boot-2", &sent);
    let run = Run::start(home.path(), &mock, second.clone());
    say(&second, &sent, "three");
    say(&second, &sent, "four");
    redeliver(&second);
    run.stop();

    assert_eq!(*sent.lock().unwrap(), ["a1", "a2", "a3", "a4"]);
    let asked: Vec<String> = mock
        .requests()
        .iter()
        .map(|r| {
            let messages = r["messages"].as_array().unwrap();
            let last = messages.iter().rev().find(|m| m["role"] == "user").unwrap();
            last["content"].to_string()
        })
        .collect();
    assert_eq!(asked.len(), 4, "{asked:#?}");
    for (question, word) in asked.iter().zip(["one", "two", "three", "four"]) {
        assert!(question.contains(word), "{question} should ask {word}");
    }
}

/// Breaks rule 2: answers every `receive` at once with nothing.
struct SpinChat {
    receives: AtomicUsize,
}

#[async_trait::async_trait]
impl PlatformAdapter for SpinChat {
    fn platform(&self) -> &str {
        "spin-chat"
    }
    fn max_message_len(&self) -> usize {
        4000
    }
    async fn connect(&self) -> Result<(), AdapterError> {
        Ok(())
    }
    async fn receive(&self, _cursor: Option<i64>) -> Result<Vec<MessageEvent>, AdapterError> {
        self.receives.fetch_add(1, Ordering::SeqCst);
        Ok(Vec::new())
    }
    async fn send(&self, _: &str, _: &str, _: &SendOptions) -> Result<SendResult, AdapterError> {
        Ok(SendResult {
            message_id: "1".into(),
        })
    }
    async fn edit(&self, _: &str, _: &str, _: &str) -> Result<(), AdapterError> {
        Ok(())
    }
    async fn delete(&self, _: &str, _: &str) -> Result<(), AdapterError> {
        Ok(())
    }
    async fn typing(&self, _: &str) -> Result<(), AdapterError> {
        Ok(())
    }
}

#[test]
fn an_adapter_that_returns_empty_batches_without_waiting_is_backed_off() {
    let home = tempfile::tempdir().unwrap();
    let mock = MockLlm::with_script(Vec::<Reply>::new());
    let spin = Arc::new(SpinChat {
        receives: AtomicUsize::new(0),
    });
    let run = Run::start(home.path(), &mock, spin.clone());
    wait_until("the first polls", || {
        spin.receives.load(Ordering::SeqCst) >= 3
    });
    // Unchecked, the runner would poll thousands of times in this second; backed off
    // (100 ms, doubling) it polls a handful of times.
    std::thread::sleep(Duration::from_secs(1));
    let polls = spin.receives.load(Ordering::SeqCst);
    run.stop();
    assert!(polls <= 20, "{polls} polls in about a second");
}
