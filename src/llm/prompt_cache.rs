//! Prompt-caching layout `system_and_3`: where `cache_control` markers go in a request body.
//!
//! Anthropic caches a prompt prefix up to each marked block (at most 4 markers per request). We
//! mark the system prompt (stable for a whole session) and the last three messages that can carry
//! a marker, so every request reads the previous request's prefix from the cache and writes the
//! new tail. The markers move forward each request; that does not spoil the cache, because the
//! cache key is the content of the prefix, not where the markers sit.
//!
//! Pure functions over the JSON body, applied as the last step of building a request, for both
//! wires: native Anthropic Messages (`apply_anthropic`) and chat completions when Claude is reached
//! through OpenRouter (`apply_chat_completions`).

use serde_json::{Map, Value, json};

/// Messages (after the system prompt) that get a marker.
pub const MESSAGE_BREAKPOINTS: usize = 3;

/// How long a cache entry lives (`prompt_caching.cache_ttl` in config.yaml: `5m` or `1h`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CacheTtl {
    #[default]
    FiveMinutes,
    OneHour,
}

impl CacheTtl {
    /// From `prompt_caching.cache_ttl`. Anything other than `1h` (absent, `5m`, or a typo) means
    /// the provider default of five minutes: a wrong value must never make requests fail.
    pub fn from_config(config: &crate::config::Config) -> CacheTtl {
        match config
            .file
            .prompt_caching
            .cache_ttl
            .as_deref()
            .map(str::trim)
        {
            Some("1h") => CacheTtl::OneHour,
            _ => CacheTtl::FiveMinutes,
        }
    }

    /// The `cache_control` object: `{"type": "ephemeral"}`, plus `"ttl": "1h"` for an hour.
    pub fn marker(self) -> Value {
        match self {
            CacheTtl::FiveMinutes => json!({"type": "ephemeral"}),
            CacheTtl::OneHour => json!({"type": "ephemeral", "ttl": "1h"}),
        }
    }
}

/// Whether a chat-completions request reaches Claude through OpenRouter, the one aggregator that
/// forwards `cache_control` parts to Anthropic (without markers Claude caches nothing there).
pub fn is_openrouter_claude(provider_name: &str, base_url: &str, model: &str) -> bool {
    let via_openrouter =
        provider_name == "openrouter" || base_url.to_ascii_lowercase().contains("openrouter.ai");
    via_openrouter && model.to_ascii_lowercase().starts_with("anthropic/claude")
}

/// Marks an Anthropic Messages body: the `system` blocks (a string becomes one text block) and
/// the last block that can carry a marker in each of the last three messages that have one.
/// Returns how many markers were placed (at most 4).
pub fn apply_anthropic(body: &mut Value, ttl: CacheTtl) -> usize {
    let marker = ttl.marker();
    let mut placed = 0;
    if let Some(system) = body.get_mut("system")
        && mark_content(system, &marker)
    {
        placed += 1;
    }
    if let Some(messages) = body.get_mut("messages").and_then(Value::as_array_mut) {
        placed += mark_last_messages(messages.iter_mut(), &marker);
    }
    placed
}

/// Marks chat-completions messages (OpenRouter's Anthropic passthrough): the system message and
/// the last three other messages with non-empty content. String content becomes
/// `[{"type": "text", "text": …, "cache_control": …}]`; assistant messages that only call tools
/// (null content) are skipped. Returns how many markers were placed.
pub fn apply_chat_completions(messages: &mut [Value], ttl: CacheTtl) -> usize {
    let marker = ttl.marker();
    let mut placed = 0;
    if let Some(system) = messages
        .iter_mut()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("system"))
        && let Some(content) = system.get_mut("content")
        && mark_content(content, &marker)
    {
        placed += 1;
    }
    let others = messages
        .iter_mut()
        .filter(|m| m.get("role").and_then(Value::as_str) != Some("system"));
    placed + mark_last_messages(others, &marker)
}

/// Marks the last `MESSAGE_BREAKPOINTS` messages (walking back) whose content can take a marker.
fn mark_last_messages<'a>(
    messages: impl DoubleEndedIterator<Item = &'a mut Value>,
    marker: &Value,
) -> usize {
    let mut placed = 0;
    for message in messages.rev() {
        if placed == MESSAGE_BREAKPOINTS {
            break;
        }
        if let Some(content) = message.get_mut("content")
            && mark_content(content, marker)
        {
            placed += 1;
        }
    }
    placed
}

/// Puts `marker` on `content`: a non-empty string becomes a one-block array; in an array, the
/// last block that may carry one gets it. Returns false when nothing could be marked.
fn mark_content(content: &mut Value, marker: &Value) -> bool {
    match content {
        Value::String(text) if !text.is_empty() => {
            let mut block = Map::new();
            block.insert("type".into(), json!("text"));
            block.insert("text".into(), Value::String(std::mem::take(text)));
            block.insert("cache_control".into(), marker.clone());
            *content = Value::Array(vec![Value::Object(block)]);
            true
        }
        Value::Array(blocks) => match blocks.iter_mut().rev().find(|b| can_carry(b)) {
            Some(Value::Object(block)) => {
                block.insert("cache_control".into(), marker.clone());
                true
            }
            _ => false,
        },
        _ => false,
    }
}

