//! Pure entry editing: add / replace / remove on a list of entries, and how `old_text` picks an
//! entry (a unique substring, or the `[N]` index shown in listings). No I/O here.

/// One memory operation, as the tool and the CLI express it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemoryOp {
    Add { content: String },
    Replace { old_text: String, content: String },
    Remove { old_text: String },
}

impl MemoryOp {
    /// The text the operation would store, if any.
    pub fn content(&self) -> Option<&str> {
        match self {
            MemoryOp::Add { content } | MemoryOp::Replace { content, .. } => Some(content),
            MemoryOp::Remove { .. } => None,
        }
    }
}

/// Longest preview of an entry in "several entries matched" errors.
const PREVIEW_CHARS: usize = 80;

/// Applies one operation; returns what happened, or why not (for the model).
pub fn apply_op(entries: &mut Vec<String>, op: &MemoryOp) -> Result<String, String> {
    match op {
        MemoryOp::Add { content } => {
            let content = content.trim();
            if content.is_empty() {
                return Err("content is empty: give the fact to save in `content`".into());
            }
            if entries.iter().any(|e| e == content) {
                return Ok("Entry already exists (no duplicate added).".into());
            }
            entries.push(content.to_string());
            Ok("Entry added.".into())
        }
        MemoryOp::Replace { old_text, content } => {
            let content = content.trim();
            if content.is_empty() {
                return Err(
                    "content is empty: to delete an entry use action `remove`; to change it give the new text in `content`"
                        .into(),
                );
            }
            let i = find(entries, old_text)?;
            if entries
                .iter()
                .enumerate()
                .any(|(j, e)| j != i && e == content)
            {
                // The new text already exists elsewhere: the replaced entry simply goes away.
                entries.remove(i);
                return Ok("Entry replaced (merged with an identical entry).".into());
            }
            entries[i] = content.to_string();
            Ok("Entry replaced.".into())
        }
        MemoryOp::Remove { old_text } => {
            let i = find(entries, old_text)?;
            entries.remove(i);
            Ok("Entry removed.".into())
        }
    }
}

/// The entry `old_text` designates: `[N]`/`#N`/`N` (1-based, as listings show) when in range,
/// else the one entry containing it (exact case first, then ignoring case). Several identical
/// matching entries count as one (the first).
pub fn find(entries: &[String], old_text: &str) -> Result<usize, String> {
    let wanted = old_text.trim();
    if wanted.is_empty() {
        return Err(
            "old_text is missing: give a unique part of the entry to change, or its [index] from the listing".into(),
        );
    }
    if let Some(n) = parse_index(wanted)
        && (1..=entries.len()).contains(&n)
    {
        return Ok(n - 1);
    }
    let exact: Vec<usize> = (0..entries.len())
        .filter(|&i| entries[i].contains(wanted))
        .collect();
    let matches = if exact.is_empty() {
        let lower = wanted.to_lowercase();
        (0..entries.len())
            .filter(|&i| entries[i].to_lowercase().contains(&lower))
            .collect()
    } else {
        exact
    };
    match matches.as_slice() {
        [] => Err(format!("No entry contains {wanted:?}.")),
        [one] => Ok(*one),
        [first, rest @ ..] if rest.iter().all(|&i| entries[i] == entries[*first]) => Ok(*first),
        several => {
            let previews: Vec<String> = several
                .iter()
                .map(|&i| format!("[{}] {}", i + 1, preview(&entries[i])))
                .collect();
            Err(format!(
                "Multiple entries matched {wanted:?}; be more specific or use the [index]:\n{}",
                previews.join("\n")
            ))
        }
    }
}

fn parse_index(text: &str) -> Option<usize> {
    let inner = text
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .or_else(|| text.strip_prefix('#'))
        .unwrap_or(text);
    if inner.is_empty() || !inner.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    inner.parse().ok()
}

fn preview(entry: &str) -> String {
    let line = entry.replace('\n', " ");
    let cut = crate::util::truncate_chars(&line, PREVIEW_CHARS);
    if cut.len() < line.len() {
        format!("{cut}…")
    } else {
        cut.to_string()
    }
}

/// `[1] first entry` lines, for errors the model reads.
pub fn listing(entries: &[String]) -> String {
    if entries.is_empty() {
        return "(none)".into();
    }
    entries
        .iter()
        .enumerate()
        .map(|(i, e)| format!("[{}] {}", i + 1, e))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn index_or_unique_substring() {
        let e = list(&["uses zsh", "prefers Rust 2024", "works at ACME"]);
        assert_eq!(find(&e, "[2]"), Ok(1));
        assert_eq!(find(&e, "#3"), Ok(2));
        assert_eq!(find(&e, "1"), Ok(0));
        assert_eq!(find(&e, "acme"), Ok(2));
        // "2024" is out of range as an index, so it is a substring.
        assert_eq!(find(&e, "2024"), Ok(1));
        assert!(find(&e, "nothing").unwrap_err().contains("No entry"));
        assert!(find(&e, "  ").unwrap_err().contains("old_text is missing"));
        let err = find(&e, "s").unwrap_err();
        assert!(
            err.contains("Multiple entries") && err.contains("[1] uses zsh"),
            "{err}"
        );
    }

    #[test]
    fn identical_matches_pick_the_first() {
        let e = list(&["a b", "x", "a b"]);
        assert_eq!(find(&e, "a"), Ok(0));
    }

    #[test]
    fn add_replace_remove() {
        let mut e = list(&["one"]);
        assert_eq!(
            apply_op(
                &mut e,
                &MemoryOp::Add {
                    content: " one ".into()
                }
            )
            .unwrap(),
            "Entry already exists (no duplicate added)."
        );
        apply_op(
            &mut e,
            &MemoryOp::Add {
                content: "two".into(),
            },
        )
        .unwrap();
        apply_op(
            &mut e,
            &MemoryOp::Replace {
                old_text: "two".into(),
                content: "one".into(),
            },
        )
        .unwrap();
        assert_eq!(e, list(&["one"]));
        assert!(
            apply_op(
                &mut e,
                &MemoryOp::Add {
                    content: "\n".into()
                }
            )
            .is_err()
        );
        apply_op(
            &mut e,
            &MemoryOp::Remove {
                old_text: "[1]".into(),
            },
        )
        .unwrap();
        assert!(e.is_empty());
    }

    #[test]
    fn previews_are_short() {
        let long = "z".repeat(500);
        let e = vec![format!("a{long}"), format!("b{long}")];
        let err = find(&e, "zzz").unwrap_err();
        assert!(err.len() < 300, "{err}");
    }
}
