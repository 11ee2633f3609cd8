//! Turns Anthropic Messages stream events into live `LlmEvent`s and one final `LlmResponse`.
//! Pure logic (no I/O), shared by the streaming path and the whole-message fallback.
//!
//! Events: `message_start` (model, first usage) → per content block `content_block_start`,
//! `content_block_delta` (`text_delta`, `input_json_delta`, `thinking_delta`, `signature_delta`),
//! `content_block_stop` → `message_delta` (stop reason, cumulative usage) → `message_stop`.
//! `ping` and unknown event types are ignored (the API adds new ones); `error` ends the call.
//!
//! Usage: Anthropic's `input_tokens` excludes cached tokens, while the rest of the crate (like
//! OpenAI's `prompt_tokens`) counts the whole prompt, so `Usage::input_tokens` here is
//! `input + cache_read + cache_write`, with the cache parts also reported on their own.

use serde_json::{Value, json};

use crate::llm::{FailoverReason, LlmError, LlmEvent, LlmResponse, Message, ToolCall, Usage};

/// One content block being received.
#[derive(Debug)]
enum Block {
    Text,
    ToolUse {
        call: usize,
        /// `input` of the start event, used when no `input_json_delta` follows.
        initial: Value,
        json: String,
    },
    Thinking {
        text: String,
        signature: String,
    },
    RedactedThinking {
        data: String,
    },
    Other,
}

/// Token counts as the API reports them; later reports (cumulative) replace earlier ones.
#[derive(Debug, Default, Clone, Copy)]
struct WireUsage {
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
}

impl WireUsage {
    fn merge(&mut self, usage: &Value) {
        let count = |key: &str| {
            usage.get(key).and_then(|v| {
                v.as_u64().or_else(|| {
                    v.as_f64()
                        .filter(|f| f.is_finite() && *f >= 0.0)
                        .map(|f| f as u64)
                })
            })
        };
        if let Some(v) = count("input_tokens") {
            self.input = v;
        }
        if let Some(v) = count("output_tokens") {
            self.output = v;
        }
        if let Some(v) = count("cache_read_input_tokens") {
            self.cache_read = v;
        }
        if let Some(v) = count("cache_creation_input_tokens") {
            self.cache_write = v;
        }
    }

    fn to_usage(self) -> Usage {
        Usage {
            input_tokens: self
                .input
                .saturating_add(self.cache_read)
                .saturating_add(self.cache_write),
            output_tokens: self.output,
            cache_read_tokens: self.cache_read,
            cache_write_tokens: self.cache_write,
            reasoning_tokens: 0,
        }
    }
}

/// Accumulates one response.
#[derive(Debug, Default)]
pub(super) struct Assembler {
    blocks: Vec<(u64, Block)>,
    text: String,
    reasoning: String,
    calls: Vec<ToolCall>,
    usage: WireUsage,
    model: Option<String>,
    stop_reason: Option<String>,
    stopped: bool,
}

impl Assembler {
    /// Whether the model said it is finished (`message_delta` with a stop reason, or
    /// `message_stop`): the answer is whole even if the connection then dies.
    pub fn is_complete(&self) -> bool {
        self.stopped || self.stop_reason.is_some()
    }

    /// Whether `message_stop` arrived: nothing more is expected.
    pub fn is_stopped(&self) -> bool {
        self.stopped
    }