/// Thinking blocks cannot carry a marker, and an empty text block is rejected by the API.
fn can_carry(block: &Value) -> bool {
    let Some(kind) = block.get("type").and_then(Value::as_str) else {
        return false;
    };
    match kind {
        "thinking" | "redacted_thinking" => false,
        "text" => block
            .get("text")
            .and_then(Value::as_str)
            .is_some_and(|t| !t.is_empty()),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marked(value: &Value) -> usize {
        match value {
            Value::Object(map) => {
                usize::from(map.contains_key("cache_control"))
                    + map.values().map(marked).sum::<usize>()
            }
            Value::Array(items) => items.iter().map(marked).sum(),
            _ => 0,
        }
    }

    #[test]
    fn ttl_from_config() {
        let load = |yaml: &str| {
            crate::config::Config::from_yaml(
                crate::config::HermesHome::new("/tmp/none"),
                crate::config::EnvVars::default(),
                yaml,
                std::path::Path::new("config.yaml"),
            )
            .unwrap()
        };
        assert_eq!(CacheTtl::from_config(&load("")), CacheTtl::FiveMinutes);
        let one_hour = load("prompt_caching:\n  cache_ttl: 1h\n");
        assert_eq!(CacheTtl::from_config(&one_hour), CacheTtl::OneHour);
        for other in ["5m", "2h", "'3600'", "~"] {
            let c = load(&format!("prompt_caching:\n  cache_ttl: {other}\n"));
            assert_eq!(CacheTtl::from_config(&c), CacheTtl::FiveMinutes, "{other}");
        }
        assert_eq!(
            CacheTtl::OneHour.marker(),
            json!({"type": "ephemeral", "ttl": "1h"})
        );
        assert_eq!(CacheTtl::FiveMinutes.marker(), json!({"type": "ephemeral"}));
    }

    #[test]
    fn anthropic_marks_system_and_last_three() {
        let mut body = json!({
            "system": "You are Hermes.",
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "one"}]},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "hm", "signature": "s"},
                    {"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "out"},
                    {"type": "text", "text": ""}]},
                {"role": "assistant", "content": [{"type": "thinking", "thinking": "x", "signature": "s"}]},
                {"role": "user", "content": "last"},
            ]
        });
        assert_eq!(apply_anthropic(&mut body, CacheTtl::FiveMinutes), 4);
        assert_eq!(marked(&body), 4);
        let marker = json!({"type": "ephemeral"});
        assert_eq!(body["system"][0]["text"], "You are Hermes.");
        assert_eq!(body["system"][0]["cache_control"], marker);
        let m = &body["messages"];
        assert_eq!(m[4]["content"][0]["cache_control"], marker);
        assert_eq!(marked(&m[3]), 0, "a thinking-only message cannot be marked");
        assert_eq!(
            m[2]["content"][0]["cache_control"], marker,
            "empty text skipped"
        );
        assert_eq!(
            m[1]["content"][1]["cache_control"], marker,
            "tool_use, not thinking"
        );
        assert_eq!(marked(&m[0]), 0, "only three messages are marked");
    }

    #[test]
    fn anthropic_short_and_empty_bodies() {
        let mut body = json!({"messages": [{"role": "user", "content": "hi"}]});
        assert_eq!(apply_anthropic(&mut body, CacheTtl::OneHour), 1);
        assert_eq!(
            body["messages"][0]["content"][0]["cache_control"]["ttl"],
            "1h"
        );
        let mut empty = json!({"system": "", "messages": []});
        assert_eq!(apply_anthropic(&mut empty, CacheTtl::FiveMinutes), 0);
        assert_eq!(empty, json!({"system": "", "messages": []}));
        let mut hostile = json!({"system": 5, "messages": [null, 3, {"content": {"a": 1}}]});
        assert_eq!(apply_anthropic(&mut hostile, CacheTtl::FiveMinutes), 0);
    }

    #[test]
    fn chat_completions_marks_text_parts() {
        let mut messages = vec![
            json!({"role": "system", "content": "sys"}),
            json!({"role": "user", "content": "first"}),
            json!({"role": "assistant", "content": "a"}),
            json!({"role": "user", "content": "q"}),
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c"}]}),
            json!({"role": "tool", "content": "result", "tool_call_id": "c"}),
        ];
        assert_eq!(
            apply_chat_completions(&mut messages, CacheTtl::FiveMinutes),
            4
        );
        let part = |i: usize| messages[i]["content"][0].clone();
        assert_eq!(
            part(0),
            json!({"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}})
        );
        assert_eq!(messages[1]["content"], "first", "beyond the last three");
        assert_eq!(part(2)["cache_control"]["type"], "ephemeral");
        assert_eq!(part(3)["text"], "q");
        assert!(
            messages[4]["content"].is_null(),
            "tool-call-only message skipped"
        );
        assert_eq!(part(5)["text"], "result");
        assert_eq!(messages[5]["tool_call_id"], "c");
    }

    #[test]
    fn openrouter_claude_detection() {
        assert!(is_openrouter_claude(
            "openrouter",
            "https://openrouter.ai/api/v1",
            "anthropic/claude-sonnet-4"
        ));
        assert!(is_openrouter_claude(
            "custom",
            "https://OpenRouter.ai/api/v1",
            "Anthropic/Claude-3.5"
        ));
        assert!(!is_openrouter_claude(
            "openrouter",
            "https://openrouter.ai/api/v1",
            "openai/gpt-4o"
        ));
        assert!(!is_openrouter_claude(
            "custom",
            "http://127.0.0.1:9/v1",
            "anthropic/claude-x"
        ));
    }
}
