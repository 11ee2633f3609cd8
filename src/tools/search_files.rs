//! The `search_files` tool: regex search over file contents, or path search, under a directory.
//!
//! Walks with the `ignore` crate (honours .gitignore/.ignore even outside a git repo, skips
//! hidden entries such as `.git`), in sorted order so results are stable, skips binary files,
//! runs on the blocking pool and stops when the turn is interrupted.

use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use regex::Regex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::security::protected::ProtectedPaths;
use crate::tools::file_common::{self, BINARY_SNIFF_BYTES};
use crate::tools::file_path::{self, Access};
use crate::tools::registry::{ToolContext, ToolError, TypedTool};

const MAX_LIMIT: usize = 1_000;
/// Matched line text is cut to this many chars.
const SHOWN_LINE_CHARS: usize = 200;
/// Longest part of a single line that is searched (minified files can have enormous lines).
const SEARCHED_LINE_BYTES: usize = 256 * 1024;
/// Bounds one call on a huge tree; the model is told to narrow `path`.
const MAX_FILES: usize = 200_000;
/// Results stop before this many chars, so the answer is never spilled to a file.
const MAX_OUTPUT_CHARS: usize = 60_000;

pub struct SearchFiles;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    #[default]
    Content,
    Files,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchFilesArgs {
    /// Regex; for target=files a glob or regex on paths
    pub pattern: String,
    #[serde(default)]
    pub target: Target,
    #[serde(default = "default_path")]
    pub path: String,
    /// e.g. *.rs
    pub file_glob: Option<String>,
    #[serde(default = "default_limit")]
    pub limit: usize,
}

fn default_path() -> String {
    ".".into()
}

fn default_limit() -> usize {
    50
}

impl TypedTool for SearchFiles {
    type Args = SearchFilesArgs;
    const NAME: &'static str = "search_files";
    const TOOLSET: &'static str = "file";
    const DESCRIPTION: &'static str = "Search file contents by regex (`path:line: text`) or find files by name (target=files). Skips ignored, hidden and binary files.";
    const READ_ONLY: bool = true;

    async fn run(&self, args: SearchFilesArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        if args.pattern.is_empty() {
            return Err(ToolError::Respond(
                "pattern is empty; give a regex (or a glob for target=files)".into(),
            ));
        }
        let ctx = ctx.clone();
        file_common::blocking(move || {
            let root = file_path::resolve_path(&ctx, &args.path, Access::Search)?;
            search(&root.resolved, &args, &ctx.shield.protected, &ctx.cancel)
        })
        .await
    }
}

crate::register_tool!(SearchFiles);

/// How target=files matches a path.
enum PathMatcher {
    Glob(Gitignore),
    Regex(Regex),
}

impl PathMatcher {
    fn is_match(&self, rel: &Path) -> bool {
        match self {
            PathMatcher::Glob(g) => g.matched_path_or_any_parents(rel, false).is_ignore(),
            PathMatcher::Regex(r) => r.is_match(&rel.to_string_lossy()),
        }
    }
}

/// `*` or `?` without regex-only syntax reads as a glob (`*.rs`, `src/**/mod.rs`).
fn looks_like_glob(pattern: &str) -> bool {
    let globby = pattern.contains('*') || pattern.contains('?');
    let regexy = [".*", ".+", "\\", "^", "$", "(", "|", "+"]
        .iter()
        .any(|t| pattern.contains(t));
    globby && !regexy
}

fn compile_regex(pattern: &str) -> Result<Regex, ToolError> {
    regex::RegexBuilder::new(pattern)
        .size_limit(32 * 1024 * 1024)
        .build()
        .map_err(|e| {
            ToolError::Respond(format!(
                "invalid regex `{pattern}`: {e}\nEscape special characters (e.g. \\( \\[ \\.) to match them literally"
            ))
        })
}

/// A gitignore-style glob matcher rooted at `base` (so `*.rs` matches at any depth and
/// `src/*.rs` only under `base/src`).
fn compile_glob(base: &Path, glob: &str, what: &str) -> Result<Gitignore, ToolError> {
    let mut builder = GitignoreBuilder::new(base);
    let bad = |e: ignore::Error| {
        ToolError::Respond(format!(
            "invalid {what} `{glob}`: {e}; use a glob like *.rs or src/**/*.py"
        ))
    };
    builder.add_line(None, glob).map_err(bad)?;
    builder.build().map_err(bad)
}

