//! What makes a command dangerous: the hardline floor and the checks that need code.
//!
//! Detection reads the de-obfuscated views from `normalize.rs`. Most categories are regexes
//! (`specs.rs`); here are the checks where flag order or argument meaning matters — rm targets,
//! `kill -1`, chown owner, dd/tee to block devices, shutdown verbs, fork bombs, DELETE without
//! WHERE — and the entry points `detect` and `hardline`.

use std::collections::HashSet;
use std::sync::LazyLock;

use regex::Regex;

use super::catalog::{CATALOG, finding};
use super::normalize::{self, Views};
use super::specs::{self, SQL_CONTEXT};

pub use super::catalog::Finding;

fn re(pattern: &str) -> Option<Regex> {
    Regex::new(pattern).ok()
}

static BLOCK_DEVICE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(
        r"^/dev/(?:sd[a-z]+\d*|hd[a-z]+\d*|vd[a-z]+\d*|xvd[a-z]+\d*|nvme\d+(?:n\d+)?(?:p\d+)?|mmcblk\d+(?:p\d+)?|r?disk\d+(?:s\d+)?|md\d+|dm-\d+|mapper/\S+|loop\d+|sr\d+|nbd\d+|disk/by-\S+)$",
    )
});
static FUNC_DEF: LazyLock<Option<Regex>> =
    LazyLock::new(|| re(r"(?:function\s+)?([A-Za-z_:.][\w:.-]*)\s*(?:\(\s*\))?\s*\{([^}]*)\}"));
static PERL_FORK: LazyLock<Option<Regex>> =
    LazyLock::new(|| re(r"\bfork\s*(?:\(\s*\))?\s*while\s+fork\b"));
static SQL_DELETE: LazyLock<Option<Regex>> =
    LazyLock::new(|| re(r#"(?i)\bdelete\s+from\s+[^\s;'"]+"#));
static SQL_WHERE: LazyLock<Option<Regex>> = LazyLock::new(|| re(r"(?i)\bwhere\b"));

fn is_block_device(path: &str) -> bool {
    BLOCK_DEVICE.as_ref().is_some_and(|r| r.is_match(path))
}

/// Directories whose recursive removal is refused outright.
const SYSTEM_DIRS: &[&str] = &[
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/home",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/opt",
    "/proc",
    "/root",
    "/run",
    "/sbin",
    "/srv",
    "/sys",
    "/usr",
    "/var",
    "/usr/bin",
    "/usr/lib",
    "/usr/lib64",
    "/usr/local",
    "/usr/sbin",
    "/usr/share",
    "/usr/include",
    "/var/lib",
    "/var/log",
    "/System",
    "/Library",
    "/Applications",
    "/Users",
    "/private",
    "/private/etc",
    "/private/var",
];
/// Top-level trees where even a single-file delete deserves a question.
const SYSTEM_TREES: &[&str] = &[
    "etc", "usr", "bin", "sbin", "boot", "lib", "lib32", "lib64", "sys", "proc", "System",
    "Library",
];

#[derive(Debug, PartialEq, Eq)]
enum Target {
    Root,
    SystemDir,
    Home,
    /// Directly under `/` or inside a system tree.
    SystemPath,
    Other,
}

/// Classifies an `rm` operand, resolving `.`, `..`, `//` and trailing `/*` lexically.
fn classify(target: &str) -> Target {
    let home_rest = ["~", "$HOME", "${HOME}"]
        .iter()
        .find_map(|p| target.strip_prefix(p))
        .or_else(|| {
            // `~user`
            target
                .strip_prefix('~')
                .map(|r| r.find('/').map_or("", |i| &r[i..]))
        });
    if let Some(rest) = home_rest
        && (rest.is_empty() || rest.starts_with('/'))
    {
        return if rest.split('/').all(|c| matches!(c, "" | "." | ".." | "*")) {
            Target::Home
        } else {
            Target::Other
        };
    }
    if !target.starts_with('/') {
        return Target::Other;
    }
    let mut comps: Vec<&str> = Vec::new();
    for c in target.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                comps.pop();
            }
            other => comps.push(other),
        }
    }
    while comps.last() == Some(&"*") {
        comps.pop();
    }
    let Some(first) = comps.first() else {
        return Target::Root;
    };
    if comps.len() == 1 && first.contains(['*', '?', '[']) {
        // `/b*` expands to /bin and /boot.
        return Target::SystemDir;
    }
    let path = format!("/{}", comps.join("/"));
    if SYSTEM_DIRS.contains(&path.as_str()) {
        return Target::SystemDir;
    }
    if comps.len() == 2 && matches!(*first, "home" | "Users") {
        return Target::Home;
    }
    if (comps.len() == 1 && *first != "tmp") || SYSTEM_TREES.contains(first) {
        return Target::SystemPath;
    }
    Target::Other
}

