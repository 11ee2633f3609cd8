//! The JSON shapes of the chat completions API, as our own serde types: the request body we send,
//! and the stream chunks / whole completions we accept back.
//!
//! Sending is strict and deterministic (fixed field order; the same `ChatRequest` always gives the
//! same bytes, which keeps provider prompt caches warm). Receiving is lenient: every field is
//! optional and non-standard values (`finish_reason: "eos"`, `reasoning_content`, numbers sent as
//! floats, arguments sent as objects) are accepted, because local servers vary widely.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::llm::{ChatRequest, FailoverReason, LlmError, Message, Role, Usage};

// ---------------------------------------------------------------------------------------------
// Request

#[derive(Debug, Serialize)]
pub(super) struct RequestBody<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
}

#[derive(Debug, Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Debug, Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    /// Always present; `null` only for an assistant message that just calls tools.
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<WireToolCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

#[derive(Debug, Serialize)]
struct WireToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Debug, Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    arguments: &'a str,
}

#[derive(Debug, Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireToolFunction<'a>,
}

#[derive(Debug, Serialize)]
struct WireToolFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

/// The body for one call. The frozen system prompt goes first; `stream_options.include_usage` is
/// requested when streaming so token accounting works.
pub(super) fn request_body<'a>(
    request: &'a ChatRequest,
    model: &'a str,
    stream: bool,
) -> RequestBody<'a> {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if !request.system.is_empty() {
        messages.push(WireMessage {
            role: Role::System.as_str(),
            content: Some(&request.system),
            tool_calls: Vec::new(),
            tool_call_id: None,
        });
    }
    messages.extend(request.messages.iter().map(wire_message));
    RequestBody {
        model,
        messages,
        tools: request
            .tools
            .iter()
            .map(|t| WireTool {
                kind: "function",
                function: WireToolFunction {
                    name: &t.name,
                    description: &t.description,
                    parameters: &t.parameters,
                },
            })
            .collect(),
        stream,
        stream_options: stream.then_some(StreamOptions {
            include_usage: true,
        }),
        max_tokens: request.max_tokens,
        temperature: request.temperature,
    }
}

fn wire_message(message: &Message) -> WireMessage<'_> {
    let content = message.wire_content();
    let tool_calls: Vec<WireToolCall<'_>> = if message.role == Role::Assistant {
        message
            .tool_calls
            .iter()
            .map(|c| WireToolCall {
                id: &c.id,
                kind: "function",
                function: WireFunction {
                    name: &c.name,
                    arguments: &c.arguments,
                },
            })
            .collect()
    } else {
        Vec::new()
    };
    // Only a tool-calling assistant message may have null content; strict servers reject null
    // anywhere else, so other messages fall back to "".
    let content = match content {
        None if !tool_calls.is_empty() => None,
        other => Some(other.unwrap_or("")),
    };
    WireMessage {
        role: message.role.as_str(),
        content,
        tool_calls,
        tool_call_id: if message.role == Role::Tool {
            Some(message.tool_call_id.as_deref().unwrap_or(""))
        } else {
            None
        },
    }
}

// ---------------------------------------------------------------------------------------------
// Responses

