//! Turns a sequence of chat-completion chunks into live `LlmEvent`s and, at the end, one
//! `LlmResponse`. Pure logic (no I/O), shared by the streaming and the non-streaming path.
//!
//! Tool calls arrive as fragments keyed by `index`: id and name usually in the first fragment,
//! arguments spread over many. Servers differ: some omit `index`, some reuse index 0 for every
//! call, some send a whole call in one chunk. The rules below accept all of these.

use crate::llm::text_tool_calls::{self, TextToolFilter};
use crate::llm::{LlmError, LlmEvent, LlmResponse, Message, ToolCall, Usage};

use super::wire::{Chunk, ToolCallDelta, error_from_object};

#[derive(Debug, Default)]
struct PartialCall {
    wire_index: Option<u64>,
    id: String,
    name: String,
    arguments: String,
    announced: bool,
}

/// Accumulates one response.
#[derive(Debug, Default)]
pub(super) struct Assembler {
    text: String,
    reasoning: String,
    calls: Vec<PartialCall>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    model: Option<String>,
    /// Present when tools were offered: `<tool_call>` blocks in the text may become calls, so
    /// they are hidden from the live text.
    text_tools: Option<TextToolFilter>,
}

impl Assembler {
    /// `tools_offered`: whether the request offered tools (only then can text become calls).
    pub fn new(tools_offered: bool) -> Self {
        Assembler {
            text_tools: tools_offered.then(TextToolFilter::default),
            ..Assembler::default()
        }
    }

    /// Whether the provider said the answer is finished (a `finish_reason` arrived).
    pub fn is_complete(&self) -> bool {
        self.finish_reason.is_some()
    }

