//! Containment of MCP, tried through the real binary as an attacker would: a stdio server hermes
//! spawns sees the terminal's scrubbed environment (a secret only when its entry lists it), what
//! it returns is redacted before it reaches the model or state.db, and it ends with what it
//! started in the background whenever it is stopped — hermes SIGKILLed or ending normally, a
//! reload, an idle stop. And `hermes mcp serve` hands no secret out of state.db: a key a user
//! pasted into a chat (user messages are stored as typed) is hidden from `conversations_search`
//! and `messages_read`.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::harness::{TestEnv, stderr};
use crate::support::mcp_servers::stdio_server;
use crate::support::mock_llm::{MockLlm, Reply};

const PROVIDER_KEY: &str = "plain-openai-value-Zq81xW";
const GITHUB_TOKEN: &str = "plain-github-value-Kp27vR";

/// A `mcp_servers:` entry running the test server through `sh`, which first writes its
/// environment to `env.txt`, starts `sleep 30; touch marker` in the background (its pid in
/// `bg.pid`) and writes its own pid (the server's, after `exec`) to `server.pid`.
fn config(dir: &Path) -> String {
    let d = dir.display();
    let script = format!(
        "env > '{d}/env.txt'; (sleep 30; touch '{d}/marker') & echo $! > '{d}/bg.pid'; \
         echo $$ > '{d}/server.pid'; exec '{}'",
        stdio_server().display()
    );
    format!(
        // Discovery waits for the server however loaded the machine is: the tools must be known.
        "mcp_discovery_timeout: 60\nmcp_servers:\n  t:\n    command: sh\n    args: [\"-c\", {}]\n    env:\n      LISTED_TOKEN: listed-value-123\n",
        serde_json::to_string(&script).unwrap()
    )
}

/// Whether `pid` is gone (or a zombie nobody reaped yet: it runs no more).
fn is_dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
    }
}

fn read_pid(path: &Path) -> Option<u32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Waits (bounded) until the server `server` and its background job `background` are gone
/// (`when`: "with hermes", …), and checks the job never finished its work.
fn wait_gone(dir: &Path, server: u32, background: u32, when: &str) {
    let limit = Duration::from_secs(15);
    wait_for(&format!("the MCP server to end {when}"), limit, || {
        is_dead(server)
    });
    wait_for(
        &format!("what the MCP server started to end {when}"),
        limit,
        || is_dead(background),
    );
    assert!(!dir.join("marker").exists());
}

/// Waits (bounded) until `done` holds.
fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn an_mcp_server_sees_no_unlisted_secret_and_its_results_are_redacted() {
    let env = TestEnv::new();
    let dir = env.cwd.path().to_path_buf();
    env.config(&config(&dir));
    let mock = MockLlm::with_script([
        Reply::tool_call(
            "c1",
            "mcp__t__echo",
            json!({"text": format!("the key is {PROVIDER_KEY} and {GITHUB_TOKEN}")}),
        ),
        Reply::text("done"),
    ]);
    let out = env
        .cmd(&mock.base_url())
        .env("OPENAI_API_KEY", PROVIDER_KEY)
        .env("GITHUB_TOKEN", GITHUB_TOKEN)
        .args(["-z", "echo it"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));

    let seen = std::fs::read_to_string(dir.join("env.txt")).unwrap();
    for secret in [PROVIDER_KEY, GITHUB_TOKEN] {
        assert!(!seen.contains(secret), "the server saw {secret}:\n{seen}");
    }
    assert!(seen.contains("LISTED_TOKEN=listed-value-123"), "{seen}");
    assert!(seen.contains("PATH="), "{seen}");

    // The server echoed both secrets: neither reaches the model nor state.db.
    let requests = mock.requests();
    assert!(requests.len() >= 2, "{requests:?}");
    let fed_back = requests[1].to_string();
    assert!(fed_back.contains("echo: the key is"), "{fed_back}");
    let rows = format!("{:?}", env.rows());
    for secret in [PROVIDER_KEY, GITHUB_TOKEN] {
        assert!(!fed_back.contains(secret), "sent to the model: {fed_back}");
        assert!(!rows.contains(secret), "in state.db: {rows}");
    }
}

#[test]
fn an_mcp_server_and_what_it_started_die_when_hermes_is_killed() {
    let env = TestEnv::new();
    let dir = env.cwd.path().to_path_buf();
    env.config(&config(&dir));
    let mock = MockLlm::with_script([
        Reply::tool_call("c1", "mcp__t__sleep", json!({"ms": 30_000})),
        Reply::text("done"),
    ]);
    let mut hermes = env
        .spawnable(&mock.base_url(), &["-z", "wait"])
        .spawn()
        .unwrap();
    wait_for(
        "the server and the first model call",
        Duration::from_secs(30),
        || {
            read_pid(&dir.join("bg.pid")).is_some()
                && read_pid(&dir.join("server.pid")).is_some()
                && !mock.requests().is_empty()
        },
    );
    let server = read_pid(&dir.join("server.pid")).unwrap();
    let background = read_pid(&dir.join("bg.pid")).unwrap();
    assert!(!is_dead(server) && !is_dead(background));
    // Killed in the middle of the 30 s tool call, not after a normal end (whose clean-up would
    // prove nothing here).
    assert!(
        hermes.try_wait().unwrap().is_none(),
        "hermes ended before it was killed"
    );

    hermes.kill().unwrap(); // SIGKILL: no clean-up code of hermes runs.
    let _ = hermes.wait();
    wait_gone(&dir, server, background, "when hermes is killed");
}

