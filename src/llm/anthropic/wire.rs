//! The request body of the Anthropic Messages API, built from our `ChatRequest`.
//!
//! Anthropic is stricter than chat completions, so the conversion repairs what would be rejected
//! rather than failing the turn:
//! - the system prompt is a top-level array of text blocks, not a message;
//! - tool results are `tool_result` blocks in a *user* message right after the assistant message
//!   that made the calls; consecutive results (and a user message that follows them) are merged
//!   into one user message, results first, as the API requires;
//! - a call without a recorded result (an interrupted turn) gets an error result, and a result
//!   whose call is not in the previous assistant message becomes plain text, so history damaged by
//!   a crash never makes every later request fail;
//! - tool-call arguments become the `input` object; arguments that are not a JSON object (the
//!   model wrote invalid JSON, and the tool result already told it so) are sent as
//!   `{"_invalid_json": "<raw text>"}` so the model still sees what it wrote;
//! - tool ids are restricted to `[A-Za-z0-9_-]` (ids from other providers, e.g. after a fallback,
//!   may contain `.` or `:`), identically on both sides of a call;
//! - empty texts, which the API rejects, become `(empty)` (`(no output)` for a tool result);
//!   empty assistant messages are dropped; a conversation that opens with the assistant (after
//!   compaction) gets a short user opener;
//! - the Messages API has no system role inside the conversation, so a system message in the
//!   history is sent as user text;
//! - a request without `tools` (the budget summary, which must not call tools) may not carry
//!   `tool_use` / `tool_result` blocks — the API rejects them ("Requests which include
//!   `tool_use` or `tool_result` blocks must define tools") — so past calls and their results
//!   are sent as text then.
//!
//! Reasoning is never sent back as text. Thinking blocks are replayed only as the provider signed
//! them (see `ThinkingMemory` in the parent module), which is what tool use with extended
//! thinking requires.
//!
//! The body is a `serde_json::Value` (sorted keys): the same request always gives the same bytes.

use serde_json::{Map, Value, json};

use crate::llm::prompt_cache::{self, CacheTtl};
use crate::llm::{ChatRequest, Message, Role, ToolSchema};

/// Placeholder for text the API would reject as empty.
const EMPTY: &str = "(empty)";

/// Builds the `/v1/messages` body. `thinking_for` returns the signed thinking blocks recorded for
/// an assistant message's first tool call id, if any.
pub(super) fn request_body(
    request: &ChatRequest,
    model: &str,
    cache: Option<CacheTtl>,
    thinking_for: &dyn Fn(&str) -> Option<Vec<Value>>,
) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert(
        "max_tokens".into(),
        json!(
            request
                .max_tokens
                .unwrap_or_else(|| default_max_tokens(model))
        ),
    );
    if !request.system.is_empty() {
        body.insert(
            "system".into(),
            json!([{"type": "text", "text": request.system}]),
        );
    }
    body.insert(
        "messages".into(),
        Value::Array(convert_messages(
            &request.messages,
            thinking_for,
            !request.tools.is_empty(),
        )),
    );
    if !request.tools.is_empty() {
        body.insert(
            "tools".into(),
            Value::Array(request.tools.iter().map(wire_tool).collect()),
        );
    }
    if let Some(t) = request.temperature {
        body.insert("temperature".into(), float(t));
    }
    body.insert("stream".into(), json!(true));
    let mut body = Value::Object(body);
    if let Some(ttl) = cache {
        prompt_cache::apply_anthropic(&mut body, ttl);
    }
    body
}

/// `max_tokens` is required by the API and must not exceed the model's output limit, so when the
/// caller sets none we use the model family's limit (conservative for unknown models, which are
/// mostly third-party models behind Anthropic-compatible gateways).
pub(super) fn default_max_tokens(model: &str) -> u32 {
    let m = model.to_ascii_lowercase();
    let claude_3_5 = m.contains("claude-3-5") || m.contains("claude-3.5");
    if !m.contains("claude") || claude_3_5 {
        8_192
    } else if m.contains("claude-3-7") || m.contains("claude-3.7") {
        64_000
    } else if m.contains("claude-3") {
        4_096
    } else if m.contains("opus-4-0") || m.contains("opus-4-1") || m.contains("opus-4-2025") {
        32_000
    } else {
        64_000
    }
}

