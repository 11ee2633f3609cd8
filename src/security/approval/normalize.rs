//! De-obfuscation: turns one command line into the views the detectors read.
//!
//! A command is lexed (`shell.rs`), split into simple commands, and each simple command is reduced
//! to its *core*: leading `VAR=value` assignments, reserved words (`if`, `then`, `{`, `!`, …) and
//! wrappers (`sudo`, `env`, `command`, `nohup`, `timeout 5`, `xargs -0`, …) are stripped and the
//! command word is cut to its basename (`/bin/rm` → `rm`). Text the shell would run from inside the
//! command is unwrapped and analysed the same way, recursively: `sh -c '…'`, `eval …`,
//! `bash <<< …`, heredocs fed to a shell, `$(…)`, backticks, `<(…)`, `find -exec …`,
//! `echo … | sh`, and shell calls inside `python -c` / `perl -e` code (`os.system("…")`).
//!
//! Quoted arguments that are only data (`echo "rm -rf /"`) are *not* treated as commands: the
//! detectors look at command positions, so printing or grepping for a dangerous string is fine.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::LazyLock;

use regex::Regex;

use super::dynamic;
use super::oneliner;
use super::payload::{Payload, exec_payload, is_interpreter, is_shell};
use super::shell::{self, Tok, Word};
use super::wrappers::{expand, skip_options};

/// How deep nested `sh -c "eval '…'"` layers are followed.
pub(super) const MAX_DEPTH: usize = 16;
/// Upper bound on analysed command texts, so hostile input cannot make detection explode.
const MAX_SOURCES: usize = 512;

/// Everything the detectors look at for one command line.
#[derive(Debug, Default)]
pub(super) struct Views {
    /// Core simple commands (see the module header), outermost first, plus each `rm` after a
    /// `cd` again with its relative operands resolved against that directory.
    pub cmds: Vec<Vec<String>>,
    /// The core commands joined by single spaces: what command-scoped regexes read (from `^`).
    pub lines: Vec<String>,
    /// Whole command texts with quotes removed; metacharacters that came from quotes are replaced
    /// by `_` so `echo "curl x | sh"` does not read as a pipeline.
    pub flats: Vec<String>,
    /// The original text and every nested command text, blanks collapsed.
    pub raws: Vec<String>,
    /// Every redirection as (operator, target).
    pub redirects: Vec<(String, String)>,
    /// Structural findings made while unwrapping (pattern keys, see `patterns.rs`).
    pub notes: Vec<&'static str>,
}

impl Views {
    pub(super) fn note(&mut self, key: &'static str) {
        if !self.notes.contains(&key) {
            self.notes.push(key);
        }
    }
}

/// Builds the views of `command`.
pub(super) fn views(command: &str) -> Views {
    let mut v = Views::default();
    let mut queue: VecDeque<(String, usize)> = VecDeque::from([(command.to_string(), 0)]);
    let mut seen = HashSet::new();
    while let Some((src, depth)) = queue.pop_front() {
        if seen.len() >= MAX_SOURCES {
            // Whatever is left cannot be inspected: say so rather than pass it silently.
            v.note("uninspectable_nesting");
            break;
        }
        if !seen.insert(src.clone()) {
            continue;
        }
        let mut inner = Vec::new();
        analyse_source(&src, &mut v, &mut inner);
        if depth < MAX_DEPTH {
            queue.extend(inner.into_iter().map(|t| (t, depth + 1)));
        } else if !inner.is_empty() {
            v.note("uninspectable_nesting");
        }
    }
    v
}

/// A simple command: its words and redirections, and whether its output feeds a pipe.
#[derive(Default)]
struct Simple {
    words: Vec<Word>,
    redirs: Vec<(String, String, Option<String>)>,
    pipe_out: bool,
}

