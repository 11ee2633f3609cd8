//! Inline scripts: `sh -c '…'`, `python -c`, `perl -e`, `node -e`, … and the shell commands
//! hidden inside interpreter code (`os.system("…")`, `subprocess.run([...])`, backticks).

use std::sync::LazyLock;

use regex::Regex;

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
        if let Some((name, value)) = a.split_once('=')
            && flags.contains(&name)
            && name.starts_with("--")
        {
            return Some(Payload::Code(value.to_string()));
        }
        if !a.starts_with('-') {
            return None;
        }
    }
    None
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
    fn shell_calls_in_code() {
        assert_eq!(
            shell_strings_in_code("import os; os.system('rm -rf /x')"),
            ["rm -rf /x"]
        );
        assert_eq!(
            shell_strings_in_code("subprocess.run(['rm', '-rf', '/x'], check=True)"),
            ["rm -rf /x"]
        );
        assert_eq!(shell_strings_in_code("print `id`"), ["id"]);
        assert!(shell_strings_in_code("print('hello')").is_empty());
    }
}
