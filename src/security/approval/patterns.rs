//! What makes a command dangerous: the hardline floor and the checks that need code.
//!
//! Detection reads the de-obfuscated views from `normalize.rs`. Most categories are regexes
//! (`specs.rs`); here are the checks where flag order or argument meaning matters — rm targets,
//! `kill -1`, chown owner, dd/tee to block devices, shutdown verbs, fork bombs, DELETE without
//! WHERE — and the entry points `detect` and `hardline`.

use std::collections::HashSet;
use std::sync::LazyLock;

use regex::Regex;

use super::catalog::{CATALOG, Kind, finding};
use super::normalize::{self, Views};
use super::specs::{self, SQL_CONTEXT};
use super::targets::{self, Context, is_block_device};

pub use super::catalog::Finding;

fn re(pattern: &str) -> Option<Regex> {
    Regex::new(pattern).ok()
}

static FUNC_DEF: LazyLock<Option<Regex>> =
    LazyLock::new(|| re(r"(?:function\s+)?([A-Za-z_:.][\w:.-]*)\s*(?:\(\s*\))?\s*\{([^}]*)\}"));
static PERL_FORK: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(
        r"\bfork\s*(?:\(\s*\))?\s*while\s+(?:fork|1)\b|\b1\s+while\s+fork\b|\bfor\s*\(\s*;\s*;\s*\)\s*\{?\s*(?:\w+\.|os\.)?fork\b|\bwhile\s*\(?\s*(?:True|1|true)\s*\)?\s*[:{]?\s*(?:os\.|Process\.|process\.)?fork\b",
    )
});
/// An endless loop (`while true`, `while :`, `until false`, `for ((;;))`) and its body.
static ENDLESS_LOOP: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(
        r"(?s)(?:\b(?:while|until)\s+(?:true|:|\[\s*1\s*\]|\(\(\s*1\s*\)\)|/bin/true|false)\s*;?\s*do\b|\bfor\s*\(\(\s*;\s*;\s*\)\)\s*;?\s*do\b)(.*?)(?:\bdone\b|$)",
    )
});
/// `$0` (the running script) started again: `$0 &`, `bash $0 &`, `exec "$0"`.
static SELF_SPAWN: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(
        r#"(?:^|[;&|({]\s*|\bdo\s+|\b(?:ba|da|z|k)?sh\s+(?:-[a-bd-zA-Z]+\s+)*|\bexec\s+|\bsource\s+|\.\s+)"?\$(?:0|\{0\})"?(?:\s|$|[;&|)])"#,
    )
});
static SQL_DELETE: LazyLock<Option<Regex>> =
    LazyLock::new(|| re(r#"(?i)\bdelete\s+from\s+[^\s;'"]+"#));
static SQL_WHERE: LazyLock<Option<Regex>> = LazyLock::new(|| re(r"(?i)\bwhere\b"));

/// `kill -9 -1`, `kill -s KILL -1`, `kill -- -1`: signal every process the user can reach.
fn kills_all(args: &[String]) -> bool {
    let mut i = 0;
    if let Some(first) = args.first() {
        if matches!(first.as_str(), "-s" | "-n" | "--signal") {
            i = 2;
        } else if first.starts_with('-') && first != "--" {
            i = 1;
        }
    }
    if args.get(i).is_some_and(|a| a == "--") {
        i += 1;
    }
    // `kill -1` alone: some kills take `-1` as the target when no signal is given.
    args.len() == 1 && args[0] == "-1" || args.iter().skip(i).any(|a| a == "-1")
}

fn first_operand(args: &[String]) -> Option<&str> {
    args.iter()
        .map(String::as_str)
        .find(|a| !a.starts_with('-'))
}

fn command_checks(cmd: &[String], ctx: &Context, hit: &mut HashSet<&'static str>) {
    let Some(name) = cmd.first().map(String::as_str) else {
        return;
    };
    let args = &cmd[1..];
    targets::floor_checks(cmd, ctx, hit);
    match name {
        "chown" => {
            let recursive = args.iter().any(|a| {
                a == "--recursive"
                    || (a.starts_with('-') && !a.starts_with("--") && a.contains('R'))
            });
            let to_root = first_operand(args).is_some_and(|o| {
                let owner = o.split([':', '.']).next().unwrap_or(o);
                owner == "root" || owner == "0"
            });
            if recursive && to_root {
                hit.insert("chown_recursive_root");
            }
        }
        "kill" if kills_all(args) => {
            hit.insert("kill_all_processes");
        }
        "killall5" => {
            hit.insert("kill_all_processes");
        }
        "shutdown" if !args.iter().any(|a| a == "-c" || a == "--cancel") => {
            hit.insert("system_shutdown");
        }
        "reboot" | "halt" | "poweroff" => {
            hit.insert("system_shutdown");
        }
        "init" | "telinit" if matches!(first_operand(args), Some("0" | "6")) => {
            hit.insert(if name == "init" {
                "init_runlevel"
            } else {
                "telinit_runlevel"
            });
        }
        "systemctl" | "loginctl"
            if matches!(
                first_operand(args),
                Some("poweroff" | "reboot" | "halt" | "kexec")
            ) =>
        {
            hit.insert("systemctl_poweroff");
        }
        n if n == "mkfs" || n.starts_with("mkfs.") || n == "mke2fs" => {
            hit.insert("format_filesystem");
        }
        _ => {}
    }
}

/// True if `text` backgrounds a command (`&` that is not `&&`, `>&`, `&>` or `|&`) or pipes one.
fn spawns(text: &str, pipes_count: bool) -> bool {
    let c: Vec<char> = text.chars().collect();
    (0..c.len()).any(|i| {
        let prev = i.checked_sub(1).map(|j| c[j]);
        let next = c.get(i + 1).copied();
        match c[i] {
            '&' => !matches!(prev, Some('&' | '>' | '<' | '|')) && !matches!(next, Some('&' | '>')),
            '|' => pipes_count && prev != Some('|') && next != Some('|'),
            _ => false,
        }
    })
}

/// Fork-bomb shapes: a function that calls itself and backgrounds or pipes (`:(){ :|:& };:`,
/// `f(){ f & f & }; f`), an endless loop that backgrounds commands (`while true; do $0 & done`),
/// the running script started again in the background (`bash $0 &`), and the classic Perl/Python
/// `fork while fork` / `while True: os.fork()`.
fn is_fork_bomb(raw: &str) -> bool {
    if PERL_FORK.as_ref().is_some_and(|r| r.is_match(raw)) {
        return true;
    }
    if let Some(def) = FUNC_DEF.as_ref() {
        let recursive = def.captures_iter(raw).any(|c| {
            let (Some(name), Some(body)) = (c.get(1), c.get(2)) else {
                return false;
            };
            let name = name.as_str();
            let calls_itself = body
                .as_str()
                .split(|ch: char| ch.is_whitespace() || ";&|(){}".contains(ch))
                .any(|w| w == name);
            calls_itself && spawns(body.as_str(), true)
        });
        if recursive {
            return true;
        }
    }
    if let Some(lp) = ENDLESS_LOOP.as_ref()
        && lp
            .captures_iter(raw)
            .any(|c| c.get(1).is_some_and(|b| spawns(b.as_str(), false)))
    {
        return true;
    }
    SELF_SPAWN.as_ref().is_some_and(|r| r.is_match(raw)) && spawns(raw, false)
}

fn delete_without_where(raw: &str) -> bool {
    let (Some(del), Some(wh), Some(ctx)) = (
        SQL_DELETE.as_ref(),
        SQL_WHERE.as_ref(),
        SQL_CONTEXT.as_ref(),
    ) else {
        return false;
    };
    ctx.is_match(raw)
        && del.find_iter(raw).any(|m| {
            let tail = &raw[m.end()..];
            let end = tail.find([';', '\'', '"', '\n']).unwrap_or(tail.len());
            !wh.is_match(&tail[..end])
        })
}

/// Everything found in one command.
pub(super) struct Analysis {
    pub hardline: Vec<Finding>,
    pub dangerous: Vec<Finding>,
    pub views: Views,
}

/// Runs every detector over the de-obfuscated views of `command`.
pub(super) fn analyze(command: &str, ctx: &Context) -> Analysis {
    let views = normalize::views(command);
    let mut hit: HashSet<&'static str> = views.notes.iter().copied().collect();
    for cmd in &views.cmds {
        command_checks(cmd, ctx, &mut hit);
    }
    for (op, target) in &views.redirects {
        if (op.contains('>') || op == "<>") && is_block_device(target) {
            hit.insert("redirect_block_device");
        }
    }
    for raw in &views.raws {
        if is_fork_bomb(raw) {
            hit.insert("fork_bomb");
        }
        if delete_without_where(raw) {
            hit.insert("sql_delete_without_where");
        }
    }
    specs::matching_keys(&views, &mut hit);
    let (hardline, dangerous) = CATALOG
        .iter()
        .filter(|e| hit.contains(e.key))
        .partition::<Vec<_>, _>(|e| e.kind == Kind::Floor);
    Analysis {
        hardline: hardline.into_iter().map(finding).collect(),
        dangerous: dangerous.into_iter().map(finding).collect(),
        views,
    }
}

/// The classifier's verdict on one command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Classification {
    Safe,
    /// Dangerous for the named reasons (cannot-verify findings may be among them).
    Dangerous(Vec<Finding>),
    /// Nothing named as dangerous, but what runs is produced at run time (the reasons say how).
    CannotVerify(Vec<Finding>),
    /// On the hardline floor: never run.
    Floor(Vec<Finding>),
}

impl Classification {
    /// The findings behind the verdict (empty when safe).
    pub fn findings(&self) -> &[Finding] {
        match self {
            Classification::Safe => &[],
            Classification::Dangerous(f)
            | Classification::CannotVerify(f)
            | Classification::Floor(f) => f,
        }
    }
}

impl Analysis {
    pub(super) fn classification(&self) -> Classification {
        if !self.hardline.is_empty() {
            Classification::Floor(self.hardline.clone())
        } else if self.dangerous.iter().any(|f| f.kind == Kind::Dangerous) {
            Classification::Dangerous(self.dangerous.clone())
        } else if !self.dangerous.is_empty() {
            Classification::CannotVerify(self.dangerous.clone())
        } else {
            Classification::Safe
        }
    }
}

/// Classifies `command` as safe, dangerous, cannot-verify or floor, with `ctx`'s home directory.
pub fn classify(command: &str, ctx: &Context) -> Classification {
    analyze(command, ctx).classification()
}

/// Every reason `command` is dangerous: hardline findings first, then the rest, each key once.
pub fn detect(command: &str) -> Vec<Finding> {
    let a = analyze(command, &Context::from_env());
    a.hardline.into_iter().chain(a.dangerous).collect()
}

/// The description of the first hardline rule `command` breaks, if any. Hardline commands are
/// refused whatever the mode, `--yolo` or allowlist says.
pub fn hardline(command: &str) -> Option<&'static str> {
    analyze(command, &Context::from_env())
        .hardline
        .first()
        .map(|f| f.description)
}

#[cfg(test)]
pub(super) fn catalog_keys() -> Vec<&'static str> {
    CATALOG.iter().map(|e| e.key).collect()
}