fn analyse_source(src: &str, v: &mut Views, inner: &mut Vec<String>) {
    v.raws.push(collapse_blanks(src));
    let lexed = shell::lex(src);
    v.flats.push(render_flat(&lexed.toks));
    inner.extend(lexed.substitutions);
    let simples = split_simple(lexed.toks);
    let functions = dynamic::functions(src, v);
    let mut vars: HashMap<String, String> = HashMap::new();
    let mut aliases: HashMap<String, Vec<String>> = HashMap::new();
    let mut written: HashSet<String> = HashSet::new();
    let mut cwd: Option<String> = None;
    for (k, s) in simples.iter().enumerate() {
        for (op, target, _) in &s.redirs {
            v.redirects.push((op.clone(), target.clone()));
        }
        if dynamic::changes_ifs(&s.words) {
            v.note("ifs_change");
        }
        remember_assignments(&s.words, &mut vars);
        let mut words = shell_words(&s.words, &vars);
        if let Some(value) = words.first().and_then(|w| aliases.get(w)) {
            let mut expanded = value.clone();
            expanded.extend(words.drain(1..));
            words = expanded;
        }
        let mut cores = Vec::new();
        expand(&words, &mut cores, v, inner, 0);
        let feeds_shell = s.pipe_out && simples.get(k + 1).is_some_and(reads_script_from_stdin);
        for core in cores {
            dynamic::check_command_word(&core, src, v);
            dynamic::check_runs(&core, &written, v);
            if let Some(body) = functions.get(&core[0]) {
                inner.push(dynamic::inline_call(body, &core[1..]));
            }
            if core[0] == "alias" {
                for def in &core[1..] {
                    if let Some((name, value)) = def.split_once('=') {
                        let value: Vec<String> =
                            value.split_whitespace().map(str::to_string).collect();
                        if !value.is_empty() && aliases.len() < 64 {
                            aliases.insert(name.to_string(), value);
                        }
                    }
                }
            }
            extract_inner(&core, s, feeds_shell, v, inner);
            dynamic::written_files(&core, &s.redirs, &mut written);
            if matches!(core[0].as_str(), "cd" | "pushd") {
                cwd = Some(core.get(1).cloned().unwrap_or_else(|| "~".to_string()));
            } else if let (Some(dir), "rm" | "find" | "chmod" | "chown" | "mv") =
                (&cwd, core[0].as_str())
            {
                // `cd / && rm -rf *` deletes `/*`: check the operands as the shell resolves them.
                if let Some(resolved) = rm_in_dir(&core, dir) {
                    v.cmds.push(resolved);
                }
            }
            if core[0] == "git"
                && let Some(canonical) = git_canonical(&core)
            {
                v.lines.push(canonical.join(" "));
            }
            v.lines.push(core.join(" "));
            v.cmds.push(core);
        }
    }
}

/// `git -C dir -c k=v --no-pager push …` → `git push …`: global options stripped, so deny rules
/// and patterns written for `git push` see every spelling of it.
fn git_canonical(core: &[String]) -> Option<Vec<String>> {
    let mut i = 1;
    while let Some(a) = core.get(i) {
        if matches!(
            a.as_str(),
            "-C" | "-c"
                | "--git-dir"
                | "--work-tree"
                | "--namespace"
                | "--exec-path"
                | "--config-env"
        ) {
            i += 2;
        } else if a.starts_with('-') {
            i += 1;
        } else {
            break;
        }
    }
    (i > 1 && i < core.len()).then(|| {
        std::iter::once("git".to_string())
            .chain(core[i..].iter().cloned())
            .collect()
    })
}

/// Records `x=rm` and `export x=rm` so a later `$x -rf /` reads as `rm -rf /`.
fn remember_assignments(words: &[Word], vars: &mut HashMap<String, String>) {
    let declared = words.first().is_some_and(|w| {
        matches!(
            w.text.as_str(),
            "export" | "declare" | "local" | "readonly" | "typeset"
        )
    });
    let assigns = if declared { &words[1..] } else { words };
    if assigns.is_empty() || !assigns.iter().all(|w| is_assignment(&w.text)) {
        return;
    }
    for w in assigns {
        if let Some((name, value)) = w.text.split_once('=') {
            let name = name.trim_end_matches('+');
            if vars.len() < 256 {
                vars.insert(name.to_string(), value.to_string());
            }
        }
    }
}

/// The words the shell would execute: known variables substituted (and split when unquoted),
/// brace lists expanded (`{rm,-rf,/}`, `/{etc,usr}`).
fn shell_words(words: &[Word], vars: &HashMap<String, String>) -> Vec<String> {
    let mut out = Vec::with_capacity(words.len());
    for w in words {
        let text = substitute(&w.text, vars);
        if w.quoted {
            out.push(text);
        } else if text != w.text && text.contains(char::is_whitespace) {
            out.extend(text.split_whitespace().map(str::to_string));
        } else {
            out.extend(expand_braces(&text, 64));
        }
    }
    out
}

