//! Interpreter one-liners (`python -c`, `perl -e`, `ruby -e`, `node -e`, `php -r`, code fed on
//! stdin): what they run and what they delete, read from the code where it can be read.
//!
//! The code is not executed or parsed fully. Three things are extracted:
//! - shell command strings passed to `os.system("…")`, `subprocess.run([...])`, backticks, …,
//!   analysed as commands of their own (`payload::shell_strings_in_code`);
//! - file-system calls with a literal path, rewritten as the shell command they equal:
//!   `shutil.rmtree(os.path.expanduser("~"))` reads as `rm -rf ~`, `os.remove('/etc/x')` as
//!   `rm /etc/x`, `open('/dev/sda','wb')` as `: > /dev/sda`, `os.kill(-1, 9)` as `kill -9 -1`,
//!   so the floor and the dangerous patterns decide on them like on any command;
//! - what cannot be read: `exec`/`eval`/`compile`/`__import__`/`getattr` (code built at run
//!   time), a shell call or a file-system call whose argument is not a literal. Such code is
//!   *cannot verify* (`script_exec_flag`). Code with none of these (printing, text processing,
//!   `perl -pi -e 's/a/b/'`) is readable and harmless as far as this module can tell.

use std::sync::LazyLock;

use regex::Regex;

use super::normalize::Views;
use super::payload::shell_strings_in_code;

fn re(p: &str) -> Option<Regex> {
    Regex::new(p).ok()
}

/// Code built or looked up at run time.
static OPAQUE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(
        r"\b(?:exec|eval|compile|__import__|importlib|getattr|instance_eval|class_eval|module_eval|Function|vm\.run\w*|execfile|runpy|create_function|assert)\s*\(|\beval\s+[$'\x22{]|\bdo\s+[$'\x22]|\brequire\s+\$|\.send\s*\(|\bpublic_send\b|\bsyscall\b",
    )
});
/// Calls that run a shell command or a program.
static SHELL_SINK: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(
        r"\b(?:system|popen\d?|getoutput|getstatusoutput|check_output|check_call|Popen|execSync|spawnSync|execFileSync|spawn|execFile|exec[lv]p?e?|spawn[lv]p?e?|shell_exec|passthru|proc_open|qx)\s*[\(\{]|\bsubprocess\.(?:run|call)\s*\(|\bos\.system\b|`|\bqx\b|\bIO\.popen\b|\bOpen3\b|%x[\(\{\[]",
    )
});
/// A shell call whose argument is a literal joined, formatted or indexed into something else.
static BUILT_ARG: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(
        r#"(?:system|popen\d?|check_output|check_call|call|run|Popen|exec\w*|spawn\w*|getoutput)\s*\(\s*[rbuf]?(?:"[^"]*"|'[^']*')\s*(?:[+%\[]|\.\s*(?:join|format|replace|decode|encode))"#,
    )
});
/// A string literal (single or double quoted).
static LITERAL: LazyLock<Option<Regex>> =
    LazyLock::new(|| re(r#"^\s*[rbu]?(?:"((?:[^"\\{$]|\\.)*)"|'((?:[^'\\]|\\.)*)')\s*$"#));
/// Spellings of the home directory in code.
static HOME_EXPR: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(
        r#"^\s*(?:os\.path\.expanduser\(\s*['"]~/?['"]\s*\)|os\.environ\s*\[\s*['"]HOME['"]\s*\]|os\.environ\.get\(\s*['"]HOME['"][^)]*\)|os\.getenv\(\s*['"]HOME['"][^)]*\)|(?:pathlib\.)?Path\.home\(\s*\)|(?:str\()?Path\(\s*['"]~['"]\s*\)\.expanduser\(\s*\)\)?|ENV\s*\[\s*['"]HOME['"]\s*\]|Dir\.home|(?:require\(\s*['"]os['"]\s*\)|os)\.homedir\(\s*\)|process\.env\.HOME|\$ENV\s*\{\s*['"]?HOME['"]?\s*\}|getenv\(\s*['"]HOME['"]\s*\))\s*$"#,
    )
});
/// `expanduser("~/x")` and `File.expand_path("~/x")`.
static EXPANDED: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(r#"^\s*(?:os\.path\.expanduser|File\.expand_path)\(\s*['"](~[^'"]*)['"]\s*\)\s*$"#)
});

