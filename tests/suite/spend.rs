//! Spend ledger and caps through the real binary: costs from the configured price table land in
//! state.db, a session cap stops the turn before the call that would pass it, insights report it.

use serde_json::{Value, json};

use crate::support::harness::{TestEnv, stderr, stdout};
use crate::support::mock_llm::{MockLlm, Reply};

const PRICES: &str =
    "budget:\n  session_usd: 0.01\n  prices:\n    test-model: {input: 2.0, output: 10.0}\n";

#[test]
fn session_cap_stops_before_the_call_that_would_pass_it() {
    let env = TestEnv::new();
    env.write("a.txt", "a\n");
    env.config(PRICES);
    // Each call costs 2000 × $2/M + 100 × $10/M = $0.005. The cap check also projects the next
    // call from the request's size: only the file tools are offered, so that projection
    // (≈ $0.002) stays well below $0.005 however the other tools' schemas grow.
    let mock = MockLlm::with_script((0..5).map(|i| {
        Reply::tool_call(&format!("c{i}"), "read_file", json!({"path": "a.txt"}))
            .with_usage(2000, 100, 0)
    }));
    // Only the file tools: the projection counts the request's size, and this test must not
    // depend on how many tools the default toolset offers.
    let out = env
        .cmd(&mock.base_url())
        .args(["-t", "file", "-z", "go"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("budget.session_usd") && err.contains("$0.01"),
        "{err}"
    );
    assert_eq!(mock.request_count(), 2, "the third call would pass the cap");
    let db = env.db();
    let (cost, status): (f64, String) = db
        .query_row(
            "SELECT estimated_cost_usd, cost_status FROM sessions",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert!((cost - 0.01).abs() < 1e-9, "{cost}");
    assert_eq!(status, "estimated");
    let per_model: f64 = db
        .query_row(
            "SELECT estimated_cost_usd FROM session_model_usage WHERE model = 'test-model'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!((per_model - 0.01).abs() < 1e-9, "{per_model}");

    let out = env
        .bare_cmd()
        .args(["insights", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let insights: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(insights["sessions"], 1);
    assert_eq!(insights["api_calls"], 2);
    assert!((insights["estimated_cost_usd"].as_f64().unwrap() - 0.01).abs() < 1e-9);
    assert_eq!(insights["by_model"][0]["model"], "test-model");
    assert_eq!(insights["top_tools"][0][0], "read_file");
}

#[test]
fn token_cap_applies_without_prices() {
    let env = TestEnv::new();
    env.config("budget:\n  session_tokens: 100\n");
    let mock = MockLlm::with_script([Reply::text("never")]);
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "hi"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("budget.session_tokens"),
        "{}",
        stderr(&out)
    );
    assert_eq!(mock.request_count(), 0);
}
