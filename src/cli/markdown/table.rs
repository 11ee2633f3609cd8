//! GitHub-style tables: a header row, a delimiter row (`|---|:--:|--:|`) and body rows, drawn
//! with box characters, columns padded to their widest cell (by display width, so CJK and
//! emoji line up) and aligned as the delimiter row says. Lines that are not a valid table are
//! handed back to be rendered as ordinary text.

use unicode_width::UnicodeWidthStr;

use super::inline::{self, BOLD, DIM, RESET};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Align {
    Left,
    Center,
    Right,
}

/// A table row's cells: outer pipes removed, split on unescaped `|` outside inline code.
pub fn cells(line: &str) -> Vec<String> {
    let t = line.trim();
    let t = t.strip_prefix('|').unwrap_or(t);
    let t = if t.ends_with('|') && !t.ends_with("\\|") {
        &t[..t.len() - 1]
    } else {
        t
    };
    let mut out = Vec::new();
    let mut cell = String::new();
    let mut in_code = false;
    let mut chars = t.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cell.push('|');
                chars.next();
            }
            '`' => {
                in_code = !in_code;
                cell.push(c);
            }
            '|' if !in_code => out.push(std::mem::take(&mut cell).trim().to_string()),
            _ => cell.push(c),
        }
    }
    out.push(cell.trim().to_string());
    out
}

fn delimiter(line: &str) -> Option<Vec<Align>> {
    let cells = cells(line);
    cells
        .iter()
        .map(|c| {
            let dashes = c.trim_matches(':');
            if dashes.is_empty() || !dashes.chars().all(|ch| ch == '-') {
                return None;
            }
            Some(match (c.starts_with(':'), c.ends_with(':')) {
                (true, true) => Align::Center,
                (false, true) => Align::Right,
                _ => Align::Left,
            })
        })
        .collect()
}

/// Visible width of rendered text (ANSI sequences take no room).
pub fn visible_width(s: &str) -> usize {
    let mut plain = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            plain.push(c);
        }
    }
    UnicodeWidthStr::width(plain.as_str())
}

/// Renders `lines` as a table, or `None` when they are not one (no delimiter row second).
pub fn render(lines: &[String]) -> Option<String> {
    if lines.len() < 2 {
        return None;
    }
    let aligns = delimiter(&lines[1])?;
    let rows: Vec<Vec<String>> = std::iter::once(&lines[0])
        .chain(&lines[2..])
        .enumerate()
        .map(|(r, line)| {
            cells(line)
                .iter()
                .map(|c| match r {
                    0 => format!("{BOLD}{}{RESET}", inline::render(c, BOLD)),
                    _ => inline::render(c, ""),
                })
                .collect()
        })
        .collect();
    let columns = rows
        .iter()
        .map(Vec::len)
        .max()
        .unwrap_or(0)
        .max(aligns.len());
    let mut widths = vec![0usize; columns];
    for row in &rows {
        for (k, cell) in row.iter().enumerate() {
            widths[k] = widths[k].max(visible_width(cell));
        }
    }
    let mut out = String::new();
    for (r, row) in rows.iter().enumerate() {
        let line: Vec<String> = (0..columns)
            .map(|k| {
                let cell = row.get(k).map(String::as_str).unwrap_or("");
                let pad = widths[k].saturating_sub(visible_width(cell));
                match aligns.get(k).copied().unwrap_or(Align::Left) {
                    Align::Left => format!("{cell}{}", " ".repeat(pad)),
                    Align::Right => format!("{}{cell}", " ".repeat(pad)),
                    Align::Center => {
                        format!("{}{cell}{}", " ".repeat(pad / 2), " ".repeat(pad - pad / 2))
                    }
                }
            })
            .collect();
        out.push_str(&line.join(&format!(" {DIM}│{RESET} ")));
        out.push('\n');
        if r == 0 {
            let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
            out.push_str(&format!("{DIM}{}{RESET}\n", rule.join("─┼─")));
        }
    }
    Some(out)
}
