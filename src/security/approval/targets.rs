//! Targets: what a path operand really names, and the floor checks that decide on targets.
//!
//! An operand is first resolved: every spelling of the home directory (`~`, `~/`, `$HOME`,
//! `${HOME}`, `${HOME%/}`, `${HOME:-x}`, `$(echo ~)`, `$(printenv HOME)`, `$(cd && pwd)`, …)
//! becomes the real home, `~root` / `~user` their homes, then `.`, `..` and `//` are resolved
//! lexically (`$HOME/../alice` is `/home/alice`, `/dev/../dev/vda` is `/dev/vda`). The result is
//! compared with `/`, the top-level and system directories and every home directory, including
//! the real one (`/home/user` spelled out, or a temp dir under test).
//!
//! The floor refuses deleting, moving away, recursively re-owning or syncing-with-delete into
//! those targets, and writing to a raw block device by any command (`dd`, `cp`, `tee`, `shred`,
//! `wipefs`, `blkdiscard`, `mkswap`, partitioners, `>` redirections).

use std::collections::HashSet;
use std::sync::LazyLock;

use regex::Regex;

/// What the analyser knows about the machine: the real home directory, if any.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// The home directory, absolute and lexically normalised (no trailing slash).
    home: Option<String>,
}

impl Context {
    /// A context whose home is `home` (the `HOME` hermes runs commands with).
    pub fn with_home(home: Option<&str>) -> Self {
        let home = home
            .filter(|h| h.starts_with('/'))
            .map(normalise)
            .filter(|h| h != "/");
        Context { home }
    }

    /// The home directory of this process (`$HOME`).
    pub fn from_env() -> Self {
        Self::with_home(std::env::var("HOME").ok().as_deref())
    }
}

static BLOCK_DEVICE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"^/dev/(?:sd[a-z]+\d*|hd[a-z]+\d*|vd[a-z]+\d*|xvd[a-z]+\d*|nvme\d+(?:n\d+)?(?:p\d+)?|mmcblk\d+(?:p\d+)?|r?disk\d+(?:s\d+)?|md\d+|dm-\d+|mapper/\S+|loop\d+|sr\d+|nbd\d+|zd\d+|rbd\d+|bcache\d+|disk/by-\S+|block/\S+)$",
    )
    .ok()
});

/// True if `path` (any spelling: `//dev/sda`, `/dev/../dev/sda`) is a raw block device.
pub(super) fn is_block_device(path: &str) -> bool {
    if !path.starts_with('/') {
        return false;
    }
    let p = normalise(path);
    BLOCK_DEVICE.as_ref().is_some_and(|r| r.is_match(&p))
}

/// Directories whose removal is refused outright (besides `/`, every top-level directory and
/// every home directory).
const SYSTEM_DIRS: &[&str] = &[
    "/usr/bin",
    "/usr/lib",
    "/usr/lib64",
    "/usr/local",
    "/usr/sbin",
    "/usr/share",
    "/usr/include",
    "/usr/local/bin",
    "/var/lib",
    "/var/log",
    "/var/tmp",
    "/private/etc",
    "/private/var",
    "/System/Library",
];
/// Top-level trees where even a single-file delete deserves a question.
const SYSTEM_TREES: &[&str] = &[
    "etc", "usr", "bin", "sbin", "boot", "lib", "lib32", "lib64", "sys", "proc", "dev", "System",
    "Library", "private",
];

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub(super) enum Target {
    Root,
    /// A top-level directory or a system directory.
    SystemDir,
    /// A home directory (the real one, `~user`, `/home/x`, `/Users/x`, `/root`).
    Home,
    /// Inside a system tree (`/etc/hosts`) or a file directly under `/`.
    SystemPath,
    Other,
}

impl Target {
    /// True for the targets the floor protects.
    pub(super) fn protected(self) -> bool {
        matches!(self, Target::Root | Target::SystemDir | Target::Home)
    }

