//! Markdown for the terminal, rendered while the answer streams in: headings, bold / italic /
//! strike, lists, block quotes, rules, tables and code (fenced blocks in a colour of their own,
//! inline code too). Complete lines are rendered as soon as their newline arrives; a partial
//! line is held until then (its markers may close later); a code fence is tracked across deltas;
//! a table is held until its last row, since every row's width depends on all the others.
//!
//! Our own small renderer rather than pulldown-cmark: a block parser wants the whole document,
//! while the REPL needs line-at-a-time output, and the answer's Markdown is the simple kind.
//! It is only used when stdout is a terminal (and `NO_COLOR` / `TERM=dumb` do not ask for plain
//! text); piped output and `-z` print the model's text byte for byte.

mod inline;
mod table;

use std::io::IsTerminal;

use inline::{BOLD, CODE, DIM, ITALIC, RESET, UNDERLINE};

/// Whether the REPL should render Markdown: stdout is a terminal that wants styles.
pub fn wanted() -> bool {
    std::io::stdout().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::env::var("TERM").map_or(true, |t| t != "dumb")
}

/// An open code fence: its character (`` ` `` or `~`) and length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fence {
    ch: char,
    len: usize,
}

/// The streaming renderer for one answer.
#[derive(Debug, Default)]
pub struct MarkdownStream {
    /// Text after the last newline, not yet shown.
    partial: String,
    fence: Option<Fence>,
    /// Rows of a table in progress.
    table: Vec<String>,
}

impl MarkdownStream {
    /// Takes the next piece of the answer; returns what can be shown now (whole lines).
    pub fn push(&mut self, delta: &str) -> String {
        self.partial.push_str(delta);
        let mut out = String::new();
        while let Some(nl) = self.partial.find('\n') {
            let line: String = self.partial.drain(..=nl).collect();
            let line = line.trim_end_matches('\n').trim_end_matches('\r');
            self.line(line, &mut out);
        }
        out
    }

    /// The answer (or this part of it, before a tool call) is over: shows what is held and
    /// forgets any open fence, so the next text starts fresh.
    pub fn finish(&mut self) -> String {
        let mut out = String::new();
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.line(line.trim_end_matches('\r'), &mut out);
        }
        self.end_table(&mut out);
        self.fence = None;
        out
    }

    fn line(&mut self, line: &str, out: &mut String) {
        if let Some(fence) = self.fence {
            if closes(line, fence) {
                self.fence = None;
                push_styled(out, DIM, line);
            } else {
                push_styled(out, CODE, line);
            }
            return;
        }
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if trimmed.starts_with('|') {
            self.table.push(line.to_string());
            return;
        }
        self.end_table(out);
        if indent <= 3
            && let Some(fence) = opens(trimmed)
        {
            self.fence = Some(fence);
            push_styled(out, DIM, line);
            return;
        }
        out.push_str(&block(line));
        out.push('\n');
    }

    fn end_table(&mut self, out: &mut String) {
        if self.table.is_empty() {
            return;
        }
        let rows = std::mem::take(&mut self.table);
        match table::render(&rows) {
            Some(text) => out.push_str(&text),
            None => {
                for row in rows {
                    out.push_str(&inline::render(&row, ""));
                    out.push('\n');
                }
            }
        }
    }
}

fn push_styled(out: &mut String, style: &str, line: &str) {
    if line.is_empty() {
        out.push('\n');
    } else {
        out.push_str(&format!("{style}{line}{RESET}\n"));
    }
}

/// ```` ``` ```` / `~~~` (three or more) with an optional info string.
fn opens(trimmed: &str) -> Option<Fence> {
    let ch = trimmed.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = trimmed.chars().take_while(|c| *c == ch).count();
    // A backtick fence's info string may not contain backticks (that is inline code).
    (len >= 3 && !(ch == '`' && trimmed[len..].contains('`'))).then_some(Fence { ch, len })
}

fn closes(line: &str, fence: Fence) -> bool {
    let t = line.trim();
    let len = t.chars().take_while(|c| *c == fence.ch).count();
    len >= fence.len
        && t.chars().all(|c| c == fence.ch)
        && line.len() - line.trim_start().len() <= 3
}

/// One line outside code and tables.
fn block(line: &str) -> String {
    let trimmed = line.trim_start();
    let indent = &line[..line.len() - trimmed.len()];
    if indent.len() <= 3 {
        if let Some((level, text)) = heading(trimmed) {
            let style = if level == 1 {
                format!("{BOLD}{UNDERLINE}")
            } else {
                BOLD.to_string()
            };
            return format!("{style}{}{RESET}", inline::render(text, &style));
        }
        if is_rule(trimmed) {
            return format!("{DIM}{}{RESET}", "─".repeat(40));
        }
        if let Some(rest) = trimmed.strip_prefix('>') {
            let rest = rest.strip_prefix(' ').unwrap_or(rest);
            let style = ITALIC;
            return format!(
                "{DIM}│{RESET} {style}{}{RESET}",
                inline::render(rest, style)
            );
        }
    }
    if let Some(rest) = ["- ", "* ", "+ "]
        .iter()
        .find_map(|b| trimmed.strip_prefix(b))
    {
        let (mark, rest) = if let Some(r) = rest.strip_prefix("[ ] ") {
            ("☐", r)
        } else if let Some(r) = rest
            .strip_prefix("[x] ")
            .or_else(|| rest.strip_prefix("[X] "))
        {
            ("☑", r)
        } else {
            ("•", rest)
        };
        return format!("{indent}{mark} {}", inline::render(rest, ""));
    }
    let digits = trimmed.chars().take_while(char::is_ascii_digit).count();
    if (1..=9).contains(&digits) {
        let after = &trimmed[digits..];
        if let Some(rest) = after
            .strip_prefix(". ")
            .or_else(|| after.strip_prefix(") "))
        {
            return format!(
                "{indent}{BOLD}{}{RESET} {}",
                &trimmed[..digits + 1],
                inline::render(rest, "")
            );
        }
    }
    inline::render(line, "")
}

/// `# Title` → (1, "Title"); closing `#`s are dropped.
fn heading(trimmed: &str) -> Option<(usize, &str)> {
    let level = trimmed.chars().take_while(|c| *c == '#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &trimmed[level..];
    if !(rest.is_empty() || rest.starts_with(' ') || rest.starts_with('\t')) {
        return None;
    }
    let text = rest.trim();
    let text = text.trim_end_matches('#').trim_end();
    Some((level, if text.is_empty() { rest.trim() } else { text }))
}

/// `---`, `***`, `___` (three or more, spaces allowed).
fn is_rule(trimmed: &str) -> bool {
    let ch = match trimmed.chars().next() {
        Some(c @ ('-' | '*' | '_')) => c,
        _ => return false,
    };
    let marks = trimmed.chars().filter(|c| *c == ch).count();
    marks >= 3 && trimmed.chars().all(|c| c == ch || c == ' ')
}

#[cfg(test)]
#[path = "markdown_tests.rs"]
mod tests;
