//! Surgical edits of config.yaml's text for `hermes config set/unset`: the key's line is found by
//! its indentation path and only the lines of that key change, so the user's comments, blank
//! lines and key order survive (a parse-and-dump round trip would lose all three).
//!
//! Handles block-style YAML as people and PyYAML write it: `key: value` lines nested by
//! indentation, list items (`- x`) at or below their key's indentation, comments anywhere. A key
//! inside a flow mapping (`tools: {a: 1}`) is not reachable this way; the edit then says so.

use serde_json::Value;

/// Why an edit could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    #[error("`{0}` is not set in config.yaml")]
    NotSet(String),
    #[error(
        "`{parent}` holds a value, not a mapping of keys, so `{key}` cannot go under it; \
         `hermes config unset {parent}` first, or use `hermes config edit`"
    )]
    NotAMapping { parent: String, key: String },
    #[error("`{0}` is not a valid dotted key (like `agent.max_turns`)")]
    BadKey(String),
}

struct Line<'a> {
    text: &'a str,
    indent: usize,
    /// Blank or comment only.
    neutral: bool,
}

fn lines(text: &str) -> Vec<Line<'_>> {
    text.lines()
        .map(|l| {
            let trimmed = l.trim_start();
            Line {
                text: l,
                indent: l.len() - trimmed.len(),
                neutral: trimmed.is_empty() || trimmed.starts_with('#'),
            }
        })
        .collect()
}

/// The key a `key: ...` line defines, if it is one (plain or quoted).
fn key_of(line: &str) -> Option<&str> {
    let t = line.trim_start();
    if t.starts_with("- ") || t == "-" || t.starts_with('#') {
        return None;
    }
    let (key, rest) = if let Some(q @ ('\'' | '"')) = t.chars().next() {
        let end = t[1..].find(q)? + 1;
        (&t[1..end], &t[end + 1..])
    } else {
        let colon = t
            .find(": ")
            .or_else(|| t.strip_suffix(':').map(|s| s.len()))?;
        (t[..colon].trim_end(), &t[colon..])
    };
    (rest.starts_with(": ") || rest == ":").then_some(key)
}

/// A found key: its line and the end (exclusive) of the lines that belong to it.
#[derive(Debug, Clone, Copy)]
struct Found {
    line: usize,
    indent: usize,
    end: usize,
}

