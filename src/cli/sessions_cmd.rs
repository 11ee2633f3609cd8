//! `hermes sessions list|show|export|delete`: reading state.db for people and scripts.
//! The `--json` and `jsonl` outputs are a contract: other tools parse them.

use std::io::{IsTerminal, Write};

use serde_json::{Value, json};

use crate::cli::args::{ExportFormat, SessionsCommand};
use crate::cli::{CliError, exit};
use crate::llm::ToolCall;
use crate::sessions::{SessionRow, SessionStore, SessionSummary, StoredMessage};

/// `redactor` hides secrets in exports (sessions stored before redaction existed included).
pub fn run(
    store: &SessionStore,
    redactor: &crate::security::redact::Redactor,
    action: SessionsCommand,
) -> Result<u8, CliError> {
    match action {
        SessionsCommand::List { json, limit } => {
            let rows = store.list_summaries(limit)?;
            ignore_broken_pipe(print_list(&rows, json))?;
            Ok(exit::OK)
        }
        SessionsCommand::Rename { id, title } => {
            let Some(row) = store.find_session(&id)? else {
                return Err(not_found(&id));
            };
            match store.set_title(&row.id, &title.join(" "))? {
                Some(t) => println!("session {} is now titled \"{t}\"", row.id),
                None => println!("session {} has no title now", row.id),
            }
            Ok(exit::OK)
        }
        SessionsCommand::Show { id, json } => {
            let (row, messages) = load(store, &id)?;
            if json {
                let doc = json!({
                    "session": session_json(&row),
                    "messages": messages.iter().map(message_json).collect::<Vec<_>>(),
                });
                println!("{doc}");
            } else {
                print!("{}", markdown(&row, &messages));
            }
            Ok(exit::OK)
        }
        SessionsCommand::Export { id, format, output } => {
            let (row, messages) = load(store, &id)?;
            let text = match format {
                ExportFormat::Jsonl => {
                    let mut doc = session_json(&row);
                    doc["messages"] = Value::Array(messages.iter().map(message_json).collect());
                    format!("{doc}\n")
                }
                ExportFormat::Md => markdown(&row, &messages),
            };
            let text = redactor.redact_string(text);
            match output {
                Some(path) => {
                    crate::util::atomic_write(&path, text.as_bytes()).map_err(|e| {
                        CliError::Setup(format!("cannot write {}: {e}", path.display()))
                    })?;
                    eprintln!("exported {} to {}", row.id, path.display());
                }
                None => {
                    let mut out = std::io::stdout().lock();
                    out.write_all(text.as_bytes())?;
                }
            }
            Ok(exit::OK)
        }
        SessionsCommand::Search { query, json, limit } => {
            crate::cli::sessions_report::search(store, &query, json, limit)
        }
        SessionsCommand::Stats { json } => crate::cli::sessions_report::stats(store, json),
        SessionsCommand::Prune {
            older_than,
            dry_run,
        } => crate::cli::sessions_report::prune(store, &older_than, dry_run),
        SessionsCommand::Delete { id, yes } => {
            let Some(row) = store.find_session(&id)? else {
                return Err(not_found(&id));
            };
            if !yes && !std::io::stdin().is_terminal() {
                // Nobody can answer the question: deleting anyway would be a silent loss.
                return Err(CliError::Usage(format!(
                    "not deleting session {} ({} messages) without confirmation: no terminal to ask on; add -y to delete it",
                    row.id, row.message_count
                )));
            }
            if !yes {
                print!(
                    "Delete session {} ({} messages)? [y/N] ",
                    row.id, row.message_count
                );
                std::io::stdout().flush()?;
                let mut answer = String::new();
                std::io::stdin().read_line(&mut answer)?;
                if !matches!(answer.trim(), "y" | "Y" | "yes") {
                    println!("kept");
                    return Ok(exit::OK);
                }
            }
            if store.delete_session(&row.id)? {
                println!("deleted session {}", row.id);
                Ok(exit::OK)
            } else {
                Err(not_found(&id))
            }
        }
    }
}

/// `/title` in the REPL: shows the title, or sets it (`text`); the line to print.
pub fn slash_title(store: &SessionStore, session_id: &str, text: Option<&str>) -> String {
    match text {
        None => match store.session(session_id) {
            Ok(Some(row)) => match row.title {
                Some(t) => format!("title: {t}"),
                None => "this session has no title yet; /title TEXT sets one".to_string(),
            },
            Ok(None) => "this session is not saved yet; the title is set after the first exchange"
                .to_string(),
            Err(e) => format!("error: {e}"),
        },
        Some(text) => match store.set_title(session_id, text) {
            Ok(Some(t)) => format!("title set: {t}"),
            Ok(None) => "title cleared".to_string(),
            Err(e) => format!("error: {e}"),
        },
    }
}

