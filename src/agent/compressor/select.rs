//! Choosing what a compaction keeps verbatim: the protected head, the token-sized tail and the
//! last user message, without ever separating an assistant's tool calls from their results.
//! Also the final safety net that repairs tool-call pairs in whatever is kept.

use std::collections::HashSet;

use crate::llm::{Message, Role};

use super::estimate_message_tokens;

/// Where the kept parts of a history start and end (indices into the stripped history).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Split {
    /// `messages[..head_end]` is kept as is.
    pub head_end: usize,
    /// `messages[tail_start..]` is kept as is; the middle in between is summarised.
    pub tail_start: usize,
    /// The last user message, when it lies in the middle and is kept anyway (placed after the
    /// summary) because the tail could not stretch back to it.
    pub pinned_user: Option<usize>,
}

/// Picks the head and tail of `messages`.
///
/// `head_n` messages are protected at the start (extended over the results of a call made in
/// the head). The tail is filled from the end while it stays within `tail_budget` tokens; it
/// takes at least `floor` messages unless that would pass three times the budget, and always the
/// last message. A tail that would start on a tool result reaches back to the call that produced
/// it. The last user message is kept: by stretching the tail to it when that costs at most 1.5×
/// the budget, else by pinning it.
pub(super) fn split(messages: &[Message], head_n: usize, tail_budget: u64, floor: usize) -> Split {
    let len = messages.len();
    let mut head_end = head_n.min(len);
    loop {
        while head_end < len && messages[head_end].role == Role::Tool {
            head_end += 1;
        }
        // A head ending on a user message would put the (user-role) summary right after it.
        if head_end > 0 && head_end < len && messages[head_end - 1].role == Role::User {
            head_end += 1;
            continue;
        }
        break;
    }

    let mut tail_start = len;
    let mut acc = 0u64;
    while tail_start > head_end {
        let t = estimate_message_tokens(&messages[tail_start - 1]);
        let count = len - tail_start;
        let fits =
            acc + t <= tail_budget || (count < floor && acc + t <= tail_budget * 3) || count == 0;
        if !fits {
            break;
        }
        acc += t;
        tail_start -= 1;
    }
    // Never start the tail on a tool result: reach back to the assistant message that called it.
    if tail_start < len && messages[tail_start].role == Role::Tool {
        let mut owner = tail_start;
        while owner > head_end && messages[owner].role == Role::Tool {
            owner -= 1;
        }
        if owner >= head_end
            && messages[owner].role == Role::Assistant
            && !messages[owner].tool_calls.is_empty()
        {
            tail_start = owner;
        } else {
            // No owner outside the head: these results are orphans; let them go to the middle.
            while tail_start < len && messages[tail_start].role == Role::Tool {
                tail_start += 1;
            }
        }
    }

    let mut pinned_user = None;
    let last_user = messages.iter().rposition(|m| m.role == Role::User);
    if let Some(last_user) = last_user.filter(|&u| u >= head_end && u < tail_start) {
        let stretch: u64 = messages[last_user..]
            .iter()
            .map(estimate_message_tokens)
            .sum();
        if stretch <= tail_budget + tail_budget / 2 {
            tail_start = last_user;
        } else {
            pinned_user = Some(last_user);
        }
    }
    Split {
        head_end,
        tail_start,
        pinned_user,
    }
}

/// Makes `messages` valid for any provider: drops tool results that answer no earlier call in
/// the list, and gives every call without a result a stub result right after its message's
/// other results. Returns how many messages were dropped or added.
pub(super) fn repair_tool_pairs(messages: &mut Vec<Message>) -> usize {
    let mut out: Vec<Message> = Vec::with_capacity(messages.len());
    let mut changes = 0;
    // Calls of the most recent assistant message that still wait for a result.
    let mut open: Vec<(String, String)> = Vec::new();
    let mut answered: HashSet<String> = HashSet::new();
    let close = |out: &mut Vec<Message>, open: &mut Vec<(String, String)>, changes: &mut usize| {
        for (id, name) in open.drain(..) {
            let call = crate::llm::ToolCall {
                id,
                name,
                arguments: String::new(),
            };
            out.push(Message::tool_result(&call, STUB_RESULT));
            *changes += 1;
        }
    };
    for m in messages.drain(..) {
        match m.role {
            Role::Tool => {
                let id = m.tool_call_id.clone().unwrap_or_default();
                if let Some(pos) = open.iter().position(|(open_id, _)| *open_id == id) {
                    open.remove(pos);
                    answered.insert(id);
                    out.push(m);
                } else {
                    changes += 1;
                }
            }
            _ => {
                close(&mut out, &mut open, &mut changes);
                if m.role == Role::Assistant {
                    open = m
                        .tool_calls
                        .iter()
                        .filter(|c| !answered.contains(&c.id))
                        .map(|c| (c.id.clone(), c.name.clone()))
                        .collect();
                }
                out.push(m);
            }
        }
    }
    close(&mut out, &mut open, &mut changes);
    *messages = out;
    changes
}

/// The result given to a kept call whose real result was compacted away.
pub(super) const STUB_RESULT: &str =
    "[result compacted: see the context summary; the original is searchable with session_search]";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolCall;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "terminal".into(),
            arguments: "{}".into(),
        }
    }

    #[test]
    fn orphans_dropped_and_missing_results_stubbed() {
        let c1 = call("c1");
        let c2 = call("c2");
        let mut msgs = vec![
            Message::tool_result(&call("gone"), "orphan"),
            Message::user("hi"),
            Message::assistant(None, vec![c1.clone(), c2.clone()]),
            Message::tool_result(&c2, "two"),
            Message::user("next"),
        ];
        let changes = repair_tool_pairs(&mut msgs);
        assert_eq!(changes, 2);
        let roles: Vec<Role> = msgs.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [
                Role::User,
                Role::Assistant,
                Role::Tool,
                Role::Tool,
                Role::User
            ]
        );
        assert_eq!(msgs[3].tool_call_id.as_deref(), Some("c1"));
        assert_eq!(msgs[3].content.as_deref(), Some(STUB_RESULT));
    }

    #[test]
    fn head_extends_over_results_and_tail_never_starts_on_a_result() {
        let c = call("c");
        let big = "z".repeat(4_000);
        let msgs = vec![
            Message::user("start"),
            Message::assistant(None, vec![c.clone()]),
            Message::tool_result(&c, "r"),
            Message::user("u2"),
            Message::assistant(None, vec![call("d")]),
            Message::tool_result(&call("d"), big.clone()),
            Message::tool_result(&call("d"), big),
        ];
        let s = split(&msgs, 2, 1_000, 1);
        assert_eq!(s.head_end, 3);
        assert!(msgs[s.tail_start].role != Role::Tool);
    }
}
