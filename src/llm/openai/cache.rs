//! The prompt-cache variant of the chat-completions body: for Claude reached through OpenRouter
//! (which forwards `cache_control` text parts to Anthropic), the `system_and_3` layout of
//! `crate::llm::prompt_cache` is applied to the body `wire::request_body` builds. Every other
//! request is sent exactly as `wire` builds it.

use serde::Serialize;
use serde_json::Value;

use super::wire::{RequestBody, request_body};
use crate::llm::ChatRequest;
use crate::llm::prompt_cache::{self, CacheTtl};

/// What is sent: the plain body, or the same body with cache markers.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum Body<'a> {
    Plain(RequestBody<'a>),
    Cached(Value),
}

/// [`request_body`] with the `system_and_3` cache layout applied when `cache` is set.
pub(super) fn body_for<'a>(
    request: &'a ChatRequest,
    model: &'a str,
    stream: bool,
    cache: Option<CacheTtl>,
) -> Body<'a> {
    let body = request_body(request, model, stream);
    let Some(ttl) = cache else {
        return Body::Plain(body);
    };
    let Ok(mut value) = serde_json::to_value(&body) else {
        return Body::Plain(body);
    };
    // Through `Value` an f32 would print as 0.699999988079071: keep the number as written.
    if let Some(t) = request.temperature
        && let Some(n) = t
            .to_string()
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
    {
        value["temperature"] = Value::Number(n);
    }
    if let Some(messages) = value.get_mut("messages").and_then(Value::as_array_mut) {
        prompt_cache::apply_chat_completions(messages, ttl);
    }
    Body::Cached(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{Message, ToolCall};
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
                Message::user("earlier"),
                user,
                Message::assistant(None, vec![call.clone()]),
                Message::tool_result(&call, "file body"),
                Message::assistant(Some("done".into()), vec![]),
            ],
            tools: Vec::new(),
            max_tokens: Some(100),
            temperature: Some(0.7),
        }
    }

    #[test]
    fn cached_body_marks_system_and_last_three() {
        let req = sample_request();
        // Through the bytes, as the server sees them.
        let plain_text = serde_json::to_string(&body_for(&req, "m", true, None)).unwrap();
        assert_eq!(
            plain_text,
            serde_json::to_string(&request_body(&req, "m", true)).unwrap(),
            "without caching the body is untouched"
        );
        let plain: Value = serde_json::from_str(&plain_text).unwrap();
        let text =
            serde_json::to_string(&body_for(&req, "m", true, Some(CacheTtl::OneHour))).unwrap();
        assert!(text.contains("\"temperature\":0.7"), "{text}");
        let body: Value = serde_json::from_str(&text).unwrap();
        let marker = json!({"type": "ephemeral", "ttl": "1h"});
        let m = &body["messages"];
        assert_eq!(
            m[0]["content"],
            json!([{"type": "text", "text": "You are Hermes.", "cache_control": marker}])
        );
        assert_eq!(m[1]["content"], "earlier", "beyond the last three");
        // The tool-call-only message is skipped, so the user message is the third marked one.
        assert_eq!(
            m[2]["content"][0]["text"],
            "hi\n<memory-context>x</memory-context>"
        );
        assert_eq!(m[2]["content"][0]["cache_control"], marker);
        assert!(
            m[3]["content"].is_null(),
            "a tool-call-only message carries no marker"
        );
        assert_eq!(m[4]["content"][0]["cache_control"], marker);
        assert_eq!(m[4]["tool_call_id"], "call_1");
        assert_eq!(
            m[5]["content"][0],
            json!({"type": "text", "text": "done", "cache_control": marker})
        );
        // Only the messages changed: everything else is the plain body.
        let mut stripped = body.clone();
        stripped["messages"] = plain["messages"].clone();
        assert_eq!(stripped, plain);
    }
}
