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

use std::collections::{HashSet, VecDeque};
use std::sync::LazyLock;

use regex::Regex;

use super::shell::{self, Tok, Word};

/// How deep nested `sh -c "eval '…'"` layers are followed.
const MAX_DEPTH: usize = 8;
/// Upper bound on analysed command texts, so hostile input cannot make detection explode.
const MAX_SOURCES: usize = 512;

/// Everything the detectors look at for one command line.
#[derive(Debug, Default)]
pub(super) struct Views {
    /// Core simple commands (see the module header), outermost first.
    pub cmds: Vec<Vec<String>>,
    /// `cmds` joined by single spaces: what command-scoped regexes read (anchored at `^`).
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
    fn note(&mut self, key: &'static str) {
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
        if seen.len() >= MAX_SOURCES || !seen.insert(src.clone()) {
            continue;
        }
        let mut inner = Vec::new();
        analyse_source(&src, &mut v, &mut inner);
        if depth < MAX_DEPTH {
            queue.extend(inner.into_iter().map(|t| (t, depth + 1)));
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
    for (k, s) in simples.iter().enumerate() {
        for (op, target, _) in &s.redirs {
            v.redirects.push((op.clone(), target.clone()));
        }
        let words: Vec<String> = s.words.iter().map(|w| w.text.clone()).collect();
        let mut cores = Vec::new();
        expand(&words, &mut cores, v, 0);
        let feeds_shell = s.pipe_out && simples.get(k + 1).is_some_and(reads_script_from_stdin);
        for core in cores {
            extract_inner(&core, s, feeds_shell, v, inner);
            v.lines.push(core.join(" "));
            v.cmds.push(core);
        }
    }
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

fn is_assignment(word: &str) -> bool {
    static ASSIGN: LazyLock<Option<Regex>> =
        LazyLock::new(|| Regex::new(r"^[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=").ok());
    ASSIGN.as_ref().is_some_and(|re| re.is_match(word))
}

/// Number of leading option words of a wrapper, given the options that take a separate argument.
fn skip_options(args: &[String], short_with_arg: &str, long_with_arg: &[&str]) -> usize {
    let mut i = 0;
    while let Some(w) = args.get(i) {
        if w == "--" {
            return i + 1;
        }
        if let Some(long) = w.strip_prefix("--") {
            i += if !long.contains('=') && long_with_arg.contains(&long) {
                2
            } else {
                1
            };
            continue;
        }
        if w.len() > 1 && w.starts_with('-') {
            let cluster = &w[1..];
            let takes = cluster
                .char_indices()
                .find(|(_, c)| short_with_arg.contains(*c))
                .is_some_and(|(pos, c)| pos + c.len_utf8() == cluster.len());
            i += if takes { 2 } else { 1 };
            continue;
        }
        break;
    }
    i.min(args.len())
}

/// Strips wrappers from `words` and pushes the resulting core command(s) into `out`.
fn expand(words: &[String], out: &mut Vec<Vec<String>>, v: &mut Views, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    let mut w = words;
    while let Some(first) = w.first() {
        if is_assignment(first) {
            w = &w[1..];
            continue;
        }
        let rest = &w[1..];
        let skip = match basename(first) {
            "!" | "{" | "}" | "if" | "then" | "else" | "elif" | "do" | "while" | "until"
            | "nohup" | "builtin" | "busybox" | "unbuffer" => 0,
            "time" => skip_options(rest, "", &[]),
            "exec" => skip_options(rest, "a", &[]),
            // `command -v rm` only looks a name up.
            "command" if rest.first().is_some_and(|a| a == "-v" || a == "-V") => break,
            "command" => skip_options(rest, "", &[]),
            "nice" => skip_options(rest, "n", &["adjustment"]),
            "ionice" => skip_options(rest, "cnpPu", &["class", "classdata"]),
            "stdbuf" => skip_options(rest, "ioe", &["input", "output", "error"]),
            "setsid" | "caffeinate" => skip_options(rest, "", &[]),
            "doas" => skip_options(rest, "uC", &[]),
            "sudo" => {
                let n = skip_options(rest, "ugCDprtTU", SUDO_LONG_WITH_ARG);
                if sudo_escalates(&rest[..n]) {
                    v.note("sudo_privilege_flag");
                }
                n
            }
            "timeout" => {
                let n = skip_options(rest, "sk", &["signal", "kill-after"]);
                (n + 1).min(rest.len())
            }
            "env" => match env_split(rest) {
                Some(split) => {
                    expand(&split, out, v, depth + 1);
                    return;
                }
                None => env_prefix_len(rest),
            },
            "xargs" => {
                out.push(with_basename(w));
                let n = skip_options(rest, "IadELnPs", XARGS_LONG_WITH_ARG);
                expand(&rest[n..], out, v, depth + 1);
                return;
            }
            _ => break,
        };
        w = &rest[skip..];
    }
    if w.is_empty() {
        return;
    }
    let core = with_basename(w);
    if core[0] == "find" {
        for cmd in find_exec_commands(&core) {
            expand(&cmd, out, v, depth + 1);
        }
    }
    out.push(core);
}

const SUDO_LONG_WITH_ARG: &[&str] = &[
    "user",
    "group",
    "close-from",
    "chdir",
    "host",
    "prompt",
    "role",
    "type",
    "command-timeout",
    "other-user",
];
const XARGS_LONG_WITH_ARG: &[&str] = &[
    "arg-file",
    "delimiter",
    "eof",
    "max-lines",
    "max-args",
    "max-procs",
    "max-chars",
    "replace",
    "process-slot-var",
];

fn with_basename(w: &[String]) -> Vec<String> {
    let mut core = w.to_vec();
    if let Some(first) = core.first_mut() {
        *first = basename(first).to_string();
    }
    core
}

/// `sudo -S` (password on stdin), `-A` (askpass), `-s` / `-i` (a shell), alone or in a cluster.
fn sudo_escalates(opts: &[String]) -> bool {
    opts.iter().any(|o| {
        if let Some(long) = o.strip_prefix("--") {
            matches!(long, "stdin" | "askpass" | "shell" | "login")
        } else {
            o.len() > 1 && o.starts_with('-') && o[1..].chars().any(|c| "SAsi".contains(c))
        }
    })
}

/// Leading words of `env`'s arguments that are options or assignments.
fn env_prefix_len(args: &[String]) -> usize {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if a == "--" {
            return i + 1;
        }
        if is_assignment(a) {
            i += 1;
        } else if matches!(a.as_str(), "-u" | "-C" | "--unset" | "--chdir") {
            i += 2;
        } else if a.starts_with('-') && a.len() > 1 {
            i += 1;
        } else {
            break;
        }
    }
    i.min(args.len())
}

/// `env -S "rm -rf /"` splits its argument into the command to run.
fn env_split(args: &[String]) -> Option<Vec<String>> {
    let n = env_prefix_len(args);
    let opts = &args[..n];
    for (i, o) in opts.iter().enumerate() {
        let value = if o == "-S" || o == "--split-string" {
            args.get(i + 1).cloned()
        } else if let Some(v) = o.strip_prefix("--split-string=") {
            Some(v.to_string())
        } else if o.starts_with("-S") && o.len() > 2 && !o.starts_with("--") {
            Some(o[2..].to_string())
        } else {
            None
        };
        if let Some(v) = value {
            let start = if o == "-S" || o == "--split-string" {
                i + 2
            } else {
                i + 1
            };
            let mut split: Vec<String> = v.split_whitespace().map(str::to_string).collect();
            split.extend(args.iter().skip(start).cloned());
            return Some(split);
        }
    }
    None
}

/// The commands `find` runs through `-exec` / `-execdir` / `-ok` / `-okdir`.
fn find_exec_commands(find: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut i = 1;
    while i < find.len() {
        if matches!(find[i].as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
            let end = find[i + 1..]
                .iter()
                .position(|a| a == ";" || a == "+")
                .map_or(find.len(), |p| i + 1 + p);
            out.push(find[i + 1..end].to_vec());
            i = end;
        }
        i += 1;
    }
    out
}

/// How an interpreter was told to run inline code.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Payload {
    /// `sh -c '…'`, `su -c '…'`: shell text.
    Shell(String),
    /// `python -c`, `perl -e`, `node -e`, …: code in another language.
    Code(String),
    /// The flag is there but its argument is missing.
    Missing,
}

const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "yash", "posh",
];

