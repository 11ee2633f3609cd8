//! The `read_file` tool: a window of a text file with numbered lines (`N|line`), streamed so a
//! huge file or a single enormous line never has to fit in memory.
//!
//! Caps (reference §6.2): 2 000 lines per call, 2 000 chars per line, `file_read_max_chars` in
//! total. When only part of the file is shown, a footer says how to continue.

use std::io::{BufRead, BufReader, Read};

use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::tools::file_common;
use crate::tools::file_path::{self, Access, FilePath};
use crate::tools::registry::{MAX_RESULT_CHARS, ToolContext, ToolError, TypedTool};

/// Most lines returned by one call.
pub const MAX_LINES: usize = 2_000;
/// Longer lines are cut and marked.
pub const MAX_LINE_CHARS: usize = 2_000;
const TRUNCATED_MARK: &str = "... [truncated]";
/// Room kept for the footer lines within the character cap.
const FOOTER_RESERVE: usize = 400;

pub struct ReadFile;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadFileArgs {
    pub path: String,
    /// First line, 1-based
    #[serde(default = "default_offset")]
    pub offset: usize,
    /// Max lines
    #[serde(default = "default_limit")]
    pub limit: usize,
}

fn default_offset() -> usize {
    1
}

fn default_limit() -> usize {
    500
}

impl TypedTool for ReadFile {
    type Args = ReadFileArgs;
    const NAME: &'static str = "read_file";
    const TOOLSET: &'static str = "file";
    const DESCRIPTION: &'static str =
        "Read a text file. Lines come as `N|text`; page with offset/limit.";
    const READ_ONLY: bool = true;

    async fn run(&self, args: ReadFileArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        // The whole answer, footers included, stays within the configured cap and below the
        // registry's spill threshold (a read should never be replaced by a "saved to file" note).
        let cap = ctx.config.file_read_max_chars.min(MAX_RESULT_CHARS);
        let window = Window {
            offset: args.offset.max(1),
            limit: args.limit.clamp(1, MAX_LINES),
            max_chars: cap.saturating_sub(FOOTER_RESERVE).max(1),
            cap,
        };
        let (ctx, given) = (ctx.clone(), args.path);
        let Some(editor) = ctx.scratch.files.reader() else {
            return file_common::blocking(move || {
                let path = file_path::resolve_path(&ctx, &given, Access::Read)?;
                read_window(&path, window, &ctx.cancel)
            })
            .await;
        };
        // The policy first, then the editor's copy (its unsaved buffer) instead of the disk's.
        let checked = ctx.clone();
        let path =
            file_common::blocking(move || file_path::resolve_path(&checked, &given, Access::Read))
                .await?;
        let text = editor.read_text(&path.resolved).await.map_err(|e| {
            ToolError::Respond(format!(
                "cannot read {} from {}: {e}",
                path.shown,
                editor.name()
            ))
        })?;
        text_window(&text, &path.shown, window, &ctx.cancel)
    }
}

crate::register_tool!(ReadFile);

#[derive(Debug, Clone, Copy)]
struct Window {
    offset: usize,
    limit: usize,
    /// Budget for the numbered lines.
    max_chars: usize,
    /// Budget for the whole answer (what the footer reports).
    cap: usize,
}

/// The window of a file's text already in memory (an editor's buffer).
fn text_window(
    text: &str,
    shown: &str,
    window: Window,
    cancel: &CancellationToken,
) -> Result<String, ToolError> {
    if text.is_empty() {
        return Ok(format!("{shown} is empty (0 bytes)."));
    }
    let page = collect_page(text.as_bytes(), window, cancel)
        .map_err(|e| ToolError::Respond(file_common::io_message("read", shown, &e)))?;
    render(page, shown, window)
}

fn read_window(
    path: &FilePath,
    window: Window,
    cancel: &CancellationToken,
) -> Result<String, ToolError> {
    let shown = path.shown.as_str();
    let io_err = |e: std::io::Error| ToolError::Respond(file_common::io_message("read", shown, &e));
    let (file, head) = path.open_text(
        "read_file shows text only. Inspect it with the terminal tool (e.g. `file`, `xxd | head`)",
    )?;
    if head.is_empty() {
        return Ok(format!("{shown} is empty (0 bytes)."));
    }
    let reader = BufReader::with_capacity(64 * 1024, std::io::Cursor::new(head).chain(file));
    let page = collect_page(reader, window, cancel).map_err(io_err)?;
    render(page, shown, window)
}

struct Page {
    text: String,
    total_lines: usize,
    /// Last line included in `text` (0 when none).
    last_shown: usize,
    /// Stopped early because of `max_chars`.
    char_capped: bool,
    lossy: bool,
}

