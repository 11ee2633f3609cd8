//! The tool seam keeps its promise: a tool joins its toolset by its own declaration (a test-only
//! tool defined and registered in this one file is offered), and a tool registered at run time
//! (how MCP tools arrive) is offered to and called by a real agent turn like a built-in one; a
//! test-only file tool written the documented way (it calls `tools::file_path::resolve_path`)
//! gets every path rule — protected paths, secrets files, devices, did-you-mean, binary
//! files — without a line of its own.

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

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct LineCountArgs {
    /// The file whose lines to count.
    path: String,
}

/// A file tool written as ARCHITECTURE.md says: its path goes through the one path policy.
struct LineCount;

impl TypedTool for LineCount {
    type Args = LineCountArgs;
    const NAME: &'static str = "line_count";
    const TOOLSET: &'static str = "text-tools";
    const DESCRIPTION: &'static str = "counts the lines of a text file";
    const READ_ONLY: bool = true;
    async fn run(&self, args: LineCountArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        use hermes::tools::file_path::{Access, resolve_path};
        use std::io::Read;
        let path = resolve_path(ctx, &args.path, Access::Read)?;
        let (mut file, mut text) = path.open_text("line_count counts text files only")?;
        file.read_to_end(&mut text)
            .map_err(|e| ToolError::Respond(e.to_string()))?;
        Ok(text.iter().filter(|&&b| b == b'\n').count().to_string())
    }
}

hermes::register_tool!(LineCount);

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
    assert_eq!(offered.names(), ["line_count", "word_count"]);
    let toolsets = registry.toolsets(&config.custom_toolsets);
    let info = toolsets.iter().find(|t| t.name == "text-tools").unwrap();
    assert_eq!(info.tools, ["line_count", "word_count"]);
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_file_tool_gets_every_path_rule_without_code_of_its_own() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join(".env"), "OPENAI_API_KEY=sk-abcdefghijkl\n").unwrap();
    std::fs::write(work.path().join("notes.txt"), "a\nb\nc\n").unwrap();
    std::fs::write(work.path().join(".env"), "TOKEN=abcdef\n").unwrap();
    std::fs::write(work.path().join("blob.bin"), b"\x00\x01\x02\n").unwrap();
    // A symlink in the work tree pointing at hermes' secrets is refused like the real path.
    std::os::unix::fs::symlink(home.path().join(".env"), work.path().join("cfg")).unwrap();
    let config_path = home.path().join(".env").display().to_string();
    let calls = [
        ("c1", "notes.txt".to_string()),
        ("c2", config_path),
        ("c3", ".env".to_string()),
        ("c4", "cfg".to_string()),
        ("c5", "/dev/zero".to_string()),
        ("c6", "notse.txt".to_string()),
        ("c7", "blob.bin".to_string()),
    ];
    let mut script: Vec<Reply> = calls
        .iter()
        .map(|(id, path)| Reply::tool_call(id, "line_count", json!({ "path": path })))
        .collect();
    script.push(Reply::text("done"));
    let mock = MockLlm::with_script(script);
    let client =
        hermes::llm::client_for(&Provider::new("custom", "m", &mock.base_url(), None)).unwrap();
    let mut opts = options(work.path(), &["text-tools"]);
    opts.max_iterations = 10;
    let mut agent = Agent::start(services(home.path()), client, opts)
        .await
        .unwrap();
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let out = agent
        .run_turn("count lines", &tx, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(out.text, "done");
    let last = mock.requests().pop().unwrap();
    let result = |id: &str| tool_result(&last, id);
    assert_eq!(result("c1"), "3");
    assert!(
        result("c2").contains("refused") && result("c2").contains("hermes secrets file"),
        "{}",
        result("c2")
    );
    assert!(
        result("c3").contains("refused") && result("c3").contains("secrets"),
        "{}",
        result("c3")
    );
    assert!(
        result("c4").contains("refused") && result("c4").contains("resolves to"),
        "{}",
        result("c4")
    );
    assert!(
        result("c5").contains("not a regular file"),
        "{}",
        result("c5")
    );
    assert!(
        result("c6").contains("Did you mean") && result("c6").contains("notes.txt"),
        "{}",
        result("c6")
    );
    assert!(result("c7").contains("binary file"), "{}", result("c7"));
}
