//! Tool calls written as text. Some local models (Hermes, Qwen and others served without a tool
//! parser) put their calls in the answer text as `<tool_call>{"name": …, "arguments": {…}}</tool_call>`
//! instead of the structured `tool_calls` field. This module turns such blocks into `ToolCall`s
//! ([`extract`]) and hides them from the live text stream ([`TextToolFilter`]) so the user does not
//! see raw JSON scroll by. A block that does not parse stays text, exactly as the model wrote it.

use serde_json::Value;

use crate::llm::ToolCall;

const OPEN: &str = "<tool_call>";
const CLOSE: &str = "</tool_call>";

/// Text with its tool-call blocks taken out.
#[derive(Debug, Clone, PartialEq)]
pub struct Extracted {
    /// What remains of the text (trimmed); `None` when nothing but tool calls was said.
    pub content: Option<String>,
    pub calls: Vec<ToolCall>,
}

/// Finds well-formed `<tool_call>` blocks in `text`. `None` when there is none, so callers keep
/// the text untouched. Calls get ids `call_text_0`, `call_text_1`, … in order of appearance.
pub fn extract(text: &str) -> Option<Extracted> {
    let mut kept = String::new();
    let mut calls = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(OPEN) {
        kept.push_str(&rest[..start]);
        let after_open = &rest[start..];
        let Some(close) = after_open.find(CLOSE) else {
            // Unclosed block: the model stopped mid-call or is quoting the syntax; keep it as text.
            break;
        };
        let block = &after_open[..close + CLOSE.len()];
        match parse_block(&after_open[OPEN.len()..close]) {
            Some((name, arguments)) => calls.push(ToolCall {
                id: format!("call_text_{}", calls.len()),
                name,
                arguments,
            }),
            None => kept.push_str(block),
        }
        rest = &after_open[close + CLOSE.len()..];
    }
    if calls.is_empty() {
        return None;
    }
    kept.push_str(rest);
    let kept = kept.trim();
    Some(Extracted {
        content: (!kept.is_empty()).then(|| kept.to_string()),
        calls,
    })
}

/// Parses the JSON between the tags: `{"name": "...", "arguments": {...}}` (`parameters` is
/// accepted as a synonym). Returns the name and the arguments as JSON text.
fn parse_block(inner: &str) -> Option<(String, String)> {
    let value: Value = serde_json::from_str(inner.trim()).ok()?;
    let object = value.as_object()?;
    let name = object.get("name")?.as_str()?.trim();
    if name.is_empty() {
        return None;
    }
    let arguments = match object.get("arguments").or_else(|| object.get("parameters")) {
        None | Some(Value::Null) => "{}".to_string(),
        // Some models pre-encode the arguments; pass their text through as the wire would.
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    };
    Some((name.to_string(), arguments))
}

/// Streaming counterpart of [`extract`] for display: feed it text deltas, show what it returns.
/// Text that might be the start of a `<tool_call>` block is held back until it is clear; a
/// complete well-formed block is swallowed; anything else comes out verbatim (at the latest from
/// [`TextToolFilter::finish`]).
#[derive(Debug, Default)]
pub struct TextToolFilter {
    pending: String,
    in_block: bool,
    /// Bytes of `pending` already searched for `</tool_call>`, so a long block arriving in tiny
    /// deltas is not rescanned from its start on every delta.
    scanned: usize,
}

impl TextToolFilter {
    /// Adds a delta; returns the text that is safe to show now (possibly empty).
    pub fn push(&mut self, delta: &str) -> String {
        self.pending.push_str(delta);
        let mut out = String::new();
        loop {
            if self.in_block {
                // Resume a little before the previous end in case the tag straddles deltas;
                // backing off may land inside a multi-byte char, so step back to a boundary.
                let mut from = self.scanned.saturating_sub(CLOSE.len()).max(OPEN.len());
                while !self.pending.is_char_boundary(from) {
                    from -= 1;
                }
                let Some(close) = self.pending[from..].find(CLOSE).map(|i| i + from) else {
                    self.scanned = self.pending.len();
                    break;
                };
                let end = close + CLOSE.len();
                if parse_block(&self.pending[OPEN.len()..close]).is_none() {
                    out.push_str(&self.pending[..end]);
                }
                self.pending.drain(..end);
                self.in_block = false;
                self.scanned = 0;
            } else if let Some(start) = self.pending.find(OPEN) {
                out.push_str(&self.pending[..start]);
                self.pending.drain(..start);
                self.in_block = true;
            } else {
                // Hold back a tail that could still grow into `<tool_call>`. OPEN is ASCII, so
                // a matching suffix always starts on a char boundary.
                let keep = (1..OPEN.len())
                    .rev()
                    .find(|&k| self.pending.ends_with(&OPEN[..k]))
                    .unwrap_or(0);
                let cut = self.pending.len() - keep;
                out.push_str(&self.pending[..cut]);
                self.pending.drain(..cut);
                break;
            }
        }
        out
    }