    /// Folds one event's JSON in, appending the live events it produces to `out`.
    pub fn push(&mut self, data: &Value, out: &mut Vec<LlmEvent>) -> Result<(), LlmError> {
        let kind = data.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "message_start" => {
                let message = data.get("message").unwrap_or(&Value::Null);
                if let Some(model) = message.get("model").and_then(Value::as_str)
                    && !model.is_empty()
                {
                    self.model = Some(model.to_string());
                }
                if let Some(usage) = message.get("usage") {
                    self.usage.merge(usage);
                }
            }
            "content_block_start" => {
                let index = data.get("index").and_then(Value::as_u64).unwrap_or(0);
                let block = data.get("content_block").unwrap_or(&Value::Null);
                self.start_block(index, block, out);
            }
            "content_block_delta" => {
                let index = data.get("index").and_then(Value::as_u64).unwrap_or(0);
                let delta = data.get("delta").unwrap_or(&Value::Null);
                self.delta(index, delta, out);
            }
            "message_delta" => {
                if let Some(reason) = data
                    .pointer("/delta/stop_reason")
                    .and_then(Value::as_str)
                    .filter(|r| !r.is_empty())
                {
                    self.stop_reason = Some(reason.to_string());
                }
                if let Some(usage) = data.get("usage") {
                    self.usage.merge(usage);
                }
            }
            "message_stop" => self.stopped = true,
            "error" => return Err(error_from_event(data)),
            // ping, content_block_stop and event types added after this was written.
            _ => {}
        }
        Ok(())
    }

    fn block(&mut self, index: u64) -> Option<&mut Block> {
        self.blocks
            .iter_mut()
            .rev()
            .find(|(i, _)| *i == index)
            .map(|(_, b)| b)
    }

    fn start_block(&mut self, index: u64, block: &Value, out: &mut Vec<LlmEvent>) {
        let text_of = |key: &str| {
            block
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
        let state = match kind {
            "text" => {
                let text = text_of("text");
                self.push_text(&text, out);
                Block::Text
            }
            "tool_use" => {
                let call = self.calls.len();
                let id = text_of("id");
                let name = text_of("name");
                self.calls.push(ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: String::new(),
                });
                out.push(LlmEvent::ToolCallStart {
                    index: call,
                    id,
                    name,
                });
                Block::ToolUse {
                    call,
                    initial: block.get("input").cloned().unwrap_or(Value::Null),
                    json: String::new(),
                }
            }
            "thinking" => {
                let text = text_of("thinking");
                self.push_reasoning(&text, out);
                Block::Thinking {
                    text,
                    signature: text_of("signature"),
                }
            }
            "redacted_thinking" => Block::RedactedThinking {
                data: text_of("data"),
            },
            _ => Block::Other,
        };
        self.blocks.push((index, state));
    }

    fn delta(&mut self, index: u64, delta: &Value, out: &mut Vec<LlmEvent>) {
        let field = |key: &str| delta.get(key).and_then(Value::as_str).unwrap_or("");
        match delta.get("type").and_then(Value::as_str).unwrap_or("") {
            "text_delta" => {
                let text = field("text").to_string();
                self.push_text(&text, out);
            }
            "input_json_delta" => {
                let piece = field("partial_json").to_string();
                if let Some(Block::ToolUse { json, .. }) = self.block(index) {
                    json.push_str(&piece);
                }
            }
            "thinking_delta" => {
                let piece = field("thinking").to_string();
                if let Some(Block::Thinking { text, .. }) = self.block(index) {
                    text.push_str(&piece);
                }
                self.push_reasoning(&piece, out);
            }
            "signature_delta" => {
                let piece = field("signature").to_string();
                if let Some(Block::Thinking { signature, .. }) = self.block(index) {
                    signature.push_str(&piece);
                }
            }
            _ => {}
        }
    }

    fn push_text(&mut self, text: &str, out: &mut Vec<LlmEvent>) {
        if !text.is_empty() {
            self.text.push_str(text);
            out.push(LlmEvent::TextDelta(text.to_string()));
        }
    }

    fn push_reasoning(&mut self, text: &str, out: &mut Vec<LlmEvent>) {
        if !text.is_empty() {
            self.reasoning.push_str(text);
            out.push(LlmEvent::ReasoningDelta(text.to_string()));
        }
    }

    /// The id of the first tool call, the key under which signed thinking is remembered.
    pub fn first_call_id(&self) -> Option<String> {
        self.calls.first().map(|c| c.id.clone())
    }

    /// The thinking blocks to replay with this response's tool calls, exactly as signed.
    /// Unsigned thinking cannot be sent back (the API rejects it), so then there are none.
    pub fn signed_thinking(&self) -> Vec<Value> {
        self.blocks
            .iter()
            .filter_map(|(_, block)| match block {
                Block::Thinking { text, signature } if !signature.is_empty() => {
                    Some(json!({"type": "thinking", "thinking": text, "signature": signature}))
                }
                Block::RedactedThinking { data } if !data.is_empty() => {
                    Some(json!({"type": "redacted_thinking", "data": data}))
                }
                _ => None,
            })
            .collect()
    }

    /// The whole response.
    pub fn finish(mut self) -> LlmResponse {
        for (_, block) in &self.blocks {
            if let Block::ToolUse {
                call,
                initial,
                json,
            } = block
                && let Some(target) = self.calls.get_mut(*call)
            {
                target.arguments = if !json.trim().is_empty() {
                    json.clone()
                } else if initial.is_object() {
                    initial.to_string()
                } else {
                    "{}".to_string()
                };
            }
        }
        let text = (!self.text.is_empty()).then_some(self.text);
        let mut message = Message::assistant(text, self.calls);
        message.reasoning = (!self.reasoning.is_empty()).then_some(self.reasoning);
        message.finish_reason = Some(finish_reason(self.stop_reason.as_deref()));
        LlmResponse {
            message,
            usage: self.usage.to_usage(),
            model: self.model,
        }
    }
}

