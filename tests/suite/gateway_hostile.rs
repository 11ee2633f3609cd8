//! The API server against a hostile network, through the real binary: a short key is refused at
//! start; past `max_concurrent` turns a client gets 429 with `Retry-After`; half-sent requests
//! (more than the server has file descriptors) neither keep a real client out for more than
//! 15 s nor take the gateway down; a model that never answers ends the turn at the configured
//! timeout.

use std::os::unix::process::CommandExt;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::AsyncWriteExt;

use super::gateway_support::Gw;
use crate::support::mock_llm::Reply;

const KEY: &str = "sk-test-gateway-key-0123";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn http() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(Duration::from_secs(15))
        .build()
        .unwrap()
}

/// `GET /v1/models`: the status, or the error text when no answer came within 15 s.
async fn models(base: &str) -> Result<u16, String> {
    http()
        .get(format!("{base}/v1/models"))
        .bearer_auth(KEY)
        .send()
        .await
        .map(|r| r.status().as_u16())
        .map_err(|e| format!("{e:?}"))
}

/// Opens `n` connections from `source` that send half a request head and then nothing.
async fn half_sent(base: &str, source: &str, n: usize) -> Vec<tokio::net::TcpStream> {
    let addr: std::net::SocketAddr = base.trim_start_matches("http://").parse().unwrap();
    let mut held = Vec::new();
    for _ in 0..n {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(format!("{source}:0").parse().unwrap()).unwrap();
        let Ok(Ok(mut stream)) =
            tokio::time::timeout(Duration::from_secs(2), socket.connect(addr)).await
        else {
            // The backlog is full: the server is holding as many as it will; enough.
            break;
        };
        let _ = stream
            .write_all(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Le")
            .await;
        held.push(stream);
    }
    held
}

/// Lets this test process hold as many sockets as its hard limit allows; returns the limit.
fn raise_fd_limit() -> usize {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
        lim.rlim_cur = lim.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
    }
    lim.rlim_cur as usize
}

#[test]
fn a_short_key_is_refused_at_start() {
    let gw = Gw::new([]);
    let out = gw
        .env
        .spawnable(&gw.llm.base_url(), &["gateway", "run"])
        .env("API_SERVER_KEY", "short-key")
        .env("API_SERVER_HOST", "0.0.0.0")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("API_SERVER_KEY is too short") && err.contains("at least 16"),
        "{err}"
    );
    assert!(
        !err.contains("short-key"),
        "the key itself is not echoed: {err}"
    );
}

#[test]
fn past_max_concurrent_turns_a_client_gets_429_with_retry_after() {
    let mut gw = Gw::new([
        Reply::text("slow answer").delay(Duration::from_secs(3)),
        Reply::text("after the rush"),
    ]);
    gw.config("gateway:\n  api_server:\n    max_concurrent: 1\n");
    let base = gw.start_api(KEY);
    let rt = runtime();
    rt.block_on(async {
        let url = format!("{base}/v1/chat/completions");
        let body = json!({"messages": [{"role": "user", "content": "hi"}]});
        let first = tokio::spawn(http().post(&url).bearer_auth(KEY).json(&body).send());
        let start = Instant::now();
        while gw.llm.request_count() == 0 {
            assert!(start.elapsed() < Duration::from_secs(20));
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let second = http()
            .post(&url)
            .bearer_auth(KEY)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(second.status().as_u16(), 429);
        let retry = second.headers().get("retry-after").cloned();
        assert!(
            retry.is_some_and(|v| v.to_str().unwrap().parse::<u64>().unwrap() > 0),
            "Retry-After in seconds"
        );
        let text = second.text().await.unwrap();
        assert!(text.contains("max_concurrent"), "{text}");
        let first = first.await.unwrap().unwrap();
        assert_eq!(first.status().as_u16(), 200);
        // The slot is free again.
        let third = http()
            .post(&url)
            .bearer_auth(KEY)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(third.status().as_u16(), 200);
    });
    assert_eq!(
        gw.llm.request_count(),
        2,
        "the refused request never reached the model"
    );
}

#[test]
fn one_address_cannot_crowd_out_another() {
    let mut gw = Gw::new([]);
    gw.config("gateway:\n  api_server:\n    max_connections_per_ip: 32\n");
    let base = gw.start_api(KEY);
    let rt = runtime();
    rt.block_on(async {
        let n = (raise_fd_limit() / 2).min(400);
        let held = half_sent(&base, "127.0.0.2", n).await;
        assert!(
            held.len() > 32,
            "the attack opened {} connections",
            held.len()
        );
        let start = Instant::now();
        assert_eq!(models(&base).await, Ok(200));
        assert!(start.elapsed() < Duration::from_secs(15));
        drop(held);
    });
    assert!(gw.running());
}

#[test]
fn more_half_sent_requests_than_file_descriptors_do_not_keep_a_client_out() {
    let mut gw = Gw::new([]);
    // The per-address cap is above the process's descriptor limit, so the attack really runs
    // the server out of descriptors; half-sent heads are dropped after 2 s.
    gw.config(
        "gateway:\n  api_server:\n    header_timeout: 2\n    max_connections_per_ip: 5000\n    max_connections: 5000\n",
    );
    const SERVER_FDS: u64 = 256;
    let base = gw.start_api_with(KEY, |cmd| unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: SERVER_FDS,
                rlim_max: SERVER_FDS,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    });
    let rt = runtime();
    rt.block_on(async {
        let n = (raise_fd_limit().saturating_sub(64)).min(3 * SERVER_FDS as usize);
        let held = half_sent(&base, "127.0.0.2", n).await;
        assert!(
            held.len() > SERVER_FDS as usize,
            "the attack opened only {} connections",
            held.len()
        );
        let start = Instant::now();
        let answer = models(&base).await;
        let waited = start.elapsed();
        assert_eq!(answer, Ok(200), "a real client is served");
        assert!(waited < Duration::from_secs(15), "served after {waited:?}");
        eprintln!(
            "real client served after {waited:?} with {} half-sent requests held",
            held.len()
        );
        drop(held);
        // Still up and answering once the attack is over.
        assert_eq!(models(&base).await, Ok(200));
    });
    assert!(
        gw.running(),
        "the gateway survived running out of descriptors"
    );
    let log = std::fs::read_to_string(gw.env.home_path().join("logs/agent.log")).unwrap();
    assert!(
        log.contains("cannot accept a connection; backing off"),
        "the attack did exhaust the descriptors"
    );
    let status = gw.stop();
    assert!(status.success(), "{status:?}");
}

#[test]
fn a_model_that_never_answers_ends_the_api_turn_at_the_configured_timeout() {
    let mut gw = Gw::new([Reply::text("too late").delay(Duration::from_secs(3600))]);
    gw.config("agent:\n  request_timeout: 1\n  api_max_retries: 0\n");
    let base = gw.start_api(KEY);
    let rt = runtime();
    let (status, text) = rt.block_on(async {
        let r = http()
            .post(format!("{base}/v1/chat/completions"))
            .bearer_auth(KEY)
            .json(&json!({"messages": [{"role": "user", "content": "hi"}]}))
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    });
    assert_eq!(status, 502, "{text}");
    assert!(text.contains("request timeout"), "{text}");
}