    /// The end of the text: whatever was held back (an unclosed block stays text).
    pub fn finish(&mut self) -> String {
        self.in_block = false;
        self.scanned = 0;
        std::mem::take(&mut self.pending)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hermes_block_becomes_a_call_and_leaves_the_text() {
        let text = "Let me look.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}\n</tool_call>";
        let got = extract(text).unwrap();
        assert_eq!(got.content.as_deref(), Some("Let me look."));
        assert_eq!(
            got.calls,
            vec![ToolCall {
                id: "call_text_0".into(),
                name: "read_file".into(),
                arguments: r#"{"path":"a.txt"}"#.into(),
            }]
        );
    }

    #[test]
    fn several_blocks_and_argument_variants() {
        let text = concat!(
            r#"<tool_call>{"name":"a","arguments":"{\"x\":1}"}</tool_call>"#,
            r#"<tool_call>{"name":"b","parameters":{"y":[1,2]}}</tool_call>"#,
            r#"<tool_call>{"name":"c"}</tool_call>"#,
        );
        let got = extract(text).unwrap();
        assert_eq!(got.content, None);
        let summary: Vec<(&str, &str, &str)> = got
            .calls
            .iter()
            .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
            .collect();
        assert_eq!(
            summary,
            vec![
                ("call_text_0", "a", r#"{"x":1}"#),
                ("call_text_1", "b", r#"{"y":[1,2]}"#),
                ("call_text_2", "c", "{}"),
            ]
        );
    }

    #[test]
    fn malformed_blocks_stay_text() {
        assert_eq!(extract("plain answer"), None);
        assert_eq!(extract("<tool_call>{not json}</tool_call>"), None);
        assert_eq!(extract(r#"<tool_call>{"arguments":{}}</tool_call>"#), None);
        assert_eq!(extract(r#"<tool_call>{"name":""}</tool_call>"#), None);
        assert_eq!(extract(r#"<tool_call>["read_file"]</tool_call>"#), None);
        assert_eq!(extract(r#"<tool_call>{"name":"x""#), None);
        // A good block next to a bad one: only the good one is taken.
        let text = r#"A <tool_call>oops</tool_call> B <tool_call>{"name":"x"}</tool_call> C"#;
        let got = extract(text).unwrap();
        assert_eq!(
            got.content.as_deref(),
            Some("A <tool_call>oops</tool_call> B  C")
        );
        assert_eq!(got.calls.len(), 1);
        // Unclosed trailing block after a good one is kept verbatim.
        let got = extract(r#"<tool_call>{"name":"x"}</tool_call><tool_call>{"na"#).unwrap();
        assert_eq!(got.content.as_deref(), Some(r#"<tool_call>{"na"#));
    }

    #[test]
    fn hostile_input_does_not_panic() {
        let many_opens = "<tool_call>".repeat(1000);
        for text in [
            "<tool_call>",
            "</tool_call><tool_call>",
            "<tool_call></tool_call>",
            "<tool_call>é</tool_call>ü<tool_call",
            many_opens.as_str(),
        ] {
            let _ = extract(text);
            let mut f = TextToolFilter::default();
            let mut shown = String::new();
            for ch in text.chars() {
                shown.push_str(&f.push(&ch.to_string()));
            }
            shown.push_str(&f.finish());
            assert_eq!(shown, text, "nothing valid, so everything is shown");
        }
    }

    fn run_filter(deltas: &[&str]) -> String {
        let mut f = TextToolFilter::default();
        let mut shown = String::new();
        for d in deltas {
            shown.push_str(&f.push(d));
        }
        shown + &f.finish()
    }

    #[test]
    fn filter_hides_valid_blocks_split_across_deltas() {
        let shown = run_filter(&[
            "Checking <to",
            "ol_ca",
            "ll>{\"name\": \"read_",
            "file\", \"arguments\": {}}</tool",
            "_call> done",
        ]);
        assert_eq!(shown, "Checking  done");
    }

    #[test]
    fn filter_releases_lookalikes_and_malformed_blocks() {
        assert_eq!(run_filter(&["a <to", "ast> b"]), "a <toast> b");
        assert_eq!(
            run_filter(&["x<tool_call>{bad", "}</tool_call>y"]),
            "x<tool_call>{bad}</tool_call>y"
        );
        assert_eq!(
            run_filter(&["x <tool_call>{\"name\""]),
            "x <tool_call>{\"name\""
        );
    }

    #[test]
    fn filter_shows_text_before_a_partial_tag_immediately() {
        let mut f = TextToolFilter::default();
        assert_eq!(f.push("Hello <tool"), "Hello ");
        assert_eq!(f.push("box"), "<toolbox");
    }

    #[test]
    fn filter_handles_long_blocks_in_tiny_deltas() {
        let args = "é".repeat(5000);
        let text = format!(
            "<tool_call>{{\"name\":\"w\",\"arguments\":{{\"t\":\"{args}\"}}}}</tool_call>ok"
        );
        let mut f = TextToolFilter::default();
        let mut shown = String::new();
        let chars: Vec<char> = text.chars().collect();
        for piece in chars.chunks(3) {
            shown.push_str(&f.push(&piece.iter().collect::<String>()));
        }
        shown.push_str(&f.finish());
        assert_eq!(shown, "ok");
        assert_eq!(extract(&text).unwrap().calls[0].name, "w");
    }
}
