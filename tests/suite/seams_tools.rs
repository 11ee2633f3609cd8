//! The tool seam keeps its promise: a tool joins its toolset by its own declaration (a test-only
//! tool defined and registered in this one file is offered), and a tool registered at run time
//! (how MCP tools arrive) is offered to and called by a real agent turn like a built-in one.

use std::sync::Arc;

use hermes::agent::{Agent, AgentOptions, Services};
use hermes::config::{Config, EnvVars, HermesHome};
use hermes::llm::Provider;
use hermes::tools::{DynamicTool, ToolContext, ToolError, ToolHandler, ToolRegistry, TypedTool};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::support::harness::{TestEnv, stderr, stdout};
use crate::support::mock_llm::{MockLlm, Reply};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct WordCountArgs {
    /// The text to count words in.
    text: String,
}

/// Defined and registered here only: no toolset list or other file names it.
struct WordCount;

impl TypedTool for WordCount {
    type Args = WordCountArgs;
    const NAME: &'static str = "word_count";
    const TOOLSET: &'static str = "text-tools";
    const DESCRIPTION: &'static str = "counts the words of a text";
    const READ_ONLY: bool = true;
    async fn run(&self, args: WordCountArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        Ok(args.text.split_whitespace().count().to_string())
    }
}

hermes::register_tool!(WordCount);

fn services(home: &std::path::Path) -> Arc<Services> {
    let config = Config::defaults(HermesHome::new(home), EnvVars::default());
    let store = hermes::sessions::SessionStore::open(&home.join("state.db")).unwrap();
    Arc::new(Services::new(Arc::new(config), Arc::new(store)))
}

fn options(cwd: &std::path::Path, toolsets: &[&str]) -> AgentOptions {
    AgentOptions {
        source: "cli".into(),
        cwd: cwd.to_path_buf(),
        toolsets: toolsets.iter().map(|s| s.to_string()).collect(),
        max_iterations: 5,
        yolo: false,
        interactive: false,
        ephemeral: false,
    }
}

fn offered(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// The tool result the model saw for `call_id` in a request.
fn tool_result(request: &Value, call_id: &str) -> String {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_tool_declared_in_one_file_is_in_its_toolset() {
    let registry = ToolRegistry::discover();
    assert_eq!(
        registry.get("word_count").map(|t| t.toolset().to_string()),
        Some("text-tools".into())
    );
    let home = tempfile::tempdir().unwrap();
    let config = Config::defaults(HermesHome::new(home.path()), EnvVars::default());
    let offered = registry.select(&config, &["text-tools".into()]).unwrap();
    assert_eq!(offered.names(), ["word_count"]);
    let toolsets = registry.toolsets(&config.custom_toolsets);
    let info = toolsets.iter().find(|t| t.name == "text-tools").unwrap();
    assert_eq!(info.tools, ["word_count"]);
    // Built-in toolsets list their members from the tools too.
    let file = toolsets.iter().find(|t| t.name == "file").unwrap();
    assert!(file.tools.iter().any(|t| t == "read_file"), "{file:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_registered_at_run_time_is_offered_and_called_in_a_turn() {
    struct Shout;
    #[async_trait::async_trait]
    impl ToolHandler for Shout {
        async fn call(&self, arguments: Value, _ctx: &ToolContext) -> Result<String, ToolError> {
            let text = arguments["text"].as_str().unwrap_or_default();
            Ok(text.to_uppercase())
        }
    }
    let home = tempfile::tempdir().unwrap();
    let services = services(home.path());
    services
        .tools
        .register(Arc::new(DynamicTool::new(
            "mcp_demo_shout",
            "mcp-demo",
            "shouts a text",
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
            Arc::new(Shout),
        )))
        .unwrap();
    let mock = MockLlm::with_script([
        Reply::tool_call("c1", "mcp_demo_shout", json!({"text": "quiet words"})),
        Reply::text("done"),
    ]);
    let client =
        hermes::llm::client_for(&Provider::new("custom", "m", &mock.base_url(), None)).unwrap();
    let mut agent = Agent::start(
        services.clone(),
        client,
        options(home.path(), &["mcp-demo", "todo"]),
    )
    .await
    .unwrap();
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let out = agent
        .run_turn("shout please", &tx, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(out.text, "done");
    let requests = mock.requests();
    let names = offered(&requests[0]);
    assert!(
        names.contains(&"mcp_demo_shout".to_string()) && names.contains(&"todo".to_string()),
        "{names:?}"
    );
    let schema = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "mcp_demo_shout")
        .unwrap();
    assert_eq!(
        schema["function"]["parameters"]["required"],
        json!(["text"])
    );
    assert_eq!(tool_result(&requests[1], "c1"), "QUIET WORDS");
}

#[test]
fn the_binary_offers_a_test_only_tool_by_its_own_toolset() {
    // `test_crash` (debug builds only) declares TOOLSET "test"; no table describes that
    // toolset, yet `-t test` offers it.
    let env = TestEnv::new();
    let mock = MockLlm::with_script([Reply::text("ok")]);
    let out = env
        .cmd(&mock.base_url())
        .env("HERMES_TEST_TOOLS", "1")
        .args(["-t", "test", "-z", "hi"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "ok\n");
    assert_eq!(offered(&mock.requests()[0]), ["test_crash"]);
}
