//! The tool contract (`Tool`, `TypedTool`), self-registration through `inventory`, runtime
//! registration (`ToolRegistry::register`, used for tools found while running, such as MCP
//! servers' — see `tools::dynamic`), and dispatch: argument parsing, error results the model can
//! read, and the result-size cap.
//!
//! A built-in tool is one file: a type implementing `TypedTool` whose `TOOLSET` names its toolset,
//! registered with one line, `register_tool!(ReadFile);`, plus its `mod` line in `tools/mod.rs`.
//! Toolset membership comes from the registered tools (`toolsets.rs` keeps only descriptions
//! and includes), so there is no list of tool names to edit.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::checkpoints::Checkpointer;
use crate::config::Config;
use crate::llm::{ToolCall, ToolSchema};
use crate::security::approval::{ApprovalGate, ApprovalPrompt};
use crate::security::shield::Shield;
use crate::tools::todo::TodoList;

/// Results longer than this many characters are spilled to a file and replaced by a preview.
pub const MAX_RESULT_CHARS: usize = 100_000;
const PREVIEW_CHARS: usize = 1_500;

/// How a tool failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolError {
    /// Goes back to the model as the tool result (bad arguments, file not found, command failed).
    #[error("{0}")]
    Respond(String),
    /// Aborts the turn (the session stays usable).
    #[error("{0}")]
    Fatal(String),
    /// The user interrupted the turn while the tool ran.
    #[error("interrupted by the user")]
    Cancelled,
}

/// Per-session state shared by tool calls (lives as long as the `Agent`).
#[derive(Debug, Default)]
pub struct SessionScratch {
    pub todos: Mutex<TodoList>,
    /// The session's terminal state (its container, removed when the session ends).
    pub terminal: crate::security::sandbox::SessionTerminal,
    /// Skills viewed in this session (a background review may only change what it has read).
    pub viewed_skills: Mutex<std::collections::BTreeSet<String>>,
    /// Where the file tools' reads and writes go (the disk unless an editor offers its own).
    pub files: crate::tools::file_io::FileBackendSlot,
}

/// Who runs the tools: the user's own agent, or a child agent with a narrower brief.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AgentRole {
    #[default]
    Primary,
    /// A child started by `delegate_task`.
    Delegate,
    /// The background review that may write skills.
    SkillReview,
    /// The background review that may write memory.
    MemoryReview,
}

/// What a tool may use while it runs.
#[derive(Clone)]
pub struct ToolContext {
    pub config: Arc<Config>,
    /// Working directory for relative paths and commands.
    pub cwd: PathBuf,
    pub session_id: String,
    /// The id of the call being executed (used to name spilled results).
    pub call_id: String,
    /// Cancelled when the user interrupts the turn; long-running tools must watch it.
    pub cancel: CancellationToken,
    pub approvals: Arc<ApprovalGate>,
    /// Who to ask when a command needs approval (the REPL, a chat, or nobody in `-z`).
    pub prompt: Arc<dyn ApprovalPrompt>,
    pub scratch: Arc<SessionScratch>,
    /// Protected paths and the redactor (one per process, from `Services`).
    pub shield: Arc<Shield>,
    /// Snapshots the working tree before the first file change of a turn.
    pub checkpoints: Arc<Checkpointer>,
    /// The skill store of the process (its parse cache is shared).
    pub skills: crate::skills::SkillStore,
    pub role: AgentRole,
    /// How many agents above this one (0 for the user's agent, 1 for its children).
    pub depth: u32,
    /// Runs `delegate_task` children for the calling agent (`None` where none may start).
    pub delegator: Option<Arc<dyn crate::tools::delegate::Delegator>>,
}

impl ToolContext {
    /// Resolves a user/model-supplied path against the working directory.
    pub fn resolve(&self, path: &str) -> PathBuf {
        let expanded = expand_tilde(path);
        if expanded.is_absolute() {
            expanded
        } else {
            self.cwd.join(expanded)
        }
    }
}