fn search(
    root: &Path,
    args: &SearchFilesArgs,
    protected: &ProtectedPaths,
    cancel: &CancellationToken,
) -> Result<String, ToolError> {
    let limit = args.limit.clamp(1, MAX_LIMIT);
    let base = if root.is_dir() {
        root.to_path_buf()
    } else {
        root.parent().map(Path::to_path_buf).unwrap_or_default()
    };
    let file_glob = match args.file_glob.as_deref().filter(|g| !g.trim().is_empty()) {
        Some(g) => Some(compile_glob(&base, g, "file_glob")?),
        None => None,
    };
    let content_re = match args.target {
        Target::Content => Some(compile_regex(&args.pattern)?),
        Target::Files => None,
    };
    let path_matcher =
        match args.target {
            Target::Content => None,
            Target::Files if looks_like_glob(&args.pattern) => Some(PathMatcher::Glob(
                compile_glob(&base, &args.pattern, "glob")?,
            )),
            Target::Files => Some(PathMatcher::Regex(compile_regex(&args.pattern)?)),
        };

    let mut found = Results {
        items: Vec::new(),
        chars: 0,
        limit,
        full: None,
    };
    let mut stats = Stats::default();
    for (abs, rel) in walk(root) {
        if cancel.is_cancelled() {
            stats.interrupted = true;
            break;
        }
        stats.files += 1;
        if stats.files > MAX_FILES {
            stats.too_many = true;
            break;
        }
        if let Some(g) = &file_glob
            && !g.matched_path_or_any_parents(&rel, false).is_ignore()
        {
            continue;
        }
        let shown = display_path(&args.path, root, &rel);
        if let Some(m) = &path_matcher {
            if m.is_match(&rel) && !found.offer(shown) {
                break;
            }
            continue;
        }
        if content_re.is_some() && protected.is_unreadable(&abs) {
            // Secrets (.env, auth.json, private keys) are never searched: a match would show them.
            stats.protected += 1;
            continue;
        }
        if let Some(re) = &content_re
            && !grep_file(&abs, &shown, re, &mut found, &mut stats, cancel)
        {
            break;
        }
    }
    Ok(render(args, &found, &stats))
}

/// Why results stopped early.
#[derive(Clone, Copy)]
enum Full {
    Limit,
    Size,
}

struct Results {
    items: Vec<String>,
    chars: usize,
    limit: usize,
    full: Option<Full>,
}

impl Results {
    /// Adds one result; false (and nothing added) once the limit or the size cap is reached.
    fn offer(&mut self, line: String) -> bool {
        if self.items.len() == self.limit {
            self.full = Some(Full::Limit);
            return false;
        }
        if self.chars + line.len() + 1 > MAX_OUTPUT_CHARS {
            self.full = Some(Full::Size);
            return false;
        }
        self.chars += line.len() + 1;
        self.items.push(line);
        true
    }
}

#[derive(Default)]
struct Stats {
    files: usize,
    binary: usize,
    unreadable: usize,
    protected: usize,
    interrupted: bool,
    too_many: bool,
}

/// Every file under `root` (or `root` itself), sorted, with its path relative to the base.
fn walk(root: &Path) -> impl Iterator<Item = (PathBuf, PathBuf)> + use<> {
    let single = root.is_file();
    let root_owned = root.to_path_buf();
    let walker = ignore::WalkBuilder::new(root)
        .hidden(true)
        .git_ignore(true)
        .ignore(true)
        .parents(true)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .build();
    walker
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .map(move |e| {
            let abs = e.into_path();
            let rel = if single {
                PathBuf::from(abs.file_name().unwrap_or_default())
            } else {
                abs.strip_prefix(&root_owned)
                    .map(Path::to_path_buf)
                    .unwrap_or_else(|_| abs.clone())
            };
            (abs, rel)
        })
}

/// Paths are shown as the model would write them: under the `path` it gave.
fn display_path(given: &str, root: &Path, rel: &Path) -> String {
    if root.is_file() {
        return given.to_string();
    }
    let given = given.trim_end_matches('/');
    if given.is_empty() || given == "." {
        rel.display().to_string()
    } else {
        format!("{given}/{}", rel.display())
    }
}