    /// The floor key for deleting this target.
    pub(super) fn delete_key(self) -> Option<&'static str> {
        match self {
            Target::Root => Some("delete_root_fs"),
            Target::SystemDir => Some("delete_system_dir"),
            Target::Home => Some("delete_home_dir"),
            _ => None,
        }
    }
}

/// Lexical normalisation of an absolute path: `//`, `.` and `..` resolved, no trailing slash.
fn normalise(path: &str) -> String {
    let mut comps: Vec<&str> = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                comps.pop();
            }
            other => comps.push(other),
        }
    }
    format!("/{}", comps.join("/"))
}

/// Splits `word` into a home spelling and the rest (`"$HOME/x"` → (home, "/x")).
/// `Some((None, rest))` means "a home directory we cannot name" (`~` with no known home).
fn home_prefix<'a>(word: &'a str, ctx: &Context) -> Option<(String, &'a str)> {
    let home = || ctx.home.clone().unwrap_or_else(|| "/home/~".to_string());
    for p in ["$HOME", "~"] {
        if let Some(rest) = word.strip_prefix(p)
            && (rest.is_empty() || rest.starts_with('/'))
        {
            return Some((home(), rest));
        }
    }
    if let Some(after) = word.strip_prefix("${HOME") {
        let close = after.find('}')?;
        let (op, rest) = (&after[..close], &after[close + 1..]);
        if !(rest.is_empty() || rest.starts_with('/')) {
            return None;
        }
        // `${HOME%/*}` and `${HOME%%/*}` name the parent; every other operator the home itself.
        let dir = if matches!(op, "%/*" | "%%/*") {
            let h = home();
            match h.rfind('/') {
                Some(0) | None => "/".to_string(),
                Some(i) => h[..i].to_string(),
            }
        } else {
            home()
        };
        return Some((dir, rest));
    }
    if let Some(after) = word.strip_prefix("$(") {
        let close = after.find(')')?;
        let (inner, rest) = (&after[..close], &after[close + 1..]);
        if !(rest.is_empty() || rest.starts_with('/')) {
            return None;
        }
        let inner = inner.replace(['"', '\''], "");
        let words: Vec<&str> = inner.split_whitespace().collect();
        let names_home = match words.as_slice() {
            ["echo" | "realpath" | "readlink" | "printf", .., last] => {
                matches!(*last, "~" | "$HOME" | "${HOME}" | "~/")
            }
            ["printenv", "HOME"] | ["pwd"] | ["cd"] | ["cd", "~" | "$HOME"] => true,
            ["cd", ..] => words.iter().any(|w| w.ends_with("pwd")),
            _ => false,
        };
        return names_home.then(|| (home(), rest));
    }
    // `~user`: another user's home.
    if let Some(after) = word.strip_prefix('~') {
        let end = after.find('/').unwrap_or(after.len());
        let (user, rest) = (&after[..end], &after[end..]);
        if !user.is_empty()
            && user
                .chars()
                .all(|c| c.is_alphanumeric() || "._-".contains(c))
        {
            let dir = if user == "root" {
                "/root".to_string()
            } else {
                format!("/home/{user}")
            };
            return Some((dir, rest));
        }
    }
    None
}

/// The absolute, normalised path `word` names, or `None` when it is relative or unknown.
pub(super) fn resolve(word: &str, ctx: &Context) -> Option<String> {
    let word = word.trim_matches(|c| c == '"' || c == '\'');
    if let Some((dir, rest)) = home_prefix(word, ctx) {
        return Some(normalise(&format!("{dir}{rest}")));
    }
    word.starts_with('/').then(|| normalise(word))
}

