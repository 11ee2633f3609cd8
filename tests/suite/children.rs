//! Child agents and the process state they share, through the public library API and the real
//! binary: two `Services` side by side, the child API's terminal results, and `delegate_task`.

use std::sync::Arc;
use std::time::Duration;

use hermes::agent::Services;
use hermes::config::{Config, EnvVars, HermesHome};
use hermes::sessions::SessionStore;

fn services_in(home: &std::path::Path) -> Arc<Services> {
    let config = Config::defaults(HermesHome::new(home), EnvVars::default());
    let store = SessionStore::open(&home.join("state.db")).unwrap();
    Arc::new(Services::new(Arc::new(config), Arc::new(store)))
}

fn write_skill(home: &std::path::Path, name: &str) {
    let dir = home.join("skills").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: the {name} skill\n---\nbody\n"),
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_services_side_by_side_do_not_interfere() {
    let (home_a, home_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_skill(home_a.path(), "alpha");
    write_skill(home_b.path(), "beta");
    std::fs::write(
        home_a.path().join("auth.json"),
        r#"{"credential_pool":{"custom":[{"access_token":"k-a","label":"a"}]}}"#,
    )
    .unwrap();
    let (a, b) = (services_in(home_a.path()), services_in(home_b.path()));

    // Skill stores (and their parse caches) are per Services.
    let names = |s: &Services| -> Vec<String> {
        s.skills
            .scan()
            .skills
            .iter()
            .map(|s| s.name.clone())
            .collect()
    };
    assert_eq!(names(&a), ["alpha"]);
    assert_eq!(names(&b), ["beta"]);
    // Changing a skill in one home is seen by that store only (cache keyed per store).
    write_skill(home_a.path(), "gamma");
    assert_eq!(names(&a), ["alpha", "gamma"]);
    assert_eq!(names(&b), ["beta"]);

    // auth.json is read per Services, once while it does not change.
    for _ in 0..3 {
        assert!(a.credentials.document().unwrap()["credential_pool"]["custom"].is_array());
        assert!(b.credentials.document().unwrap()["credential_pool"].is_null());
    }
    assert_eq!(a.credentials.reads(), 1);
    assert_eq!(b.credentials.reads(), 0);

    // A full review line in one process state leaves the other's free.
    let held: Vec<_> = std::iter::from_fn(|| a.reviews.admit()).collect();
    assert_eq!(held.len(), 8);
    assert!(a.reviews.admit().is_none());
    assert!(b.reviews.admit().is_some());
    drop(held);
    assert!(a.reviews.admit().is_some());

    // Each has its own tool registry and running-children set.
    assert!(a.tools.get("read_file").is_some() && b.tools.get("read_file").is_some());
    assert_eq!(a.children.running() + b.children.running(), 0);
    assert_eq!(a.children.wait_idle(Duration::from_millis(5)).await, 0);
}

mod delegation {
    use std::time::{Duration, Instant};

    use hermes::agent::{Agent, AgentOptions};
    use hermes::config::{Config, EnvVars, HermesHome};
    use serde_json::{Value, json};
    use tokio_util::sync::CancellationToken;

    use crate::support::harness::{TestEnv, stderr, stdout};
    use crate::support::mock_llm::{MockLlm, Reply};

    /// The parent's request that carries the `delegate_task` result, parsed.
    fn delegate_result(mock: &MockLlm) -> Value {
        let requests = mock.requests();
        let msg = requests
            .iter()
            .flat_map(|r| r["messages"].as_array().cloned().unwrap_or_default())
            .find(|m| {
                m["role"] == "tool" && m["content"].as_str().unwrap_or("").contains("task_index")
            })
            .expect("the parent received the delegate_task result");
        serde_json::from_str(msg["content"].as_str().unwrap()).unwrap()
    }

    /// Requests whose system prompt mentions `needle` (one child's calls).
    fn child_requests(mock: &MockLlm, needle: &str) -> Vec<crate::support::mock_llm::Recorded> {
        mock.recorded()
            .into_iter()
            .filter(|r| {
                r.body["messages"][0]["content"]
                    .as_str()
                    .unwrap_or("")
                    .contains(needle)
            })
            .collect()
    }

    fn tool_names(request: &Value) -> Vec<String> {
        request["tools"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    #[test]
    fn a_batch_of_three_two_complete_one_times_out_in_order_and_spend_rolls_up() {
        let env = TestEnv::new();
        env.config(
            "delegation:\n  child_timeout_seconds: 1.5\nbudget:\n  prices:\n    test-model: {input: 1.0, output: 2.0}\n",
        );
        let mock = MockLlm::with_script([
            Reply::tool_call(
                "d1",
                "delegate_task",
                json!({"tasks": [
                    {"goal": "alpha: list the files"},
                    {"goal": "beta: count the lines", "context": "only *.txt"},
                    {"goal": "gamma: never answered"},
                ]}),
            )
            .with_usage(100, 10, 0),
            Reply::text("All three reported.").with_usage(200, 20, 0),
        ]);
        let slow = Duration::from_millis(400);
        mock.push_for(
            "alpha: list the files",
            Reply::text("alpha found 3 files")
                .delay(slow)
                .with_usage(1000, 50, 0),
        );
        mock.push_for(
            "beta: count the lines",
            Reply::text("beta counted 42 lines")
                .delay(slow)
                .with_usage(2000, 60, 0),
        );
        mock.push_for(
            "gamma: never answered",
            Reply::text("too late").delay(Duration::from_secs(60)),
        );
        let started = Instant::now();
        let out = env
            .cmd(&mock.base_url())
            .args(["-z", "split this into three"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(stdout(&out), "All three reported.\n");
        assert!(started.elapsed() < Duration::from_secs(30));

        let result = delegate_result(&mock);
        let results = result["results"].as_array().unwrap();
        let statuses: Vec<&str> = results
            .iter()
            .map(|r| r["status"].as_str().unwrap())
            .collect();
        assert_eq!(statuses, ["completed", "completed", "timeout"], "{result}");
        assert!(
            results[0]["summary"]
                .as_str()
                .unwrap()
                .contains("alpha found 3 files")
        );
        assert!(
            results[1]["summary"]
                .as_str()
                .unwrap()
                .contains("beta counted 42 lines")
        );
        assert!(
            results[0]["summary"]
                .as_str()
                .unwrap()
                .starts_with("<child-report>")
        );
        assert!(result["note"].as_str().unwrap().contains("untrusted"));
        assert!(
            results[2]["error"].as_str().unwrap().contains("time limit"),
            "{result}"
        );
        assert!(results[2]["duration_seconds"].as_f64().unwrap() < 10.0);
        assert_eq!(results[1]["tokens"]["input"], 2000);

        // The two answering children ran at the same time: each one's request arrived before
        // the other's answer (400 ms later) could have come back.
        let (a, b) = (
            child_requests(&mock, "alpha: list the files"),
            child_requests(&mock, "beta: count the lines"),
        );
        assert_eq!((a.len(), b.len()), (1, 1));
        let gap = if a[0].at > b[0].at {
            a[0].at - b[0].at
        } else {
            b[0].at - a[0].at
        };
        assert!(gap < slow, "children did not overlap: {gap:?} apart");
        // Each child has a focused prompt of its own, with the context it was given, and no
        // blocked tools.
        let beta = &b[0].body;
        assert!(
            beta["messages"][0]["content"]
                .as_str()
                .unwrap()
                .contains("only *.txt")
        );
        let tools = tool_names(beta);
        assert!(tools.contains(&"read_file".to_string()), "{tools:?}");
        for blocked in ["delegate_task", "memory"] {
            assert!(!tools.contains(&blocked.to_string()), "{tools:?}");
        }

        // Each child is a `subagent` session under the parent, with its own usage.
        let db = env.db();
        let parent: String = db
            .query_row("SELECT id FROM sessions WHERE source = 'cli'", [], |r| {
                r.get(0)
            })
            .unwrap();
        let children: Vec<(String, i64)> = db
            .prepare("SELECT parent_session_id, input_tokens FROM sessions WHERE source = 'subagent' ORDER BY input_tokens")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(children.len(), 3, "{children:?}");
        assert!(children.iter().all(|(p, _)| *p == parent));
        assert_eq!(
            children.iter().map(|c| c.1).collect::<Vec<_>>(),
            [0, 1000, 2000]
        );

        // `hermes insights` shows each child and includes their spend in the totals.
        let out = env
            .bare_cmd()
            .args(["insights", "--json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let insights: Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(
            insights["children"].as_array().unwrap().len(),
            3,
            "{insights}"
        );
        assert_eq!(insights["input_tokens"], 100 + 200 + 1000 + 2000);
        let cost = insights["estimated_cost_usd"].as_f64().unwrap();
        let expected = (3300.0 * 1.0 + 140.0 * 2.0) / 1_000_000.0;
        assert!((cost - expected).abs() < 1e-9, "{cost} vs {expected}");
        let out = env.bare_cmd().args(["insights"]).output().unwrap();
        assert!(
            stdout(&out).contains("delegated children (3"),
            "{}",
            stdout(&out)
        );
    }

    #[test]
    fn a_child_calling_a_blocked_tool_gets_an_error_and_depth_is_limited() {
        let env = TestEnv::new();
        let mock = MockLlm::with_script([
            Reply::tool_call(
                "d1",
                "delegate_task",
                json!({"goal": "delta: try everything"}),
            ),
            Reply::text("Parent done."),
        ]);
        for reply in [
            Reply::tool_call(
                "c1",
                "memory",
                json!({"action": "add", "target": "user", "content": "x"}),
            ),
            Reply::tool_call("c2", "delegate_task", json!({"goal": "go deeper"})),
            Reply::text("delta could not do more"),
        ] {
            mock.push_for("delta: try everything", reply);
        }
        let out = env
            .cmd(&mock.base_url())
            .args(["-z", "delegate it"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let calls = child_requests(&mock, "delta: try everything");
        assert_eq!(calls.len(), 3, "no grandchild was started");
        let tools = tool_names(&calls[0].body);
        assert!(
            !tools.contains(&"delegate_task".to_string()),
            "depth 1: {tools:?}"
        );
        let last_tool = |i: usize| -> String {
            calls[i].body["messages"]
                .as_array()
                .unwrap()
                .iter()
                .rev()
                .find(|m| m["role"] == "tool")
                .and_then(|m| m["content"].as_str().map(str::to_string))
                .unwrap_or_default()
        };
        assert!(
            last_tool(1).contains("error") && last_tool(1).contains("memory"),
            "{}",
            last_tool(1)
        );
        assert!(
            last_tool(2).contains("error") && last_tool(2).contains("delegate_task"),
            "{}",
            last_tool(2)
        );
        assert!(!env.home_path().join("memories/USER.md").exists());
        let result = delegate_result(&mock);
        assert_eq!(result["results"][0]["status"], "completed");

        // With max_depth 2 the child may delegate (its own children could not).
        env.config("delegation:\n  max_depth: 2\n");
        let mock = MockLlm::with_script([
            Reply::tool_call("d1", "delegate_task", json!({"goal": "epsilon: plan"})),
            Reply::text("Parent done."),
        ]);
        mock.push_for("epsilon: plan", Reply::text("planned"));
        let out = env
            .cmd(&mock.base_url())
            .args(["-z", "again"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let tools = tool_names(&child_requests(&mock, "epsilon: plan")[0].body);
        assert!(tools.contains(&"delegate_task".to_string()), "{tools:?}");
    }

    #[test]
    fn a_child_never_asks_its_dangerous_commands_are_refused_even_under_yolo() {
        let env = TestEnv::new();
        env.write("keep/data.txt", "precious");
        let mock = MockLlm::with_script([
            Reply::tool_call("d1", "delegate_task", json!({"goal": "theta: clean up"})),
            Reply::text("Parent done."),
        ]);
        mock.push_for(
            "theta: clean up",
            Reply::tool_call("c1", "terminal", json!({"command": "rm -rf keep"})),
        );
        mock.push_for("theta: clean up", Reply::text("could not delete"));
        // The parent runs with --yolo, but `delegation.approvals` is not `inherit`.
        let out = env
            .cmd(&mock.base_url())
            .args(["--yolo", "-z", "clean up"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(
            env.cwd.path().join("keep/data.txt").exists(),
            "the child's rm ran"
        );
        let calls = child_requests(&mock, "theta: clean up");
        let result = calls[1].body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .rev()
            .find(|m| m["role"] == "tool")
            .and_then(|m| m["content"].as_str().map(str::to_string))
            .unwrap();
        assert!(result.contains("error"), "{result}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn cancelling_the_parent_cancels_its_children_and_they_send_nothing_more() {
        let home = tempfile::tempdir().unwrap();
        let mock = MockLlm::with_script([Reply::tool_call(
            "d1",
            "delegate_task",
            json!({"tasks": [{"goal": "zeta: slow one"}, {"goal": "eta: slow two"}]}),
        )]);
        for needle in ["zeta: slow one", "eta: slow two"] {
            mock.push_for(needle, Reply::text("late").delay(Duration::from_secs(30)));
            // Would be the next step if the child went on after the cancel.
            mock.push_for(needle, Reply::text("should never be asked"));
        }
        let config = Config::defaults(HermesHome::new(home.path()), EnvVars::default());
        let store = hermes::sessions::SessionStore::open(&home.path().join("state.db")).unwrap();
        let services = std::sync::Arc::new(hermes::agent::Services::new(
            std::sync::Arc::new(config),
            std::sync::Arc::new(store),
        ));
        let client = hermes::llm::client_for(&hermes::llm::Provider::new(
            "custom",
            "m",
            &mock.base_url(),
            None,
        ))
        .unwrap();
        let options = AgentOptions {
            source: "cli".into(),
            cwd: home.path().to_path_buf(),
            toolsets: vec!["file".into(), "delegation".into()],
            max_iterations: 5,
            yolo: false,
            interactive: false,
            ephemeral: false,
        };
        let mut agent = Agent::start(services.clone(), client, options)
            .await
            .unwrap();
        let cancel = CancellationToken::new();
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let turn_cancel = cancel.clone();
        let turn = tokio::spawn(async move {
            let out = agent
                .run_turn("do two slow things", &tx, &turn_cancel)
                .await;
            (agent, out)
        });
        let deadline = Instant::now() + Duration::from_secs(20);
        while mock.request_count() < 3 {
            assert!(
                Instant::now() < deadline,
                "the children never called the model"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(services.children.running(), 2);
        cancel.cancel();
        let (_agent, out) = tokio::time::timeout(Duration::from_secs(10), turn)
            .await
            .expect("the parent's turn ends promptly after the cancel")
            .unwrap();
        out.unwrap();
        let at_cancel = mock.request_count();
        assert_eq!(
            services.children.wait_idle(Duration::from_secs(5)).await,
            0,
            "every child ended"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(
            mock.request_count(),
            at_cancel,
            "no request after the cancel"
        );
        assert_eq!(at_cancel, 3);
        // Each child's session records that it was cancelled.
        let db = rusqlite::Connection::open(home.path().join("state.db")).unwrap();
        let reasons: Vec<Option<String>> = db
            .prepare("SELECT end_reason FROM sessions WHERE source = 'subagent'")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(
            reasons,
            [Some("cancelled".to_string()), Some("cancelled".to_string())]
        );
    }
}