/// `~` and `~/…` as the user's home (from `$HOME`); anything else unchanged.
pub(crate) fn expand_tilde(path: &str) -> PathBuf {
    if (path == "~" || path.starts_with("~/"))
        && let Some(home) = std::env::var_os("HOME")
    {
        return PathBuf::from(home).join(path.trim_start_matches('~').trim_start_matches('/'));
    }
    PathBuf::from(path)
}

/// The object-safe tool interface the registry works with. Implement `TypedTool` instead.
#[async_trait::async_trait]
pub trait Tool: Send + Sync {
    fn name(&self) -> &str;
    /// The toolset this tool belongs to (its only membership declaration).
    fn toolset(&self) -> &str;
    fn schema(&self) -> ToolSchema;
    /// Safe to run concurrently with other read-only calls of the same response.
    fn read_only(&self) -> bool;
    /// `Err(reason)` when a requirement is missing; the tool is then not offered.
    fn check_available(&self, config: &Config) -> Result<(), String>;
    /// Why an offered tool cannot run right now (an MCP server that is down), if so.
    fn unavailable_now(&self) -> Option<String> {
        None
    }
    /// Runs the tool with the model's raw JSON arguments.
    async fn call(&self, arguments: &str, ctx: &ToolContext) -> Result<String, ToolError>;
}

/// A tool with typed arguments; its JSON schema is generated from `Args`.
pub trait TypedTool: Send + Sync + 'static {
    type Args: DeserializeOwned + JsonSchema + Send;
    const NAME: &'static str;
    const TOOLSET: &'static str;
    /// Short and precise: it is sent on every request.
    const DESCRIPTION: &'static str;
    const READ_ONLY: bool = false;

    fn check_available(&self, _config: &Config) -> Result<(), String> {
        Ok(())
    }

    fn run(
        &self,
        args: Self::Args,
        ctx: &ToolContext,
    ) -> impl Future<Output = Result<String, ToolError>> + Send;
}

#[async_trait::async_trait]
impl<T: TypedTool> Tool for T {
    fn name(&self) -> &str {
        T::NAME
    }
    fn toolset(&self) -> &str {
        T::TOOLSET
    }
    fn schema(&self) -> ToolSchema {
        ToolSchema {
            name: T::NAME.to_string(),
            description: T::DESCRIPTION.to_string(),
            parameters: schema_for::<T::Args>(),
        }
    }
    fn read_only(&self) -> bool {
        T::READ_ONLY
    }
    fn check_available(&self, config: &Config) -> Result<(), String> {
        TypedTool::check_available(self, config)
    }
    async fn call(&self, arguments: &str, ctx: &ToolContext) -> Result<String, ToolError> {
        let args = parse_arguments::<T::Args>(T::NAME, arguments)?;
        self.run(args, ctx).await
    }
}

/// Parses model-produced argument text. An empty string means "no arguments" (`{}`).
pub fn parse_arguments<A: DeserializeOwned>(tool: &str, arguments: &str) -> Result<A, ToolError> {
    let text = if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    };
    let value: Value = serde_json::from_str(text).map_err(|e| {
        ToolError::Respond(format!(
            "the arguments for {tool} are not valid JSON ({e}); send one JSON object matching the tool's schema"
        ))
    })?;
    serde_path_to_error::deserialize::<_, A>(value).map_err(|e| {
        let path = e.path().to_string();
        let at = if path == "." {
            String::new()
        } else {
            format!(" at `{path}`")
        };
        ToolError::Respond(format!(
            "invalid arguments for {tool}{at}: {}",
            e.into_inner()
        ))
    })
}

/// JSON schema for an argument type, compacted: every byte is paid on every request.
pub fn schema_for<A: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft07()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let mut value = generator.into_root_schema_for::<A>().to_value();
    compact_schema(&mut value);
    value
}