/// File-system sinks: (regex capturing the argument list, shell command it equals).
static FS_SINKS: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    [
        (
            r"\b(?:rmtree|rm_rf|rm_r|remove_tree|rmSync|rmdirSync|rimraf|rm_rf!|deleteSync)\s*[\(\s]\s*([^;\n]*)",
            "rm -rf",
        ),
        (
            r"\b(?:os\.remove|os\.unlink|unlinkSync|File\.delete|File\.unlink|FileUtils\.rm|unlink|os\.rmdir|rmdir)\s*[\(\s]\s*([^;\n]*)",
            "rm",
        ),
        (
            r"\b(?:os\.rename|os\.replace|shutil\.move|renameSync|File\.rename|FileUtils\.mv|move|rename)\s*\(\s*([^;\n]*)",
            "mv",
        ),
        (
            r#"\b(?:open|fopen|File\.open|openSync|writeFileSync|File\.write|IO\.write|file_put_contents)\s*\(\s*([^;\n]*)"#,
            "write",
        ),
    ]
    .into_iter()
    .filter_map(|(p, cmd)| re(p).map(|r| (r, cmd)))
    .collect()
});
static KILL_ALL: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(
        r"\b(?:os\.kill|process\.kill|Process\.kill|kill)\s*\(?\s*(?:-1\s*,|['\x22]?\w+['\x22]?\s*,\s*-1\b)|\bos\.killpg\s*\(\s*(?:0|-1)\b",
    )
});
static PATH_CALL: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(
        r#"\bPath\(\s*((?:[^()]|\([^()]*\))*)\)\s*\.\s*(unlink|rmdir|write_text|write_bytes|rename|replace)\s*\("#,
    )
});

/// The arguments of a call, split at top-level commas (up to the closing parenthesis).
fn call_args(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    for c in text.chars() {
        match quote {
            Some(q) => {
                cur.push(c);
                if c == q {
                    quote = None;
                }
                continue;
            }
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                cur.push(c);
                continue;
            }
            None => {}
        }
        match c {
            '(' | '[' | '{' => {
                depth += 1;
                cur.push(c);
            }
            ')' | ']' | '}' if depth == 0 => break,
            ')' | ']' | '}' => {
                depth -= 1;
                cur.push(c);
            }
            ',' if depth == 0 => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur);
    }
    out.into_iter().map(|a| a.trim().to_string()).collect()
}