/// End of the block of the key at `line` (its nested lines and its list items).
fn block_end(ls: &[Line<'_>], line: usize) -> usize {
    let indent = ls[line].indent;
    let mut end = line + 1;
    for (i, l) in ls.iter().enumerate().skip(line + 1) {
        if l.neutral {
            continue;
        }
        let item_at_same_indent = l.indent == indent && l.text.trim_start().starts_with('-');
        if l.indent > indent || item_at_same_indent {
            end = i + 1;
        } else {
            break;
        }
    }
    end
}

/// Finds `segs` within lines `range`, whose keys sit at the first key line's indentation.
fn find_in(ls: &[Line<'_>], range: (usize, usize), seg: &str) -> Option<Found> {
    let mut child_indent = None;
    for i in range.0..range.1 {
        let l = &ls[i];
        if l.neutral {
            continue;
        }
        let Some(key) = key_of(l.text) else {
            continue;
        };
        let indent = *child_indent.get_or_insert(l.indent);
        if l.indent == indent && key == seg {
            return Some(Found {
                line: i,
                indent,
                end: block_end(ls, i),
            });
        }
    }
    None
}

fn split(key: &str) -> Result<Vec<&str>, EditError> {
    let segs: Vec<&str> = key.split('.').collect();
    if segs
        .iter()
        .any(|s| s.trim().is_empty() || s.contains([':', '#', ' ']))
    {
        return Err(EditError::BadKey(key.to_string()));
    }
    Ok(segs)
}

/// The deepest existing prefix of `segs`: how many segments were found and the last one found.
fn walk(ls: &[Line<'_>], segs: &[&str]) -> (usize, Option<Found>) {
    let mut range = (0, ls.len());
    let mut last = None;
    for (depth, seg) in segs.iter().enumerate() {
        match find_in(ls, range, seg) {
            Some(f) => {
                range = (f.line + 1, f.end);
                last = Some(f);
            }
            None => return (depth, last),
        }
    }
    (segs.len(), last)
}

/// `value` as one line of YAML: plain where that reads back the same, else JSON-style (which
/// YAML reads as a flow collection or a double-quoted string).
pub fn inline_yaml(value: &Value) -> String {
    match value {
        Value::String(s) => {
            let plain = serde_saphyr::from_str::<Value>(s).ok();
            let safe = plain.as_ref() == Some(value)
                && !s.is_empty()
                && !s.contains(['#', '\n'])
                && s.trim() == s;
            if safe {
                s.clone()
            } else {
                serde_json::to_string(s).unwrap_or_default()
            }
        }
        other => other.to_string(),
    }
}

fn join(ls: &[Line<'_>], out: &mut Vec<String>, from: usize, to: usize) {
    out.extend(ls[from..to].iter().map(|l| l.text.to_string()));
}

fn finish(out: Vec<String>) -> String {
    let mut text = out.join("\n");
    text.push('\n');
    text
}

/// `text` with `key` set to `value` (replacing the key's value and nested lines, or inserting the
/// key, and any missing parents, at the end of its parent's block).
pub fn set(text: &str, key: &str, value: &Value) -> Result<String, EditError> {
    let segs = split(key)?;
    let ls = lines(text);
    let (found, last) = walk(&ls, &segs);
    let rendered = inline_yaml(value);
    let mut out = Vec::with_capacity(ls.len() + segs.len());
    if found == segs.len() {
        let Some(f) = last else {
            return Err(EditError::BadKey(key.to_string()));
        };
        join(&ls, &mut out, 0, f.line);
        let line = ls[f.line].text;
        let colon = line[f.indent..]
            .find(':')
            .map_or(line.len(), |c| f.indent + c);
        out.push(format!("{}: {rendered}", &line[..colon]));
        join(&ls, &mut out, f.end, ls.len());
        return Ok(finish(out));
    }
    // Insert the missing segments under the deepest existing parent.
    let (at, indent) = match last {
        None => (ls.len(), 0),
        Some(parent) => {
            let line = ls[parent.line].text;
            let after_colon = line[parent.indent..]
                .find(':')
                .map_or("", |c| &line[parent.indent + c + 1..]);
            let inline = after_colon.trim();
            if !inline.is_empty() && !inline.starts_with('#') {
                return Err(EditError::NotAMapping {
                    parent: segs[..found].join("."),
                    key: segs[found].to_string(),
                });
            }
            let child_indent = ls[parent.line + 1..parent.end]
                .iter()
                .find(|l| !l.neutral)
                .map_or(parent.indent + 2, |l| l.indent);
            if child_indent <= parent.indent {
                // Its block is a list written at the key's own indentation.
                return Err(EditError::NotAMapping {
                    parent: segs[..found].join("."),
                    key: segs[found].to_string(),
                });
            }
            (parent.end, child_indent)
        }
    };
    let step = if found == 0 {
        2
    } else {
        (indent - last.map_or(0, |p| p.indent)).max(1)
    };
    join(&ls, &mut out, 0, at);
    for (i, seg) in segs[found..].iter().enumerate() {
        let pad = " ".repeat(indent + i * step);
        if found + i + 1 == segs.len() {
            out.push(format!("{pad}{seg}: {rendered}"));
        } else {
            out.push(format!("{pad}{seg}:"));
        }
    }
    join(&ls, &mut out, at, ls.len());
    Ok(finish(out))
}

/// `text` without `key` and its nested lines.
pub fn unset(text: &str, key: &str) -> Result<String, EditError> {
    let segs = split(key)?;
    let ls = lines(text);
    let (found, last) = walk(&ls, &segs);
    let Some(f) = last.filter(|_| found == segs.len()) else {
        return Err(EditError::NotSet(key.to_string()));
    };
    let mut out = Vec::with_capacity(ls.len());
    join(&ls, &mut out, 0, f.line);
    join(&ls, &mut out, f.end, ls.len());
    Ok(finish(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const DOC: &str = "# my config\nmodel: gpt-4o   # the default\n\nagent:\n  # how long\n  max_turns: 90\n  verify: true\ntoolsets:\n- hermes-cli\n- web\nterminal:\n    timeout: 180\n";

    #[test]
    fn replace_keeps_comments_order_and_other_keys() {
        let out = set(DOC, "agent.max_turns", &json!(7)).unwrap();
        assert_eq!(out, DOC.replace("max_turns: 90", "max_turns: 7"));
        let out = set(DOC, "toolsets", &json!(["a", "b"])).unwrap();
        assert!(out.contains("toolsets: [\"a\",\"b\"]\nterminal:"), "{out}");
        assert!(!out.contains("- web"), "{out}");
    }

    #[test]
    fn insert_creates_parents_with_the_files_indentation() {
        let out = set(DOC, "terminal.backend", &json!("local")).unwrap();
        assert!(
            out.ends_with("terminal:\n    timeout: 180\n    backend: local\n"),
            "{out}"
        );
        let out = set(DOC, "agent.limits.depth", &json!(2)).unwrap();
        assert!(
            out.contains("  verify: true\n  limits:\n    depth: 2\ntoolsets:"),
            "{out}"
        );
        let out = set(DOC, "memory.provider", &json!("local")).unwrap();
        assert!(out.ends_with("memory:\n  provider: local\n"), "{out}");
        assert!(out.starts_with("# my config\nmodel: gpt-4o   # the default\n"));
        let e = set(DOC, "model.provider", &json!("x")).unwrap_err();
        assert!(matches!(e, EditError::NotAMapping { .. }), "{e}");
        assert!(set("", "a.b", &json!(1)).unwrap() == "a:\n  b: 1\n");
    }

    #[test]
    fn unset_removes_the_block_only() {
        let out = unset(DOC, "agent").unwrap();
        assert_eq!(
            out,
            "# my config\nmodel: gpt-4o   # the default\n\ntoolsets:\n- hermes-cli\n- web\nterminal:\n    timeout: 180\n"
        );
        let out = unset(DOC, "toolsets").unwrap();
        assert!(out.contains("  verify: true\nterminal:"), "{out}");
        assert_eq!(
            unset(DOC, "agent.nope"),
            Err(EditError::NotSet("agent.nope".into()))
        );
        assert!(matches!(unset(DOC, "a..b"), Err(EditError::BadKey(_))));
    }

    #[test]
    fn values_render_as_yaml_that_reads_back() {
        for v in [
            json!("plain"),
            json!("yes"),
            json!("8080"),
            json!("a # b"),
            json!(""),
            json!(" pad"),
            json!(1.5),
            json!(false),
            json!(null),
            json!({"k": [1, "two"]}),
        ] {
            let text = format!("k: {}\n", inline_yaml(&v));
            let back: Value = serde_saphyr::from_str(&text).unwrap();
            assert_eq!(back["k"], v, "{text}");
        }
        assert_eq!(inline_yaml(&json!("plain")), "plain");
    }
}
