//! The CJK path of session search: a CJK query with a term shorter than 3 characters (which
//! the trigram index cannot match) is answered with `LIKE` for the short terms and the trigram
//! index for the others, newest first over a bounded number of rows. Without an FTS5 row to
//! call `snippet()` on, its hits get their excerpt from [`snippet_around`] (the `session_search`
//! modes use it too). The routing that sends a query here is in `search.rs`.

use rusqlite::Connection;

use super::{SearchHit, Token, hit, quote, visible_rows};
use crate::sessions::store::like_escape;

/// `LIKE` (short CJK terms, no index can help) looks at the newest this many messages only, so
/// its worst case stays bounded on a large archive.
const LIKE_SCAN_ROWS: i64 = 100_000;

/// Chinese, Japanese and Korean scripts, the ranges Python Hermes routes to trigram search.
pub(crate) fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0x20000..=0x2A6DF | 0x3000..=0x303F
        | 0x3040..=0x309F | 0x30A0..=0x30FF | 0xAC00..=0xD7AF)
}

/// CJK query with a term shorter than 3 characters: short terms by `LIKE` on the indexed
/// columns, longer ones through the trigram index, same boolean structure; newest first (by
/// row id, so SQLite walks the table backwards and stops at the limit).
pub(super) fn mixed_search(
    conn: &Connection,
    tokens: &[Token],
    limit: i64,
    extra: &str,
) -> rusqlite::Result<Vec<SearchHit>> {
    let mut expr = String::new();
    let mut args: Vec<String> = Vec::new();
    let mut after_term = false;
    for tok in tokens {
        match tok {
            Token::Term { text, .. } => {
                if after_term {
                    expr.push_str(" AND ");
                }
                if text.chars().count() >= 3 {
                    expr.push_str("(m.id IN (SELECT rowid FROM messages_fts_trigram WHERE messages_fts_trigram MATCH ?))");
                    args.push(quote(text));
                } else {
                    expr.push_str(
                        "(m.content LIKE ? ESCAPE '\\' OR m.tool_name LIKE ? ESCAPE '\\' OR m.tool_calls LIKE ? ESCAPE '\\')",
                    );
                    let pattern = format!("%{}%", like_escape(text));
                    args.extend([pattern.clone(), pattern.clone(), pattern]);
                }
                after_term = true;
            }
            Token::And => expr.push_str(" AND "),
            Token::Or => expr.push_str(" OR "),
            Token::Not => expr.push_str(" AND NOT "),
        }
        if !matches!(tok, Token::Term { .. }) {
            after_term = false;
        }
    }
    let sql = format!(
        "SELECT m.id, m.session_id, m.role, COALESCE(m.content, ''), m.timestamp, s.source
         FROM messages m JOIN sessions s ON s.id = m.session_id
         WHERE ({expr}) AND m.id > (SELECT COALESCE(MAX(id), 0) FROM messages) - {LIKE_SCAN_ROWS}
               AND {}{extra}
         ORDER BY m.id DESC LIMIT {limit}",
        visible_rows()
    );
    let needle = first_positive_term(tokens).unwrap_or_default();
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt.query_map(rusqlite::params_from_iter(args), hit)?;
    rows.map(|r| {
        r.map(|mut h| {
            h.snippet = snippet_around(&h.snippet, &needle);
            h
        })
    })
    .collect()
}

/// The first term not preceded by `NOT`: what the snippet should show.
pub(crate) fn first_positive_term(tokens: &[Token]) -> Option<String> {
    let mut negated = false;
    for tok in tokens {
        match tok {
            Token::Not => negated = true,
            Token::Term { text, .. } if !negated => return Some(text.clone()),
            _ => negated = false,
        }
    }
    None
}

/// About 80 characters of `text` around the first (ASCII case-insensitive) occurrence of
/// `needle`, marked like FTS5's `snippet()`.
pub(crate) fn snippet_around(text: &str, needle: &str) -> String {
    const BEFORE: usize = 30;
    const AFTER: usize = 50;
    let found = if needle.is_empty() {
        None
    } else {
        text.to_ascii_lowercase().find(&needle.to_ascii_lowercase())
    };
    let Some(start) = found else {
        let head: String = text.chars().take(BEFORE + AFTER).collect();
        return if head.len() < text.len() {
            format!("{head}...")
        } else {
            head
        };
    };
    let end = start + needle.len();
    let before: Vec<char> = text[..start].chars().collect();
    let skip = before.len().saturating_sub(BEFORE);
    let after: String = text[end..].chars().take(AFTER).collect();
    format!(
        "{}{}>>>{}<<<{}{}",
        if skip > 0 { "..." } else { "" },
        before[skip..].iter().collect::<String>(),
        &text[start..end],
        after,
        if end + after.len() < text.len() {
            "..."
        } else {
            ""
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sessions::search::parse_query;

    #[test]
    fn snippet_marks_the_match() {
        assert_eq!(
            snippet_around("我们明天去北京看长城吧", "北京"),
            "我们明天去>>>北京<<<看长城吧"
        );
        assert_eq!(snippet_around("Hello World", "world"), "Hello >>>World<<<");
        let long = format!("{}needle{}", "a".repeat(100), "b".repeat(100));
        let s = snippet_around(&long, "needle");
        assert!(
            s.starts_with("...") && s.ends_with("...") && s.contains(">>>needle<<<"),
            "{s}"
        );
        assert_eq!(snippet_around("short", "missing"), "short");
    }

    #[test]
    fn negated_terms_are_not_snippet_anchors() {
        let tokens = parse_query("NOT x a NOT b c");
        assert_eq!(first_positive_term(&tokens).as_deref(), Some("x"));
        let tokens = parse_query("a NOT b");
        assert_eq!(first_positive_term(&tokens).as_deref(), Some("a"));
    }
}
