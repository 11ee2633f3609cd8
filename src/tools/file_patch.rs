//! The `patch` tool: replace `old_string` with `new_string` in one file, atomically, and show
//! the change as a short unified-diff-like summary. Matching (exact, then whitespace-tolerant)
//! lives in `patch_match`; this file owns validation, the write and the messages.

use std::io::Read;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::tools::file_common;
use crate::tools::file_path::{self, Access, FilePath};
use crate::tools::patch_match::{self, Found, Span};
use crate::tools::registry::{ToolContext, ToolError, TypedTool};

/// Hunks and lines per hunk shown in the summary; the rest is counted, not shown.
const SHOWN_HUNKS: usize = 3;
const SHOWN_HUNK_LINES: usize = 20;
/// Longest line shown in messages (nearest text, diff).
const SHOWN_LINE_CHARS: usize = 200;

pub struct Patch;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct PatchArgs {
    pub path: String,
    /// Text to find (unique unless replace_all)
    pub old_string: String,
    pub new_string: String,
    #[serde(default)]
    pub replace_all: bool,
}

impl TypedTool for Patch {
    type Args = PatchArgs;
    const NAME: &'static str = "patch";
    const TOOLSET: &'static str = "file";
    const DESCRIPTION: &'static str = "Replace old_string with new_string in a file. Falls back to whitespace-tolerant matching. Returns a diff.";

    async fn run(&self, args: PatchArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        if args.old_string.is_empty() {
            return Err(ToolError::Respond(
                "old_string is empty; give the exact text to replace (to create or overwrite a whole file use write_file)".into(),
            ));
        }
        if args.old_string == args.new_string {
            return Err(ToolError::Respond(
                "old_string and new_string are identical; nothing would change".into(),
            ));
        }
        let (path, note) = file_path::prepare_write(ctx, &args.path, Access::Edit).await?;
        // An editor (ACP) reviews edits before they happen.
        if let crate::security::approval::Verdict::Blocked(why) = ctx
            .approvals
            .check_edit("patch", &path.resolved, ctx.prompt.as_ref())
            .await
        {
            return Err(ToolError::Respond(why));
        }
        let Some(editor) = ctx.scratch.files.editor() else {
            let result = file_common::blocking(move || patch_file(&path, &args)).await;
            return file_path::with_note(result, note);
        };
        // The editor's buffer is read, changed and written back (the checks above still ran).
        let via = |what: &str, e: String| {
            ToolError::Respond(format!(
                "cannot {what} {} through {}: {e}",
                args.path,
                editor.name()
            ))
        };
        let result = async {
            let content = editor
                .read_text(&path.resolved)
                .await
                .map_err(|e| via("read", e))?;
            let (updated, report) = edit(&content, &args)?;
            editor
                .write_text(&path.resolved, &updated)
                .await
                .map_err(|e| via("write", e))?;
            Ok(report)
        }
        .await;
        file_path::with_note(result, note)
    }
}

crate::register_tool!(Patch);

fn patch_file(path: &FilePath, args: &PatchArgs) -> Result<String, ToolError> {
    let shown = args.path.as_str();
    let (mut file, mut bytes) = path.open_text("patch edits text files only")?;
    file.read_to_end(&mut bytes)
        .map_err(|e| ToolError::Respond(file_common::io_message("read", shown, &e)))?;
    let Ok(content) = String::from_utf8(bytes) else {
        return Err(ToolError::Respond(format!(
            "{shown} is not valid UTF-8 text; patch cannot edit it safely (use the terminal tool, e.g. sed, or rewrite it with write_file)"
        )));
    };
    let (updated, report) = edit(&content, args)?;
    crate::util::atomic_write(&path.resolved, updated.as_bytes())
        .map_err(|e| ToolError::Respond(file_common::io_message("write", shown, &e)))?;
    Ok(report)
}