/// Appends matches of one file; returns false when no more results fit (stop searching).
fn grep_file(
    abs: &Path,
    shown: &str,
    re: &Regex,
    found: &mut Results,
    stats: &mut Stats,
    cancel: &CancellationToken,
) -> bool {
    let Ok(mut file) = file_path::open_nofollow(abs) else {
        stats.unreadable += 1;
        return true;
    };
    let mut head = Vec::with_capacity(BINARY_SNIFF_BYTES);
    if (&mut file)
        .take(BINARY_SNIFF_BYTES as u64)
        .read_to_end(&mut head)
        .is_err()
    {
        stats.unreadable += 1;
        return true;
    }
    if file_common::looks_binary(&head) {
        stats.binary += 1;
        return true;
    }
    let mut reader = BufReader::new(std::io::Cursor::new(head).chain(file));
    let mut buf = Vec::new();
    let mut line_no = 0usize;
    while let Ok(Some(_)) =
        file_common::read_line_capped(&mut reader, &mut buf, SEARCHED_LINE_BYTES)
    {
        line_no += 1;
        if line_no.is_multiple_of(16_384) && cancel.is_cancelled() {
            stats.interrupted = true;
            return false;
        }
        let text = String::from_utf8_lossy(&buf);
        let text = text.trim_end_matches('\r');
        if !re.is_match(text) {
            continue;
        }
        let text = text.trim();
        let clipped = if text.chars().count() > SHOWN_LINE_CHARS {
            format!("{}...", crate::util::truncate_chars(text, SHOWN_LINE_CHARS))
        } else {
            text.to_string()
        };
        if !found.offer(format!("{shown}:{line_no}: {clipped}")) {
            return false;
        }
    }
    true
}

