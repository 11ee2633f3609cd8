//! An editor's side of `hermes acp` for the tests: JSON-RPC lines over the child's stdin/stdout.
//! Every stdout line must be one JSON-RPC frame; `session/update` notifications are collected,
//! and the agent's own requests (permission questions, `fs/*`) are answered by a callback.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::harness::TestEnv;
use super::mock_llm::MockLlm;

pub const WAIT: Duration = Duration::from_secs(30);

/// What the agent sent while one request of the editor ran.
#[derive(Debug, Default)]
pub struct Exchange {
    /// The response to the editor's request.
    pub response: Value,
    /// `session/update` payloads, in order.
    pub updates: Vec<Value>,
    /// The params of every `session/request_permission` the agent sent.
    pub asked: Vec<Value>,
}

/// An editor connected to a running `hermes acp`.
pub struct Editor {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
    /// Every message the agent sent, in order.
    pub seen: Vec<Value>,
}

impl Editor {
    /// `hermes acp` on the mock model.
    pub fn start(env: &TestEnv, mock: &MockLlm) -> Editor {
        Self::spawn(env.spawnable(&mock.base_url(), &["acp"]))
    }

    /// `cmd` (a `hermes … acp` command with piped stdout) as the agent.
    pub fn spawn(mut cmd: std::process::Command) -> Editor {
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Editor {
            child,
            stdin: Some(stdin),
            lines,
            next_id: 0,
            seen: Vec::new(),
        }
    }

    pub fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// Answers the agent's request `req` with `result`.
    pub fn reply(&mut self, req: &Value, result: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": req["id"], "result": result}));
    }

    /// Answers a permission question by picking `option`.
    pub fn choose(&mut self, req: &Value, option: &str) {
        self.reply(
            req,
            json!({"outcome": {"outcome": "selected", "optionId": option}}),
        );
    }

    /// The next message from the agent; every stdout line must be one JSON-RPC frame.
    pub fn next(&mut self, deadline: Instant) -> Value {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = match self.lines.recv_timeout(left) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => {
                panic!("no message from hermes acp; seen {:#?}", self.seen)
            }
            Err(RecvTimeoutError::Disconnected) => {
                panic!("hermes acp closed stdout; seen {:#?}", self.seen)
            }
        };
        let value: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON-RPC ({e}): {line:?}"));
        assert_eq!(value["jsonrpc"], "2.0", "{line}");
        self.seen.push(value.clone());
        value
    }

    pub fn request_id(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// Sends a request and returns its response, answering the agent's own requests with
    /// `on_request` and collecting `session/update` notifications into `updates`.
    pub fn call_with(
        &mut self,
        method: &str,
        params: Value,
        updates: &mut Vec<Value>,
        on_request: &mut dyn FnMut(&mut Editor, &Value),
    ) -> Value {
        let id = self.request_id(method, params);
        self.wait_response(id, updates, on_request)
    }

    pub fn wait_response(
        &mut self,
        id: u64,
        updates: &mut Vec<Value>,
        on_request: &mut dyn FnMut(&mut Editor, &Value),
    ) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let msg = self.next(deadline);
            if msg.get("method").is_some() && msg.get("id").is_some() {
                on_request(self, &msg);
            } else if msg["method"] == "session/update" {
                updates.push(msg["params"]["update"].clone());
            } else if msg["id"] == json!(id) {
                return msg;
            }
        }
    }

    /// A request during which the agent must not ask the editor anything.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let mut updates = Vec::new();
        self.call_with(method, params, &mut updates, &mut |_, req| {
            panic!("unexpected request from the agent: {req}")
        })
    }

    /// `session/prompt` with `text`; each permission question is answered with what `answer`
    /// returns for it (its 0-based number and params): an option id, or `None` to leave it
    /// unanswered. Any other request from the agent fails the test.
    pub fn prompt_answering(
        &mut self,
        session: &str,
        text: &str,
        mut answer: impl FnMut(usize, &Value) -> Option<&'static str>,
    ) -> Exchange {
        let mut asked = Vec::new();
        let mut updates = Vec::new();
        let response = self.call_with(
            "session/prompt",
            prompt(session, text),
            &mut updates,
            &mut |ed, req| {
                assert_eq!(req["method"], "session/request_permission", "{req}");
                if let Some(option) = answer(asked.len(), &req["params"]) {
                    ed.choose(req, option);
                }
                asked.push(req["params"].clone());
            },
        );
        Exchange {
            response,
            updates,
            asked,
        }
    }

    /// `initialize` with the editor's `clientCapabilities`.
    pub fn initialize_with(&mut self, capabilities: Value) -> Value {
        let r = self.call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": capabilities,
                   "clientInfo": {"name": "test-editor", "version": "1"}}),
        );
        assert!(r.get("error").is_none(), "{r}");
        r["result"].clone()
    }

    pub fn initialize(&mut self) -> Value {
        self.initialize_with(json!({}))
    }

    /// `session/new` in `cwd` without MCP servers; returns the session id.
    pub fn new_session(&mut self, cwd: &std::path::Path) -> String {
        let r = self.call("session/new", json!({"cwd": cwd, "mcpServers": []}));
        assert!(r.get("error").is_none(), "{r}");
        r["result"]["sessionId"].as_str().unwrap().to_string()
    }

    /// Closes stdin and expects a clean exit.
    pub fn finish(mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + WAIT;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                assert!(status.success(), "hermes acp exited with {status}");
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        panic!("hermes acp did not exit after stdin closed");
    }
}

impl Drop for Editor {
    fn drop(&mut self) {
        // A failed test must not leave the agent running.
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `session/prompt` params with one text block.
pub fn prompt(session: &str, text: &str) -> Value {
    json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]})
}

/// The `sessionUpdate` kind of each update.
pub fn kinds(updates: &[Value]) -> Vec<String> {
    updates
        .iter()
        .map(|u| u["sessionUpdate"].as_str().unwrap_or("?").to_string())
        .collect()
}

/// The agent's streamed answer text.
pub fn agent_text(updates: &[Value]) -> String {
    updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}