/// The patched text and what the model is told about the change.
fn edit(content: &str, args: &PatchArgs) -> Result<(String, String), ToolError> {
    let shown = args.path.as_str();
    let new_string = patch_match::match_line_endings(content, &args.new_string);

    let found = patch_match::find(content, &args.old_string, &new_string)
        .or_else(|| patch_match::find_escaped(content, &args.old_string, &args.new_string));
    let Some(found) = found else {
        return Err(ToolError::Respond(not_found_message(
            content,
            shown,
            &args.old_string,
        )));
    };
    let Found { strategy, spans } = found;
    let spans = if args.replace_all {
        patch_match::non_overlapping(spans)
    } else if spans.len() > 1 {
        let lines: Vec<String> = spans
            .iter()
            .take(20)
            .map(|s| patch_match::line_of(content, s.start).to_string())
            .collect();
        let more = if spans.len() > 20 { ", ..." } else { "" };
        return Err(ToolError::Respond(format!(
            "old_string matches {} places in {shown} (lines {}{more}); include more surrounding text to make it unique, or set replace_all=true",
            spans.len(),
            lines.join(", ")
        )));
    } else {
        spans
    };

    let updated = apply(content, &spans);
    if updated == content {
        return Err(ToolError::Respond(format!(
            "the replacement leaves {shown} unchanged; check new_string"
        )));
    }
    let count = spans.len();
    let mut out = format!(
        "Patched {shown}: {count} replacement{} ({}).\n",
        if count == 1 { "" } else { "s" },
        strategy.describe()
    );
    out.push_str(&diff_summary(content, &spans));
    Ok((updated, out))
}

fn apply(content: &str, spans: &[Span]) -> String {
    let mut out = String::with_capacity(content.len());
    let mut pos = 0;
    for s in spans {
        out.push_str(&content[pos..s.start]);
        out.push_str(&s.replacement);
        pos = s.end;
    }
    out.push_str(&content[pos..]);
    out
}

fn clip(line: &str) -> String {
    let line = line.trim_end_matches('\r');
    if line.chars().count() > SHOWN_LINE_CHARS {
        format!("{}...", crate::util::truncate_chars(line, SHOWN_LINE_CHARS))
    } else {
        line.to_string()
    }
}

fn not_found_message(content: &str, shown: &str, old: &str) -> String {
    let mut msg = format!(
        "old_string was not found in {shown} (also tried ignoring whitespace differences)."
    );
    if content.trim().is_empty() {
        msg.push_str(" The file is empty.");
        return msg;
    }
    match patch_match::nearest(content, old) {
        None => msg.push_str(" Re-read the file with read_file and copy old_string exactly."),
        Some((first, last, score)) if score >= 0.3 => {
            let last = last.min(first + 29);
            msg.push_str(&format!(
                " Closest text (lines {first}-{last}, {:.0}% similar):\n",
                score * 100.0
            ));
            for (i, line) in content
                .lines()
                .enumerate()
                .skip(first - 1)
                .take(last - first + 1)
            {
                msg.push_str(&format!("{}|{}\n", i + 1, clip(line)));
            }
            msg.push_str("Re-read the file with read_file and copy old_string exactly.");
        }
        Some(_) => msg.push_str(
            " Nothing in the file is similar; check the path, or re-read the file with read_file.",
        ),
    }
    msg
}

/// `@@ -a,n +b,m @@` hunks with whole lines before and after each replacement.
fn diff_summary(content: &str, spans: &[Span]) -> String {
    let mut out = String::new();
    // Lines added so far by earlier hunks, to number the new side.
    let mut delta: isize = 0;
    for (idx, s) in spans.iter().enumerate() {
        let line_start = content[..s.start].rfind('\n').map_or(0, |i| i + 1);
        let line_end = content[s.end..]
            .find('\n')
            .map_or(content.len(), |i| s.end + i);
        let before = &content[line_start..line_end];
        let after = format!(
            "{}{}{}",
            &content[line_start..s.start],
            s.replacement,
            &content[s.end..line_end]
        );
        let old_lines: Vec<&str> = before.split('\n').collect();
        let new_lines: Vec<&str> = after.split('\n').collect();
        let old_no = patch_match::line_of(content, line_start);
        if idx < SHOWN_HUNKS {
            out.push_str(&format!(
                "@@ -{old_no},{} +{},{} @@\n",
                old_lines.len(),
                (old_no as isize + delta).max(1),
                new_lines.len()
            ));
            push_side(&mut out, '-', &old_lines);
            push_side(&mut out, '+', &new_lines);
        }
        delta += new_lines.len() as isize - old_lines.len() as isize;
    }
    if spans.len() > SHOWN_HUNKS {
        out.push_str(&format!(
            "... and {} more replacements not shown\n",
            spans.len() - SHOWN_HUNKS
        ));
    }
    out
}

