//! One-line stand-ins for old tool results.
//!
//! A tool result that is kept (in the protected head) but no longer needed verbatim is replaced by
//! a line saying what the call did and how big its output was, in the shapes Python Hermes uses,
//! so a model that saw both agents' sessions reads the same thing. Identical results seen again
//! later are replaced by a placeholder instead.

use std::collections::HashMap;

use serde_json::Value;

use crate::llm::{Message, Role, ToolCall};

/// Replaces a result whose identical text appears again later in the conversation.
pub(super) const DUPLICATE_PLACEHOLDER: &str = "[Old tool output cleared to save context space]";

/// Every tool call in `messages`, by id, so a result can be described from its arguments.
pub(super) fn calls_by_id(messages: &[Message]) -> HashMap<&str, &ToolCall> {
    messages
        .iter()
        .flat_map(|m| m.tool_calls.iter())
        .map(|c| (c.id.as_str(), c))
        .collect()
}

/// Replaces every tool result in `messages` by its one-line summary (duplicates by the
/// placeholder). `calls` is the id → call map of the whole conversation.
pub(super) fn prune_tool_results(messages: &mut [Message], calls: &HashMap<&str, &ToolCall>) {
    let mut seen: HashMap<String, usize> = HashMap::new();
    for m in messages.iter() {
        if m.role == Role::Tool {
            *seen
                .entry(m.content.clone().unwrap_or_default())
                .or_default() += 1;
        }
    }
    for m in messages.iter_mut().filter(|m| m.role == Role::Tool) {
        let content = m.content.clone().unwrap_or_default();
        if is_pruned(&content) {
            continue;
        }
        let left = seen.entry(content.clone()).or_default();
        *left = left.saturating_sub(1);
        let line = if *left > 0 && content.chars().count() > 200 {
            // The same (large) output comes again later; that copy carries it.
            DUPLICATE_PLACEHOLDER.to_string()
        } else {
            let call = m.tool_call_id.as_deref().and_then(|id| calls.get(id));
            let name = m
                .tool_name
                .clone()
                .or_else(|| call.map(|c| c.name.clone()))
                .unwrap_or_else(|| "tool".to_string());
            one_line(&name, call.map(|c| c.arguments.as_str()), &content)
        };
        m.content = Some(line);
        m.api_content = None;
    }
}

