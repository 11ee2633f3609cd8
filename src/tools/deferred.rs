//! Deferred tool loading ("tool search", Python Hermes's `tools.tool_search`): when the schemas of
//! a session's non-core tools (MCP, later plugins) would take more than `threshold_pct` (10 %) of
//! the model's context window, they are not sent; three small core tools take their place —
//! `tool_search(query)`, `tool_describe(name)`, `tool_call(name, arguments)` — and the model finds
//! and calls them through those. The decision is made once per session (when its tools are
//! assembled), so the tools array, and with it the request prefix, stays byte-identical when a
//! deferred tool is used. `tool_call` runs the deferred tool itself; its result goes through the
//! registry (redaction, size cap) as the bridge's own result.
//!
//! Late tools: start-up never waits for an MCP server hermes has not seen before, so a server
//! still connecting when a session freezes its tools array is not in it. Such a session gets the
//! three bridge tools too (whatever the threshold says), and they also reach the tools of those
//! servers (`LateTools`): `tool_search` and `tool_call` wait for a server still connecting at
//! most its bound (`mcp_discovery_timeout`), and say which servers are still missing. The array
//! stays byte-identical; the next session sends the late tools directly.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::config::Config;
use crate::llm::ToolSchema;
use crate::tools::ToolRegistry;
use crate::tools::registry::{Tool, ToolContext, ToolError};

/// Python Hermes's defaults.
const DEFAULT_THRESHOLD_PCT: f64 = 10.0;
const DEFAULT_LIMIT: usize = 5;
const MAX_LIMIT: usize = 20;
/// The rule of thumb Python Hermes uses without a tokenizer.
const CHARS_PER_TOKEN: f64 = 4.0;
/// The toolset the bridge tools report.
pub const TOOLSET: &str = "tool_search";

/// Tools that may arrive after a session froze its array (MCP servers still connecting then).
#[async_trait::async_trait]
pub trait LateTools: Send + Sync {
    /// One line per source still missing ("the MCP server `x` is still connecting"); empty
    /// once every source arrived.
    fn missing(&self) -> Vec<String>;
    /// Waits for sources still connecting, at most the source's own bound.
    async fn settle(&self);
    /// The tools that arrived so far.
    fn arrived(&self) -> Vec<Arc<dyn Tool>>;
}

/// `tools.tool_search` as configured.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSearchConfig {
    /// `auto` (defer past the threshold), `on` (always when something is deferrable), `off`.
    pub mode: Mode,
    pub threshold_pct: f64,
    pub default_limit: usize,
    pub max_limit: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Auto,
    On,
    Off,
}

impl ToolSearchConfig {
    /// From the typed `tools.tool_search` section (`config/tools.rs`: `true|false|auto` or a
    /// mapping of `enabled`, `threshold_pct`, `search_default_limit`, `max_search_limit`),
    /// limits clamped to what the bridge tools serve.
    pub fn from_config(config: &Config) -> Self {
        use crate::config::tools::Toggle;
        let file = &config.file.tools.tool_search;
        let mut out = ToolSearchConfig {
            mode: match file.enabled {
                None | Some(Toggle::Auto) => Mode::Auto,
                Some(Toggle::On) => Mode::On,
                Some(Toggle::Off) => Mode::Off,
            },
            threshold_pct: DEFAULT_THRESHOLD_PCT,
            default_limit: DEFAULT_LIMIT,
            max_limit: MAX_LIMIT,
        };
        if let Some(p) = file.threshold_pct.filter(|p| p.is_finite()) {
            out.threshold_pct = p.clamp(0.0, 100.0);
        }
        if let Some(n) = file.max_search_limit {
            out.max_limit = n.clamp(1, 50);
        }
        if let Some(n) = file.search_default_limit {
            out.default_limit = n.clamp(1, out.max_limit);
        }
        out.default_limit = out.default_limit.min(out.max_limit);
        out
    }
}

/// Whether a tool may be deferred: only tools registered at run time (never a built-in).
pub fn is_deferrable(tool: &dyn Tool) -> bool {
    tool.toolset().starts_with("mcp-")
}

/// Estimated tokens of some schemas.
pub fn schema_tokens<'a>(schemas: impl IntoIterator<Item = &'a ToolSchema>) -> u64 {
    let chars: usize = schemas
        .into_iter()
        .map(|s| s.name.len() + s.description.len() + s.parameters.to_string().len())
        .sum();
    (chars as f64 / CHARS_PER_TOKEN).ceil() as u64
}