fn compact_schema(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("$schema");
            map.remove("title");
            map.remove("format");
            if map.get("default").is_some_and(Value::is_null) {
                map.remove("default");
            }
            // `Option<T>` becomes `["T", "null"]`; optional is already expressed by `required`.
            if let Some(Value::Array(types)) = map.get("type") {
                let non_null: Vec<Value> = types
                    .iter()
                    .filter(|t| t.as_str() != Some("null"))
                    .cloned()
                    .collect();
                if non_null.len() == 1 {
                    map.insert("type".into(), non_null[0].clone());
                }
            }
            if map.get("minimum").and_then(Value::as_f64) == Some(0.0) {
                map.remove("minimum");
            }
            for v in map.values_mut() {
                compact_schema(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(compact_schema),
        _ => {}
    }
}

/// One registered tool factory; collected from every tool file by `inventory`.
pub struct ToolRegistration {
    pub factory: fn() -> Arc<dyn Tool>,
}

inventory::collect!(ToolRegistration);

/// Registers a tool value (a unit struct or a const expression) with the registry.
#[macro_export]
macro_rules! register_tool {
    ($tool:expr) => {
        inventory::submit! {
            $crate::tools::registry::ToolRegistration {
                factory: || std::sync::Arc::new($tool),
            }
        }
    };
}

/// The outcome of one dispatched call, always something the model can read.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub content: String,
    pub is_error: bool,
    /// Set when the tool asked to abort the turn.
    pub fatal: bool,
}

/// A set of tools by name: every tool of the process (`ToolCatalog` holds that one), or the
/// tools offered in one session (after toolset selection and availability checks). Built-in and
/// runtime-registered tools live side by side and are offered, filtered and dispatched alike.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.tools.keys()).finish()
    }
}

/// Why a runtime registration was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RegisterError {
    #[error(
        "cannot register the tool `{name}` (toolset {toolset}): a tool of that name is already registered in toolset {existing}; rename it or remove the other one first"
    )]
    Duplicate {
        name: String,
        toolset: String,
        existing: String,
    },
    #[error(
        "cannot register the tool `{0}`: tool names must be 1-64 characters of letters, digits, `_` or `-` (what model APIs accept)"
    )]
    InvalidName(String),
    #[error(
        "cannot register the tool `{name}`: its toolset name `{toolset}` must be 1-64 characters of letters, digits, `_` or `-`"
    )]
    InvalidToolset { name: String, toolset: String },
}

/// Whether one tool would be offered under a config, and why not (`hermes tools list`).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolStatus {
    pub name: String,
    pub toolset: String,
    /// `Err(reason)` when a requirement is missing.
    pub available: Result<(), String>,
}

fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

impl ToolRegistry {
    /// Every tool linked into the binary.
    pub fn discover() -> Self {
        let mut tools = BTreeMap::new();
        for reg in inventory::iter::<ToolRegistration> {
            let tool = (reg.factory)();
            tools.insert(tool.name().to_string(), tool);
        }
        ToolRegistry { tools }
    }

    /// The tools of the enabled toolsets whose requirements are met.
    pub fn for_config(config: &Config, toolsets: &[String]) -> Result<Self, ToolsetError> {
        Self::discover().select(config, toolsets)
    }

