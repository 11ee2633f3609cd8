//! OpenClaw Markdown notes → memory entries: the same reading Python Hermes's migration script
//! applies (`extract_markdown_entries`): one entry per bullet or paragraph, prefixed with the
//! headings above it, code blocks and tables left out, duplicates (by whitespace-normalised
//! text) dropped; and the brand rewrite (OpenClaw / ClawdBot / MoltBot → Hermes) applied to what
//! becomes ours.

use std::sync::LazyLock;

use regex::{Captures, Regex};

/// Headings that only name the file itself add nothing to an entry's context.
static FILE_HEADING: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?i)\b(MEMORY|USER|SOUL|AGENTS|TOOLS|IDENTITY)\.md\b").ok());
static HEADING: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^(#{1,6})\s+(.*\S)\s*$").ok());
static BULLET: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^\s*(?:[-*]|\d+\.)\s+(.*\S)\s*$").ok());
static BRANDS: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?i)\b(?:Open[\s-]?Claw|ClawdBot|MoltBot)\b").ok());

/// Whitespace runs collapsed to one space, trimmed: how two entries are compared.
pub fn normalize(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Replaces the old agent's names with ours, keeping lowercase lowercase so a path such as
/// `~/.openclaw/x` becomes `~/.hermes/x` (a real directory), not `~/.Hermes/x`.
pub fn rebrand(text: &str) -> String {
    let Some(re) = BRANDS.as_ref() else {
        return text.to_string();
    };
    re.replace_all(text, |c: &Captures| {
        let matched = &c[0];
        if matched.chars().any(char::is_uppercase) {
            "Hermes"
        } else {
            "hermes"
        }
    })
    .into_owned()
}

/// The entries of one Markdown file, in order, without duplicates.
pub fn extract(text: &str) -> Vec<String> {
    let (Some(heading_re), Some(bullet_re)) = (HEADING.as_ref(), BULLET.as_ref()) else {
        return Vec::new();
    };
    let mut entries: Vec<String> = Vec::new();
    let mut headings: Vec<String> = Vec::new();
    let mut paragraph: Vec<&str> = Vec::new();
    let prefix = |headings: &[String]| -> String {
        headings
            .iter()
            .filter(|h| !FILE_HEADING.as_ref().is_some_and(|re| re.is_match(h)))
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(" > ")
    };
    let with_prefix = |headings: &[String], body: &str| -> String {
        let p = prefix(headings);
        if p.is_empty() {
            body.to_string()
        } else {
            format!("{p}: {body}")
        }
    };
    let mut in_code = false;
    for raw in text.lines() {
        let line = raw.trim_end();
        let stripped = line.trim();
        if stripped.starts_with("```") {
            in_code = !in_code;
            flush(&mut paragraph, &headings, &mut entries, &with_prefix);
            continue;
        }
        if in_code {
            continue;
        }
        if let Some(c) = heading_re.captures(stripped) {
            flush(&mut paragraph, &headings, &mut entries, &with_prefix);
            let level = c[1].len();
            headings.truncate(level - 1);
            headings.push(c[2].trim().to_string());
            continue;
        }
        if let Some(c) = bullet_re.captures(line) {
            flush(&mut paragraph, &headings, &mut entries, &with_prefix);
            entries.push(with_prefix(&headings, c[1].trim()));
            continue;
        }
        if stripped.is_empty() || (stripped.starts_with('|') && stripped.ends_with('|')) {
            flush(&mut paragraph, &headings, &mut entries, &with_prefix);
            continue;
        }
        paragraph.push(stripped);
    }
    flush(&mut paragraph, &headings, &mut entries, &with_prefix);
    let mut seen = std::collections::HashSet::new();
    entries
        .into_iter()
        .filter(|e| {
            let n = normalize(e);
            !n.is_empty() && seen.insert(n)
        })
        .map(|e| e.trim().to_string())
        .collect()
}

fn flush(
    paragraph: &mut Vec<&str>,
    headings: &[String],
    entries: &mut Vec<String>,
    with_prefix: &dyn Fn(&[String], &str) -> String,
) {
    if paragraph.is_empty() {
        return;
    }
    let text = paragraph.join(" ");
    paragraph.clear();
    if !text.trim().is_empty() {
        entries.push(with_prefix(headings, text.trim()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bullets_paragraphs_and_heading_context() {
        let text = "# MEMORY.md\n\n## Work\n- Ships on Fridays\n- Uses  Rust\n\nLong paragraph\nover two lines.\n\n```\n- not an entry\n```\n| a | b |\n### Tools\n1. ripgrep\n# Home\n* cat named Io\n- Ships on Fridays\n";
        assert_eq!(
            extract(text),
            [
                "Work: Ships on Fridays",
                "Work: Uses  Rust",
                "Work: Long paragraph over two lines.",
                "Work > Tools: ripgrep",
                "Home: cat named Io",
                "Home: Ships on Fridays",
            ]
        );
    }

    #[test]
    fn duplicates_by_normalised_text() {
        assert_eq!(extract("- a  b\n- a b\n"), ["a  b"]);
    }

    #[test]
    fn rebrand_keeps_case_of_paths() {
        assert_eq!(
            rebrand("OpenClaw keeps ~/.openclaw/x; Open Claw, clawdbot and MoltBot too"),
            "Hermes keeps ~/.hermes/x; Hermes, hermes and Hermes too"
        );
        assert_eq!(rebrand("openclawish stays"), "openclawish stays");
    }
}