fn collect_page<R: BufRead>(
    mut reader: R,
    window: Window,
    cancel: &CancellationToken,
) -> std::io::Result<Page> {
    // Enough bytes to hold MAX_LINE_CHARS of any UTF-8 text, plus one to detect "longer".
    let keep = MAX_LINE_CHARS * 4 + 1;
    let end = window.offset.saturating_add(window.limit);
    let mut page = Page {
        text: String::new(),
        total_lines: 0,
        last_shown: 0,
        char_capped: false,
        lossy: false,
    };
    let mut chars = 0usize;
    let mut buf = Vec::new();
    while let Some(full_len) = file_common::read_line_capped(&mut reader, &mut buf, keep)? {
        page.total_lines += 1;
        let n = page.total_lines;
        if n.is_multiple_of(65_536) && cancel.is_cancelled() {
            return Err(std::io::Error::other("interrupted by the user"));
        }
        if n < window.offset || n >= end || page.char_capped {
            continue;
        }
        let cut = full_len > buf.len();
        if !cut && buf.last() == Some(&b'\r') {
            buf.pop();
        }
        let (line, lossy) = decode_line(&buf, cut);
        page.lossy |= lossy;
        let line = if cut || line.chars().count() > MAX_LINE_CHARS {
            format!(
                "{}{TRUNCATED_MARK}",
                crate::util::truncate_chars(&line, MAX_LINE_CHARS)
            )
        } else {
            line
        };
        let entry = format!("{n}|{line}\n");
        let entry_chars = entry.chars().count();
        if chars + entry_chars > window.max_chars && page.last_shown > 0 {
            page.char_capped = true;
            continue;
        }
        chars += entry_chars;
        page.text.push_str(&entry);
        page.last_shown = n;
    }
    Ok(page)
}

/// Decodes a line; `cut` means the bytes were cut off, so an incomplete character at the very
/// end is an artifact of the cut, not bad data.
fn decode_line(bytes: &[u8], cut: bool) -> (String, bool) {
    match std::str::from_utf8(bytes) {
        Ok(s) => (s.to_string(), false),
        Err(e) if cut && e.error_len().is_none() => (
            String::from_utf8_lossy(&bytes[..e.valid_up_to()]).into_owned(),
            false,
        ),
        Err(_) => (String::from_utf8_lossy(bytes).into_owned(), true),
    }
}