    /// Adds a tool found at run time (an MCP server's, a plugin's). Its `toolset()` makes it a
    /// member of that toolset — an existing one or a new one such as `mcp-<server>`. A name
    /// that is taken is refused: a runtime tool never shadows a built-in one.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<(), RegisterError> {
        let (name, toolset) = (tool.name().to_string(), tool.toolset().to_string());
        if !valid_name(&name) {
            return Err(RegisterError::InvalidName(name));
        }
        if !valid_name(&toolset) {
            return Err(RegisterError::InvalidToolset { name, toolset });
        }
        if let Some(existing) = self.tools.get(&name) {
            return Err(RegisterError::Duplicate {
                existing: existing.toolset().to_string(),
                name,
                toolset,
            });
        }
        self.tools.insert(name, tool);
        Ok(())
    }

    /// Removes one tool; returns it when it was registered.
    pub fn deregister(&mut self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools.remove(name)
    }

    /// Removes every tool of a toolset (an MCP server that went away); returns their names.
    pub fn deregister_toolset(&mut self, toolset: &str) -> Vec<String> {
        let gone: Vec<String> = self
            .tools
            .iter()
            .filter(|(_, t)| t.toolset() == toolset)
            .map(|(n, _)| n.clone())
            .collect();
        for name in &gone {
            self.tools.remove(name);
        }
        gone
    }

    /// Toolset name → the names of its registered tools (membership, from the tools themselves).
    pub fn members(&self) -> BTreeMap<String, std::collections::BTreeSet<String>> {
        let mut out: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
        for (name, tool) in &self.tools {
            out.entry(tool.toolset().to_string())
                .or_default()
                .insert(name.clone());
        }
        out
    }

    /// Resolves toolset names (built-in, custom, or a registered tool's) to tool names.
    pub fn resolve_toolsets(
        &self,
        names: &[String],
        custom: &BTreeMap<String, crate::config::ToolsetDef>,
    ) -> Result<std::collections::BTreeSet<String>, ToolsetError> {
        crate::tools::toolsets::resolve_in(names, custom, &self.members())
    }

    /// Every toolset with its description, includes and registered members (`hermes tools`).
    pub fn toolsets(
        &self,
        custom: &BTreeMap<String, crate::config::ToolsetDef>,
    ) -> Vec<crate::tools::toolsets::ToolsetInfo> {
        crate::tools::toolsets::describe(custom, &self.members())
    }

    /// Each tool's toolset and whether its requirements are met under `config`.
    pub fn statuses(&self, config: &Config) -> Vec<ToolStatus> {
        self.tools
            .iter()
            .map(|(name, tool)| ToolStatus {
                name: name.clone(),
                toolset: tool.toolset().to_string(),
                available: tool.check_available(config),
            })
            .collect()
    }

    /// The subset of these tools in the enabled toolsets whose requirements are met (sessions
    /// pick theirs from the registry `Services` discovered once).
    pub fn select(&self, config: &Config, toolsets: &[String]) -> Result<Self, ToolsetError> {
        let wanted = self.resolve_toolsets(toolsets, &config.custom_toolsets)?;
        // `hermes tools disable` (agent.disabled_toolsets / agent.disabled_tools).
        let disabled = config.disabled_tools(self);
        let mut tools = BTreeMap::new();
        for (name, tool) in &self.tools {
            if !wanted.contains(name) || disabled.contains(name) {
                continue;
            }
            match tool.check_available(config) {
                Ok(()) => {
                    tools.insert(name.clone(), tool.clone());
                }
                Err(reason) => tracing::info!(tool = %name, %reason, "tool not offered"),
            }
        }
        Ok(ToolRegistry { tools })
    }

    /// Keeps only the tools `keep` accepts (a child's tools: blocked ones removed).
    pub fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        self.tools.retain(|name, _| keep(name));
    }

    pub fn names(&self) -> Vec<&str> {
        self.tools.keys().map(String::as_str).collect()
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Schemas in a stable (sorted) order, so the request prefix stays byte-identical.
    pub fn schemas(&self) -> Vec<ToolSchema> {
        self.tools.values().map(|t| t.schema()).collect()
    }

    /// True when every call names a known read-only tool (then they may run concurrently).
    pub fn all_read_only(&self, calls: &[ToolCall]) -> bool {
        calls.iter().all(|c| {
            self.tools
                .get(c.name.as_str())
                .is_some_and(|t| t.read_only())
        })
    }

    /// Runs one call. Never panics and never fails: every problem becomes a readable result.
    pub async fn dispatch(&self, call: &ToolCall, ctx: &ToolContext) -> ToolOutput {
        let Some(tool) = self.tools.get(call.name.as_str()) else {
            return ToolOutput {
                content: error_json(&format!(
                    "unknown tool `{}`; available tools: {}",
                    call.name,
                    self.names().join(", ")
                )),
                is_error: true,
                fatal: false,
            };
        };
        let mut ctx = ctx.clone();
        ctx.call_id = call.id.clone();
        // A panic inside the tool stays inside this call (see `crate::panics`).
        let result = tokio::select! {
            r = crate::panics::catch(tool.call(&call.arguments, &ctx)) => r.unwrap_or_else(|panic| {
                tracing::error!(tool = %call.name, %panic, "tool panicked; the call fails, the turn goes on");
                Err(ToolError::Respond(format!(
                    "the tool `{}` crashed inside hermes ({panic}); this is a hermes bug, not a problem with the arguments — try another way",
                    call.name
                )))
            }),
            _ = ctx.cancel.cancelled() => Err(ToolError::Cancelled),
        };
        // Secrets never leave a tool: not into the spill file, the transcript or the model.
        let redactor = &ctx.shield.redactor;
        match result {
            Ok(text) => ToolOutput {
                content: spill_if_large(redactor.redact_string(text), &ctx).await,
                is_error: false,
                fatal: false,
            },
            Err(ToolError::Respond(msg)) => ToolOutput {
                content: error_json(&redactor.redact(&msg)),
                is_error: true,
                fatal: false,
            },
            Err(ToolError::Fatal(msg)) => ToolOutput {
                content: error_json(&redactor.redact(&msg)),
                is_error: true,
                fatal: true,
            },
            Err(ToolError::Cancelled) => ToolOutput {
                content: error_json("interrupted by the user before the tool finished"),
                is_error: true,
                fatal: false,
            },
        }
    }
}