/// A reader that went away (`hermes sessions list | head -1`) is not an error.
fn ignore_broken_pipe(result: std::io::Result<()>) -> std::io::Result<()> {
    match result {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// The table people read, or the lean `--json` list (no system prompts, no message bodies
/// beyond the preview).
fn print_list(rows: &[SessionSummary], json: bool) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        let text = serde_json::to_string(rows).map_err(std::io::Error::other)?;
        writeln!(out, "{text}")?;
        return out.flush();
    }
    if rows.is_empty() {
        writeln!(out, "no sessions yet")?;
        return out.flush();
    }
    writeln!(
        out,
        "{:<24} {:<32} {:>5}  {:<16}  PREVIEW",
        "ID", "TITLE", "MSGS", "LAST ACTIVE"
    )?;
    for r in rows {
        let title = r.title.as_deref().unwrap_or("-");
        writeln!(
            out,
            "{:<24} {:<32} {:>5}  {:<16}  {}",
            r.id,
            clip(title, 32),
            r.message_count,
            format_time(r.last_active),
            clip(r.preview.as_deref().unwrap_or("-"), 50),
        )?;
    }
    out.flush()
}

fn clip(text: &str, width: usize) -> String {
    if text.chars().count() > width {
        format!(
            "{}…",
            crate::util::truncate_chars(text, width.saturating_sub(1))
        )
    } else {
        text.to_string()
    }
}

fn not_found(id: &str) -> CliError {
    CliError::NotFound(format!(
        "no session matches `{id}`; `hermes sessions list` shows the ids"
    ))
}

fn load(store: &SessionStore, id: &str) -> Result<(SessionRow, Vec<StoredMessage>), CliError> {
    let row = store.find_session(id)?.ok_or_else(|| not_found(id))?;
    let messages = store.messages(&row.id)?;
    Ok((row, messages))
}

fn session_json(r: &SessionRow) -> Value {
    json!({
        "id": r.id,
        "source": r.source,
        "title": r.title,
        "model": r.model,
        "billing_provider": r.billing_provider,
        "billing_base_url": r.billing_base_url,
        "parent_session_id": r.parent_session_id,
        "cwd": r.cwd,
        "started_at": r.started_at,
        "ended_at": r.ended_at,
        "end_reason": r.end_reason,
        "message_count": r.message_count,
        "tool_call_count": r.tool_call_count,
        "api_call_count": r.api_call_count,
        "input_tokens": r.input_tokens,
        "output_tokens": r.output_tokens,
        "cache_read_tokens": r.cache_read_tokens,
        "cache_write_tokens": r.cache_write_tokens,
        "reasoning_tokens": r.reasoning_tokens,
        "system_prompt": r.system_prompt,
    })
}

fn message_json(m: &StoredMessage) -> Value {
    let msg = &m.message;
    let tool_calls = if msg.tool_calls.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&ToolCall::list_to_json(&msg.tool_calls)).unwrap_or(Value::Null)
    };
    json!({
        "id": m.id,
        "role": msg.role.as_str(),
        "content": msg.content,
        "tool_calls": tool_calls,
        "tool_call_id": msg.tool_call_id,
        "tool_name": msg.tool_name,
        "timestamp": m.timestamp,
        "finish_reason": msg.finish_reason,
        "reasoning": msg.reasoning,
    })
}

fn markdown(row: &SessionRow, messages: &[StoredMessage]) -> String {
    let mut out = format!(
        "# Session {}\n\n- started: {}\n- source: {}\n- model: {}\n- messages: {}\n- tokens: {} in / {} out\n",
        row.id,
        format_time(row.started_at),
        row.source,
        row.model.as_deref().unwrap_or("-"),
        row.message_count,
        row.input_tokens,
        row.output_tokens,
    );
    for m in messages {
        let msg = &m.message;
        let heading = match msg.role {
            crate::llm::Role::Tool => format!(
                "Tool result ({})",
                msg.tool_name.as_deref().unwrap_or("unknown tool")
            ),
            role => {
                let r = role.as_str();
                let mut chars = r.chars();
                chars
                    .next()
                    .map(|c| c.to_uppercase().chain(chars).collect())
                    .unwrap_or_default()
            }
        };
        out.push_str(&format!("\n## {heading}\n\n"));
        if let Some(text) = &msg.content {
            out.push_str(text.trim_end());
            out.push('\n');
        }
        for call in &msg.tool_calls {
            out.push_str(&format!("\n→ `{}({})`\n", call.name, call.arguments));
        }
    }
    out
}

fn format_time(ts: f64) -> String {
    chrono::DateTime::from_timestamp(ts as i64, 0)
        .map(|t| {
            t.with_timezone(&chrono::Local)
                .format("%Y-%m-%d %H:%M")
                .to_string()
        })
        .unwrap_or_else(|| "-".to_string())
}