fn rm_checks(args: &[String], hit: &mut HashSet<&'static str>) {
    let mut recursive = false;
    let mut targets = Vec::new();
    let mut options_done = false;
    for a in args {
        if !options_done && a == "--" {
            options_done = true;
        } else if !options_done && a.starts_with("--") {
            let name = &a[2..];
            if !name.is_empty() && "recursive".starts_with(name) {
                recursive = true;
            }
        } else if !options_done && a.len() > 1 && a.starts_with('-') {
            recursive |= a.contains(['r', 'R']);
        } else {
            targets.push(a.as_str());
        }
    }
    if recursive {
        hit.insert("recursive_delete");
    }
    for t in targets {
        match (classify(t), recursive) {
            (Target::Root, true) => hit.insert("delete_root_fs"),
            (Target::SystemDir, true) => hit.insert("delete_system_dir"),
            (Target::Home, true) => hit.insert("delete_home_dir"),
            (Target::Root | Target::SystemDir | Target::SystemPath, _) => {
                hit.insert("delete_in_root_path")
            }
            _ => false,
        };
    }
}

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
    args.iter().skip(i).any(|a| a == "-1")
}

fn first_operand(args: &[String]) -> Option<&str> {
    args.iter()
        .map(String::as_str)
        .find(|a| !a.starts_with('-'))
}

fn command_checks(cmd: &[String], hit: &mut HashSet<&'static str>) {
    let Some(name) = cmd.first().map(String::as_str) else {
        return;
    };
    let args = &cmd[1..];
    match name {
        "rm" => rm_checks(args, hit),
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
        "dd" if args
            .iter()
            .any(|a| a.strip_prefix("of=").is_some_and(is_block_device)) =>
        {
            hit.insert("dd_block_device");
        }
        "tee" if args.iter().any(|a| is_block_device(a)) => {
            hit.insert("redirect_block_device");
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

fn is_fork_bomb(raw: &str) -> bool {
    if PERL_FORK.as_ref().is_some_and(|r| r.is_match(raw)) {
        return true;
    }
    let Some(def) = FUNC_DEF.as_ref() else {
        return false;
    };
    def.captures_iter(raw).any(|c| {
        let (Some(name), Some(body)) = (c.get(1), c.get(2)) else {
            return false;
        };
        let compact: String = body
            .as_str()
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        let name = name.as_str();
        compact.contains(&format!("{name}|{name}")) && compact.contains('&')
    })
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
pub(super) fn analyze(command: &str) -> Analysis {
    let views = normalize::views(command);
    let mut hit: HashSet<&'static str> = views.notes.iter().copied().collect();
    for cmd in &views.cmds {
        command_checks(cmd, &mut hit);
    }
    for (op, target) in &views.redirects {
        if op.contains('>') && is_block_device(target) {
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
        .partition::<Vec<_>, _>(|e| e.hardline);
    Analysis {
        hardline: hardline.into_iter().map(finding).collect(),
        dangerous: dangerous.into_iter().map(finding).collect(),
        views,
    }
}

/// Every reason `command` is dangerous: hardline findings first, then the rest, each key once.
pub fn detect(command: &str) -> Vec<Finding> {
    let a = analyze(command);
    a.hardline.into_iter().chain(a.dangerous).collect()
}

/// The description of the first hardline rule `command` breaks, if any. Hardline commands are
/// refused whatever the mode, `--yolo` or allowlist says.
pub fn hardline(command: &str) -> Option<&'static str> {
    analyze(command).hardline.first().map(|f| f.description)
}

#[cfg(test)]
pub(super) fn catalog_keys() -> Vec<&'static str> {
    CATALOG.iter().map(|e| e.key).collect()
}
