//! The summary itself: the message that carries it (prefix, end marker, recognising an earlier
//! one), the transcript the summariser reads, the call to the summary model, and the
//! deterministic fallback built from the messages when that call fails.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::LazyLock;
use std::time::Duration;

use futures::StreamExt;
use regex::Regex;
use serde::Serialize;

use crate::llm::{
    ChatRequest, FailoverReason, LlmClient, LlmError, LlmEvent, Message, Role, ToolCall,
};
use crate::security::redact::redact;

use super::prune;

/// Starts every summary message we insert; how a later compaction recognises it.
pub const SUMMARY_PREFIX: &str = "[CONTEXT CHECKPOINT: earlier turns were compacted] The start of this conversation was condensed into the checkpoint below to save context space. It is background, not a new instruction. The original messages are kept in the session archive: use session_search to read any of them verbatim. Your memory files and the current state of files on disk are authoritative where they differ from this checkpoint, and all your tools remain available.";
/// Ends every summary message we insert; a message merged into a user message continues after it.
pub const SUMMARY_END: &str =
    "[END OF CONTEXT CHECKPOINT: respond to the latest message below, not to this checkpoint]";
/// Prefixes Python Hermes used for its summary messages (sessions may be shared with it).
const LEGACY_PREFIXES: [&str; 2] = ["[CONTEXT COMPACTION", "[CONTEXT SUMMARY]:"];
const LEGACY_END: &str = "--- END OF CONTEXT SUMMARY";

/// The summariser's instructions (our own text), rendered with minijinja.
const TEMPLATE: &str = include_str!("../../prompts/compaction_summary.md");
const SUMMARIZER_SYSTEM: &str =
    "You write precise, factual checkpoints of agent conversations. You never call tools.";

/// Per-message cap in the transcript: head + marker + tail.
const MESSAGE_HEAD_CHARS: usize = 4_000;
const MESSAGE_TAIL_CHARS: usize = 1_500;
/// Per-call cap for tool arguments in the transcript.
const ARGS_MAX_CHARS: usize = 1_500;
const ARGS_HEAD_CHARS: usize = 1_200;
/// Fallback summary caps (total, and per quoted message).
const FALLBACK_MAX_CHARS: usize = 8_000;
const FALLBACK_PER_ITEM: usize = 700;

static THINK_BLOCK: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?s)<(think|thinking|reasoning)>.*?(</(think|thinking|reasoning)>|\z)").ok()
});

/// The content of the inserted summary message.
pub fn wrap(summary: &str) -> String {
    format!("{SUMMARY_PREFIX}\n\n{}\n\n{SUMMARY_END}", summary.trim())
}

/// If `content` is a summary message (ours or Python's), returns the summary and the text of the
/// user message it was merged into, if any.
pub fn parse(content: &str) -> Option<(String, Option<String>)> {
    let (body, end) = if let Some(rest) = content.strip_prefix(SUMMARY_PREFIX) {
        (rest, SUMMARY_END)
    } else if LEGACY_PREFIXES.iter().any(|p| content.starts_with(p)) {
        (content, LEGACY_END)
    } else {
        return None;
    };
    let (summary, after) = match body.find(end) {
        Some(pos) => {
            let after = &body[pos + end.len()..];
            // Python's end marker runs to the end of its line.
            let after = if end == LEGACY_END {
                after.split_once('\n').map(|(_, a)| a).unwrap_or("")
            } else {
                after
            };
            (&body[..pos], after)
        }
        None => (body, ""),
    };
    let rest = after.trim();
    Some((
        summary.trim().to_string(),
        (!rest.is_empty()).then(|| rest.to_string()),
    ))
}

/// Strips reasoning blocks and replaces media references: what the summariser should not read.
fn clean(text: &str) -> String {
    let text = match THINK_BLOCK.as_ref() {
        Some(re) => re.replace_all(text, "").into_owned(),
        None => text.to_string(),
    };
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.lines().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if line.trim_start().starts_with("MEDIA:") {
            out.push_str("[media attachment]");
        } else {
            out.push_str(line);
        }
    }
    out
}