fn push_side(out: &mut String, sign: char, lines: &[&str]) {
    for line in lines.iter().take(SHOWN_HUNK_LINES) {
        out.push(sign);
        out.push_str(&clip(line));
        out.push('\n');
    }
    if lines.len() > SHOWN_HUNK_LINES {
        out.push_str(&format!(
            "{sign}... ({} more lines)\n",
            lines.len() - SHOWN_HUNK_LINES
        ));
    }
}

#[cfg(test)]
mod tests {
    use crate::tools::test_support::env;
    use serde_json::json;

    #[tokio::test]
    async fn exact_replacement_with_diff() {
        let t = env();
        let p = t.write("m.rs", "fn a() {}\nfn b() {\n    old();\n}\n");
        let out = t
            .ok(
                "patch",
                json!({"path": "m.rs", "old_string": "old();", "new_string": "new();\n    more();"}),
            )
            .await;
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "fn a() {}\nfn b() {\n    new();\n    more();\n}\n"
        );
        assert!(
            out.starts_with("Patched m.rs: 1 replacement (exact match)."),
            "{out}"
        );
        assert!(
            out.contains("@@ -3,1 +3,2 @@\n-    old();\n+    new();\n+    more();\n"),
            "{out}"
        );
    }

    #[tokio::test]
    async fn whitespace_tolerant_keeps_indentation() {
        let t = env();
        let p = t.write("m.py", "def f():\n\tif x:\n\t\treturn  1\n");
        let out = t
            .ok(
                "patch",
                json!({"path": "m.py", "old_string": "if x:\n    return 1", "new_string": "if x:\n    return 2"}),
            )
            .await;
        assert!(out.contains("ignoring whitespace"), "{out}");
        // The model's 4-space levels are mapped back to the file's tabs.
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "def f():\n\tif x:\n\t\treturn 2\n"
        );
    }

    #[tokio::test]
    async fn ambiguous_match_lists_lines_and_replace_all_replaces_each() {
        let t = env();
        let p = t.write("a.txt", "x = 1\ny = 2\nx = 1\nx = 1\n");
        let err = t
            .err(
                "patch",
                json!({"path": "a.txt", "old_string": "x = 1", "new_string": "x = 9"}),
            )
            .await;
        assert!(
            err.contains("matches 3 places") && err.contains("lines 1, 3, 4"),
            "{err}"
        );
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "x = 1\ny = 2\nx = 1\nx = 1\n"
        );

        let out = t
            .ok(
                "patch",
                json!({"path": "a.txt", "old_string": "x = 1", "new_string": "x = 9", "replace_all": true}),
            )
            .await;
        assert!(out.contains("3 replacements"), "{out}");
        assert!(out.contains("@@ -4,1 +4,1 @@"), "{out}");
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "x = 9\ny = 2\nx = 9\nx = 9\n"
        );
    }

    #[tokio::test]
    async fn missing_text_shows_nearest_lines() {
        let t = env();
        let p = t.write(
            "c.rs",
            "use std::io;\n\nfn load(path: &str) -> io::Result<String> {\n    std::fs::read_to_string(path)\n}\n",
        );
        let err = t
            .err(
                "patch",
                json!({"path": "c.rs", "old_string": "fn load(path: &Path) -> io::Result<String> {", "new_string": "x"}),
            )
            .await;
        assert!(err.contains("was not found in c.rs"), "{err}");
        assert!(err.contains("Closest text (lines 3-3"), "{err}");
        assert!(err.contains("3|fn load(path: &str)"), "{err}");
        assert!(std::fs::read_to_string(&p).unwrap().contains("&str"));
    }

    #[tokio::test]
    async fn rejects_bad_requests() {
        let t = env();
        t.write("a.txt", "abc\n");
        let err = t
            .err(
                "patch",
                json!({"path": "a.txt", "old_string": "", "new_string": "x"}),
            )
            .await;
        assert!(err.contains("old_string is empty"), "{err}");
        let err = t
            .err(
                "patch",
                json!({"path": "a.txt", "old_string": "abc", "new_string": "abc"}),
            )
            .await;
        assert!(err.contains("identical"), "{err}");
        let err = t
            .err(
                "patch",
                json!({"path": "b.txt", "old_string": "abc", "new_string": "x"}),
            )
            .await;
        assert!(err.contains("a.txt") && err.contains("write_file"), "{err}");
        t.write("bin", b"\x00\x01abc");
        let err = t
            .err(
                "patch",
                json!({"path": "bin", "old_string": "abc", "new_string": "x"}),
            )
            .await;
        assert!(err.contains("binary"), "{err}");
        t.write("latin", b"caf\xe9 abc");
        let err = t
            .err(
                "patch",
                json!({"path": "latin", "old_string": "abc", "new_string": "x"}),
            )
            .await;
        assert!(err.contains("not valid UTF-8"), "{err}");
    }

    #[tokio::test]
    async fn crlf_files_stay_crlf() {
        let t = env();
        let p = t.write("w.txt", "one\r\ntwo\r\nthree\r\n");
        t.ok(
            "patch",
            json!({"path": "w.txt", "old_string": "two", "new_string": "2a\n2b"}),
        )
        .await;
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "one\r\n2a\r\n2b\r\nthree\r\n"
        );
    }
}