fn substitute(text: &str, vars: &HashMap<String, String>) -> String {
    if vars.is_empty() || !text.contains('$') {
        return text.to_string();
    }
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '$' {
            let braced = chars.get(i + 1) == Some(&'{');
            let start = if braced { i + 2 } else { i + 1 };
            let mut j = start;
            while j < chars.len() && (chars[j].is_ascii_alphanumeric() || chars[j] == '_') {
                j += 1;
            }
            let name: String = chars[start..j].iter().collect();
            let closed = !braced || chars.get(j) == Some(&'}');
            if let (true, Some(value)) = (closed && !name.is_empty(), vars.get(&name)) {
                out.push_str(value);
                i = if braced { j + 1 } else { j };
                continue;
            }
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

/// Bash brace expansion of comma lists, at most `cap` results (`${x}` is not a brace list).
/// Iterative, and only the first `MAX_BRACE_GROUPS` lists expand: a word of 20,000 `{a,b}`
/// must neither recurse 20,000 deep (it once overflowed the stack) nor build huge strings.
fn expand_braces(word: &str, cap: usize) -> Vec<String> {
    const MAX_BRACE_GROUPS: usize = 8;
    let bytes = word.as_bytes();
    let mut results = vec![String::new()];
    let mut pos = 0;
    let mut groups = 0;
    while pos < word.len() && groups < MAX_BRACE_GROUPS {
        let open =
            (pos..bytes.len()).find(|&i| bytes[i] == b'{' && (i == 0 || bytes[i - 1] != b'$'));
        let Some(open) = open else { break };
        let Some(close) = word[open..].find('}').map(|c| open + c) else {
            break;
        };
        let body = &word[open + 1..close];
        let prefix = &word[pos..open];
        if !body.contains(',') || body.contains('{') {
            for r in &mut results {
                r.push_str(&word[pos..=close]);
            }
        } else {
            let mut next = Vec::new();
            'outer: for r in &results {
                for alt in body.split(',') {
                    if next.len() >= cap {
                        break 'outer;
                    }
                    next.push(format!("{r}{prefix}{alt}"));
                }
            }
            results = next;
            groups += 1;
        }
        pos = close + 1;
    }
    for r in &mut results {
        r.push_str(&word[pos.min(word.len())..]);
    }
    results
}

/// An `rm` whose relative operands are resolved against the directory of an earlier `cd`.
fn rm_in_dir(core: &[String], dir: &str) -> Option<Vec<String>> {
    let mut changed = false;
    let resolved: Vec<String> = core
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let relative = i > 0 && !a.starts_with(['-', '/', '~', '$']);
            if relative {
                changed = true;
                format!("{}/{a}", dir.trim_end_matches('/'))
            } else {
                a.clone()
            }
        })
        .collect();
    changed.then_some(resolved)
}

fn split_simple(toks: Vec<Tok>) -> Vec<Simple> {
    let mut out = Vec::new();
    let mut cur = Simple::default();
    let mut awaiting_target = false;
    for t in toks {
        match t {
            Tok::Word(w) if awaiting_target => {
                if let Some(last) = cur.redirs.last_mut() {
                    last.1 = w.text;
                }
                awaiting_target = false;
            }
            Tok::Word(w) => cur.words.push(w),
            Tok::Redir { op, body } => {
                cur.redirs.push((op, String::new(), body));
                awaiting_target = true;
            }
            Tok::Sep(s) => {
                awaiting_target = false;
                cur.pipe_out = matches!(s, "|" | "|&");
                if !cur.words.is_empty() || !cur.redirs.is_empty() {
                    out.push(std::mem::take(&mut cur));
                } else {
                    cur = Simple::default();
                }
            }
        }
    }
    if !cur.words.is_empty() || !cur.redirs.is_empty() {
        out.push(cur);
    }
    out
}

fn render_flat(toks: &[Tok]) -> String {
    let mut parts: Vec<String> = Vec::with_capacity(toks.len());
    for t in toks {
        parts.push(match t {
            Tok::Word(w) if w.quoted => w
                .text
                .chars()
                .map(|c| {
                    if c.is_whitespace() || ";&|<>()`".contains(c) {
                        '_'
                    } else {
                        c
                    }
                })
                .collect(),
            Tok::Word(w) => w.text.clone(),
            Tok::Sep("\n") => ";".to_string(),
            Tok::Sep(s) => (*s).to_string(),
            Tok::Redir { op, .. } => op.clone(),
        });
    }
    parts.join(" ")
}

