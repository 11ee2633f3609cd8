//! Fail closed: the shapes whose effect depends on text produced at run time.
//!
//! The analyser reads commands as text. Anything that makes the shell run text it builds while
//! running cannot be verified from that text, so it is reported as *cannot verify* with the
//! reason (keys in `catalog.rs`): a command word that is a substitution or a variable
//! (`$(printf rm) -rf x`, `` `echo rm` ``, `$cmd`), positional parameters run as a command
//! (`set -- rm -rf x; "$@"`), `eval` of generated text, generated text piped or fed into a shell
//! or interpreter (`printf '\x72m' | sh`, `rev | sh`, `bash <<< "$(…)"`, `source <(…)`), a
//! script written or downloaded earlier in the same command and then run, functions that run
//! their arguments, and `IFS` changes.
//!
//! Where the text *can* be read it is analysed instead of refused: a function called with
//! literal arguments is inlined (`f(){ rm -rf "$1"; }; f ~` reads as `rm -rf ~`), an alias
//! defined in the command is expanded, and a literal `echo … | sh` is analysed as a command.

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use regex::Regex;

use super::normalize::Views;
use super::payload::{is_interpreter, is_shell};
use super::shell::Word;

static FUNC_DEF: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?:\bfunction\s+([A-Za-z_][\w.:-]*)\s*(?:\(\s*\))?|(?:^|[\s;&|({])([A-Za-z_:][\w.:-]*)\s*\(\s*\))\s*\{([^}]*)\}").ok()
});
/// A positional parameter in command position inside a function body.
static POSITIONAL_CMD: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r#"(?:^|[;&|{(\n]|\b(?:then|do|else|exec|command|sudo|eval|builtin|nohup|env|xargs|time)\s)\s*"?\$(?:@|\*|\{[@*1-9]\}|[1-9])"#).ok()
});
static POSITIONAL: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r#""?\$(?:\{([@*1-9])\}|([@*1-9]))"?"#).ok());

/// Functions defined in one command text: name → body.
pub(super) type Functions = HashMap<String, String>;

/// The functions `src` defines; a function that runs its arguments is noted.
pub(super) fn functions(src: &str, v: &mut Views) -> Functions {
    let mut out = Functions::new();
    let Some(def) = FUNC_DEF.as_ref() else {
        return out;
    };
    if !src.contains('{') {
        return out;
    }
    for c in def.captures_iter(src) {
        let (Some(name), Some(body)) = (c.get(1).or_else(|| c.get(2)), c.get(3)) else {
            continue;
        };
        if POSITIONAL_CMD
            .as_ref()
            .is_some_and(|r| r.is_match(body.as_str().trim_start()))
        {
            v.note("function_runs_args");
        }
        if out.len() < 64 {
            out.insert(name.as_str().to_string(), body.as_str().to_string());
        }
    }
    out
}

fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-~=:,+@%".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The body of function `body` with the call's arguments in place of `$1`…`$9`, `$@`, `$*`.
pub(super) fn inline_call(body: &str, args: &[String]) -> String {
    let Some(re) = POSITIONAL.as_ref() else {
        return body.to_string();
    };
    re.replace_all(body, |c: &regex::Captures<'_>| {
        let p = c.get(1).or_else(|| c.get(2)).map_or("", |m| m.as_str());
        match p {
            "@" | "*" => args
                .iter()
                .map(|a| shell_quote(a))
                .collect::<Vec<_>>()
                .join(" "),
            n => n
                .parse::<usize>()
                .ok()
                .and_then(|i| args.get(i - 1))
                .map(|a| shell_quote(a))
                .unwrap_or_default(),
        }
    })
    .into_owned()
}

/// `IFS=…` that outlives one command (`IFS=x; …`, `export IFS=…`); `IFS= read -r` is fine.
pub(super) fn changes_ifs(words: &[Word]) -> bool {
    let declared = words.first().is_some_and(|w| {
        matches!(
            w.text.as_str(),
            "export" | "declare" | "local" | "readonly" | "typeset"
        )
    });
    let rest = if declared { &words[1..] } else { words };
    let assigns_ifs = rest
        .iter()
        .take_while(|w| super::normalize::is_assignment(&w.text))
        .any(|w| w.text.starts_with("IFS=") || w.text.starts_with("IFS+="));
    let standalone = rest
        .iter()
        .all(|w| super::normalize::is_assignment(&w.text));
    assigns_ifs && (declared || standalone)
}