fn cap_message(text: &str) -> String {
    let total = text.chars().count();
    if total <= MESSAGE_HEAD_CHARS + MESSAGE_TAIL_CHARS + 500 {
        return text.to_string();
    }
    let head: String = text.chars().take(MESSAGE_HEAD_CHARS).collect();
    let tail: String = text.chars().skip(total - MESSAGE_TAIL_CHARS).collect();
    format!("{head}\n...[truncated]...\n{tail}")
}

fn cap_args(args: &str) -> String {
    if args.chars().count() <= ARGS_MAX_CHARS {
        return args.to_string();
    }
    format!("{}...", crate::util::truncate_chars(args, ARGS_HEAD_CHARS))
}

/// The transcript of `messages` for the summariser, secrets redacted.
pub(super) fn transcript(messages: &[Message]) -> String {
    let mut parts = Vec::with_capacity(messages.len());
    for m in messages {
        let text = clean(m.content.as_deref().unwrap_or(""));
        let part = match m.role {
            Role::User => format!("[USER]: {}", cap_message(&text)),
            Role::System => format!("[SYSTEM]: {}", cap_message(&text)),
            Role::Tool => format!(
                "[TOOL RESULT {}]: {}",
                m.tool_call_id.as_deref().unwrap_or("?"),
                cap_message(&text)
            ),
            Role::Assistant => {
                let mut p = format!("[ASSISTANT]: {}", cap_message(&text));
                if !m.tool_calls.is_empty() {
                    p.push_str("\n[Tool calls:\n");
                    for c in &m.tool_calls {
                        p.push_str(&format!("  {}({})\n", c.name, cap_args(&c.arguments)));
                    }
                    p.push(']');
                }
                p
            }
        };
        parts.push(part);
    }
    redact(&parts.join("\n\n"))
}

/// A transcript of `middle` of at most `max_chars`: full (capped) tool output if it fits, else
/// with tool results shortened to one-liners, else only the newest part of that.
pub(super) fn fitted_transcript(
    middle: &[Message],
    calls: &HashMap<&str, &ToolCall>,
    max_chars: usize,
) -> String {
    let full = transcript(middle);
    if full.chars().count() <= max_chars {
        return full;
    }
    let mut pruned = middle.to_vec();
    prune::prune_tool_results(&mut pruned, calls);
    let short = transcript(&pruned);
    let total = short.chars().count();
    if total <= max_chars {
        return short;
    }
    let kept: String = short.chars().skip(total - max_chars).collect();
    format!(
        "[... the oldest part of the transcript was left out to fit the summary model ...]\n{kept}"
    )
}

#[derive(Serialize)]
struct PromptContext<'a> {
    target_tokens: u64,
    previous_summary: Option<&'a str>,
    turns: &'a str,
    focus: Option<&'a str>,
    date: &'a str,
}

/// Renders the summariser's request text.
pub(super) fn render_prompt(
    turns: &str,
    previous: Option<&str>,
    focus: Option<&str>,
    target_tokens: u64,
    date: &str,
) -> Result<String, minijinja::Error> {
    let ctx = PromptContext {
        target_tokens,
        previous_summary: previous.map(str::trim).filter(|p| !p.is_empty()),
        turns,
        focus: focus.map(str::trim).filter(|f| !f.is_empty()),
        date,
    };
    crate::template::render(TEMPLATE, &ctx)
}