/// The session's tools with the deferrable ones moved behind the three bridge tools, when
/// `config` and the window say so; else `tools` unchanged. With `late` (servers still
/// connecting at freeze time) the bridge tools are added even below the threshold, to reach
/// the late tools; `tools.tool_search: off` turns both off.
pub fn apply(
    mut tools: ToolRegistry,
    config: &Config,
    context_length: u64,
    late: Option<Arc<dyn LateTools>>,
) -> ToolRegistry {
    let settings = ToolSearchConfig::from_config(config);
    if settings.mode == Mode::Off {
        return tools;
    }
    let mut deferrable: BTreeMap<String, Arc<dyn Tool>> = tools
        .names()
        .into_iter()
        .filter_map(|n| tools.get(n).map(|t| (n.to_string(), t.clone())))
        .filter(|(_, t)| is_deferrable(t.as_ref()))
        .collect();
    let schemas: Vec<ToolSchema> = deferrable.values().map(|t| t.schema()).collect();
    let tokens = schema_tokens(&schemas);
    let limit = context_length as f64 * settings.threshold_pct / 100.0;
    let over = !deferrable.is_empty() && (settings.mode == Mode::On || (tokens as f64) > limit);
    if !over {
        if late.is_none() {
            return tools;
        }
        // Only the late tools go through the bridge; the rest stay in the array.
        deferrable.clear();
    }
    tracing::info!(
        deferred = deferrable.len(),
        tokens,
        context_length,
        late = late.is_some(),
        "tool schemas deferred behind tool_search"
    );
    tools.retain(|name| !deferrable.contains_key(name));
    let direct: std::collections::BTreeSet<String> =
        tools.names().into_iter().map(str::to_string).collect();
    let set = Arc::new(Deferred {
        tools: deferrable,
        late,
        direct,
        default_limit: settings.default_limit,
        max_limit: settings.max_limit,
    });
    for bridge in [Bridge::Search, Bridge::Describe, Bridge::Call] {
        let tool = Arc::new(BridgeTool {
            kind: bridge,
            set: set.clone(),
        });
        if let Err(e) = tools.register(tool) {
            tracing::warn!(error = %e, "a tool-search bridge tool could not be added");
        }
    }
    tools
}

/// The tools a session deferred, and those that may still arrive.
struct Deferred {
    tools: BTreeMap<String, Arc<dyn Tool>>,
    late: Option<Arc<dyn LateTools>>,
    /// The session's array (a late tool of the same name is not offered twice).
    direct: std::collections::BTreeSet<String>,
    default_limit: usize,
    max_limit: usize,
}

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() > 1)
        .map(str::to_lowercase)
        .collect()
}

impl Deferred {
    /// The deferred tools and the late ones arrived so far, by name.
    fn candidates(&self) -> BTreeMap<String, Arc<dyn Tool>> {
        let mut all = self.tools.clone();
        for tool in self.late.iter().flat_map(|l| l.arrived()) {
            if !self.direct.contains(tool.name()) {
                all.entry(tool.name().to_string()).or_insert(tool);
            }
        }
        all
    }

    /// Waits (bounded) for late sources still connecting; what is still missing after.
    async fn settle(&self) -> Vec<String> {
        match &self.late {
            Some(late) => {
                late.settle().await;
                late.missing()
            }
            None => Vec::new(),
        }
    }

    /// The best matches for `query`: a term in the name counts 3, in the description 1 (per
    /// distinct term, so a long description does not win by repetition).
    fn search(&self, query: &str, limit: usize) -> Vec<(String, Arc<dyn Tool>)> {
        let terms: Vec<String> = words(query);
        let candidates = self.candidates();
        let mut scored: Vec<(usize, &str, &Arc<dyn Tool>)> = candidates
            .iter()
            .filter_map(|(name, tool)| {
                let name_words = words(name);
                let desc_words = words(&tool.schema().description);
                let score: usize = terms
                    .iter()
                    .map(|t| {
                        let in_name = name_words
                            .iter()
                            .any(|w| w == t || w.starts_with(t.as_str()));
                        let in_desc = desc_words
                            .iter()
                            .any(|w| w == t || w.starts_with(t.as_str()));
                        3 * usize::from(in_name) + usize::from(in_desc)
                    })
                    .sum();
                (score > 0).then_some((score, name.as_str(), tool))
            })
            .collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
        scored
            .into_iter()
            .take(limit)
            .map(|(_, n, t)| (n.to_string(), t.clone()))
            .collect()
    }

