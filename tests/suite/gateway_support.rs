//! Shared fixture for the gateway tests: a fake Telegram, the scripted mock LLM and the real
//! `hermes gateway run` as a child process the test can stop with SIGTERM or SIGKILL.

use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use crate::support::fake_telegram::{FakeTelegram, TOKEN};
use crate::support::harness::TestEnv;
use crate::support::mock_llm::{MockLlm, Reply};

/// Users allowed by default: 42 and 100..=119.
pub fn allowed_users() -> String {
    let mut users = vec!["42".to_string()];
    users.extend((100..120).map(|u| u.to_string()));
    users.join(",")
}

pub struct Gw {
    pub env: TestEnv,
    pub tg: FakeTelegram,
    pub llm: MockLlm,
    child: Option<Child>,
}

impl Gw {
    pub fn new(script: impl IntoIterator<Item = Reply>) -> Gw {
        Gw {
            env: TestEnv::new(),
            tg: FakeTelegram::start(),
            llm: MockLlm::with_script(script),
            child: None,
        }
    }

    pub fn config(&self, yaml: &str) {
        self.env.config(yaml);
    }

    /// Starts `hermes gateway run` and waits until it polls.
    pub fn start(&mut self) {
        assert!(self.child.is_none(), "already running");
        let polls = self.tg.get_updates_count();
        let child = self
            .env
            .spawnable(&self.llm.base_url(), &["gateway", "run"])
            .env("TELEGRAM_BOT_TOKEN", TOKEN)
            .env("TELEGRAM_ALLOWED_USERS", allowed_users())
            .env("TELEGRAM_API_BASE_URL", self.tg.base_url())
            .env("TELEGRAM_POLL_TIMEOUT", "1")
            .env("HERMES_RETRY_BASE_DELAY_MS", "5")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        self.child = Some(child);
        self.tg.wait_polls(polls, 1, Duration::from_secs(20));
    }

    /// Installs the repository's example hook (`hooks/event-logger`) into the test home.
    pub fn install_event_logger(&self) {
        let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("hooks/event-logger");
        let dest = self.env.home_path().join("hooks/event-logger");
        std::fs::create_dir_all(&dest).unwrap();
        for f in ["HOOK.yaml", "handler"] {
            std::fs::copy(example.join(f), dest.join(f)).unwrap();
        }
    }

    /// Events the example hook logged so far: (event, context).
    pub fn hook_events(&self) -> Vec<(String, serde_json::Value)> {
        let log = self.env.home_path().join("logs/hook-events.jsonl");
        std::fs::read_to_string(log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| Some((v["event"].as_str()?.to_string(), v["context"].clone())))
            .collect()
    }

    /// Starts `hermes gateway run` serving only the API server on a free port; returns its
    /// base URL (`http://127.0.0.1:PORT`) once it accepts connections.
    pub fn start_api(&mut self, key: &str) -> String {
        self.start_api_with(key, |_| {})
    }

    /// [`Gw::start_api`] with a last say on the command (e.g. resource limits).
    ///
    /// The gateway binds port 0 and the test reads the port it got from the recorded status.
    /// Picking a port here (bind, read, drop) and handing it over raced with every other server
    /// in the test binary: another test's fake Telegram could take the port first, the wait
    /// below then connected to it, and `GET /v1/models` got that server's 405.
    pub fn start_api_with(
        &mut self,
        key: &str,
        configure: impl FnOnce(&mut std::process::Command),
    ) -> String {
        assert!(self.child.is_none(), "already running");
        let mut cmd = self
            .env
            .spawnable(&self.llm.base_url(), &["gateway", "run"]);
        cmd.env("API_SERVER_KEY", key)
            .env("API_SERVER_PORT", "0")
            .env("HERMES_RETRY_BASE_DELAY_MS", "5")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        configure(&mut cmd);
        let child = cmd.spawn().unwrap();
        let pid = child.id().to_string();
        self.child = Some(child);
        let start = Instant::now();
        loop {
            assert!(self.running(), "the gateway exited before it listened");
            if let Some(addr) = self.api_listening(&pid) {
                return format!("http://{addr}");
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "API server never listened"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The address the API server of process `pid` recorded as listening on, if it has yet.
    fn api_listening(&self, pid: &str) -> Option<String> {
        let path = self.env.home_path().join("state.db");
        if !path.exists() {
            return None;
        }
        let db =
            rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .ok()?;
        let state = |key: &str| -> Option<String> {
            db.query_row(
                "SELECT value FROM gateway_state WHERE key = ?1",
                [key],
                |r| r.get(0),
            )
            .ok()
        };
        if state("api_server.pid")? != pid {
            return None;
        }
        Some(
            state("api_server.status")?
                .strip_prefix("listening on ")?
                .to_string(),
        )
    }

    fn signal(&mut self, sig: i32) -> ExitStatus {
        let mut child = self.child.take().expect("running");
        unsafe {
            libc::kill(child.id() as i32, sig);
        }
        let start = Instant::now();
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            if start.elapsed() > Duration::from_secs(15) {
                let _ = child.kill();
                panic!("the gateway did not stop within 15 s of signal {sig}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGTERM; returns the exit status (a clean stop is success).
    pub fn stop(&mut self) -> ExitStatus {
        self.signal(libc::SIGTERM)
    }

    /// True while the gateway process runs.
    pub fn running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| c.try_wait().ok().flatten().is_none())
    }

    pub fn kill(&mut self) {
        self.signal(libc::SIGKILL);
    }

    /// Lets the gateway poll `n` more times (so anything it would do with what it got is done).
    pub fn settle(&self, n: usize) {
        let polls = self.tg.get_updates_count();
        self.tg.wait_polls(polls, n, Duration::from_secs(20));
    }

    /// Status of the gateway_outbound rows, oldest first.
    pub fn ledger(&self) -> Vec<String> {
        let db = self.env.db();
        let mut stmt = match db.prepare("SELECT status FROM gateway_outbound ORDER BY id") {
            Ok(s) => s,
            Err(_) => return Vec::new(),
        };
        stmt.query_map([], |r| r.get(0))
            .unwrap()
            .map(|r| r.unwrap())
            .collect()
    }

    pub fn wait_ledger(&self, pred: impl Fn(&[String]) -> bool) -> Vec<String> {
        let start = Instant::now();
        loop {
            let l = self.ledger();
            if pred(&l) {
                return l;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "ledger stuck at {l:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Gw {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