    /// Folds one chunk in, appending the live events it produces to `out`. A chunk carrying an
    /// `error` object ends the response with that error.
    pub fn push(&mut self, chunk: Chunk, out: &mut Vec<LlmEvent>) -> Result<(), LlmError> {
        if let Some(error) = chunk.error.as_ref().filter(|e| !e.is_null()) {
            return Err(error_from_object(error));
        }
        if let Some(model) = chunk.model.filter(|m| !m.is_empty()) {
            self.model = Some(model);
        }
        if let Some(usage) = chunk.usage {
            // Some servers repeat cumulative usage in several chunks: the last one wins.
            self.usage = Some(usage.to_usage());
        }
        // Only the first choice matters: we never ask for n > 1.
        for choice in chunk.choices.into_iter().flatten() {
            if choice.index.unwrap_or(0) != 0 {
                continue;
            }
            if let Some(delta) = choice.delta {
                if let Some(reasoning) = delta.reasoning_text() {
                    self.reasoning.push_str(reasoning);
                    out.push(LlmEvent::ReasoningDelta(reasoning.to_string()));
                }
                if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                    self.text.push_str(&text);
                    let shown = match self.text_tools.as_mut() {
                        Some(filter) => filter.push(&text),
                        None => text,
                    };
                    if !shown.is_empty() {
                        out.push(LlmEvent::TextDelta(shown));
                    }
                }
                for call in delta.tool_calls.into_iter().flatten() {
                    self.push_call(call, out);
                }
            }
            if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty()) {
                self.finish_reason = Some(reason);
            }
        }
        Ok(())
    }

    fn push_call(&mut self, delta: ToolCallDelta, out: &mut Vec<LlmEvent>) {
        let id = delta.id.filter(|i| !i.is_empty());
        let position = self.call_position(delta.index, id.as_deref());
        let call = &mut self.calls[position];
        if let Some(id) = id {
            call.id = id;
        }
        if let Some(function) = delta.function {
            if let Some(name) = function.name.as_deref().filter(|n| !n.is_empty())
                && call.name.is_empty()
            {
                call.name = name.to_string();
            }
            if let Some(arguments) = function.arguments_text() {
                call.arguments.push_str(&arguments);
            }
        }
        if !call.announced && !call.name.is_empty() {
            call.announced = true;
            out.push(LlmEvent::ToolCallStart {
                index: position,
                id: call.id.clone(),
                name: call.name.clone(),
            });
        }
    }

    /// Which call a fragment belongs to (creating it if new). A fragment with a fresh id always
    /// starts a new call, even if its index collides with an earlier call's.
    fn call_position(&mut self, index: Option<u64>, id: Option<&str>) -> usize {
        let candidate = match index {
            Some(index) => self.calls.iter().rposition(|c| c.wire_index == Some(index)),
            // No index at all: a fragment continues the latest call.
            None => self.calls.len().checked_sub(1),
        };
        let same_call = |p: &usize| {
            let known = &self.calls[*p].id;
            id.is_none_or(|id| known.is_empty() || known == id)
        };
        match candidate.filter(same_call) {
            Some(position) => position,
            None => {
                self.calls.push(PartialCall {
                    wire_index: index,
                    ..PartialCall::default()
                });
                self.calls.len() - 1
            }
        }
    }

    /// Ends the response: flushes held-back text into `out`, converts `<tool_call>` text blocks
    /// when no structured calls came, and returns the whole answer.
    pub fn finish(mut self, out: &mut Vec<LlmEvent>) -> LlmResponse {
        if let Some(filter) = self.text_tools.as_mut() {
            let rest = filter.finish();
            if !rest.is_empty() {
                out.push(LlmEvent::TextDelta(rest));
            }
        }
        let mut calls: Vec<ToolCall> = self
            .calls
            .into_iter()
            .filter(|c| !c.name.is_empty() || !c.arguments.is_empty())
            .enumerate()
            .map(|(i, c)| ToolCall {
                id: if c.id.is_empty() {
                    format!("call_{i}")
                } else {
                    c.id
                },
                name: c.name,
                // A call without arguments means "no arguments"; "" would not parse as JSON.
                arguments: if c.arguments.trim().is_empty() {
                    "{}".to_string()
                } else {
                    c.arguments
                },
            })
            .collect();
        let mut content = (!self.text.is_empty()).then_some(self.text);
        if calls.is_empty()
            && self.text_tools.is_some()
            && let Some(extracted) = content.as_deref().and_then(text_tool_calls::extract)
        {
            for (index, call) in extracted.calls.iter().enumerate() {
                out.push(LlmEvent::ToolCallStart {
                    index,
                    id: call.id.clone(),
                    name: call.name.clone(),
                });
            }
            calls = extracted.calls;
            content = extracted.content;
        }
        let mut message = Message::assistant(content, calls);
        message.reasoning = (!self.reasoning.is_empty()).then_some(self.reasoning);
        message.finish_reason = self.finish_reason;
        LlmResponse {
            message,
            usage: self.usage.unwrap_or_default(),
            model: self.model,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn feed(asm: &mut Assembler, chunks: Vec<Value>) -> Vec<LlmEvent> {
        let mut out = Vec::new();
        for c in chunks {
            asm.push(serde_json::from_value(c).unwrap(), &mut out)
                .unwrap();
        }
        out
    }

    fn tool_delta(index: Option<u64>, id: Option<&str>, name: Option<&str>, args: &str) -> Value {
        let mut call = json!({"function": {"arguments": args}});
        if let Some(i) = index {
            call["index"] = json!(i);
        }
        if let Some(id) = id {
            call["id"] = json!(id);
        }
        if let Some(name) = name {
            call["function"]["name"] = json!(name);
        }
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    }

    fn starts(events: &[LlmEvent]) -> Vec<(usize, String, String)> {
        events
            .iter()
            .filter_map(|e| match e {
                LlmEvent::ToolCallStart { index, id, name } => {
                    Some((*index, id.clone(), name.clone()))
                }
                _ => None,
            })
            .collect()
    }

    #[test]
    fn parallel_calls_assemble_by_index() {
        let mut asm = Assembler::new(true);
        let events = feed(
            &mut asm,
            vec![
                tool_delta(Some(0), Some("a"), Some("read_file"), ""),
                tool_delta(Some(1), Some("b"), Some("search"), ""),
                tool_delta(Some(0), None, None, "{\"pa"),
                tool_delta(Some(1), None, None, "{\"q\":1}"),
                tool_delta(Some(0), None, None, "th\":\"x\"}"),
                json!({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}),
            ],
        );
        assert_eq!(
            starts(&events),
            vec![
                (0, "a".into(), "read_file".into()),
                (1, "b".into(), "search".into())
            ]
        );
        let mut out = Vec::new();
        let resp = asm.finish(&mut out);
        let calls = &resp.message.tool_calls;
        assert_eq!(calls[0].arguments, r#"{"path":"x"}"#);
        assert_eq!(calls[1].arguments, r#"{"q":1}"#);
        assert_eq!(resp.message.content, None);
        assert_eq!(resp.message.finish_reason.as_deref(), Some("tool_calls"));
    }

    #[test]
    fn calls_without_index_or_with_colliding_index() {
        let mut asm = Assembler::new(false);
        feed(
            &mut asm,
            vec![
                tool_delta(None, Some("a"), Some("f"), "{\"x\":"),
                tool_delta(None, None, None, "1}"),
                tool_delta(None, Some("b"), Some("g"), "{}"),
                tool_delta(Some(0), Some("c"), Some("h"), "{\"y\":2}"),
                tool_delta(Some(0), Some("d"), Some("k"), ""),
            ],
        );
        let resp = asm.finish(&mut Vec::new());
        let got: Vec<(&str, &str, &str)> = resp
            .message
            .tool_calls
            .iter()
            .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("a", "f", "{\"x\":1}"),
                ("b", "g", "{}"),
                ("c", "h", "{\"y\":2}"),
                ("d", "k", "{}"),
            ]
        );
    }

    #[test]
    fn missing_ids_are_generated() {
        let mut asm = Assembler::new(false);
        feed(&mut asm, vec![tool_delta(Some(0), None, Some("f"), "{}")]);
        let resp = asm.finish(&mut Vec::new());
        assert_eq!(resp.message.tool_calls[0].id, "call_0");
    }

    #[test]
    fn text_reasoning_usage_and_model() {
        let mut asm = Assembler::new(false);
        let events = feed(
            &mut asm,
            vec![
                json!({"model": "m1", "choices": [{"delta": {"role": "assistant", "content": ""}}]}),
                json!({"choices": [{"delta": {"reasoning_content": "think"}}]}),
                json!({"choices": [{"delta": {"content": "Hel"}}]}),
                json!({"choices": [{"delta": {"content": "lo"}, "finish_reason": "eos"}]}),
                json!({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 2,
                       "prompt_tokens_details": {"cached_tokens": 7}}}),
            ],
        );
        assert_eq!(events.len(), 3);
        assert!(asm.is_complete());
        let resp = asm.finish(&mut Vec::new());
        assert_eq!(resp.message.content.as_deref(), Some("Hello"));
        assert_eq!(resp.message.reasoning.as_deref(), Some("think"));
        assert_eq!(resp.message.finish_reason.as_deref(), Some("eos"));
        assert_eq!(resp.model.as_deref(), Some("m1"));
        assert_eq!(resp.usage.cache_read_tokens, 7);
        assert_eq!(resp.usage.input_tokens, 10);
    }

    #[test]
    fn text_tool_calls_only_when_tools_were_offered() {
        let raw = r#"<tool_call>{"name": "read_file", "arguments": {"path": "a"}}</tool_call>"#;
        let chunk = json!({"choices": [{"delta": {"content": raw}, "finish_reason": "stop"}]});

        let mut asm = Assembler::new(true);
        let mut events = feed(&mut asm, vec![chunk.clone()]);
        let resp = asm.finish(&mut events);
        assert!(!events.iter().any(|e| matches!(e, LlmEvent::TextDelta(_))));
        assert_eq!(
            starts(&events),
            vec![(0, "call_text_0".into(), "read_file".into())]
        );
        assert_eq!(resp.message.content, None);
        assert_eq!(resp.message.tool_calls[0].arguments, r#"{"path":"a"}"#);

        let mut asm = Assembler::new(false);
        feed(&mut asm, vec![chunk]);
        let resp = asm.finish(&mut Vec::new());
        assert_eq!(resp.message.content.as_deref(), Some(raw));
        assert!(resp.message.tool_calls.is_empty());
    }

    #[test]
    fn error_chunk_is_an_error() {
        let mut asm = Assembler::new(false);
        let chunk =
            serde_json::from_value(json!({"error": {"code": 503, "message": "overloaded"}}));
        let err = asm.push(chunk.unwrap(), &mut Vec::new()).unwrap_err();
        assert_eq!(err.reason, crate::llm::FailoverReason::Overloaded);
    }
}