pub(super) fn is_shell(name: &str) -> bool {
    SHELLS.contains(&name)
}

/// Interpreters that read a program from stdin when given no script (`curl … | python3`).
pub(super) fn is_interpreter(name: &str) -> bool {
    is_shell(name)
        || name.starts_with("python")
        || name.starts_with("pypy")
        || matches!(
            name,
            "perl" | "ruby" | "node" | "nodejs" | "php" | "lua" | "bun" | "deno"
        )
}

/// Detects `-c` / `-e` style inline execution in a core command and returns its payload.
pub(super) fn exec_payload(cmd: &[String]) -> Option<Payload> {
    let name = cmd.first()?.as_str();
    let args = &cmd[1..];
    if is_shell(name) {
        return shell_c(args, name == "fish");
    }
    if name == "su" {
        // `su -c CMD user` and `su user -c CMD` are both accepted.
        return args.iter().enumerate().find_map(|(i, a)| {
            if a == "-c" || a == "--command" {
                Some(
                    args.get(i + 1)
                        .map_or(Payload::Missing, |v| Payload::Shell(v.clone())),
                )
            } else {
                a.strip_prefix("--command=")
                    .map(|v| Payload::Shell(v.to_string()))
            }
        });
    }
    let lower = name.to_ascii_lowercase();
    if lower.starts_with("python") || lower.starts_with("pypy") {
        return cluster_flag(args, "c", "WXQ", "", 'm');
    }
    match lower.as_str() {
        "perl" | "ruby" => cluster_flag(args, "eE", "", "iIMmxCdl0", '\0'),
        "node" | "nodejs" | "bun" => flag_value(args, &["-e", "--eval", "-p", "--print"]),
        "deno" => (args.first().map(String::as_str) == Some("eval")).then(|| {
            args.get(1)
                .map_or(Payload::Missing, |c| Payload::Code(c.clone()))
        }),
        "php" => flag_value(args, &["-r"]),
        "lua" | "luajit" | "rscript" | "osascript" => flag_value(args, &["-e"]),
        "pwsh" | "powershell" | "powershell.exe" | "pwsh.exe" => {
            flag_value(args, &["-c", "-command", "-Command"])
        }
        _ => None,
    }
}