/// Anthropic stop reasons in the chat-completions vocabulary the rest of the crate speaks.
fn finish_reason(stop_reason: Option<&str>) -> String {
    match stop_reason {
        None | Some("end_turn") | Some("stop_sequence") => "stop",
        Some("tool_use") => "tool_calls",
        Some("max_tokens") => "length",
        Some(other) => other,
    }
    .to_string()
}

/// The HTTP status an Anthropic error type stands for, so an error that arrives inside a stream
/// classifies like the same error sent as a response.
fn status_of(error_type: &str) -> Option<u16> {
    Some(match error_type {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "billing_error" => 402,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "api_error" => 500,
        "timeout_error" => 504,
        "overloaded_error" => 529,
        _ => return None,
    })
}

/// An `error` event (`{"type": "error", "error": {"type", "message"}}`) as an `LlmError`.
pub(super) fn error_from_event(data: &Value) -> LlmError {
    let error_type = data
        .pointer("/error/type")
        .and_then(Value::as_str)
        .unwrap_or("");
    let status = status_of(error_type);
    let body = data.to_string();
    let mut err = LlmError::new(
        refine(status, &body, crate::llm::error::classify(status, &body)),
        format!("the provider reported an error mid-stream: {body}"),
    );
    err.status = status;
    if status.is_none() && err.reason == FailoverReason::Unknown {
        // A mid-stream error without a known type is most often an upstream hiccup.
        err.reason = FailoverReason::ServerError;
    }
    err
}

/// Anthropic-specific corrections to the shared classification: an exhausted credit balance is
/// reported as a 400 ("Your credit balance is too low"), which is billing, not a bad request.
pub(super) fn refine(status: Option<u16>, body: &str, reason: FailoverReason) -> FailoverReason {
    let lower = body.to_ascii_lowercase();
    if matches!(status, Some(400) | None) && lower.contains("credit balance") {
        FailoverReason::Billing
    } else {
        reason
    }
}