/// An f32 as the decimal a person would write (0.7, not 0.699999988079071).
fn float(value: f32) -> Value {
    value
        .to_string()
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(Value::Null, Value::Number)
}

fn wire_tool(tool: &ToolSchema) -> Value {
    let mut schema = match &tool.parameters {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    // The API requires an object schema; a tool without parameters still needs one.
    schema.entry("type").or_insert_with(|| json!("object"));
    if schema.get("type") == Some(&json!("object")) {
        schema.entry("properties").or_insert_with(|| json!({}));
    }
    json!({
        "name": tool.name,
        "description": tool.description,
        "input_schema": Value::Object(schema),
    })
}

/// A tool id the API accepts (`^[a-zA-Z0-9_-]+$`).
pub(super) fn tool_id(raw: &str) -> String {
    let id: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if id.is_empty() {
        "toolu_missing_id".to_string()
    } else {
        id
    }
}

/// A tool call's arguments as the `input` object.
pub(super) fn tool_input(arguments: &str) -> Value {
    if arguments.trim().is_empty() {
        return json!({});
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(value @ Value::Object(_)) => value,
        _ => json!({ "_invalid_json": arguments }),
    }
}

fn text_block(text: &str) -> Value {
    json!({"type": "text", "text": if text.is_empty() { EMPTY } else { text }})
}

/// Converts the history; see the module docs for the repairs.
fn convert_messages(
    messages: &[Message],
    thinking_for: &dyn Fn(&str) -> Option<Vec<Value>>,
    tools_offered: bool,
) -> Vec<Value> {
    let mut out = Conversation {
        calls_as_text: !tools_offered,
        ..Conversation::default()
    };
    for message in messages {
        match message.role {
            Role::Tool => out.tool_result(message),
            Role::User | Role::System => {
                out.flush_pending();
                out.push("user", text_block(message.wire_content().unwrap_or("")));
            }
            Role::Assistant => {
                out.flush_pending();
                out.assistant(message, thinking_for);
            }
        }
    }
    out.flush_pending();
    let mut messages = out.messages;
    if messages.first().and_then(|m| m.get("role")) == Some(&json!("assistant")) {
        // The API wants the conversation to open with the user (after compaction it may not).
        messages.insert(
            0,
            json!({"role": "user", "content": [text_block("(conversation continues)")]}),
        );
    }
    messages
}

#[derive(Default)]
struct Conversation {
    messages: Vec<Value>,
    /// Tool-use ids of the last assistant message that still need a result.
    pending: Vec<String>,
    /// No tools in the request: calls (and so their results) are written as text.
    calls_as_text: bool,
}

impl Conversation {
    /// Appends a block to the last message when it has the same role, else starts a message.
    /// In a user message, `tool_result` blocks are kept before any other block.
    fn push(&mut self, role: &str, block: Value) {
        let is_result = block.get("type") == Some(&json!("tool_result"));
        if let Some(last) = self.messages.last_mut()
            && last.get("role") == Some(&json!(role))
            && let Some(blocks) = last.get_mut("content").and_then(Value::as_array_mut)
        {
            if is_result {
                let at = blocks
                    .iter()
                    .take_while(|b| b.get("type") == Some(&json!("tool_result")))
                    .count();
                blocks.insert(at, block);
            } else {
                blocks.push(block);
            }
            return;
        }
        self.messages
            .push(json!({"role": role, "content": [block]}));
    }

    fn assistant(&mut self, message: &Message, thinking_for: &dyn Fn(&str) -> Option<Vec<Value>>) {
        let mut blocks = Vec::new();
        if let Some(first) = message.tool_calls.first()
            && !self.calls_as_text
            && let Some(thinking) = thinking_for(&first.id)
        {
            blocks.extend(thinking);
        }
        if let Some(text) = message.wire_content().filter(|t| !t.trim().is_empty()) {
            blocks.push(json!({"type": "text", "text": text}));
        }
        if self.calls_as_text {
            // Results find no pending call and become text too (`tool_result`).
            for call in &message.tool_calls {
                blocks.push(text_block(&format!(
                    "[called {} {}: {}]",
                    call.name,
                    tool_id(&call.id),
                    call.arguments
                )));
            }
        }
        for call in message.tool_calls.iter().filter(|_| !self.calls_as_text) {
            let id = tool_id(&call.id);
            blocks.push(json!({
                "type": "tool_use",
                "id": id,
                "name": call.name,
                "input": tool_input(&call.arguments),
            }));
            self.pending.push(id);
        }
        if blocks.is_empty() {
            return;
        }
        self.messages
            .push(json!({"role": "assistant", "content": blocks}));
    }

    fn tool_result(&mut self, message: &Message) {
        let id = tool_id(message.tool_call_id.as_deref().unwrap_or(""));
        let content = message.wire_content().unwrap_or("");
        if let Some(at) = self.pending.iter().position(|p| *p == id) {
            self.pending.remove(at);
            let content = if content.is_empty() {
                "(no output)"
            } else {
                content
            };
            self.push(
                "user",
                json!({"type": "tool_result", "tool_use_id": id, "content": content}),
            );
        } else {
            // No matching call right before it: keep the information as text.
            let name = message.tool_name.as_deref().unwrap_or("tool");
            self.push(
                "user",
                text_block(&format!("[result of {name} call {id}]\n{content}")),
            );
        }
    }

    /// Gives every still-unanswered call an error result, right after its assistant message.
    fn flush_pending(&mut self) {
        for id in std::mem::take(&mut self.pending) {
            self.push(
                "user",
                json!({
                    "type": "tool_result",
                    "tool_use_id": id,
                    "content": "no result was recorded for this call (the turn was interrupted)",
                    "is_error": true,
                }),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolCall;

    fn call(id: &str, name: &str, args: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: args.into(),
        }
    }

    fn request(messages: Vec<Message>) -> ChatRequest {
        ChatRequest {
            model: "claude-sonnet-4-5".into(),
            system: "You are Hermes.".into(),
            messages,
            tools: vec![ToolSchema {
                name: "read_file".into(),
                description: "Read a file".into(),
                parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            }],
            max_tokens: None,
            temperature: Some(0.7),
        }
    }

    fn no_thinking(_: &str) -> Option<Vec<Value>> {
        None
    }

    #[test]
    fn a_request_without_tools_carries_no_tool_blocks() {
        let a = call("toolu_1", "read_file", r#"{"path":"a.txt"}"#);
        let mut req = request(vec![
            Message::user("read it"),
            Message::assistant(None, vec![a.clone()]),
            Message::tool_result(&a, "alpha"),
            Message::user("[budget used up: summarise]"),
        ]);
        req.tools.clear();
        let thinking = |_: &str| {
            Some(vec![
                json!({"type": "thinking", "thinking": "t", "signature": "s"}),
            ])
        };
        let body = request_body(&req, "claude-sonnet-4-5", None, &thinking);
        let text = body.to_string();
        assert!(body.get("tools").is_none());
        for banned in ["tool_use", "tool_result", "\"thinking\""] {
            assert!(!text.contains(banned), "{banned} in {text}");
        }
        // What happened is still there, as text, in alternating roles.
        assert!(
            text.contains("read_file") && text.contains("alpha"),
            "{text}"
        );
        let roles: Vec<&str> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["user", "assistant", "user"]);
    }

    #[test]
    fn full_body_shape() {
        let a = call("toolu_1", "read_file", r#"{"path":"a.txt"}"#);
        let b = call("toolu_2", "read_file", r#"{"path":"b.txt"}"#);
        let mut user = Message::user("read both");
        user.api_content = Some("read both\n<memory-context>m</memory-context>".into());
        let req = request(vec![
            user,
            Message::assistant(Some("Reading.".into()), vec![a.clone(), b.clone()]),
            Message::tool_result(&a, "alpha"),
            Message::tool_result(&b, ""),
            Message::user("and now?"),
            Message::assistant(Some("Done.".into()), vec![]),
        ]);
        let body = request_body(&req, "claude-sonnet-4-5", None, &no_thinking);
        let text = serde_json::to_string(&body).unwrap();
        let body: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            body,
            json!({
                "model": "claude-sonnet-4-5",
                "max_tokens": 64000,
                "system": [{"type": "text", "text": "You are Hermes."}],
                "messages": [
                    {"role": "user", "content": [{"type": "text",
                        "text": "read both\n<memory-context>m</memory-context>"}]},
                    {"role": "assistant", "content": [
                        {"type": "text", "text": "Reading."},
                        {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.txt"}},
                        {"type": "tool_use", "id": "toolu_2", "name": "read_file", "input": {"path": "b.txt"}},
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "alpha"},
                        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "(no output)"},
                        {"type": "text", "text": "and now?"},
                    ]},
                    {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
                ],
                "tools": [{"name": "read_file", "description": "Read a file",
                           "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}],
                "temperature": 0.7,
                "stream": true,
            })
        );
        assert!(text.contains("\"temperature\":0.7"), "{text}");
        let again =
            serde_json::to_string(&request_body(&req, "claude-sonnet-4-5", None, &no_thinking))
                .unwrap();
        assert_eq!(text, again, "the same request gives the same bytes");
    }

    #[test]
    fn damaged_history_is_repaired() {
        let a = call("functions.read_file:0", "read_file", "{not json");
        let orphan = call("gone", "terminal", "{}");
        let req = request(vec![
            Message::assistant(None, vec![a.clone(), call("", "todo", "")]),
            Message::tool_result(&a, "error: invalid JSON arguments"),
            Message::tool_result(&orphan, "stale output"),
            Message::user(""),
            Message::assistant(Some("  ".into()), vec![]),
        ]);
        let body = request_body(&req, "claude-x", None, &no_thinking);
        let m = body["messages"].as_array().unwrap();
        assert_eq!(
            m[0]["role"], "user",
            "a leading assistant gets a user opener"
        );
        let calls = &m[1]["content"];
        assert_eq!(calls[0]["id"], "functions_read_file_0");
        assert_eq!(calls[0]["input"], json!({"_invalid_json": "{not json"}));
        assert_eq!(calls[1]["id"], "toolu_missing_id");
        assert_eq!(calls[1]["input"], json!({}));
        let results = m[2]["content"].as_array().unwrap();
        assert_eq!(results[0]["tool_use_id"], "functions_read_file_0");
        assert_eq!(results[1]["tool_use_id"], "toolu_missing_id");
        assert_eq!(results[1]["is_error"], true);
        assert_eq!(results[2]["type"], "text");
        assert!(
            results[2]["text"]
                .as_str()
                .unwrap()
                .contains("stale output")
        );
        assert_eq!(results[3], json!({"type": "text", "text": "(empty)"}));
        assert_eq!(m.len(), 3, "the blank assistant message is dropped");
    }

    #[test]
    fn signed_thinking_is_replayed_before_tool_use() {
        let a = call("toolu_9", "read_file", "{}");
        let req = request(vec![
            Message::user("go"),
            Message::assistant(None, vec![a.clone()]),
            Message::tool_result(&a, "ok"),
        ]);
        let remembered = |id: &str| {
            (id == "toolu_9")
                .then(|| vec![json!({"type": "thinking", "thinking": "plan", "signature": "sig"})])
        };
        let body = request_body(&req, "claude-x", Some(CacheTtl::FiveMinutes), &remembered);
        let blocks = &body["messages"][1]["content"];
        assert_eq!(blocks[0]["type"], "thinking");
        assert_eq!(blocks[0]["signature"], "sig");
        assert_eq!(blocks[1]["type"], "tool_use");
        assert_eq!(blocks[1]["cache_control"]["type"], "ephemeral");
        assert!(blocks[0].get("cache_control").is_none());
        assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
    }

    #[test]
    fn tools_get_object_schemas_and_limits_fit_models() {
        let mut req = request(vec![Message::user("x")]);
        req.tools[0].parameters = Value::Null;
        req.system.clear();
        req.temperature = None;
        req.max_tokens = Some(100);
        let body = request_body(&req, "m", None, &no_thinking);
        assert_eq!(
            body["tools"][0]["input_schema"],
            json!({"type": "object", "properties": {}})
        );
        assert!(body.get("system").is_none() && body.get("temperature").is_none());
        assert_eq!(body["max_tokens"], 100);
        assert_eq!(default_max_tokens("claude-3-haiku-20240307"), 4_096);
        assert_eq!(default_max_tokens("claude-3-5-sonnet-latest"), 8_192);
        assert_eq!(default_max_tokens("claude-opus-4-1-20250805"), 32_000);
        assert_eq!(default_max_tokens("claude-sonnet-4-5"), 64_000);
        assert_eq!(default_max_tokens("MiniMax-M2"), 8_192);
    }
}