/// Classifies a path operand (see the module header for how it is resolved).
pub(super) fn classify(word: &str, ctx: &Context) -> Target {
    let Some(path) = resolve(word, ctx) else {
        return Target::Other;
    };
    // A trailing `/*` deletes everything inside: as bad as the directory itself.
    let mut path = path.as_str();
    while let Some(p) = path.strip_suffix("/*") {
        path = p;
    }
    if path.is_empty() || path == "/" || path == "/*" {
        return Target::Root;
    }
    if ctx.home.as_deref() == Some(path) || matches!(path, "/home/~" | "/root") {
        return Target::Home;
    }
    let comps: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    if comps.len() == 1 {
        return Target::SystemDir;
    }
    if SYSTEM_DIRS.contains(&path) {
        return Target::SystemDir;
    }
    if comps.len() == 2
        && (matches!(comps[0], "home" | "Users") || comps[1].contains(['*', '?', '[']))
    {
        return if matches!(comps[0], "home" | "Users") {
            Target::Home
        } else {
            Target::SystemDir
        };
    }
    if SYSTEM_TREES.contains(&comps[0]) {
        return Target::SystemPath;
    }
    Target::Other
}

/// Operands of a command: words that are not options (everything after `--`), skipping the
/// values of the options listed in `with_value`.
fn operands<'a>(args: &'a [String], with_value: &[&str]) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut done = false;
    while let Some(a) = args.get(i) {
        i += 1;
        if done || !a.starts_with('-') || a == "-" {
            out.push(a.as_str());
        } else if a == "--" {
            done = true;
        } else if with_value.contains(&a.as_str()) {
            i += 1;
        }
    }
    out
}

fn has_flag(args: &[String], short: char, long: &[&str]) -> bool {
    args.iter().take_while(|a| *a != "--").any(|a| {
        if let Some(l) = a.strip_prefix("--") {
            long.iter()
                .any(|name| l == *name || l.starts_with(&format!("{name}=")))
        } else {
            a.len() > 1 && a.starts_with('-') && a[1..].contains(short)
        }
    })
}