/// The path a code expression names, as a shell word; `None` when it is not a literal.
fn path_of(expr: &str) -> Option<String> {
    let expr = expr.trim();
    if HOME_EXPR.as_ref().is_some_and(|r| r.is_match(expr)) {
        return Some("~".to_string());
    }
    if let Some(c) = EXPANDED.as_ref().and_then(|r| r.captures(expr)) {
        return c.get(1).map(|m| m.as_str().to_string());
    }
    let c = LITERAL.as_ref()?.captures(expr)?;
    c.get(1)
        .or_else(|| c.get(2))
        .map(|m| m.as_str().to_string())
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Analyses `code` run by `interpreter`: queues what it runs into `inner`, notes what cannot
/// be read (see the module header).
pub(super) fn analyse(interpreter: &str, code: &str, v: &mut Views, inner: &mut Vec<String>) {
    let _ = interpreter;
    let mut opaque = OPAQUE.as_ref().is_some_and(|r| r.is_match(code));
    let shell = shell_strings_in_code(code);
    let sinks = SHELL_SINK.as_ref().map_or(0, |r| r.find_iter(code).count());
    // Backticks come in pairs; each literal string extracted accounts for one call site.
    let backticks = code.matches('`').count();
    let call_sites = sinks.saturating_sub(backticks) + backticks / 2;
    if call_sites > shell.len()
        || shell
            .iter()
            .any(|s| s.trim().is_empty() || s.contains('{') || s.contains('$'))
        || BUILT_ARG.as_ref().is_some_and(|r| r.is_match(code))
    {
        opaque = true;
    }
    inner.extend(shell);
    for (sink, cmd) in FS_SINKS.iter() {
        for c in sink.captures_iter(code) {
            let Some(list) = c.get(1) else { continue };
            let args = call_args(list.as_str());
            let paths: Vec<Option<String>> = args.iter().map(|a| path_of(a)).collect();
            match *cmd {
                "write" => {
                    let mode = args.get(1).and_then(|m| path_of(m)).unwrap_or_default();
                    let writes = c.get(0).is_some_and(|m| {
                        let call = m.as_str();
                        call.contains("writeFileSync")
                            || call.contains("File.write")
                            || call.contains("IO.write")
                            || call.contains("file_put_contents")
                    }) || mode.contains(['w', 'a', '+', 'x'])
                        || args.first().is_some_and(|a| a.contains(['>', '+']));
                    if !writes {
                        continue;
                    }
                    match paths.first().cloned().flatten() {
                        Some(p) => {
                            let p = p.trim_start_matches(['>', '+', '<', ' ']).to_string();
                            inner.push(format!(": > {}", quote(&p)));
                        }
                        None => opaque = true,
                    }
                }
                "mv" => match (
                    paths.first().cloned().flatten(),
                    paths.get(1).cloned().flatten(),
                ) {
                    (Some(a), Some(b)) => inner.push(format!("mv {} {}", quote(&a), quote(&b))),
                    _ => opaque = true,
                },
                _ => match paths.first().cloned().flatten() {
                    Some(p) => inner.push(format!("{cmd} {}", quote(&p))),
                    None => opaque = true,
                },
            }
        }
    }
    if let Some(r) = PATH_CALL.as_ref() {
        for c in r.captures_iter(code) {
            let (Some(arg), Some(method)) = (c.get(1), c.get(2)) else {
                continue;
            };
            match (path_of(arg.as_str()), method.as_str()) {
                (Some(p), "unlink" | "rmdir") => inner.push(format!("rm {}", quote(&p))),
                (Some(p), "write_text" | "write_bytes") => inner.push(format!(": > {}", quote(&p))),
                (Some(p), _) => inner.push(format!("mv {} x", quote(&p))),
                (None, _) => opaque = true,
            }
        }
    }
    if KILL_ALL.as_ref().is_some_and(|r| r.is_match(code)) {
        inner.push("kill -9 -1".to_string());
    }
    if opaque {
        v.note("script_exec_flag");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(code: &str) -> (Vec<String>, bool) {
        let mut v = Views::default();
        let mut inner = Vec::new();
        analyse("python3", code, &mut v, &mut inner);
        (inner, v.notes.contains(&"script_exec_flag"))
    }

    #[test]
    fn readable_code_is_not_opaque() {
        for code in [
            "print(1)",
            "import sys, json; print(json.load(sys.stdin)['x'])",
            "import platform; print(platform.python_version())",
            "s/foo/bar/g",
            "print open('x').read()",
        ] {
            let (inner, opaque) = run(code);
            assert!(!opaque, "{code}: {inner:?}");
        }
    }

    #[test]
    fn file_calls_become_commands() {
        assert_eq!(run("import shutil; shutil.rmtree('/')").0, ["rm -rf '/'"]);
        assert_eq!(
            run("import shutil,os; shutil.rmtree(os.path.expanduser('~'))").0,
            ["rm -rf '~'"]
        );
        assert_eq!(
            run("import shutil,os; shutil.rmtree(os.environ['HOME'])").0,
            ["rm -rf '~'"]
        );
        assert_eq!(
            run("open('/dev/sda','wb').write(b'0')").0,
            [": > '/dev/sda'"]
        );
        assert_eq!(run("import os; os.kill(-1, 9)").0, ["kill -9 -1"]);
        assert!(run("import shutil,sys; shutil.rmtree(sys.argv[1])").1);
    }

    #[test]
    fn dynamic_code_is_opaque() {
        for code in [
            "exec(bytes.fromhex('7072696e74').decode())",
            "import os; os.system(''.join(['r','m']))",
            "import os; c='rm'; os.system(c)",
            "__import__('os').system('ls')",
            "getattr(__import__('os'), 'system')('ls')",
        ] {
            assert!(run(code).1, "{code}");
        }
    }
}