/// `bash -c CMD`, `bash -xc CMD`, `bash -c -x CMD` (the first operand is the command string).
fn shell_c(args: &[String], fish: bool) -> Option<Payload> {
    let mut c_flag = false;
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if a == "--" || a == "-" {
            i += 1;
            break;
        }
        if fish {
            if let Some(v) = a.strip_prefix("--command=") {
                return Some(Payload::Shell(v.to_string()));
            }
            if a == "--command" {
                return Some(
                    args.get(i + 1)
                        .map_or(Payload::Missing, |v| Payload::Shell(v.clone())),
                );
            }
        }
        if a.starts_with("--") {
            i += if matches!(a.as_str(), "--rcfile" | "--init-file") {
                2
            } else {
                1
            };
            continue;
        }
        if (a.starts_with('-') || a.starts_with('+')) && a.len() > 1 {
            c_flag |= a[1..].contains('c');
            i += if a.ends_with('o') || a.ends_with('O') {
                2
            } else {
                1
            };
            continue;
        }
        break;
    }
    if !c_flag {
        return None;
    }
    Some(
        args.get(i)
            .map_or(Payload::Missing, |v| Payload::Shell(v.clone())),
    )
}

/// A short flag inside option clusters (`-c`, `-Bc`, `-pe`) whose value is the rest of the
/// cluster or the next word. Letters in `takes_value` consume the rest of the cluster or the next
/// word; letters in `attached_only` consume only the rest of the cluster (Perl's `-i.bak`);
/// `stop` means another program runs instead (`python -m`).
fn cluster_flag(
    args: &[String],
    flags: &str,
    takes_value: &str,
    attached_only: &str,
    stop: char,
) -> Option<Payload> {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if a == "--" || a == "-" || !a.starts_with('-') {
            return None;
        }
        if a.starts_with("--") {
            i += 1;
            continue;
        }
        let chars: Vec<char> = a[1..].chars().collect();
        let mut skip_next = false;
        for (k, &c) in chars.iter().enumerate() {
            if c == stop {
                return None;
            }
            let rest: String = chars[k + 1..].iter().collect();
            if flags.contains(c) {
                if !rest.is_empty() {
                    return Some(Payload::Code(rest));
                }
                return Some(
                    args.get(i + 1)
                        .map_or(Payload::Missing, |v| Payload::Code(v.clone())),
                );
            }
            if attached_only.contains(c) {
                break;
            }
            if takes_value.contains(c) {
                skip_next = rest.is_empty();
                break;
            }
        }
        i += if skip_next { 2 } else { 1 };
    }
    None
}

/// A flag given as a separate word (`-e CODE`) or `--flag=CODE`, before the first operand.
fn flag_value(args: &[String], flags: &[&str]) -> Option<Payload> {
    for (i, a) in args.iter().enumerate() {
        if flags.contains(&a.as_str()) {
            return Some(
                args.get(i + 1)
                    .map_or(Payload::Missing, |v| Payload::Code(v.clone())),
            );
        }
        if let Some((name, value)) = a.split_once('=') {
            if flags.contains(&name) && name.starts_with("--") {
                return Some(Payload::Code(value.to_string()));
            }
        }
        if !a.starts_with('-') {
            return None;
        }
    }
    None
}

