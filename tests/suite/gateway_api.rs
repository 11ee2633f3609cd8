//! The OpenAI-compatible API server: JSON and SSE answers, bearer auth, conversations as
//! sessions, and the official `openai` Python client (when installed, as in CI).

use serde_json::{Value, json};

use super::gateway_support::Gw;
use crate::support::mock_llm::Reply;

const KEY: &str = "sk-test-gateway-key";

fn http() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

fn post(base: &str, key: &str, body: Value) -> (u16, String) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let r = http()
            .post(format!("{base}/v1/chat/completions"))
            .bearer_auth(key)
            .json(&body)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    })
}

fn get(base: &str, key: &str) -> (u16, String) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let r = http()
            .get(format!("{base}/v1/models"))
            .bearer_auth(key)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    })
}

#[test]
fn answers_json_and_sse_keeps_the_conversation_and_rejects_wrong_keys() {
    let mut gw = Gw::new([
        Reply::text("hello from api"),
        Reply::text("streamed answer"),
    ]);
    let base = gw.start_api(KEY);

    let (status, body) = get(&base, KEY);
    assert_eq!(status, 200);
    assert!(body.contains("hermes-agent"), "{body}");
    assert_eq!(get(&base, "wrong").0, 401);
    let (status, body) = post(
        &base,
        "wrong",
        json!({"messages": [{"role": "user", "content": "x"}]}),
    );
    assert_eq!(status, 401, "{body}");
    assert_eq!(gw.llm.request_count(), 0);

    let (status, body) = post(
        &base,
        KEY,
        json!({"model": "hermes-agent", "user": "alice", "messages": [{"role": "user", "content": "hi"}]}),
    );
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["choices"][0]["message"]["content"], "hello from api");

    let (status, body) = post(
        &base,
        KEY,
        json!({"model": "hermes-agent", "user": "alice", "stream": true,
               "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello from api"},
                            {"role": "user", "content": "again"}]}),
    );
    assert_eq!(status, 200, "{body}");
    let mut text = String::new();
    let mut finished = false;
    for line in body.lines().filter_map(|l| l.strip_prefix("data: ")) {
        if line == "[DONE]" {
            finished = true;
            continue;
        }
        let chunk: Value = serde_json::from_str(line).unwrap();
        assert_eq!(chunk["object"], "chat.completion.chunk");
        if let Some(c) = chunk["choices"][0]["delta"]["content"].as_str() {
            text.push_str(c);
        }
    }
    assert!(finished, "{body}");
    assert_eq!(text, "streamed answer");
    // Same `user` → same session: the model saw the first exchange in the history.
    let second = &gw.llm.requests()[1];
    assert!(second.to_string().contains("hello from api"), "{second}");

    // An API-server-only gateway is running, and `gateway status` says so.
    let status = gw
        .env
        .bare_cmd()
        .args(["gateway", "status"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(!text.contains("has not run yet"), "{text}");
    // The gateway took a free port (`API_SERVER_PORT=0`); the status names the one it bound,
    // the one this test has been talking to.
    let bound = format!(
        "api_server: listening on {}\n",
        base.trim_start_matches("http://")
    );
    assert!(text.contains(&bound), "{bound:?} in {text}");
    assert!(!text.contains("process not running"), "{text}");
    assert!(gw.stop().success());
    let status = gw
        .env
        .bare_cmd()
        .args(["gateway", "status"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(text.contains("api_server: stopped"), "{text}");
}

#[test]
fn official_openai_python_client_works_in_both_modes() {
    // scripts/test installs `openai` into the venv it names in HERMES_PY_VENV.
    let python = std::env::var_os("HERMES_PY_VENV")
        .map(|v| std::path::Path::new(&v).join("bin/python"))
        .filter(|p| p.exists())
        .unwrap_or_else(|| "python3".into());
    let has_client = std::process::Command::new(&python)
        .args(["-c", "import openai"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_client {
        crate::support::cross_check::cannot_run(
            "official_openai_python_client_works_in_both_modes",
            "the `openai` Python package is not installed",
        );
        return;
    }
    let mut gw = Gw::new([Reply::text("plain answer"), Reply::text("streamed answer")]);
    let base = gw.start_api(KEY);
    let script = r#"
import sys, openai
base, key = sys.argv[1], sys.argv[2]
c = openai.OpenAI(base_url=base + "/v1", api_key=key)
r = c.chat.completions.create(model="hermes-agent", user="py", messages=[{"role": "user", "content": "hi"}])
print("PLAIN:" + r.choices[0].message.content)
s = c.chat.completions.create(model="hermes-agent", user="py", stream=True, messages=[{"role": "user", "content": "more"}])
print("STREAM:" + "".join((ch.choices[0].delta.content or "") for ch in s if ch.choices))
try:
    openai.OpenAI(base_url=base + "/v1", api_key="wrong", max_retries=0).models.list()
    print("AUTH:accepted")
except openai.AuthenticationError:
    print("AUTH:401")
"#;
    let out = std::process::Command::new(&python)
        .args(["-c", script, &base, KEY])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("PLAIN:plain answer"), "{stdout}");
    assert!(stdout.contains("STREAM:streamed answer"), "{stdout}");
    assert!(stdout.contains("AUTH:401"), "{stdout}");
}