/// Floor checks that decide on a command's targets; found keys go into `hit`.
pub(super) fn floor_checks(cmd: &[String], ctx: &Context, hit: &mut HashSet<&'static str>) {
    let Some(name) = cmd.first().map(String::as_str) else {
        return;
    };
    let args = &cmd[1..];
    match name {
        "rm" => {
            let recursive = has_flag(args, 'r', &["recursive"]) || has_flag(args, 'R', &[]);
            if recursive {
                hit.insert("recursive_delete");
            }
            for t in operands(args, &[]) {
                let target = classify(t, ctx);
                match (target.delete_key(), recursive) {
                    (Some(key), true) => {
                        hit.insert(key);
                    }
                    (Some(_), false) | (None, _) if target != Target::Other => {
                        hit.insert("delete_in_root_path");
                    }
                    _ => {}
                }
            }
        }
        "rmdir" | "unlink" | "shred" | "srm" => {
            for t in operands(args, &["-n", "-s", "--iterations", "--size"]) {
                if is_block_device(t) {
                    hit.insert("wipe_block_device");
                } else if let Some(key) = classify(t, ctx).delete_key() {
                    hit.insert(key);
                }
            }
        }
        "find" => find_checks(args, ctx, hit),
        "mv" => {
            let with_value = ["-t", "--target-directory", "-S", "--suffix"];
            let ops = operands(args, &with_value);
            let has_target_dir = args
                .iter()
                .any(|a| a == "-t" || a.starts_with("--target-directory"));
            let sources = if has_target_dir || ops.len() < 2 {
                &ops[..]
            } else {
                &ops[..ops.len() - 1]
            };
            if sources.iter().any(|s| classify(s, ctx).protected()) {
                hit.insert("move_protected_dir");
            }
            if let Some(dest) = ops.last().filter(|_| ops.len() >= 2)
                && is_block_device(dest)
            {
                hit.insert("wipe_block_device");
            }
        }
        "rsync" => {
            let deletes = args.iter().any(|a| a.starts_with("--del"));
            let ops = operands(
                args,
                &["-e", "--rsh", "--exclude", "--include", "-f", "--filter"],
            );
            if deletes
                && let Some(dest) = ops.last().filter(|_| ops.len() >= 2)
                && let Some(key) = classify(dest, ctx).delete_key()
            {
                hit.insert(key);
            }
        }
        "chmod" | "chown" | "chgrp" if has_flag(args, 'R', &["recursive"]) => {
            let ops = operands(args, &[]);
            let refer = args.iter().any(|a| a.starts_with("--reference"));
            let targets = if refer {
                &ops[..]
            } else {
                ops.get(1..).unwrap_or(&[])
            };
            if targets.iter().any(|t| classify(t, ctx).protected()) {
                hit.insert("recursive_perm_protected");
            }
        }
        "cp" | "install" | "ln" | "pv" | "cat" | "sponge" => {
            let ops = operands(
                args,
                &[
                    "-t",
                    "--target-directory",
                    "-S",
                    "--suffix",
                    "-m",
                    "-o",
                    "-g",
                ],
            );
            let dest_is_device = match name {
                "sponge" => ops.first().is_some_and(|d| is_block_device(d)),
                "cp" | "install" | "ln" => {
                    ops.len() >= 2 && ops.last().is_some_and(|d| is_block_device(d))
                        || args
                            .windows(2)
                            .any(|w| w[0] == "-t" && is_block_device(&w[1]))
                }
                _ => false,
            };
            if dest_is_device {
                hit.insert("redirect_block_device");
            }
        }
        "dd" if args
            .iter()
            .any(|a| a.strip_prefix("of=").is_some_and(is_block_device)) =>
        {
            hit.insert("dd_block_device");
        }
        "tee" if operands(args, &[]).iter().any(|a| is_block_device(a)) => {
            hit.insert("redirect_block_device");
        }
        "wipefs" => {
            let listing = args.is_empty()
                || has_flag(args, 'n', &["no-act"])
                || !args.iter().any(|a| a.starts_with('-'));
            if !listing
                && operands(args, &["-o", "--offset", "-t", "--types", "-b", "--backup"])
                    .iter()
                    .any(|a| is_block_device(a))
            {
                hit.insert("wipe_block_device");
            }
        }
        "blkdiscard" | "mkswap" | "badblocks" if args.iter().any(|a| is_block_device(a)) => {
            let read_only = name == "badblocks" && !has_flag(args, 'w', &[]);
            if !read_only {
                hit.insert("wipe_block_device");
            }
        }
        "fdisk" | "sfdisk" | "sgdisk" | "gdisk" | "cfdisk" | "parted" | "partx" | "cgdisk"
            if args.iter().any(|a| is_block_device(a)) =>
        {
            let listing = args.iter().any(|a| {
                matches!(
                    a.as_str(),
                    "-l" | "--list"
                        | "-p"
                        | "--print"
                        | "print"
                        | "-d"
                        | "--dump"
                        | "-s"
                        | "--show"
                )
            }) && !args.iter().any(|a| {
                matches!(
                    a.as_str(),
                    "mklabel"
                        | "mkpart"
                        | "rm"
                        | "resizepart"
                        | "-Z"
                        | "--zap-all"
                        | "-o"
                        | "--clear"
                        | "-n"
                        | "--new"
                        | "--delete"
                        | "--wipe"
                )
            }) && name != "cfdisk";
            if !listing {
                hit.insert("wipe_block_device");
            }
        }
        "truncate" => {
            let ops = operands(args, &["-s", "--size", "-r", "--reference"]);
            if ops.iter().any(|t| {
                is_block_device(t)
                    || matches!(classify(t, ctx), Target::SystemPath | Target::SystemDir)
            }) {
                hit.insert("truncate_system_file");
            }
        }
        _ => {}
    }
}

/// Test predicates that restrict what `find` matches (a bare `-type f` does not).
const FIND_FILTERS: &[&str] = &[
    "-name",
    "-iname",
    "-path",
    "-ipath",
    "-wholename",
    "-iwholename",
    "-regex",
    "-iregex",
    "-newer",
    "-mtime",
    "-mmin",
    "-atime",
    "-amin",
    "-ctime",
    "-cmin",
    "-size",
    "-empty",
    "-user",
    "-group",
    "-perm",
    "-links",
    "-inum",
    "-samefile",
    "-lname",
    "-ilname",
    "-uid",
    "-gid",
];

