//! Tests of the registry: dispatch, result spilling, schemas and runtime registration.

use super::*;
use crate::tools::test_support;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct HugeArgs {
    /// How many characters to return.
    size: usize,
}

struct Huge;

impl TypedTool for Huge {
    type Args = HugeArgs;
    const NAME: &'static str = "huge";
    const TOOLSET: &'static str = "test";
    const DESCRIPTION: &'static str = "returns a long text";
    async fn run(&self, args: HugeArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        Ok("x".repeat(args.size))
    }
}

fn registry_with_huge() -> ToolRegistry {
    let mut tools: BTreeMap<String, Arc<dyn Tool>> = BTreeMap::new();
    tools.insert("huge".into(), Arc::new(Huge));
    ToolRegistry { tools }
}

fn call(args: &str) -> ToolCall {
    ToolCall {
        id: "call/../7".into(),
        name: "huge".into(),
        arguments: args.into(),
    }
}

#[tokio::test]
async fn oversized_results_are_spilled_with_a_preview() {
    let env = test_support::env();
    let out = registry_with_huge()
        .dispatch(&call(r#"{"size": 150000}"#), &env.ctx)
        .await;
    assert!(!out.is_error);
    assert!(
        out.content.starts_with("<persisted-output>"),
        "{}",
        &out.content[..200]
    );
    assert!(out.content.len() < 3_000);
    // The id is sanitised: the file stays inside the cache directory.
    let dir = env.ctx.config.home.tool_results_dir();
    let spilled = dir.join("call____7.txt");
    assert!(
        out.content.contains(&spilled.display().to_string()),
        "{}",
        out.content
    );
    assert_eq!(std::fs::read_to_string(&spilled).unwrap().len(), 150_000);
}

#[tokio::test]
async fn results_under_the_cap_are_untouched() {
    let env = test_support::env();
    let out = registry_with_huge()
        .dispatch(&call(r#"{"size": 100000}"#), &env.ctx)
        .await;
    assert_eq!(out.content.len(), MAX_RESULT_CHARS);
}

#[tokio::test]
async fn bad_arguments_and_unknown_tools_become_error_results() {
    let env = test_support::env();
    let reg = registry_with_huge();
    let out = reg.dispatch(&call(r#"{"size": "lots"}"#), &env.ctx).await;
    assert!(
        out.is_error && out.content.contains("invalid arguments for huge"),
        "{}",
        out.content
    );
    let mut unknown = call("{}");
    unknown.name = "nope".into();
    let out = reg.dispatch(&unknown, &env.ctx).await;
    assert!(out.is_error && out.content.contains("unknown tool `nope`"));
}

#[test]
fn schemas_are_compact_and_sorted() {
    let reg = ToolRegistry::discover();
    let schemas = reg.schemas();
    let names: Vec<&str> = schemas.iter().map(|s| s.name.as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);
    for s in reg.schemas() {
        let text = s.parameters.to_string();
        assert!(
            !text.contains("$schema") && !text.contains("\"title\""),
            "{text}"
        );
    }
}

struct Echo;

#[async_trait::async_trait]
impl crate::tools::ToolHandler for Echo {
    async fn call(&self, arguments: Value, _ctx: &ToolContext) -> Result<String, ToolError> {
        Ok(format!(
            "echo {}",
            arguments["text"].as_str().unwrap_or("?")
        ))
    }
}

fn echo_tool(name: &str, toolset: &str) -> crate::tools::DynamicTool {
    crate::tools::DynamicTool::new(
        name,
        toolset,
        "echoes its text",
        serde_json::json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        Arc::new(Echo),
    )
}

#[tokio::test]
async fn runtime_tools_join_toolsets_and_dispatch_like_built_ins() {
    let env = test_support::env();
    let catalog = crate::tools::ToolCatalog::discover();
    let availability = crate::tools::Availability::available();
    catalog
        .register(Arc::new(
            echo_tool("mcp_demo_echo", "mcp-demo").with_availability(availability.clone()),
        ))
        .unwrap();
    // Its toolset exists because the tool names it; built-ins are untouched.
    let config = &env.ctx.config;
    let session = catalog.select(config, &["mcp-demo".into()]).unwrap();
    assert_eq!(session.names(), ["mcp_demo_echo"]);
    let all = catalog.select(config, &["all".into()]).unwrap();
    assert!(all.get("mcp_demo_echo").is_some() && all.get("read_file").is_some());
    let cli = catalog.select(config, &["hermes-cli".into()]).unwrap();
    assert!(cli.get("mcp_demo_echo").is_none());
    let call = ToolCall {
        id: "c1".into(),
        name: "mcp_demo_echo".into(),
        arguments: r#"{"text": "hi"}"#.into(),
    };
    assert_eq!(session.dispatch(&call, &env.ctx).await.content, "echo hi");
    let mut bad = call.clone();
    bad.arguments = "[1]".into();
    let out = session.dispatch(&bad, &env.ctx).await;
    assert!(
        out.is_error && out.content.contains("one JSON object"),
        "{}",
        out.content
    );

    // Unavailable: not offered to new sessions, and a session that has it gets a reason.
    availability.set_unavailable("the MCP server demo is not connected");
    assert!(
        catalog
            .select(config, &["mcp-demo".into()])
            .unwrap()
            .is_empty()
    );
    let status = catalog
        .statuses(config)
        .into_iter()
        .find(|s| s.name == "mcp_demo_echo")
        .unwrap();
    assert_eq!(status.toolset, "mcp-demo");
    assert!(status.available.is_err());
    let out = session.dispatch(&call, &env.ctx).await;
    assert!(
        out.is_error && out.content.contains("not connected"),
        "{}",
        out.content
    );

    // A server that goes away takes its toolset with it.
    assert_eq!(catalog.deregister_toolset("mcp-demo"), ["mcp_demo_echo"]);
    let err = catalog.select(config, &["mcp-demo".into()]).unwrap_err();
    assert!(matches!(err, ToolsetError::Unknown(..)), "{err}");
}

#[test]
fn runtime_registration_refuses_taken_and_invalid_names() {
    let catalog = crate::tools::ToolCatalog::discover();
    let err = catalog
        .register(Arc::new(echo_tool("read_file", "mcp-x")))
        .unwrap_err();
    assert!(
        matches!(&err, RegisterError::Duplicate { existing, .. } if existing == "file"),
        "{err}"
    );
    assert!(matches!(
        catalog.register(Arc::new(echo_tool("has space", "mcp-x"))),
        Err(RegisterError::InvalidName(_))
    ));
    assert!(matches!(
        catalog.register(Arc::new(echo_tool("ok", "bad/set"))),
        Err(RegisterError::InvalidToolset { .. })
    ));
    // The built-in survived the refused registration.
    assert_eq!(
        catalog.snapshot().get("read_file").unwrap().toolset(),
        "file"
    );
}

#[test]
fn every_built_in_tool_belongs_to_a_described_toolset() {
    // A typo in a tool's TOOLSET would silently leave it out of hermes-cli.
    for status in ToolRegistry::discover().statuses(&crate::config::Config::defaults(
        crate::config::HermesHome::new(std::path::Path::new("/nonexistent")),
        crate::config::EnvVars::default(),
    )) {
        assert!(
            status.toolset == "test"
                || crate::tools::toolsets::BUILTIN
                    .iter()
                    .any(|s| s.name == status.toolset),
            "{} names the undescribed toolset {}",
            status.name,
            status.toolset
        );
    }
}