    /// A deferred or late tool by its exact name; waits for late sources when it is not there.
    async fn find(&self, name: &str) -> Result<Arc<dyn Tool>, ToolError> {
        if let Some(tool) = self.tools.get(name) {
            return Ok(tool.clone());
        }
        let missing = self.settle().await;
        if let Some(tool) = self.candidates().remove(name) {
            return Ok(tool);
        }
        let mut message =
            format!("no deferred tool is named `{name}`; find the exact name with tool_search");
        if !missing.is_empty() {
            message.push_str(&format!(" ({})", missing.join("; ")));
        }
        Err(ToolError::Respond(message))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bridge {
    Search,
    Describe,
    Call,
}

struct BridgeTool {
    kind: Bridge,
    set: Arc<Deferred>,
}

fn string_arg(args: &Value, key: &str) -> Result<String, ToolError> {
    match args.get(key).and_then(Value::as_str).map(str::trim) {
        Some(s) if !s.is_empty() => Ok(s.to_string()),
        _ => Err(ToolError::Respond(format!(
            "`{key}` is required (a non-empty string)"
        ))),
    }
}

#[async_trait::async_trait]
impl Tool for BridgeTool {
    fn name(&self) -> &str {
        match self.kind {
            Bridge::Search => "tool_search",
            Bridge::Describe => "tool_describe",
            Bridge::Call => "tool_call",
        }
    }

    fn toolset(&self) -> &str {
        TOOLSET
    }

    fn schema(&self) -> ToolSchema {
        let n = self.set.tools.len();
        // Fixed at freeze time: the array stays byte-identical however many tools arrive late.
        let among = if n > 0 {
            format!("among {n} more tools (from MCP servers) that are not listed here")
        } else {
            "among the tools of MCP servers that were still connecting when this session started (not listed here)".to_string()
        };
        let (description, parameters) = match self.kind {
            Bridge::Search => (
                format!(
                    "Find tools by keywords {among}. Returns names and descriptions; then tool_describe for the arguments and tool_call to run one."
                ),
                json!({"type": "object", "properties": {
                    "query": {"type": "string", "description": "Keywords for the capability you need (e.g. 'create github issue')."},
                    "limit": {"type": "integer", "description": format!("Results to return (default {}, at most {}).", self.set.default_limit, self.set.max_limit)}
                }, "required": ["query"]}),
            ),
            Bridge::Describe => (
                "The full description and argument schema of one tool found with tool_search."
                    .to_string(),
                json!({"type": "object", "properties": {
                    "name": {"type": "string", "description": "Exact tool name from tool_search."}
                }, "required": ["name"]}),
            ),
            Bridge::Call => (
                "Run one tool found with tool_search, with arguments matching its schema."
                    .to_string(),
                json!({"type": "object", "properties": {
                    "name": {"type": "string", "description": "Exact tool name from tool_search."},
                    "arguments": {"type": "object", "description": "The tool's arguments."}
                }, "required": ["name", "arguments"]}),
            ),
        };
        ToolSchema {
            name: self.name().to_string(),
            description,
            parameters,
        }
    }

    fn read_only(&self) -> bool {
        self.kind != Bridge::Call
    }

    fn check_available(&self, _config: &Config) -> Result<(), String> {
        Ok(())
    }

    async fn call(&self, arguments: &str, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: Value = crate::tools::registry::parse_arguments(self.name(), arguments)?;
        match self.kind {
            Bridge::Search => {
                let query = string_arg(&args, "query")?;
                let limit = args
                    .get("limit")
                    .and_then(Value::as_u64)
                    .map_or(self.set.default_limit, |l| l as usize)
                    .clamp(1, self.set.max_limit);
                let missing = self.set.settle().await;
                let hits: Vec<Value> = self
                    .set
                    .search(&query, limit)
                    .into_iter()
                    .map(|(name, tool)| {
                        let d = tool.schema().description;
                        let mut hit = json!({
                            "name": name,
                            "description": crate::util::truncate_chars(&d, 300),
                        });
                        if let Some(reason) = tool.unavailable_now() {
                            hit["unavailable"] = Value::String(reason);
                        }
                        hit
                    })
                    .collect();
                let note = if hits.is_empty() {
                    "No tool matched; try other or fewer keywords."
                } else {
                    "Use tool_describe(name) for a tool's arguments, then tool_call(name, arguments)."
                };
                let mut out = json!({"results": hits, "note": note});
                if !missing.is_empty() {
                    // The model reads why a tool it expects is not found yet.
                    out["still_missing"] = json!(missing);
                }
                Ok(out.to_string())
            }
            Bridge::Describe => {
                let name = string_arg(&args, "name")?;
                let schema = self.set.find(&name).await?.schema();
                Ok(json!({
                    "name": schema.name,
                    "description": schema.description,
                    "parameters": schema.parameters,
                })
                .to_string())
            }
            Bridge::Call => {
                let name = string_arg(&args, "name")?;
                let tool = self.set.find(&name).await?;
                let inner = match args.get("arguments") {
                    None | Some(Value::Null) => "{}".to_string(),
                    Some(Value::String(s)) => s.clone(),
                    Some(v) => v.to_string(),
                };
                tool.call(&inner, ctx).await
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::dynamic::{DynamicTool, ToolHandler};

    struct Echo;
    #[async_trait::async_trait]
    impl ToolHandler for Echo {
        async fn call(&self, arguments: Value, _ctx: &ToolContext) -> Result<String, ToolError> {
            Ok(arguments.to_string())
        }
    }

    fn registry(n: usize) -> ToolRegistry {
        let mut r = ToolRegistry::default();
        for i in 0..n {
            let t = DynamicTool::new(
                format!("mcp__s__widget_{i:03}"),
                "mcp-s",
                format!("Operate widget {i}: start, stop or read its gauges."),
                json!({"type": "object", "properties": {"action": {"type": "string"}}}),
                Arc::new(Echo),
            );
            r.register(Arc::new(t)).unwrap();
        }
        r
    }

    fn config(yaml: &str) -> Config {
        let home = crate::config::HermesHome::new(std::env::temp_dir());
        Config::from_yaml(
            home,
            crate::config::EnvVars::default(),
            yaml,
            std::path::Path::new("config.yaml"),
        )
        .unwrap()
    }

    #[test]
    fn defers_past_the_threshold_only() {
        let cfg = config("");
        let small = apply(registry(3), &cfg, 128_000, None);
        assert!(small.get("tool_search").is_none());
        assert_eq!(small.names().len(), 3);
        let big = apply(registry(300), &cfg, 32_000, None);
        assert_eq!(big.names(), ["tool_call", "tool_describe", "tool_search"]);
        let off = apply(
            registry(300),
            &config("tools:\n  tool_search:\n    enabled: off\n"),
            32_000,
            None,
        );
        assert_eq!(off.names().len(), 300);
        let on = apply(
            registry(1),
            &config("tools:\n  tool_search: true\n"),
            1_000_000,
            None,
        );
        assert!(on.get("tool_call").is_some());
    }

    /// A late source whose tools arrive when the test says so.
    struct Late(std::sync::Mutex<Vec<Arc<dyn Tool>>>);
    #[async_trait::async_trait]
    impl LateTools for Late {
        fn missing(&self) -> Vec<String> {
            if self.0.lock().unwrap().is_empty() {
                vec!["the MCP server `s` is still connecting".into()]
            } else {
                Vec::new()
            }
        }
        async fn settle(&self) {}
        fn arrived(&self) -> Vec<Arc<dyn Tool>> {
            self.0.lock().unwrap().clone()
        }
    }

    #[tokio::test]
    async fn late_tools_are_reached_through_the_bridge_and_the_array_stays_put() {
        let late = Arc::new(Late(Default::default()));
        // Below the threshold: the direct tools stay, the bridge is added for the late ones.
        let tools = apply(registry(2), &config(""), 128_000, Some(late.clone()));
        assert!(tools.get("mcp__s__widget_000").is_some());
        let search = tools.get("tool_search").unwrap().clone();
        let schema = format!("{:?}", tools.schemas());
        let env = crate::tools::test_support::env();
        let ctx = env.ctx.clone();
        let before = search.call(r#"{"query":"gadget"}"#, &ctx).await.unwrap();
        assert!(before.contains("still connecting"), "{before}");
        late.0.lock().unwrap().push(Arc::new(DynamicTool::new(
            "mcp__s__gadget",
            "mcp-s",
            "A gadget.",
            json!({"type": "object"}),
            Arc::new(Echo),
        )));
        let after = search.call(r#"{"query":"gadget"}"#, &ctx).await.unwrap();
        assert!(
            after.contains("mcp__s__gadget") && !after.contains("still_missing"),
            "{after}"
        );
        let call = tools.get("tool_call").unwrap();
        let out = call
            .call(r#"{"name":"mcp__s__gadget","arguments":{"x":1}}"#, &ctx)
            .await
            .unwrap();
        assert_eq!(out, r#"{"x":1}"#);
        assert_eq!(format!("{:?}", tools.schemas()), schema);
        // `off` turns the bridge off, late tools too.
        let off = apply(
            registry(2),
            &config("tools:\n  tool_search: false\n"),
            128_000,
            Some(late),
        );
        assert!(off.get("tool_search").is_none());
    }

    #[test]
    fn search_ranks_name_matches_first() {
        let r = registry(20);
        let set = Deferred {
            tools: r
                .names()
                .into_iter()
                .map(|n| (n.to_string(), r.get(n).unwrap().clone()))
                .collect(),
            late: None,
            direct: Default::default(),
            default_limit: 5,
            max_limit: 20,
        };
        let hits = set.search("widget 007", 3);
        assert_eq!(hits[0].0, "mcp__s__widget_007");
        assert!(set.search("zebra", 3).is_empty());
        assert!(futures::executor::block_on(set.find("nope")).is_err());
    }
}