/// Whether `content` already is a stand-in produced here (pruning twice changes nothing).
fn is_pruned(content: &str) -> bool {
    content == DUPLICATE_PLACEHOLDER
        || (content.starts_with('[') && !content.contains('\n') && content.len() < 400 && {
            let name_end = content.find(']').unwrap_or(0);
            name_end > 1
                && content[1..name_end]
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

/// A one-line description of a tool result: what was called with what, and how much came back.
pub(super) fn one_line(tool: &str, arguments: Option<&str>, content: &str) -> String {
    let args: Value = arguments
        .and_then(|a| serde_json::from_str(a).ok())
        .unwrap_or(Value::Null);
    let s = |key: &str| -> String {
        match args.get(key) {
            Some(Value::String(v)) => v.clone(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        }
    };
    let chars = group_thousands(content.chars().count());
    let lines = content.lines().count();
    match tool {
        "terminal" => format!(
            "[terminal] ran `{}` -> exit {}, {lines} lines output",
            clip(&s("command"), 80),
            exit_code(content).unwrap_or_else(|| "?".to_string())
        ),
        "read_file" => {
            let offset = args.get("offset").and_then(Value::as_u64).unwrap_or(1);
            format!(
                "[read_file] read {} from line {offset} ({chars} chars)",
                s("path")
            )
        }
        "write_file" => {
            let written = s("content").lines().count();
            format!("[write_file] wrote to {} ({written} lines)", s("path"))
        }
        "search_files" => {
            let target = match s("target") {
                t if t.is_empty() => "content".to_string(),
                t => t,
            };
            let path = match s("path") {
                p if p.is_empty() => ".".to_string(),
                p => p,
            };
            format!(
                "[search_files] {target} search for '{}' in {path} -> {} matches",
                clip(&s("pattern"), 80),
                match_count(content)
            )
        }
        "patch" => {
            let mode = match s("mode") {
                m if m.is_empty() => "replace".to_string(),
                m => m,
            };
            format!("[patch] {mode} in {} ({chars} chars result)", s("path"))
        }
        t if t.starts_with("browser_") => {
            let target = match s("url") {
                u if u.is_empty() => format!("ref={}", s("ref")),
                u => u,
            };
            format!("[{t}] {target} ({chars} chars)")
        }
        "web_search" => format!(
            "[web_search] query='{}' ({chars} chars result)",
            clip(&s("query"), 80)
        ),
        "web_extract" => {
            let urls: Vec<String> = match args.get("urls") {
                Some(Value::Array(a)) => a
                    .iter()
                    .filter_map(|u| u.as_str().map(str::to_string))
                    .collect(),
                _ => vec![s("url")],
            };
            let more = if urls.len() > 1 {
                format!(" (+{} more)", urls.len() - 1)
            } else {
                String::new()
            };
            format!(
                "[web_extract] {}{more} ({chars} chars)",
                urls.first().cloned().unwrap_or_default()
            )
        }
        "delegate_task" => format!(
            "[delegate_task] '{}' ({chars} chars result)",
            clip(&s("goal"), 60)
        ),
        "execute_code" => format!(
            "[execute_code] `{}` ({lines} lines output)",
            clip(&s("code"), 60)
        ),
        "skill_view" | "skills_list" | "skill_manage" => {
            format!("[{tool}] name={} ({chars} chars)", s("name"))
        }
        "vision_analyze" => format!(
            "[vision_analyze] '{}' ({chars} chars)",
            clip(&s("question"), 50)
        ),
        "memory" => format!("[memory] {} on {}", s("action"), s("target")),
        "todo" => "[todo] updated task list".to_string(),
        "clarify" => "[clarify] asked user a question".to_string(),
        "text_to_speech" => format!("[text_to_speech] generated audio ({chars} chars)"),
        "cronjob" => format!("[cronjob] {}", s("action")),
        "process" => format!("[process] {} session={}", s("action"), s("session_id")),
        _ => {
            let mut parts = Vec::new();
            if let Value::Object(map) = &args {
                for (k, v) in map.iter().take(4) {
                    let v = match v {
                        Value::String(t) => t.clone(),
                        other => other.to_string(),
                    };
                    parts.push(format!("{k}={}", clip(&v, 40)));
                }
            }
            let kv = if parts.is_empty() {
                String::new()
            } else {
                format!(" {}", parts.join(" "))
            };
            format!("[{}]{kv} ({chars} chars result)", clip(tool, 60))
        }
    }
}

/// First line of `text`, cut to `max` chars (with `...` when cut).
fn clip(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("");
    let cut = crate::util::truncate_chars(line, max);
    if cut.len() < line.len() || text.contains('\n') {
        format!("{cut}...")
    } else {
        cut.to_string()
    }
}

/// `12345` → `12,345` (Python's `{n:,}`).
fn group_thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// The exit code in our terminal output (`[exit code: N]`) or Python's JSON (`"exit_code": N`).
fn exit_code(content: &str) -> Option<String> {
    if let Some(pos) = content.rfind("[exit code: ") {
        let rest = &content[pos + "[exit code: ".len()..];
        let code: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '-')
            .collect();
        if !code.is_empty() {
            return Some(code);
        }
    }
    serde_json::from_str::<Value>(content)
        .ok()
        .and_then(|v| v.get("exit_code").cloned())
        .map(|v| v.to_string())
}

/// A "N matches" figure from the result if it states one, else its non-empty line count.
fn match_count(content: &str) -> usize {
    let lower = content.to_lowercase();
    for word in [" matches", " match", " files", " file"] {
        if let Some(pos) = lower.find(word) {
            let digits: String = lower[..pos]
                .chars()
                .rev()
                .take_while(|c| c.is_ascii_digit())
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            if let Ok(n) = digits.parse() {
                return n;
            }
        }
    }
    content.lines().filter(|l| !l.trim().is_empty()).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_match_the_python_shapes() {
        assert_eq!(
            one_line(
                "terminal",
                Some(r#"{"command":"cargo test"}"#),
                "ok\nfine\n[exit code: 0]"
            ),
            "[terminal] ran `cargo test` -> exit 0, 3 lines output"
        );
        assert_eq!(
            one_line(
                "read_file",
                Some(r#"{"path":"src/a.rs","offset":10}"#),
                &"x".repeat(12_345)
            ),
            "[read_file] read src/a.rs from line 10 (12,345 chars)"
        );
        assert_eq!(
            one_line(
                "write_file",
                Some(r#"{"path":"a.txt","content":"1\n2\n3"}"#),
                "ok"
            ),
            "[write_file] wrote to a.txt (3 lines)"
        );
        assert_eq!(
            one_line(
                "search_files",
                Some(r#"{"pattern":"fn main"}"#),
                "a.rs:1\nb.rs:2\n"
            ),
            "[search_files] content search for 'fn main' in . -> 2 matches"
        );
        assert_eq!(one_line("todo", None, "[]"), "[todo] updated task list");
        assert_eq!(
            one_line("mystery", Some(r#"{"q":"x"}"#), "abcd"),
            "[mystery] q=x (4 chars result)"
        );
    }

    #[test]
    fn hostile_arguments_do_not_break_the_line() {
        let line = one_line("terminal", Some("{not json"), "out");
        assert_eq!(line, "[terminal] ran `` -> exit ?, 1 lines output");
        let long = format!(r#"{{"command":"{}\nrm -rf /"}}"#, "a".repeat(500));
        let line = one_line("terminal", Some(&long), "");
        assert!(!line.contains('\n') && line.len() < 200, "{line}");
    }

    #[test]
    fn pruning_is_idempotent_and_dedupes_large_repeats() {
        let call = ToolCall {
            id: "c1".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"a"}"#.into(),
        };
        let big = "y".repeat(1_000);
        let mut msgs = vec![
            Message::assistant(None, vec![call.clone()]),
            Message::tool_result(&call, big.clone()),
            Message::tool_result(&call, big),
        ];
        let calls: Vec<ToolCall> = vec![call];
        let map: HashMap<&str, &ToolCall> = calls.iter().map(|c| (c.id.as_str(), c)).collect();
        prune_tool_results(&mut msgs, &map);
        assert_eq!(msgs[1].content.as_deref(), Some(DUPLICATE_PLACEHOLDER));
        assert_eq!(
            msgs[2].content.as_deref(),
            Some("[read_file] read a from line 1 (1,000 chars)")
        );
        let again = msgs.clone();
        prune_tool_results(&mut msgs, &map);
        assert_eq!(msgs, again);
    }

    #[test]
    fn thousands() {
        assert_eq!(group_thousands(0), "0");
        assert_eq!(group_thousands(999), "999");
        assert_eq!(group_thousands(1_000), "1,000");
        assert_eq!(group_thousands(1_234_567), "1,234,567");
    }
}