/// `find T … -delete` / `-exec rm` with T the root, a system directory or the home directory,
/// and nothing restricting what is matched, deletes T.
fn find_checks(args: &[String], ctx: &Context, hit: &mut HashSet<&'static str>) {
    let start = args
        .iter()
        .position(|a| a.starts_with('-') || a == "(" || a == "!")
        .unwrap_or(args.len());
    let roots = &args[..start];
    let expr = &args[start..];
    let deletes = expr.iter().any(|a| a == "-delete")
        || expr.windows(2).any(|w| {
            matches!(w[0].as_str(), "-exec" | "-execdir" | "-ok" | "-okdir")
                && matches!(
                    w[1].rsplit('/').next(),
                    Some("rm" | "shred" | "unlink" | "rmdir")
                )
        });
    if !deletes {
        return;
    }
    let restricted = expr.windows(2).any(|w| {
        FIND_FILTERS.contains(&w[0].as_str()) && !matches!(w[1].as_str(), "*" | ".*" | "")
    }) || expr.iter().any(|a| a == "-empty");
    if restricted {
        return;
    }
    for r in roots {
        if let Some(key) = classify(r, ctx).delete_key() {
            hit.insert(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Context {
        Context::with_home(Some("/home/user/"))
    }

    #[test]
    fn home_spellings_resolve_to_the_home() {
        for w in [
            "~",
            "~/",
            "$HOME",
            "${HOME}",
            "${HOME%/}",
            "${HOME:-/tmp}",
            "$(echo ~)",
            "$(echo $HOME)",
            "$(printenv HOME)",
            "$(cd && pwd)",
            "/home/user",
            "/home/user/.",
            "//home//user/",
            "$HOME/x/..",
            "~/*",
            "/home/alice",
            "$HOME/../alice",
            "~alice",
            "/root",
            "~root",
        ] {
            assert_eq!(classify(w, &ctx()), Target::Home, "{w}");
        }
        assert_eq!(classify("${HOME%/*}", &ctx()), Target::SystemDir);
        assert_eq!(classify("~/project", &ctx()), Target::Other);
        assert_eq!(classify("$HOME/.cache/x", &ctx()), Target::Other);
    }

    #[test]
    fn real_home_outside_home_dirs() {
        let c = Context::with_home(Some("/tmp/t1"));
        assert_eq!(classify("/tmp/t1", &c), Target::Home);
        assert_eq!(classify("/tmp/t1/", &c), Target::Home);
        assert_eq!(classify("/tmp/t1/a", &c), Target::Other);
        assert_eq!(classify("~/..", &c), Target::SystemDir);
    }

    #[test]
    fn roots_and_system_dirs() {
        for w in ["/", "//", "/*", "/tmp/..", "/./"] {
            assert_eq!(classify(w, &ctx()), Target::Root, "{w}");
        }
        for w in [
            "/etc", "/usr/", "/work", "/tmp", "/usr/lib", "/b*", "/var/tmp",
        ] {
            assert_eq!(classify(w, &ctx()), Target::SystemDir, "{w}");
        }
        assert_eq!(classify("/etc/hosts", &ctx()), Target::SystemPath);
        assert_eq!(classify("/tmp/build", &ctx()), Target::Other);
        assert_eq!(classify("build", &ctx()), Target::Other);
    }

    #[test]
    fn device_spellings() {
        for d in [
            "/dev/sda",
            "//dev/sda",
            "/dev/../dev/vda",
            "/dev/./nvme0n1",
            "/dev/disk/by-id/x",
        ] {
            assert!(is_block_device(d), "{d}");
        }
        for d in ["/dev/null", "/dev/stdout", "dev/sda", "/tmp/dev/sda"] {
            assert!(!is_block_device(d), "{d}");
        }
    }
}