/// True when the simple command is an interpreter reading its program from stdin
/// (`| sh`, `| bash -s`, `| sudo python3 -`).
fn reads_script_from_stdin(s: &Simple) -> bool {
    let words: Vec<String> = s.words.iter().map(|w| w.text.clone()).collect();
    let mut cores = Vec::new();
    expand(&words, &mut cores, &mut Views::default(), 0);
    cores.last().is_some_and(|core| {
        is_interpreter(&core[0])
            && exec_payload(core).is_none()
            && core[1..].iter().all(|a| a.starts_with('-'))
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
        Some(Payload::Shell(text)) => {
            v.note("script_exec_flag");
            inner.push(text);
        }
        Some(Payload::Code(code)) => {
            v.note("script_exec_flag");
            inner.extend(shell_strings_in_code(&code));
        }
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
                    if is_shell(name) {
                        inner.push(text);
                    } else {
                        inner.extend(shell_strings_in_code(&text));
                    }
                }
            }
        }
        None => {}
    }
    match name {
        "eval" => inner.push(core[1..].join(" ")),
        "watch" => {
            let n = skip_options(&core[1..], "nqd", &["interval", "differences"]);
            inner.push(core[1 + n..].join(" "));
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

/// Shell command strings inside interpreter code: `os.system("…")`, `subprocess.run([...])`,
/// `` `…` `` (Perl/Ruby), `execSync('…')`, `shell_exec('…')`.
pub(super) fn shell_strings_in_code(code: &str) -> Vec<String> {
    static CALL: LazyLock<Option<Regex>> = LazyLock::new(|| {
        Regex::new(
            r#"\b(?:system|popen\d?|getoutput|getstatusoutput|check_output|check_call|call|run|Popen|exec|execSync|spawnSync|shell_exec|passthru|proc_open|qx)\s*[\(\{]\s*[rbuf]?(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)')"#,
        )
        .ok()
    });
    static LIST: LazyLock<Option<Regex>> = LazyLock::new(|| {
        Regex::new(
            r"\b(?:check_output|check_call|call|run|Popen|spawn\w*|exec\w*)\s*\(\s*\[([^\]]*)\]",
        )
        .ok()
    });
    static STR: LazyLock<Option<Regex>> =
        LazyLock::new(|| Regex::new(r#""((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'"#).ok());
    static BACKTICK: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"`([^`]+)`").ok());
    let unescape = |s: &str| {
        s.replace("\\\"", "\"")
            .replace("\\'", "'")
            .replace("\\\\", "\\")
    };
    let mut out = Vec::new();
    if let Some(re) = CALL.as_ref() {
        for c in re.captures_iter(code) {
            if let Some(m) = c.get(1).or_else(|| c.get(2)) {
                out.push(unescape(m.as_str()));
            }
        }
    }
    if let (Some(list), Some(string)) = (LIST.as_ref(), STR.as_ref()) {
        for c in list.captures_iter(code) {
            let Some(items) = c.get(1) else { continue };
            let parts: Vec<String> = string
                .captures_iter(items.as_str())
                .filter_map(|s| s.get(1).or_else(|| s.get(2)).map(|m| unescape(m.as_str())))
                .collect();
            if !parts.is_empty() {
                out.push(parts.join(" "));
            }
        }
    }
    if let Some(re) = BACKTICK.as_ref() {
        out.extend(
            re.captures_iter(code)
                .filter_map(|c| c.get(1))
                .map(|m| m.as_str().to_string()),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(v.notes.contains(&"script_exec_flag"));
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
    fn payload_forms() {
        let s = |a: &[&str]| a.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            exec_payload(&s(&["bash", "-xc", "ls"])),
            Some(Payload::Shell("ls".into()))
        );
        assert_eq!(exec_payload(&s(&["bash", "script.sh"])), None);
        assert_eq!(
            exec_payload(&s(&["python3", "-Bc", "x"])),
            Some(Payload::Code("x".into()))
        );
        assert_eq!(exec_payload(&s(&["python3", "-m", "http.server"])), None);
        assert_eq!(
            exec_payload(&s(&["perl", "-pi", "-e", "s/a/b/", "f"])),
            Some(Payload::Code("s/a/b/".into()))
        );
        assert_eq!(exec_payload(&s(&["perl", "-pie", "x"])), None);
        assert_eq!(
            exec_payload(&s(&["node", "--eval=1"])),
            Some(Payload::Code("1".into()))
        );
        assert_eq!(exec_payload(&s(&["node", "app.js", "-e"])), None);
    }

    #[test]
    fn hostile_nesting_is_bounded() {
        let mut cmd = "rm -rf /x".to_string();
        for _ in 0..40 {
            cmd = format!("sh -c {}", shell_quote(&cmd));
        }
        let _ = views(&cmd);
        let many = "$(ls) ".repeat(5_000);
        assert!(views(&many).raws.len() <= MAX_SOURCES);
    }

    fn shell_quote(s: &str) -> String {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}