fn collapse_blanks(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut blank = false;
    for c in s.chars().filter(|&c| c != '\0') {
        if c == ' ' || c == '\t' || c == '\r' {
            if !blank {
                out.push(' ');
            }
            blank = true;
        } else {
            out.push(c);
            blank = false;
        }
    }
    out.trim().to_string()
}

/// The last path component (`/usr/bin/rm` → `rm`), or the word itself if that would be empty.
pub(super) fn basename(word: &str) -> &str {
    match word.rsplit('/').next() {
        Some(b) if !b.is_empty() => b,
        _ => word,
    }
}

pub(super) fn is_assignment(word: &str) -> bool {
    static ASSIGN: LazyLock<Option<Regex>> =
        LazyLock::new(|| Regex::new(r"^[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=").ok());
    ASSIGN.as_ref().is_some_and(|re| re.is_match(word))
}

/// True when the simple command is an interpreter reading its program from stdin
/// (`| sh`, `| bash -s`, `| sudo python3 -`).
fn reads_script_from_stdin(s: &Simple) -> bool {
    let words: Vec<String> = s.words.iter().map(|w| w.text.clone()).collect();
    let mut cores = Vec::new();
    expand(
        &words,
        &mut cores,
        &mut Views::default(),
        &mut Vec::new(),
        0,
    );
    cores.last().is_some_and(|core| {
        let name = core[0].as_str();
        if matches!(name, "source" | ".") {
            return core
                .get(1)
                .is_some_and(|a| a.starts_with("/dev/stdin") || a.starts_with("/dev/fd/0"));
        }
        if !is_interpreter(name) || exec_payload(core).is_some() {
            return false;
        }
        // `sh`, `bash -s -- args`, `python3 -`, `perl /dev/stdin`: the program is on stdin.
        let script = core[1..].iter().find(|a| !a.starts_with('-') || *a == "-");
        let from_stdin = match script {
            None => true,
            Some(s) => s == "-" || s.starts_with("/dev/stdin") || s.starts_with("/dev/fd/0"),
        };
        from_stdin
            || is_shell(name)
                && core[1..]
                    .iter()
                    .take_while(|a| *a != "--")
                    .any(|a| a == "-s")
    })
}