/// `{"error": "..."}`, the shape Python Hermes tools use for failures.
pub fn error_json(message: &str) -> String {
    serde_json::json!({ "error": message }).to_string()
}

/// A too-large result is spilled to a file off the async runtime (a slow disk must not stall
/// other chats); others pass through untouched.
async fn spill_if_large(text: String, ctx: &ToolContext) -> String {
    if text.len() <= MAX_RESULT_CHARS {
        return text;
    }
    let (dir, call_id) = (ctx.config.home.tool_results_dir(), ctx.call_id.clone());
    crate::util::offload::offload("spill a large tool result", move || {
        cap_result(text, &dir, &call_id)
    })
    .await
    .unwrap_or_else(|e| error_json(&e.to_string()))
}

/// Spills a too-large result to `$HERMES_HOME/cache/tool-results/` and returns a preview + path.
fn cap_result(text: String, dir: &std::path::Path, call_id: &str) -> String {
    let chars = text.chars().count();
    if chars <= MAX_RESULT_CHARS {
        return text;
    }
    let safe_id: String = call_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    let safe_id = if safe_id.is_empty() {
        format!("result-{}", rand::random::<u32>())
    } else {
        safe_id
    };
    let path = dir.join(format!("{safe_id}.txt"));
    let preview = crate::util::truncate_chars(&text, PREVIEW_CHARS);
    let saved = std::fs::create_dir_all(dir)
        .and_then(|()| crate::util::atomic_write(&path, text.as_bytes()));
    match saved {
        Ok(()) => format!(
            "<persisted-output>\nThe result was {chars} characters, too large to include. It was saved to {}.\nRead it with read_file (offset/limit) or search it with search_files.\n\nFirst {PREVIEW_CHARS} characters:\n{preview}\n</persisted-output>",
            path.display()
        ),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "cannot spill tool result");
            let head = crate::util::truncate_chars(&text, MAX_RESULT_CHARS);
            format!(
                "{head}\n[truncated: the result had {chars} characters and could not be saved: {e}]"
            )
        }
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolsetError {
    #[error("unknown toolset `{0}`; known toolsets: {1}")]
    Unknown(String, String),
    #[error("toolsets include each other in a cycle: {0}; fix `custom_toolsets` in config.yaml")]
    Cycle(String),
}

#[cfg(test)]
#[path = "registry_tests.rs"]
mod tests;