#[test]
fn what_an_mcp_server_started_dies_when_hermes_ends_normally() {
    let env = TestEnv::new();
    let dir = env.cwd.path().to_path_buf();
    env.config(&config(&dir));
    let mock = MockLlm::with_script([
        Reply::tool_call("c1", "mcp__t__echo", json!({"text": "up"})),
        Reply::text("done"),
    ]);
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "echo it"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let server = read_pid(&dir.join("server.pid")).expect("the server ran");
    let background = read_pid(&dir.join("bg.pid")).expect("the server started its sleep");
    // A normal end closes the server's stdin and it exits; what it left behind goes with it.
    wait_gone(&dir, server, background, "when hermes ends");
}

#[test]
fn a_reload_stops_the_old_server_with_what_it_started() {
    use std::io::Write;
    let env = TestEnv::new();
    let dir = env.cwd.path().to_path_buf();
    env.config(&config(&dir));
    let mock = MockLlm::with_script([Reply::text("after reload")]);
    let mut hermes = env.spawn_repl(&mock.base_url(), &[]);
    wait_for("the first server", Duration::from_secs(30), || {
        read_pid(&dir.join("bg.pid")).is_some() && read_pid(&dir.join("server.pid")).is_some()
    });
    let first = read_pid(&dir.join("server.pid")).unwrap();
    let first_bg = read_pid(&dir.join("bg.pid")).unwrap();
    let mut stdin = hermes.stdin.take().unwrap();
    stdin.write_all(b"/reload-mcp\n").unwrap();
    stdin.flush().unwrap();
    // hermes keeps running: the old server and its background job are stopped all the same.
    wait_gone(&dir, first, first_bg, "on a reload");
    assert!(
        hermes.try_wait().unwrap().is_none(),
        "hermes ended during the reload"
    );
    wait_for("the new server", Duration::from_secs(30), || {
        read_pid(&dir.join("server.pid")).is_some_and(|p| p != first)
    });
    let second = read_pid(&dir.join("server.pid")).unwrap();
    let second_bg = read_pid(&dir.join("bg.pid")).unwrap();
    stdin.write_all(b"hi\n/quit\n").unwrap();
    drop(stdin);
    let out = hermes.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    wait_gone(&dir, second, second_bg, "when hermes ends");
}

#[test]
fn an_idle_stop_stops_what_the_server_started() {
    use std::io::Write;
    let env = TestEnv::new();
    let dir = env.cwd.path().to_path_buf();
    env.config(&(config(&dir) + "    idle_timeout_seconds: 1\n"));
    let mock = MockLlm::with_script([]);
    let mut hermes = env
        .spawnable(&mock.base_url(), &[])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the server", Duration::from_secs(30), || {
        read_pid(&dir.join("bg.pid")).is_some() && read_pid(&dir.join("server.pid")).is_some()
    });
    let server = read_pid(&dir.join("server.pid")).unwrap();
    let background = read_pid(&dir.join("bg.pid")).unwrap();
    // Nothing calls it: past its idle timeout it is stopped while hermes runs on.
    wait_gone(&dir, server, background, "at its idle timeout");
    assert!(hermes.try_wait().unwrap().is_none(), "hermes ended");
    let mut stdin = hermes.stdin.take().unwrap();
    stdin.write_all(b"/quit\n").unwrap();
    drop(stdin);
    let out = hermes.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_serve_hides_secrets_stored_in_conversations() {
    use hermes::llm::Message;
    use hermes::sessions::{NewSession, SessionStore};
    use rmcp::ServiceExt;
    use rmcp::model::{CallToolRequestParams, ClientConfig};

    let env = TestEnv::new();
    std::fs::write(
        env.home_path().join(".env"),
        format!("OPENAI_API_KEY={PROVIDER_KEY}\n"),
    )
    .unwrap();
    let store = SessionStore::open(&env.home_path().join("state.db")).unwrap();
    store
        .create_session(&NewSession {
            id: "tg1".into(),
            source: "telegram".into(),
            ..NewSession::default()
        })
        .unwrap();
    let pasted = "zeppelin: here is my key ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    for text in [
        pasted.to_string(),
        format!("zeppelin: and the openai one {PROVIDER_KEY}"),
    ] {
        store.append_message("tg1", &Message::user(&text)).unwrap();
    }
    store
        .gateway_set_route("agent:main:telegram:dm:42", "tg1")
        .unwrap();

    let mut cmd = tokio::process::Command::from(env.bare_process());
    cmd.args(["mcp", "serve"]).kill_on_drop(true);
    let transport = rmcp::transport::TokioChildProcess::new(cmd).unwrap();
    let client = ClientConfig::default().serve(transport).await.unwrap();
    let mut answers = Vec::new();
    for (tool, args) in [
        ("conversations_search", json!({"query": "zeppelin"})),
        (
            "messages_read",
            json!({"session_key": "agent:main:telegram:dm:42"}),
        ),
        ("events_poll", json!({})),
    ] {
        let args = args.as_object().cloned().unwrap_or_default();
        let result = client
            .call_tool(CallToolRequestParams::new(tool).with_arguments(args))
            .await
            .unwrap();
        answers.push((tool, serde_json::to_string(&result).unwrap()));
    }
    let _ = client.cancel().await;
    for (tool, answer) in answers {
        assert!(
            answer.contains("zeppelin"),
            "{tool} found nothing: {answer}"
        );
        assert!(answer.contains("[REDACTED]"), "{tool}: {answer}");
        for secret in [PROVIDER_KEY, "ghp_abcdefghijklmnop"] {
            assert!(
                !answer.contains(secret),
                "{tool} handed out {secret}: {answer}"
            );
        }
        // The session key other tools take is not mistaken for a `*_key` secret.
        if tool == "messages_read" {
            assert!(answer.contains("agent:main:telegram:dm:42"), "{answer}");
        }
    }
}