/// One `chat.completion.chunk` (or an error object sent in its place).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Chunk {
    pub model: Option<String>,
    pub choices: Option<Vec<ChunkChoice>>,
    pub usage: Option<WireUsage>,
    pub error: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct ChunkChoice {
    pub index: Option<u64>,
    pub delta: Option<Delta>,
    pub finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Delta {
    pub content: Option<String>,
    /// DeepSeek, vLLM, llama.cpp.
    pub reasoning_content: Option<Value>,
    /// OpenRouter and some gateways.
    pub reasoning: Option<Value>,
    pub tool_calls: Option<Vec<ToolCallDelta>>,
}

impl Chunk {
    /// Bytes of answer this chunk carries: text, reasoning and tool-call arguments.
    pub fn payload_len(&self) -> usize {
        let delta_len = |d: &Delta| {
            let calls: usize = d
                .tool_calls
                .iter()
                .flatten()
                .filter_map(|c| c.function.as_ref()?.arguments.as_ref())
                .map(|a| a.as_str().map_or_else(|| a.to_string().len(), str::len))
                .sum();
            d.content.as_ref().map_or(0, String::len)
                + d.reasoning_text().map_or(0, str::len)
                + calls
        };
        self.choices
            .iter()
            .flatten()
            .filter_map(|c| c.delta.as_ref())
            .map(delta_len)
            .sum()
    }
}

impl Delta {
    pub fn reasoning_text(&self) -> Option<&str> {
        [&self.reasoning_content, &self.reasoning]
            .into_iter()
            .find_map(|v| v.as_ref().and_then(Value::as_str))
            .filter(|s| !s.is_empty())
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct ToolCallDelta {
    pub index: Option<u64>,
    pub id: Option<String>,
    pub function: Option<FunctionDelta>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct FunctionDelta {
    pub name: Option<String>,
    /// Normally a string fragment; some servers send the whole arguments object.
    pub arguments: Option<Value>,
}

impl FunctionDelta {
    pub fn arguments_text(&self) -> Option<String> {
        match self.arguments.as_ref()? {
            Value::Null => None,
            Value::String(s) => Some(s.clone()),
            other => Some(other.to_string()),
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct WireUsage {
    #[serde(deserialize_with = "lenient_count")]
    pub prompt_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient_count")]
    pub completion_tokens: Option<u64>,
    pub prompt_tokens_details: Option<PromptDetails>,
    pub completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct PromptDetails {
    #[serde(deserialize_with = "lenient_count")]
    pub cached_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient_count")]
    pub cache_write_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct CompletionDetails {
    #[serde(deserialize_with = "lenient_count")]
    pub reasoning_tokens: Option<u64>,
}

impl WireUsage {
    pub fn to_usage(&self) -> Usage {
        let prompt = self.prompt_tokens_details.as_ref();
        Usage {
            input_tokens: self.prompt_tokens.unwrap_or(0),
            output_tokens: self.completion_tokens.unwrap_or(0),
            cache_read_tokens: prompt.and_then(|p| p.cached_tokens).unwrap_or(0),
            cache_write_tokens: prompt.and_then(|p| p.cache_write_tokens).unwrap_or(0),
            reasoning_tokens: self
                .completion_tokens_details
                .as_ref()
                .and_then(|c| c.reasoning_tokens)
                .unwrap_or(0),
        }
    }
}

/// Token counts as any JSON number (some servers send `12.0`), or null. Negative counts are 0.
fn lenient_count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let value = Option::<Value>::deserialize(d)?;
    Ok(value.and_then(|v| {
        v.as_u64().or_else(|| {
            v.as_f64().map(|f| {
                if f.is_finite() && f > 0.0 {
                    f as u64
                } else {
                    0
                }
            })
        })
    }))
}

/// A whole (non-streamed) `chat.completion`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Completion {
    pub model: Option<String>,
    pub choices: Option<Vec<CompletionChoice>>,
    pub usage: Option<WireUsage>,
    pub error: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct CompletionChoice {
    pub message: Option<CompletionMessage>,
    pub finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct CompletionMessage {
    /// A string, or (some gateways) an array of `{type: "text", text}` parts.
    pub content: Option<Value>,
    pub reasoning_content: Option<Value>,
    pub reasoning: Option<Value>,
    pub tool_calls: Option<Vec<ToolCallDelta>>,
}

impl Completion {
    /// Recasts the completion as the single chunk a stream would have carried, so one assembler
    /// handles both modes (text tool calls, ids, events) identically.
    pub fn into_chunk(self) -> Chunk {
        let choices = self.choices.map(|choices| {
            choices
                .into_iter()
                .take(1)
                .map(|choice| {
                    let message = choice.message.unwrap_or_default();
                    let tool_calls = message.tool_calls.map(|calls| {
                        calls
                            .into_iter()
                            .enumerate()
                            .map(|(i, mut c)| {
                                c.index = Some(i as u64);
                                c
                            })
                            .collect()
                    });
                    ChunkChoice {
                        index: Some(0),
                        delta: Some(Delta {
                            content: message.content.as_ref().and_then(content_text),
                            reasoning_content: message.reasoning_content,
                            reasoning: message.reasoning,
                            tool_calls,
                        }),
                        finish_reason: choice.finish_reason,
                    }
                })
                .collect()
        });
        Chunk {
            model: self.model,
            choices,
            usage: self.usage,
            error: self.error,
        }
    }
}

fn content_text(content: &Value) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let text: String = parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect();
            Some(text)
        }
        _ => None,
    }
}

/// An `error` object from the body of a chunk or completion. Its `code` (or `status`) is used as
/// the HTTP status when it looks like one, so classification matches an HTTP-level failure.
pub(super) fn error_from_object(error: &Value) -> LlmError {
    let status = ["code", "status"]
        .iter()
        .filter_map(|k| error.get(k))
        .find_map(|v| {
            v.as_u64()
                .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
        })
        .filter(|s| (400..600).contains(s))
        .and_then(|s| u16::try_from(s).ok());
    let body = serde_json::json!({ "error": error }).to_string();
    let mut err = LlmError::new(
        crate::llm::error::classify(status, &body),
        format!("the provider reported an error: {body}"),
    );
    err.status = status;
    if err.reason == FailoverReason::Unknown && status.is_none() {
        // A mid-stream error without any status is most often an upstream hiccup.
        err.reason = FailoverReason::ServerError;
    }
    err
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{ToolCall, ToolSchema};
    use serde_json::json;

    fn sample_request() -> ChatRequest {
        let call = ToolCall {
            id: "call_1".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"a.txt"}"#.into(),
        };
        let mut user = Message::user("hi");
        user.api_content = Some("hi\n<memory-context>x</memory-context>".into());
        ChatRequest {
            model: "m".into(),
            system: "You are Hermes.".into(),
            messages: vec![
                user,
                Message::assistant(None, vec![call.clone()]),
                Message::tool_result(&call, "file body"),
                Message::assistant(Some("done".into()), vec![]),
            ],
            tools: vec![ToolSchema {
                name: "read_file".into(),
                description: "Read a file".into(),
                parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            }],
            max_tokens: Some(100),
            temperature: Some(0.7),
        }
    }

    #[test]
    fn request_body_shape() {
        let req = sample_request();
        // Through the bytes, as the server sees them (an f32 temperature must read as 0.7).
        let text = serde_json::to_string(&request_body(&req, "m", true)).unwrap();
        let body: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            body,
            json!({
                "model": "m",
                "messages": [
                    {"role": "system", "content": "You are Hermes."},
                    {"role": "user", "content": "hi\n<memory-context>x</memory-context>"},
                    {"role": "assistant", "content": null, "tool_calls": [
                        {"id": "call_1", "type": "function",
                         "function": {"name": "read_file", "arguments": "{\"path\":\"a.txt\"}"}}
                    ]},
                    {"role": "tool", "content": "file body", "tool_call_id": "call_1"},
                    {"role": "assistant", "content": "done"},
                ],
                "tools": [{"type": "function", "function": {
                    "name": "read_file", "description": "Read a file",
                    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}
                }}],
                "stream": true,
                "stream_options": {"include_usage": true},
                "max_tokens": 100,
                "temperature": 0.7,
            })
        );
    }

    #[test]
    fn request_body_is_deterministic_and_omits_empty_parts() {
        let mut req = sample_request();
        let a = serde_json::to_string(&request_body(&req, "m", true)).unwrap();
        let b = serde_json::to_string(&request_body(&req, "m", true)).unwrap();
        assert_eq!(a, b);
        req.tools.clear();
        req.system.clear();
        req.max_tokens = None;
        req.temperature = None;
        let body = serde_json::to_value(request_body(&req, "m", false)).unwrap();
        let obj = body.as_object().unwrap();
        for absent in [
            "tools",
            "tool_choice",
            "stream_options",
            "max_tokens",
            "temperature",
        ] {
            assert!(!obj.contains_key(absent), "{absent} in {body}");
        }
        assert_eq!(body["stream"], false);
        assert_eq!(body["messages"][0]["role"], "user");
    }

    #[test]
    fn lenient_chunks_parse() {
        let chunk: Chunk = serde_json::from_value(json!({
            "choices": [{"delta": {"reasoning": "hmm", "tool_calls": [
                {"function": {"name": "x", "arguments": {"a": 1}}}
            ]}, "finish_reason": "eos"}],
            "usage": {"prompt_tokens": 12.0, "completion_tokens": -3,
                      "prompt_tokens_details": {"cached_tokens": 4},
                      "completion_tokens_details": {"reasoning_tokens": 2}}
        }))
        .unwrap();
        let choice = &chunk.choices.as_ref().unwrap()[0];
        let delta = choice.delta.as_ref().unwrap();
        assert_eq!(delta.reasoning_text(), Some("hmm"));
        let f = delta.tool_calls.as_ref().unwrap()[0]
            .function
            .as_ref()
            .unwrap();
        assert_eq!(f.arguments_text().as_deref(), Some(r#"{"a":1}"#));
        assert_eq!(choice.finish_reason.as_deref(), Some("eos"));
        let usage = chunk.usage.unwrap().to_usage();
        assert_eq!(
            (
                usage.input_tokens,
                usage.output_tokens,
                usage.cache_read_tokens
            ),
            (12, 0, 4)
        );
        assert_eq!(usage.reasoning_tokens, 2);
        let nulls: Chunk = serde_json::from_value(json!({"choices": null, "usage": null})).unwrap();
        assert!(nulls.choices.is_none());
    }

    #[test]
    fn completion_becomes_one_chunk() {
        let completion: Completion = serde_json::from_value(json!({
            "model": "m",
            "choices": [{"message": {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                         "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": "{}"}},
                                        {"id": "c2", "function": {"name": "g", "arguments": "{}"}}]},
                         "finish_reason": "tool_calls"}]
        }))
        .unwrap();
        let chunk = completion.into_chunk();
        let choice = &chunk.choices.unwrap()[0];
        let delta = choice.delta.as_ref().unwrap();
        assert_eq!(delta.content.as_deref(), Some("ab"));
        let indices: Vec<_> = delta
            .tool_calls
            .as_ref()
            .unwrap()
            .iter()
            .map(|c| c.index)
            .collect();
        assert_eq!(indices, vec![Some(0), Some(1)]);
    }

    #[test]
    fn error_objects_classify_like_http() {
        let e = error_from_object(&json!({"code": 429, "message": "Rate limit exceeded"}));
        assert_eq!((e.reason, e.status), (FailoverReason::RateLimit, Some(429)));
        let e = error_from_object(&json!({"message": "maximum context length is 4096"}));
        assert_eq!(e.reason, FailoverReason::ContextOverflow);
        let e = error_from_object(&json!({"code": "server_error", "message": "oops"}));
        assert_eq!((e.reason, e.status), (FailoverReason::ServerError, None));
        assert!(e.body.contains("oops"));
    }
}