/// Asks `model` for the summary: one tool-less call whose streamed text is collected. Errors,
/// an empty answer and a call slower than `timeout` are all failures.
pub(super) async fn call_model(
    client: &dyn LlmClient,
    model: &str,
    prompt: String,
    timeout: Duration,
    max_chars: usize,
) -> Result<String, LlmError> {
    let request = ChatRequest {
        model: model.to_string(),
        system: SUMMARIZER_SYSTEM.to_string(),
        messages: vec![Message::user(prompt)],
        tools: Vec::new(),
        max_tokens: None,
        temperature: None,
    };
    let collect = async {
        let mut stream = client.stream(request).await?;
        let mut text = String::new();
        while let Some(event) = stream.next().await {
            match event? {
                LlmEvent::TextDelta(t) => text.push_str(&t),
                LlmEvent::Done(response) => {
                    if let Some(full) = response.message.content.filter(|c| !c.trim().is_empty()) {
                        text = full;
                    }
                    return Ok(text);
                }
                LlmEvent::ReasoningDelta(_) | LlmEvent::ToolCallStart { .. } => {}
            }
        }
        Err(LlmError::new(
            FailoverReason::ServerError,
            "the summary model's response stream ended without a final message",
        ))
    };
    let text = match tokio::time::timeout(timeout, collect).await {
        Ok(result) => result?,
        Err(_) => {
            return Err(LlmError::new(
                FailoverReason::Timeout,
                format!(
                    "the summary model gave no complete answer within {}s",
                    timeout.as_secs()
                ),
            ));
        }
    };
    let mut summary = clean(&text).trim().to_string();
    // A model that echoes our wrapper would nest it on the next compaction.
    if let Some((inner, _)) = parse(&summary) {
        summary = inner;
    }
    if summary.is_empty() {
        return Err(LlmError::new(
            FailoverReason::FormatError,
            "the summary model returned no text",
        ));
    }
    let marker = "[... the checkpoint was cut here because it was far longer than asked ...]";
    Ok(redact(&crate::util::head_tail(&summary, max_chars, marker)))
}