fn render(args: &SearchFilesArgs, found: &Results, stats: &Stats) -> String {
    let what = match args.target {
        Target::Content => "matches",
        Target::Files => "files",
    };
    let mut out = String::new();
    if found.items.is_empty() {
        out.push_str(&format!(
            "No {what} for `{}` in {} ({} file{} searched",
            args.pattern,
            args.path,
            stats.files,
            if stats.files == 1 { "" } else { "s" }
        ));
        if let Some(g) = &args.file_glob {
            out.push_str(&format!(", file_glob {g}"));
        }
        out.push_str(").\n");
    } else {
        for line in &found.items {
            out.push_str(line);
            out.push('\n');
        }
    }
    match found.full {
        Some(Full::Limit) => out.push_str(&format!(
            "[stopped at limit={}; more {what} exist: narrow pattern, path or file_glob, or raise limit (max {MAX_LIMIT})]\n",
            found.limit
        )),
        Some(Full::Size) => out.push_str(&format!(
            "[stopped after {} {what}: output size cap reached; narrow pattern, path or file_glob]\n",
            found.items.len()
        )),
        None => {}
    }
    if stats.binary > 0 && args.target == Target::Content {
        out.push_str(&format!("[{} binary file(s) skipped]\n", stats.binary));
    }
    if stats.unreadable > 0 {
        out.push_str(&format!(
            "[{} unreadable file(s) skipped]\n",
            stats.unreadable
        ));
    }
    if stats.protected > 0 {
        out.push_str(&format!(
            "[{} protected file(s) skipped: secrets are never searched]\n",
            stats.protected
        ));
    }
    if stats.too_many {
        out.push_str(&format!(
            "[stopped after {MAX_FILES} files; search a narrower path]\n"
        ));
    }
    if stats.interrupted {
        out.push_str("[interrupted: results are incomplete]\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::looks_like_glob;
    use crate::tools::test_support::env;
    use serde_json::json;

    fn tree() -> crate::tools::test_support::TestEnv {
        let t = env();
        t.write(".gitignore", "target/\n*.log\n");
        t.write("src/main.rs", "fn main() {\n    helper();\n}\n");
        t.write("src/util.rs", "pub fn helper() {}\n// TODO later\n");
        t.write("src/deep/mod.rs", "fn helper_two() {}\n");
        t.write("README.md", "call helper() from main\n");
        t.write("target/debug/out.rs", "fn helper() {}\n");
        t.write("run.log", "helper log\n");
        t.write(".git/config", "helper in git dir\n");
        t.write(".hidden/h.rs", "fn helper() {}\n");
        t.write("blob.bin", b"helper\x00\x01\x02");
        t
    }

    #[tokio::test]
    async fn content_search_respects_ignores_and_is_sorted() {
        let t = tree();
        let out = t
            .ok("search_files", json!({"pattern": r"helper\w*\("}))
            .await;
        assert_eq!(
            out,
            "README.md:1: call helper() from main\nsrc/deep/mod.rs:1: fn helper_two() {}\nsrc/main.rs:2: helper();\nsrc/util.rs:1: pub fn helper() {}\n[1 binary file(s) skipped]\n"
        );
        let out = t.ok("search_files", json!({"pattern": "helper"})).await;
        assert!(out.contains("[1 binary file(s) skipped]"), "{out}");
        for hidden in ["target/", "run.log", ".git", ".hidden"] {
            assert!(!out.contains(hidden), "{hidden} leaked: {out}");
        }
    }

    #[tokio::test]
    async fn glob_filter_path_and_limit() {
        let t = tree();
        let out = t
            .ok(
                "search_files",
                json!({"pattern": "helper", "file_glob": "*.rs", "path": "src"}),
            )
            .await;
        assert!(
            out.starts_with("src/deep/mod.rs:1: fn helper_two() {}\n"),
            "{out}"
        );
        assert!(!out.contains("README"), "{out}");

        let out = t
            .ok("search_files", json!({"pattern": "helper", "limit": 2}))
            .await;
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 4, "{out}");
        assert!(lines[2].starts_with("[stopped at limit=2"), "{out}");

        let out = t
            .ok("search_files", json!({"pattern": "nothing-here-xyz"}))
            .await;
        assert!(
            out.starts_with("No matches for `nothing-here-xyz` in ."),
            "{out}"
        );
    }

    #[tokio::test]
    async fn target_files_by_glob_and_regex() {
        let t = tree();
        let out = t
            .ok(
                "search_files",
                json!({"pattern": "*.rs", "target": "files"}),
            )
            .await;
        assert_eq!(out, "src/deep/mod.rs\nsrc/main.rs\nsrc/util.rs\n");
        let out = t
            .ok(
                "search_files",
                json!({"pattern": r"^src/[a-z]+\.rs$", "target": "files"}),
            )
            .await;
        assert_eq!(out, "src/main.rs\nsrc/util.rs\n");
        let out = t
            .ok(
                "search_files",
                json!({"pattern": "src/*.rs", "target": "files"}),
            )
            .await;
        assert_eq!(out, "src/main.rs\nsrc/util.rs\n");
    }

    #[tokio::test]
    async fn errors_name_the_problem() {
        let t = tree();
        let err = t.err("search_files", json!({"pattern": "fn (main"})).await;
        assert!(err.contains("invalid regex `fn (main`"), "{err}");
        assert!(err.contains("unclosed group"), "{err}");
        let err = t
            .err("search_files", json!({"pattern": "x", "path": "nope"}))
            .await;
        assert!(err.contains("does not exist"), "{err}");
        let err = t
            .err("search_files", json!({"pattern": "x", "target": "lines"}))
            .await;
        assert!(err.contains("target"), "{err}");
    }

    #[tokio::test]
    async fn output_size_is_capped_below_the_spill_threshold() {
        let t = env();
        let line = format!("needle {}\n", "x".repeat(300));
        t.write("many.txt", line.repeat(1000));
        let out = t
            .ok("search_files", json!({"pattern": "needle", "limit": 1000}))
            .await;
        assert!(out.len() <= super::MAX_OUTPUT_CHARS + 200, "{}", out.len());
        assert!(
            out.contains("output size cap reached"),
            "{}",
            &out[out.len() - 200..]
        );
        assert!(out.starts_with("many.txt:1: needle xxx"));
    }

    #[tokio::test]
    async fn single_file_and_long_lines() {
        let t = env();
        t.write(
            "big.txt",
            format!("{}needle{}\n", "a".repeat(300), "b".repeat(300)),
        );
        let out = t
            .ok(
                "search_files",
                json!({"pattern": "needle", "path": "big.txt"}),
            )
            .await;
        assert!(out.starts_with("big.txt:1: aaa"), "{out}");
        assert!(out.trim_end().ends_with("..."), "{out}");
        assert!(out.len() < 300, "{out}");
    }

    #[tokio::test]
    async fn stops_when_cancelled() {
        let t = tree();
        t.ctx.cancel.cancel();
        let out = t.call("search_files", json!({"pattern": "helper"})).await;
        assert!(out.is_error);
        assert!(out.content.contains("interrupted"), "{}", out.content);
        // Also directly: the blocking search itself notices the token.
        let args: super::SearchFilesArgs =
            serde_json::from_value(json!({"pattern": "helper"})).unwrap();
        let out = super::search(&t.ctx.cwd, &args, &t.ctx.shield.protected, &t.ctx.cancel).unwrap();
        assert!(
            out.contains("[interrupted: results are incomplete]"),
            "{out}"
        );
        assert!(!out.contains("src/main.rs"), "{out}");
    }

    #[test]
    fn glob_detection() {
        assert!(looks_like_glob("*.rs"));
        assert!(looks_like_glob("src/**/mod.rs"));
        assert!(!looks_like_glob(r".*\.rs$"));
        assert!(!looks_like_glob("main.rs"));
    }
}