/// The indentation cases from issue 14: a tolerant match keeps the file's own indentation.
#[cfg(test)]
mod indent_tests {
    use crate::tools::test_support::env;
    use serde_json::json;

    #[tokio::test]
    async fn two_space_model_block_lands_on_four_space_python_levels() {
        let t = env();
        let file = "def main(items):\n    total = 0\n    for item in items:\n        total += item\n    return total\n";
        let p = t.write("m.py", file);
        let out = t
            .ok(
                "patch",
                json!({
                    "path": "m.py",
                    "old_string": "  for item in items:\n    total += item",
                    "new_string": "  for item in items:\n    if item > 0:\n      total += item",
                }),
            )
            .await;
        assert!(out.contains("indentation adapted"), "{out}");
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "def main(items):\n    total = 0\n    for item in items:\n        if item > 0:\n            total += item\n    return total\n"
        );
    }

    #[tokio::test]
    async fn copied_from_first_word_keeps_the_rest_as_written() {
        let t = env();
        let file = "class A:\n    def f(self):\n        return 1\n";
        let p = t.write("a.py", file);
        t.ok(
            "patch",
            json!({
                "path": "a.py",
                "old_string": "def f(self):\n        return 1",
                "new_string": "def f(self):\n        return 2\n\n    def g(self):\n        return 3",
            }),
        )
        .await;
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "class A:\n    def f(self):\n        return 2\n\n    def g(self):\n        return 3\n"
        );
    }

    #[tokio::test]
    async fn makefile_recipes_stay_tabs() {
        let t = env();
        let p = t.write(
            "Makefile",
            "all: app\n\napp: main.c\n\tcc -o app main.c\n\t@echo built\n",
        );
        t.ok(
            "patch",
            json!({
                "path": "Makefile",
                "old_string": "app: main.c\n    cc -o app main.c",
                "new_string": "app: main.c util.c\n    cc -O2 -o app main.c util.c\n    strip app",
            }),
        )
        .await;
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "all: app\n\napp: main.c util.c\n\tcc -O2 -o app main.c util.c\n\tstrip app\n\t@echo built\n"
        );
    }

    #[tokio::test]
    async fn escaped_newlines_in_old_string_match_real_ones() {
        let t = env();
        let p = t.write("s.py", "def f():\n    return 1\n\nprint(f())\n");
        let out = t
            .ok(
                "patch",
                json!({
                    "path": "s.py",
                    "old_string": "def f():\\n    return 1",
                    "new_string": "def f():\\n    return 2",
                }),
            )
            .await;
        assert!(out.contains("as newlines"), "{out}");
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "def f():\n    return 2\n\nprint(f())\n"
        );
        // A literal backslash-n that is in the file is matched as written, not unescaped.
        let p = t.write("c.py", "print(\"a\\nb\")\n");
        t.ok(
            "patch",
            json!({"path": "c.py", "old_string": "\"a\\nb\"", "new_string": "\"a\\nc\""}),
        )
        .await;
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "print(\"a\\nc\")\n");
    }
}