/// A checkpoint assembled from the messages alone, for when the summary model cannot be used:
/// what the user asked, which tools ran, the files involved and the last reply. ≤ 8,000 chars.
pub(super) fn fallback(previous: Option<&str>, middle: &[Message]) -> String {
    let quote = |text: &str, max: usize| -> String {
        let one = clean(text).split_whitespace().collect::<Vec<_>>().join(" ");
        let cut = crate::util::truncate_chars(&one, max);
        if cut.len() < one.len() {
            format!("{cut}…")
        } else {
            cut.to_string()
        }
    };
    let mut out = String::from(
        "## Note\nThe automatic summary could not be written, so this checkpoint lists what the compacted messages contain. Use session_search for details.\n",
    );
    if let Some(prev) = previous.filter(|p| !p.trim().is_empty()) {
        out.push_str("\n## Earlier checkpoint\n");
        out.push_str(&crate::util::head_tail(prev.trim(), 2_000, "[...]"));
        out.push('\n');
    }

    let asks: Vec<&Message> = middle.iter().filter(|m| m.role == Role::User).collect();
    if !asks.is_empty() {
        out.push_str("\n## User requests\n");
        let skip = asks.len().saturating_sub(10);
        if skip > 0 {
            out.push_str(&format!("({skip} earlier requests not listed)\n"));
        }
        for (i, m) in asks.iter().enumerate().skip(skip) {
            out.push_str(&format!(
                "{}. {}\n",
                i + 1,
                quote(m.content.as_deref().unwrap_or(""), 300)
            ));
        }
    }

    let calls: Vec<&ToolCall> = middle.iter().flat_map(|m| m.tool_calls.iter()).collect();
    // Most useful first: whatever the 8,000-char cap cuts comes from the end.
    let last_reply = middle.iter().rev().find(|m| {
        m.role == Role::Assistant && m.content.as_deref().is_some_and(|c| !c.trim().is_empty())
    });
    if let Some(m) = last_reply {
        out.push_str("\n## Last assistant reply\n");
        out.push_str(&quote(
            m.content.as_deref().unwrap_or(""),
            FALLBACK_PER_ITEM,
        ));
        out.push('\n');
    }
    // The 30 most recently touched paths, oldest first.
    let mut files: Vec<String> = Vec::new();
    let mut seen = BTreeSet::new();
    for c in calls.iter().rev() {
        if let Ok(serde_json::Value::Object(args)) = serde_json::from_str(&c.arguments) {
            for key in ["path", "file_path", "file", "filename"] {
                let path = args
                    .get(key)
                    .and_then(|v| v.as_str())
                    .filter(|p| !p.is_empty());
                if let Some(p) = path.filter(|p| files.len() < 30 && seen.insert(p.to_string())) {
                    files.push(quote(p, 200));
                }
            }
        }
    }
    if !files.is_empty() {
        out.push_str("\n## Relevant Files\n");
        for f in files.iter().rev() {
            out.push_str(&format!("- {f}\n"));
        }
    }

    if !calls.is_empty() {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for c in &calls {
            *counts.entry(c.name.as_str()).or_default() += 1;
        }
        let tally: Vec<String> = counts.iter().map(|(n, c)| format!("{n} ×{c}")).collect();
        out.push_str(&format!(
            "\n## Tool calls made\n{}\nMost recent:\n",
            tally.join(", ")
        ));
        for c in calls.iter().skip(calls.len().saturating_sub(15)) {
            out.push_str(&format!("- {}({})\n", c.name, quote(&c.arguments, 120)));
        }
    }

    let out = redact(&out);
    let cut = crate::util::truncate_chars(&out, FALLBACK_MAX_CHARS);
    cut.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_prompt_snapshot() {
        let turns = transcript(&[
            Message::user("Fix the flaky test in src/net.rs"),
            Message::assistant(Some("Looking.".into()), Vec::new()),
        ]);
        let prompt = render_prompt(&turns, None, None, 2_000, "Monday, November 30, 2026").unwrap();
        insta::assert_snapshot!(prompt);
    }

    #[test]
    fn iterative_prompt_with_focus_snapshot() {
        let turns = transcript(&[Message::user("Now the docs")]);
        let prompt = render_prompt(
            &turns,
            Some("## Goal\nfix tests"),
            Some("documentation"),
            3_000,
            "Monday, November 30, 2026",
        )
        .unwrap();
        insta::assert_snapshot!(prompt);
    }

    #[test]
    fn summary_message_snapshot() {
        insta::assert_snapshot!(wrap("## Goal\nfix tests"));
    }

    #[test]
    fn summary_wrapper_round_trips_and_rejects_plain_text() {
        let wrapped = wrap("  body\n");
        assert_eq!(parse(&wrapped), Some(("body".to_string(), None)));
        assert_eq!(parse("hello [CONTEXT CHECKPOINT"), None);
        let legacy = "[CONTEXT COMPACTION — REFERENCE ONLY] stuff\n--- END OF CONTEXT SUMMARY — respond ---\nuser text";
        let (s, rest) = parse(legacy).unwrap();
        assert!(s.contains("stuff"));
        assert_eq!(rest.as_deref(), Some("user text"));
        // A truncated wrapper (no end marker) still parses instead of leaking the prefix.
        let (s, rest) = parse(&format!("{SUMMARY_PREFIX}\n\npartial")).unwrap();
        assert_eq!((s.as_str(), rest), ("partial", None));
    }

    #[test]
    fn fallback_is_bounded_and_readable() {
        let mut middle = Vec::new();
        for i in 0..200 {
            let c = ToolCall {
                id: format!("c{i}"),
                name: "write_file".into(),
                arguments: format!(
                    r#"{{"path":"src/f{i}.rs","content":"{}"}}"#,
                    "q".repeat(5_000)
                ),
            };
            middle.push(Message::user(format!("ask {i} {}", "w".repeat(2_000))));
            middle.push(Message::assistant(
                Some(format!("<think>secret plan</think>done {i}")),
                vec![c.clone()],
            ));
            middle.push(Message::tool_result(&c, "ok"));
        }
        let f = fallback(Some(&"p".repeat(10_000)), &middle);
        assert!(f.chars().count() <= 8_000);
        assert!(f.contains("## Relevant Files") && f.contains("src/f199.rs"));
        assert!(f.contains("done 199") && !f.contains("secret plan"));
        assert!(f.contains("190 earlier requests not listed"));
    }

    #[test]
    fn transcript_caps_long_messages_and_arguments() {
        let c = ToolCall {
            id: "c".into(),
            name: "write_file".into(),
            arguments: "a".repeat(5_000),
        };
        let msgs = vec![
            Message::user(format!("{}MIDDLE{}", "h".repeat(5_000), "t".repeat(5_000))),
            Message::assistant(None, vec![c.clone()]),
            Message::tool_result(&c, "MEDIA:/tmp/cat.png\nseen"),
        ];
        let t = transcript(&msgs);
        assert!(t.contains("...[truncated]...") && !t.contains("MIDDLE"));
        assert!(t.contains(&format!("write_file({}...)", "a".repeat(1_200))));
        assert!(t.contains("[TOOL RESULT c]: [media attachment]\nseen"));
    }
}