/// A whole (non-streamed) Messages response, replayed as the events a stream would carry, for
/// gateways that ignore `stream: true`.
pub(super) fn whole_message_events(message: &Value) -> Vec<Value> {
    let mut start = message.clone();
    if let Some(obj) = start.as_object_mut() {
        obj.insert("content".into(), json!([]));
    }
    let mut events = vec![json!({"type": "message_start", "message": start})];
    let blocks = message.get("content").and_then(Value::as_array);
    for (index, block) in blocks.into_iter().flatten().enumerate() {
        events.push(json!({"type": "content_block_start", "index": index, "content_block": block}));
        if block.get("type") == Some(&json!("tool_use")) {
            let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
            events.push(json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": input.to_string()}}));
        }
        events.push(json!({"type": "content_block_stop", "index": index}));
    }
    events.push(json!({"type": "message_delta",
        "delta": {"stop_reason": message.get("stop_reason").cloned().unwrap_or(Value::Null)},
        "usage": message.get("usage").cloned().unwrap_or(Value::Null)}));
    events.push(json!({"type": "message_stop"}));
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(events: &[Value]) -> (Vec<LlmEvent>, Assembler) {
        let mut a = Assembler::default();
        let mut out = Vec::new();
        for e in events {
            a.push(e, &mut out).unwrap();
        }
        (out, a)
    }

    #[test]
    fn text_tool_use_and_thinking() {
        let events = vec![
            json!({"type": "message_start", "message": {"model": "claude-x", "usage":
                {"input_tokens": 10, "output_tokens": 1, "cache_read_input_tokens": 100,
                 "cache_creation_input_tokens": 20}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Let me "}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "look."}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig=="}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "ping"}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Reading"}}),
            json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}}}),
            json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"pa"}}),
            json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "th\": \"a.txt\"}"}}),
            json!({"type": "content_block_start", "index": 3, "content_block": {"type": "tool_use", "id": "toolu_2", "name": "todo", "input": {}}}),
            json!({"type": "some_future_event", "x": 1}),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 42}}),
            json!({"type": "message_stop"}),
        ];
        let (out, a) = run(&events);
        assert!(a.is_stopped());
        let reasoning: String = out
            .iter()
            .filter_map(|e| match e {
                LlmEvent::ReasoningDelta(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(reasoning, "Let me look.");
        let starts: Vec<_> = out
            .iter()
            .filter_map(|e| match e {
                LlmEvent::ToolCallStart { index, id, name } => {
                    Some((*index, id.clone(), name.clone()))
                }
                _ => None,
            })
            .collect();
        assert_eq!(
            starts,
            vec![
                (0, "toolu_1".into(), "read_file".into()),
                (1, "toolu_2".into(), "todo".into())
            ]
        );
        assert_eq!(
            a.signed_thinking(),
            vec![json!({"type": "thinking", "thinking": "Let me look.", "signature": "sig=="})]
        );
        let r = a.finish();
        assert_eq!(r.model.as_deref(), Some("claude-x"));
        assert_eq!(r.message.content.as_deref(), Some("Reading"));
        assert_eq!(r.message.reasoning.as_deref(), Some("Let me look."));
        assert_eq!(r.message.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(r.message.tool_calls[0].arguments, "{\"path\": \"a.txt\"}");
        assert_eq!(r.message.tool_calls[1].arguments, "{}");
        assert_eq!(
            r.usage,
            Usage {
                input_tokens: 130,
                output_tokens: 42,
                cache_read_tokens: 100,
                cache_write_tokens: 20,
                reasoning_tokens: 0
            }
        );
    }

    #[test]
    fn errors_classify_like_http() {
        let mut a = Assembler::default();
        let overloaded = json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
        let err = a.push(&overloaded, &mut Vec::new()).unwrap_err();
        assert_eq!(
            (err.reason, err.status),
            (FailoverReason::Overloaded, Some(529))
        );
        assert!(err.body.contains("Overloaded"));
        let err = error_from_event(
            &json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}}),
        );
        assert_eq!(err.reason, FailoverReason::RateLimit);
        let err = error_from_event(
            &json!({"type": "error", "error": {"type": "invalid_request_error",
            "message": "prompt is too long: 210000 tokens > 200000 maximum"}}),
        );
        assert_eq!(err.reason, FailoverReason::ContextOverflow);
        let err = error_from_event(&json!({"type": "error", "error": {"type": "weird"}}));
        assert_eq!(
            (err.reason, err.status),
            (FailoverReason::ServerError, None)
        );
        let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API."}}"#;
        let reason = crate::llm::error::classify(Some(400), body);
        assert_eq!(refine(Some(400), body, reason), FailoverReason::Billing);
    }

    #[test]
    fn hostile_events_do_not_panic() {
        let events = vec![
            json!(null),
            json!({"type": "content_block_delta", "index": 7, "delta": {"type": "input_json_delta", "partial_json": "x"}}),
            json!({"type": "content_block_start", "index": "zero", "content_block": 5}),
            json!({"type": "message_delta", "usage": {"output_tokens": -5, "input_tokens": 1e300}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "input": {"a": 1}}}),
        ];
        let (_, a) = run(&events);
        assert!(!a.is_complete());
        let r = a.finish();
        assert_eq!(
            r.message.tool_calls[0].arguments, "{\"a\":1}",
            "start input used without deltas"
        );
        assert_eq!(r.message.finish_reason.as_deref(), Some("stop"));
    }

    #[test]
    fn whole_message_replays_as_events() {
        let message = json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
            "content": [{"type": "text", "text": "hi"},
                        {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}}],
            "stop_reason": "tool_use", "usage": {"input_tokens": 5, "output_tokens": 3}});
        let (out, a) = run(&whole_message_events(&message));
        assert!(matches!(&out[0], LlmEvent::TextDelta(t) if t == "hi"));
        let r = a.finish();
        assert_eq!(r.message.tool_calls[0].arguments, "{\"a\":1}");
        assert_eq!((r.usage.input_tokens, r.usage.output_tokens), (5, 3));
        assert_eq!(r.message.finish_reason.as_deref(), Some("tool_calls"));
    }
}
