//! `hermes sessions search|stats|prune`: full-text search, counts, and deleting idle sessions.
//! `--json` output is a contract for scripts, like the rest of `hermes sessions`.

use std::io::{IsTerminal, Write};

use serde_json::json;

use crate::cli::{CliError, exit};
use crate::sessions::SessionStore;
use crate::sessions::search::{self, DiscoverOptions, report};

fn open(store: &SessionStore) -> Result<rusqlite::Connection, CliError> {
    search::open_read(store.path()).map_err(|e| {
        CliError::Setup(format!(
            "cannot open {} for reading: {e}",
            store.path().display()
        ))
    })
}

fn query_failed(e: rusqlite::Error) -> CliError {
    CliError::Setup(format!("cannot read state.db: {e}"))
}

pub fn search(store: &SessionStore, query: &str, json: bool, limit: usize) -> Result<u8, CliError> {
    let conn = open(store)?;
    let opts = DiscoverOptions {
        limit,
        window: 4,
        ..DiscoverOptions::default()
    };
    let found = search::discover(&conn, query, &opts).map_err(query_failed)?;
    if json {
        println!("{}", json!(found));
        return Ok(exit::OK);
    }
    if found.results.is_empty() {
        println!("no matches for {query:?}");
        return Ok(exit::OK);
    }
    if found.broadened {
        println!("(no conversation has all the words; showing any-word matches)\n");
    }
    for hit in &found.results {
        let s = &hit.session;
        println!(
            "{}  {}  {}{}",
            s.session_id,
            s.when,
            s.source,
            s.title
                .as_deref()
                .map(|t| format!("  \"{t}\""))
                .unwrap_or_default()
        );
        println!("  {}: {}", hit.matched_role, hit.snippet.replace('\n', " "));
        println!(
            "  → hermes sessions show {}   (message {})\n",
            s.session_id, hit.match_message_id
        );
    }
    Ok(exit::OK)
}

pub fn stats(store: &SessionStore, json: bool) -> Result<u8, CliError> {
    let conn = open(store)?;
    let s = report::stats(&conn, store.path()).map_err(query_failed)?;
    if json {
        println!("{}", json!(s));
        return Ok(exit::OK);
    }
    let when = |t: Option<f64>| t.map(search::format_when).unwrap_or_else(|| "-".into());
    println!(
        "database   {} ({:.1} MB)",
        store.path().display(),
        s.db_bytes as f64 / 1e6
    );
    println!("sessions   {}", s.sessions);
    println!(
        "messages   {} ({} hidden by /undo)",
        s.messages, s.rewound_messages
    );
    println!("oldest     {}", when(s.oldest));
    println!("newest     {}", when(s.newest));
    if !s.by_source.is_empty() {
        println!("\n{:<14} {:>9} {:>10}", "SOURCE", "SESSIONS", "MESSAGES");
        for c in &s.by_source {
            println!("{:<14} {:>9} {:>10}", c.source, c.sessions, c.messages);
        }
    }
    Ok(exit::OK)
}

pub fn prune(store: &SessionStore, older_than: &str, dry_run: bool) -> Result<u8, CliError> {
    let period = report::parse_period(older_than).ok_or_else(|| {
        CliError::Setup(format!(
            "cannot read the period `{older_than}`; write it like 90d, 12w or 36h"
        ))
    })?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let cutoff = now - period.as_secs_f64();
    let idle = report::idle_sessions(&open(store)?, cutoff).map_err(query_failed)?;
    if idle.is_empty() {
        println!("no sessions idle for longer than {older_than}");
        return Ok(exit::OK);
    }
    let messages: i64 = idle.iter().map(|s| s.message_count).sum();
    if dry_run {
        for s in &idle {
            println!(
                "{}  {}  {:>5} msgs  last active {}",
                s.id,
                s.source,
                s.message_count,
                search::format_when(s.last_active)
            );
        }
        println!(
            "would delete {} sessions ({messages} messages); run without --dry-run to delete",
            idle.len()
        );
        return Ok(exit::OK);
    }
    if std::io::stdin().is_terminal() {
        print!(
            "Delete {} sessions ({messages} messages) idle for longer than {older_than}? [y/N] ",
            idle.len()
        );
        std::io::stdout().flush()?;
        let mut answer = String::new();
        std::io::stdin().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            println!("kept");
            return Ok(exit::OK);
        }
    }
    let mut deleted = 0;
    for s in &idle {
        if store.delete_session(&s.id)? {
            deleted += 1;
        }
    }
    println!("deleted {deleted} sessions idle for longer than {older_than}");
    Ok(exit::OK)
}