fn render(page: Page, shown: &str, window: Window) -> Result<String, ToolError> {
    let total = page.total_lines;
    if page.last_shown == 0 {
        return Err(ToolError::Respond(format!(
            "offset {} is past the end of {shown}, which has {total} line{}; use an offset from 1 to {total}",
            window.offset,
            if total == 1 { "" } else { "s" }
        )));
    }
    let mut out = page.text;
    let first = window.offset;
    let last = page.last_shown;
    if page.char_capped {
        out.push_str(&format!(
            "[output capped at {} characters: showed lines {first}-{last} of {total}; continue with offset={}]\n",
            window.cap,
            last + 1
        ));
    } else if last < total {
        out.push_str(&format!(
            "[showed lines {first}-{last} of {total}; continue with offset={}]\n",
            last + 1
        ));
    } else if first > 1 {
        out.push_str(&format!(
            "[showed lines {first}-{last} of {total} (end of file)]\n"
        ));
    }
    if page.lossy {
        out.push_str(
            "[note: the file is not valid UTF-8; undecodable bytes are shown as \u{FFFD}]\n",
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use crate::tools::test_support::env;
    use serde_json::json;

    fn numbered(n: usize) -> String {
        (1..=n).map(|i| format!("line {i}\n")).collect()
    }

    #[tokio::test]
    async fn numbers_lines_and_pages() {
        let t = env();
        t.write("a.txt", numbered(1200));
        let out = t.ok("read_file", json!({"path": "a.txt"})).await;
        assert!(out.starts_with("1|line 1\n2|line 2\n"), "{out}");
        assert!(out.contains("500|line 500\n"));
        assert!(!out.contains("501|"));
        assert!(
            out.contains("showed lines 1-500 of 1200; continue with offset=501"),
            "{out}"
        );

        let out = t
            .ok(
                "read_file",
                json!({"path": "a.txt", "offset": 1190, "limit": 50}),
            )
            .await;
        assert!(out.starts_with("1190|line 1190\n"), "{out}");
        assert!(out.contains("1200|line 1200\n"));
        assert!(out.contains("(end of file)"), "{out}");
    }

    #[tokio::test]
    async fn whole_small_file_has_no_footer_and_crlf_is_stripped() {
        let t = env();
        t.write("a.txt", "one\r\ntwo\r\nthree");
        let out = t.ok("read_file", json!({"path": "a.txt"})).await;
        assert_eq!(out, "1|one\n2|two\n3|three\n");
    }

    #[tokio::test]
    async fn caps_lines_per_call_and_long_lines() {
        let t = env();
        t.write("many.txt", numbered(3000));
        let out = t
            .ok("read_file", json!({"path": "many.txt", "limit": 100000}))
            .await;
        assert!(out.contains("2000|line 2000\n"));
        assert!(!out.contains("2001|"));
        assert!(out.contains("continue with offset=2001"));

        let long = format!("{}\nshort\n", "é".repeat(50_000));
        t.write("long.txt", long);
        let out = t.ok("read_file", json!({"path": "long.txt"})).await;
        let first = out.lines().next().unwrap();
        assert!(first.ends_with("... [truncated]"), "{}", &first[..50]);
        assert_eq!(
            first.chars().count(),
            "1|".len() + 2000 + "... [truncated]".len()
        );
        assert!(out.contains("2|short\n"));
        assert!(!out.contains('\u{FFFD}'));
    }

    #[tokio::test]
    async fn caps_total_characters_with_next_offset() {
        let t = crate::tools::test_support::env_with(|c| c.file_read_max_chars = 1_000);
        t.write("a.txt", numbered(400));
        let out = t.ok("read_file", json!({"path": "a.txt"})).await;
        let body: usize = out
            .lines()
            .filter(|l| !l.starts_with('['))
            .map(|l| l.chars().count() + 1)
            .sum();
        assert!(body <= 1_000, "{body}");
        assert!(out.chars().count() <= 1_000, "{}", out.chars().count());
        let footer = out.lines().last().unwrap();
        assert!(
            footer.contains("output capped at 1000 characters"),
            "{footer}"
        );
        let last_shown: usize = out
            .lines()
            .rfind(|l| !l.starts_with('['))
            .unwrap()
            .split('|')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            footer.contains(&format!("offset={}", last_shown + 1)),
            "{footer}"
        );
    }

    #[tokio::test]
    async fn default_cap_keeps_big_reads_below_the_spill_threshold() {
        let t = env();
        let line = "y".repeat(1_500);
        t.write("big.txt", format!("{line}\n").repeat(2_000));
        let out = t
            .ok("read_file", json!({"path": "big.txt", "limit": 2000}))
            .await;
        assert!(!out.contains("persisted-output"), "spilled");
        assert!(out.chars().count() <= 100_000, "{}", out.chars().count());
        assert!(out.contains("output capped at 100000 characters"));
    }

    #[tokio::test]
    async fn invalid_utf8_is_decoded_lossily_with_a_note() {
        let t = env();
        t.write("latin1.txt", b"caf\xe9\nok\n");
        let out = t.ok("read_file", json!({"path": "latin1.txt"})).await;
        assert!(out.starts_with("1|caf\u{FFFD}\n2|ok\n"), "{out}");
        assert!(out.contains("not valid UTF-8"));
    }

    #[tokio::test]
    async fn binary_file_is_described_not_dumped() {
        let t = env();
        let mut bytes = vec![0x7f, b'E', b'L', b'F', 0, 0, 1];
        bytes.extend(std::iter::repeat_n(0xAB, 5000));
        t.write("prog", &bytes);
        let err = t.err("read_file", json!({"path": "prog"})).await;
        assert!(err.contains("binary file (5007 bytes)"), "{err}");
        assert!(!err.contains("ELF"));
    }

    #[tokio::test]
    async fn missing_file_suggests_names_and_directory_lists_entries() {
        let t = env();
        t.write("src/main.rs", "fn main() {}\n");
        t.write("src/lib.rs", "\n");
        let err = t.err("read_file", json!({"path": "src/mian.rs"})).await;
        assert!(
            err.contains("does not exist") && err.contains("main.rs"),
            "{err}"
        );

        let err = t.err("read_file", json!({"path": "src"})).await;
        assert!(err.contains("is a directory"), "{err}");
        assert!(err.contains("lib.rs") && err.contains("main.rs"), "{err}");
    }

    #[tokio::test]
    async fn offset_past_end_and_empty_file() {
        let t = env();
        t.write("a.txt", numbered(3));
        let err = t
            .err("read_file", json!({"path": "a.txt", "offset": 10}))
            .await;
        assert!(
            err.contains("offset 10 is past the end") && err.contains("3 lines"),
            "{err}"
        );
        t.write("empty.txt", "");
        let out = t.ok("read_file", json!({"path": "empty.txt"})).await;
        assert!(out.contains("empty"), "{out}");
    }

    #[tokio::test]
    async fn bad_arguments_are_reported() {
        let t = env();
        let err = t.err("read_file", json!({"path": "a", "offset": -3})).await;
        assert!(err.contains("offset"), "{err}");
    }
}