/// Notes a core command whose command word is generated at run time.
pub(super) fn check_command_word(core: &[String], raw_src: &str, v: &mut Views) {
    let word = core[0].as_str();
    if word.is_empty() {
        // `"$@"`, `$*`, `${@}` vanish in the lexer: what runs is the positional parameters.
        if raw_src.contains("$@") || raw_src.contains("$*") || raw_src.contains("${@") {
            v.note("positional_exec");
        } else {
            v.note("dynamic_command_word");
        }
    } else if word.contains('$') || word.starts_with("<(") {
        v.note("dynamic_command_word");
    }
}

/// True if `text` (an `echo`/`printf` argument list fed to a shell) is a literal: no expansion
/// and no escapes that `echo -e`/`printf` would turn into other characters.
pub(super) fn literal_echo(core: &[String]) -> bool {
    let name = core[0].as_str();
    let args = &core[1..];
    let escapes = args.iter().any(|a| a.contains('\\'));
    let expands = args.iter().any(|a| a.contains('$'));
    let e_flag = name == "echo" && args.iter().any(|a| a.starts_with('-') && a.contains('e'));
    let printf_format = name == "printf" && args.first().is_some_and(|f| f.contains('%'));
    !(escapes || expands || e_flag || printf_format)
}

/// Files written by a simple command: redirection targets, `tee` operands, `curl -o`,
/// `wget -O`, and the file `curl -O` / `wget URL` save.
pub(super) fn written_files(
    core: &[String],
    redirs: &[(String, String, Option<String>)],
    out: &mut HashSet<String>,
) {
    let clean = |p: &str| p.trim_start_matches("./").to_string();
    for (op, target, _) in redirs {
        if op.contains('>') && !op.ends_with('&') && !target.is_empty() {
            out.insert(clean(target));
        }
    }
    let args = &core[1..];
    match core[0].as_str() {
        "tee" => out.extend(
            args.iter()
                .filter(|a| !a.starts_with('-'))
                .map(|a| clean(a)),
        ),
        "curl" | "wget" => {
            let mut named = false;
            for (i, a) in args.iter().enumerate() {
                // The output flag, alone or last in a cluster (`-so`, `-qO`): its value follows.
                let flag = if core[0] == "wget" { 'O' } else { 'o' };
                let short = a.len() > 1 && a.starts_with('-') && !a.starts_with("--");
                let value = if (short && a.ends_with(flag))
                    || matches!(a.as_str(), "--output" | "--output-document")
                {
                    args.get(i + 1).map(String::as_str)
                } else {
                    a.strip_prefix("--output=")
                        .or_else(|| a.strip_prefix("--output-document="))
                };
                if let Some(v) = value.filter(|v| *v != "-") {
                    out.insert(clean(v));
                    named = true;
                }
            }
            let saves_remote_name = core[0] == "wget"
                || args.iter().any(|a| {
                    a == "--remote-name"
                        || a == "--remote-name-all"
                        || (a.starts_with('-') && !a.starts_with("--") && a.contains('O'))
                });
            if !named && saves_remote_name {
                for url in args.iter().filter(|a| a.contains("://")) {
                    let path = url.split(['?', '#']).next().unwrap_or(url);
                    if let Some(name) = path.rsplit('/').next().filter(|n| !n.is_empty()) {
                        out.insert(name.to_string());
                    }
                }
            }
        }
        _ => {}
    }
}

/// Notes a core command that runs a file in `written`, or a script read from a generated
/// source (`bash <(…)`, `source /dev/stdin`).
pub(super) fn check_runs(core: &[String], written: &HashSet<String>, v: &mut Views) {
    let clean = |p: &str| p.trim_start_matches("./").to_string();
    let name = core[0].as_str();
    let script = if is_interpreter(name) || matches!(name, "source" | ".") {
        core[1..]
            .iter()
            .find(|a| !a.starts_with('-'))
            .map(String::as_str)
    } else {
        None
    };
    if let Some(s) = script {
        let generated = s.starts_with("<(")
            || s.starts_with("$(")
            || s.starts_with("/dev/stdin")
            || s.starts_with("/dev/fd/")
            || s.starts_with("/proc/self/fd/");
        if generated && (is_shell(name) || matches!(name, "source" | ".") || is_interpreter(name)) {
            v.note("generated_to_shell");
        }
        if written.contains(&clean(s)) {
            v.note("run_written_file");
        }
    }
    // The command word was already cut to its basename (`./i.sh` → `i.sh`).
    if written
        .iter()
        .any(|w| w.rsplit('/').next() == Some(core[0].as_str()))
    {
        v.note("run_written_file");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inlining_substitutes_positionals() {
        assert_eq!(
            inline_call(r#" rm -rf "$1"; "#, &["~".into()]),
            " rm -rf ~; "
        );
        assert_eq!(
            inline_call(r#" "$@"; "#, &["rm".into(), "-rf".into(), "a b".into()]),
            " rm -rf 'a b'; "
        );
    }
}