/// Finds the command text a core command runs and queues it for analysis.
fn extract_inner(
    core: &[String],
    s: &Simple,
    feeds_shell: bool,
    v: &mut Views,
    inner: &mut Vec<String>,
) {
    let name = core[0].as_str();
    match exec_payload(core) {
        // Shell text is read like any command: nothing is hidden by `sh -c` itself.
        Some(Payload::Shell(text)) => inner.push(text),
        Some(Payload::Code(code)) => oneliner::analyse(name, &code, v, inner),
        Some(Payload::Missing) => v.note("script_exec_flag"),
        None if is_interpreter(name) && core[1..].iter().all(|a| a.starts_with('-')) => {
            // No script operand: the program comes from stdin (heredoc, here-string).
            for (op, target, body) in &s.redirs {
                let text = match (op.ends_with("<<<"), body) {
                    (true, _) => Some(target.clone()),
                    (false, Some(b)) => Some(b.clone()),
                    _ => None,
                };
                if let Some(text) = text {
                    v.note("heredoc_exec");
                    if text.contains("$(") {
                        v.note("generated_to_shell");
                    }
                    if is_shell(name) {
                        inner.push(text);
                    } else {
                        oneliner::analyse(name, &text, v, inner);
                    }
                }
            }
        }
        None => {}
    }
    match name {
        "watch" => {
            let n = skip_options(&core[1..], "nqd", &["interval", "differences"]);
            inner.push(core[1 + n..].join(" "));
        }
        _ if feeds_shell && !(matches!(name, "echo" | "printf") && dynamic::literal_echo(core)) => {
            v.note("generated_to_shell");
        }
        "echo" | "printf" if feeds_shell => {
            let args: Vec<&str> = core[1..]
                .iter()
                .map(String::as_str)
                .skip_while(|a| name == "echo" && matches!(*a, "-e" | "-n" | "-E" | "-ne" | "-en"))
                .collect();
            inner.push(args.join(" "));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::approval::wrappers::MAX_CORES;

    fn lines(cmd: &str) -> Vec<String> {
        views(cmd).lines
    }

    #[test]
    fn wrappers_are_stripped() {
        assert_eq!(lines("sudo -u root /bin/rm -rf /x"), ["rm -rf /x"]);
        assert_eq!(
            lines("FOO=1 env -i BAR=2 nohup nice -n 5 command rm x"),
            ["rm x"]
        );
        assert_eq!(lines("timeout -s KILL 5 rm x"), ["rm x"]);
        assert_eq!(lines("command -v rm"), ["command -v rm"]);
        assert_eq!(lines("env -S 'rm -rf /x'"), ["rm -rf /x"]);
        assert_eq!(
            lines("ls | xargs -0 -n 1 rm -f"),
            ["ls", "xargs -0 -n 1 rm -f", "rm -f"]
        );
        assert_eq!(lines("if true; then rm x; fi"), ["true", "rm x", "fi"]);
    }

    #[test]
    fn nested_commands_are_unwrapped() {
        let v = views(r#"bash -c "sh -c 'eval \"rm -rf /x\"'""#);
        assert!(v.lines.iter().any(|l| l == "rm -rf /x"), "{:?}", v.lines);
        assert!(v.notes.is_empty(), "{:?}", v.notes);
        let v = views("python3 -c 'import os; os.system(\"rm -rf /x\")'");
        assert!(v.lines.iter().any(|l| l == "rm -rf /x"), "{:?}", v.lines);
        let v = views("bash <<< 'rm -rf /x'");
        assert!(v.lines.iter().any(|l| l == "rm -rf /x"), "{:?}", v.lines);
        assert!(v.notes.contains(&"heredoc_exec"));
        let v = views("echo 'rm -rf /x' | sh");
        assert!(v.lines.iter().any(|l| l == "rm -rf /x"), "{:?}", v.lines);
        let v = views("find . -name '*.o' -exec rm -f {} +");
        assert!(v.lines.iter().any(|l| l == "rm -f {}"), "{:?}", v.lines);
    }

    #[test]
    fn data_arguments_stay_data() {
        let v = views(r#"echo "rm -rf /" && grep -r "curl x | sh" ."#);
        assert!(
            !v.lines.iter().any(|l| l.starts_with("rm")),
            "{:?}",
            v.lines
        );
        assert!(!v.flats[0].contains("| sh"), "{}", v.flats[0]);
    }

    #[test]
    fn hostile_nesting_is_bounded() {
        // Within the depth limit nested layers are followed to the end.
        let mut cmd = "rm -rf /x".to_string();
        for _ in 0..6 {
            cmd = format!("sh -c {}", shell_quote(&cmd));
        }
        assert!(views(&cmd).lines.iter().any(|l| l == "rm -rf /x"));
        // Beyond it, the command is reported as uninspectable instead of passing silently.
        let mut nested = "rm -rf /x".to_string();
        for _ in 0..(MAX_DEPTH + 4) {
            nested = format!("echo $({nested})");
        }
        let v = views(&nested);
        assert!(v.notes.contains(&"uninspectable_nesting"), "{:?}", v.notes);
        let evals = views(&format!("{}rm -rf /x", "eval ".repeat(500)));
        assert!(evals.lines.iter().any(|l| l == "rm -rf /x"));
        let many: String = (0..5_000).map(|i| format!("$(ls {i}) ")).collect();
        let v = views(&many);
        assert!(v.raws.len() <= MAX_SOURCES);
        assert!(v.notes.contains(&"uninspectable_nesting"));
        assert!(expand_braces(&"{a,b}".repeat(200), 64).len() <= 64);
        assert_eq!(expand_braces("/{etc,usr}/x", 64), ["/etc/x", "/usr/x"]);
        assert_eq!(expand_braces("${HOME}", 64), ["${HOME}"]);
        let v = views(&format!("{}rm -rf /x", "xargs ".repeat(500)));
        assert!(v.cmds.len() <= MAX_CORES + 1, "{}", v.cmds.len());
    }

    fn shell_quote(s: &str) -> String {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}
