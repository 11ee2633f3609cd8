//! The crate's own conversation types: `Message`, `ToolCall`, `ChatRequest`, `LlmEvent`, `Usage`.
//!
//! These are richer than any one wire format; `openai.rs` (and later `anthropic.rs`) convert at the
//! boundary. Nothing outside `src/llm/` sees an SDK type.

use serde::{Deserialize, Serialize};

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }

    /// Parses the `messages.role` column; unknown roles are `None`.
    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "system" => Some(Role::System),
            "user" => Some(Role::User),
            "assistant" => Some(Role::Assistant),
            "tool" => Some(Role::Tool),
            _ => None,
        }
    }
}

/// One function call requested by the model. `arguments` is the raw JSON text the model produced:
/// it may be invalid, and the registry reports that back to the model rather than failing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// OpenAI's shape of a tool call, which is also how state.db stores `messages.tool_calls`.
#[derive(Serialize, Deserialize)]
struct WireToolCall {
    id: String,
    #[serde(rename = "type", default = "function_type")]
    kind: String,
    function: WireFunction,
}

#[derive(Serialize, Deserialize)]
struct WireFunction {
    name: String,
    #[serde(default)]
    arguments: String,
}

fn function_type() -> String {
    "function".to_string()
}

impl ToolCall {
    /// `[{"id", "type": "function", "function": {"name", "arguments"}}]`, the OpenAI shape.
    pub fn list_to_json(calls: &[ToolCall]) -> String {
        let wire: Vec<WireToolCall> = calls
            .iter()
            .map(|c| WireToolCall {
                id: c.id.clone(),
                kind: function_type(),
                function: WireFunction {
                    name: c.name.clone(),
                    arguments: c.arguments.clone(),
                },
            })
            .collect();
        serde_json::to_string(&wire).unwrap_or_else(|_| "[]".to_string())
    }

    /// Inverse of [`ToolCall::list_to_json`]; also accepts the Python Hermes rows.
    pub fn list_from_json(text: &str) -> Result<Vec<ToolCall>, serde_json::Error> {
        let wire: Vec<WireToolCall> = serde_json::from_str(text)?;
        Ok(wire
            .into_iter()
            .map(|w| ToolCall {
                id: w.id,
                name: w.function.name,
                arguments: w.function.arguments,
            })
            .collect())
    }
}

/// One message of a conversation as the agent keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub role: Role,
    /// Text content; `None` for an assistant message that only calls tools.
    pub content: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    /// For `Role::Tool`: the call this result answers.
    pub tool_call_id: Option<String>,
    /// For `Role::Tool`: the tool that produced it.
    pub tool_name: Option<String>,
    /// Reasoning text the provider returned alongside the answer (not sent back).
    pub reasoning: Option<String>,
    /// When set, this is what goes on the wire instead of `content` (e.g. memory context appended to
    /// a user message). Persisted so a resumed session replays identical bytes.
    pub api_content: Option<String>,
    pub finish_reason: Option<String>,
    /// The chat platform's id of the message this came from (gateway), so a replayed update
    /// is recognised instead of being answered twice. Stored in `messages.platform_message_id`.
    pub platform_message_id: Option<String>,
}

impl Message {
    fn bare(role: Role, content: Option<String>) -> Self {
        Message {
            role,
            content,
            tool_calls: Vec::new(),
            tool_call_id: None,
            tool_name: None,
            reasoning: None,
            api_content: None,
            finish_reason: None,
            platform_message_id: None,
        }
    }

    pub fn user(text: impl Into<String>) -> Self {
        Self::bare(Role::User, Some(text.into()))
    }

    pub fn system(text: impl Into<String>) -> Self {
        Self::bare(Role::System, Some(text.into()))
    }

    pub fn assistant(text: Option<String>, tool_calls: Vec<ToolCall>) -> Self {
        let mut m = Self::bare(Role::Assistant, text);
        m.tool_calls = tool_calls;
        m
    }

    pub fn tool_result(call: &ToolCall, output: impl Into<String>) -> Self {
        let mut m = Self::bare(Role::Tool, Some(output.into()));
        m.tool_call_id = Some(call.id.clone());
        m.tool_name = Some(call.name.clone());
        m
    }

    /// The text that is sent to the provider for this message.
    pub fn wire_content(&self) -> Option<&str> {
        self.api_content.as_deref().or(self.content.as_deref())
    }
}

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSchema {
    pub name: String,
    pub description: String,
    /// JSON schema of the arguments object.
    pub parameters: serde_json::Value,
}

/// Everything needed for one model call. The system prompt is separate from `messages` because
/// it is frozen per session and some wire formats carry it outside the message list.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    pub model: String,
    pub system: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSchema>,
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
}

/// Token counts reported by the provider for one call (or summed over several).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    pub reasoning_tokens: u64,
}

impl Usage {
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
    }

    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}

/// The complete result of one model call.
#[derive(Debug, Clone)]
pub struct LlmResponse {
    /// The assistant message: text and/or whole (assembled) tool calls.
    pub message: Message,
    pub usage: Usage,
    /// Model name the provider reported, if any.
    pub model: Option<String>,
}

/// What a streaming call yields. The stream always ends with exactly one `Done` on success.
// `Done` is large but arrives once per call, after many small deltas: boxing it would only add
// an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum LlmEvent {
    TextDelta(String),
    ReasoningDelta(String),
    /// The model started a tool call (name known; arguments still streaming).
    ToolCallStart {
        index: usize,
        id: String,
        name: String,
    },
    Done(LlmResponse),
}
