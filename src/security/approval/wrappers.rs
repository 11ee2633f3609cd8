//! Wrapper stripping: reduces a simple command to the command that actually runs.
//!
//! `sudo -u root nice -n 5 env -i FOO=1 timeout 10 /bin/rm -rf x` runs `rm -rf x`. Reserved words
//! (`if`, `then`, `{`, `!`), assignments and wrappers are peeled off; `env -S` and `xargs` run a
//! command line of their own, `eval` runs its joined arguments, `find -exec` runs its own
//! command. Privilege flags given to `sudo` on the way are noted as findings.

use super::normalize::{MAX_DEPTH, Views, basename, is_assignment};

/// Upper bound on core commands unwrapped from one simple command (`xargs xargs … rm`).
pub(super) const MAX_CORES: usize = 64;

/// Number of leading option words of a wrapper, given the options that take a separate argument.
pub(super) fn skip_options(args: &[String], short_with_arg: &str, long_with_arg: &[&str]) -> usize {
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
pub(super) fn expand(
    words: &[String],
    out: &mut Vec<Vec<String>>,
    v: &mut Views,
    inner: &mut Vec<String>,
    depth: usize,
) {
    if depth > MAX_DEPTH || out.len() >= MAX_CORES {
        v.note("uninspectable_nesting");
        return;
    }
    let mut eval_text = None;
    let tail = strip_wrappers(words, out, v, &mut eval_text);
    if let Some(text) = eval_text {
        inner.push(text);
    }
    match tail {
        Tail::Core(core) => {
            if core[0] == "find" {
                for cmd in find_exec_commands(&core) {
                    expand(&cmd, out, v, inner, depth + 1);
                }
            }
            out.push(core);
        }
        Tail::Again(words) => expand(&words, out, v, inner, depth + 1),
        Tail::Nothing => {}
    }
}

/// What is left of a simple command once its wrappers are stripped.
enum Tail {
    /// The core command, command word already cut to its basename.
    Core(Vec<String>),
    /// A wrapper that runs another command line (`env -S`, `xargs`): expand that.
    Again(Vec<String>),
    Nothing,
}

fn strip_wrappers(
    words: &[String],
    out: &mut Vec<Vec<String>>,
    v: &mut Views,
    eval_text: &mut Option<String>,
) -> Tail {
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
            // `eval` re-parses its joined arguments: strip it here (so `eval eval … rm` is one
            // level) and analyse the joined text as a command of its own. Only the innermost
            // `eval` of a chain matters: its text contains the others'.
            "eval" => {
                *eval_text = Some(rest.join(" "));
                0
            }
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
                Some(split) => return Tail::Again(split),
                None => env_prefix_len(rest),
            },
            "xargs" => {
                out.push(with_basename(w));
                let n = skip_options(rest, "IadELnPs", XARGS_LONG_WITH_ARG);
                return Tail::Again(rest[n..].to_vec());
            }
            _ => break,
        };
        w = &rest[skip..];
    }
    if w.is_empty() {
        Tail::Nothing
    } else {
        Tail::Core(with_basename(w))
    }
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
