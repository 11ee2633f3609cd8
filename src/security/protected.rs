//! THE list of protected paths: what no file tool may write (control files, credentials, shell
//! start-up files, system directories) and what no file tool may read (secrets), whatever
//! `--yolo` says. Built once from the config (`ProtectedPaths::for_config`); the file tools ask
//! `check_write` / `check_read`, the terminal sandbox builds its mounts from `no_write` /
//! `no_read`.
//!
//! Why a whole `$HERMES_HOME` is unwritable: every file in it steers a later run (config.yaml
//! switches approval off, hooks and cron jobs run code, skills/memories/prompts/SOUL.md enter the
//! system prompt, state.db is the transcript, checkpoints are what `/rollback` restores). Each of
//! those has its own door that runs the right checks (`hermes config set`, `skill_manage`, the
//! memory tool, …); the refusal names that door.
//!
//! Paths are compared after resolution (symlinks of the nearest existing ancestor, `..`), so a
//! link in the working directory pointing into `$HERMES_HOME` is refused like the real path.
//! `security.protected_paths` in config.yaml adds entries (neither read nor written); nothing
//! the agent can do removes one, because config.yaml itself is on the list.

use std::collections::BTreeSet;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::security::secret_files;
use crate::util::real_path as paths;

/// What a protected path is, which decides the advice in the refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `$HERMES_HOME/config.yaml`.
    Config,
    /// `$HERMES_HOME/.env`, `auth.json`.
    Secrets,
    Soul,
    Hooks,
    Skills,
    Memories,
    Cron,
    /// state.db and its WAL/SHM files, session JSON.
    Sessions,
    Checkpoints,
    /// Anything else under `$HERMES_HOME`.
    HermesHome,
    /// `~/.ssh` and other credential stores.
    Credentials,
    /// Shell start-up files and other files that run code at login.
    Startup,
    /// `/etc` and the system's program directories.
    System,
    /// Listed by the user in `security.protected_paths`.
    UserListed,
    /// A secrets file anywhere (a project's `.env`, a private key, `.npmrc`; `secret_files`).
    SecretFile,
}

impl Kind {
    fn what(self) -> &'static str {
        match self {
            Kind::Config => "hermes' configuration",
            Kind::Secrets => "a hermes secrets file",
            Kind::Soul => "hermes' persona file",
            Kind::Hooks => "a hermes hook",
            Kind::Skills => "a hermes skill",
            Kind::Memories => "hermes' memory",
            Kind::Cron => "hermes' scheduled jobs",
            Kind::Sessions => "hermes' session store",
            Kind::Checkpoints => "hermes' checkpoint store",
            Kind::HermesHome => "a hermes control file",
            Kind::Credentials => "a credential store",
            Kind::Startup => "a shell start-up file",
            Kind::System => "a system file",
            Kind::UserListed => "listed in security.protected_paths",
            Kind::SecretFile => "a secrets file (environment values, a private key or tokens)",
        }
    }

    /// What the user (or the model, through the proper tool) can do instead.
    fn instead(self) -> &'static str {
        match self {
            Kind::Config => {
                "change settings with `hermes config set KEY VALUE`, or ask the user to edit the file"
            }
            Kind::Secrets => {
                "ask the user to set the value with `hermes config set` or to edit the file themselves; hermes never shows secrets to the model"
            }
            Kind::Soul => "ask the user to edit SOUL.md themselves",
            Kind::Hooks => "ask the user to install or edit hooks themselves",
            Kind::Skills => {
                "create or change skills with the skill_manage tool (it runs the skill guard), or ask the user to run `hermes skills …`"
            }
            Kind::Memories => "use the memory tool to change what hermes remembers",
            Kind::Cron => "manage scheduled jobs with `hermes cron …`",
            Kind::Sessions => "use `hermes sessions …` to inspect or change session history",
            Kind::Checkpoints => "use `/rollback` or `hermes checkpoints …`",
            Kind::HermesHome => "ask the user to change it themselves",
            Kind::SecretFile => {
                "read its documented shape instead (.env.example), or ask the user; to let hermes read this file, the user adds its path to security.readable_paths in config.yaml"
            }
            Kind::Credentials | Kind::Startup | Kind::System | Kind::UserListed => {
                "ask the user to make this change themselves"
            }
        }
    }
}

/// Which part of the file system a rule covers.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Scope {
    /// Exactly this path.
    File,
    /// This directory and everything under it.
    Tree,
    /// Files in this directory whose name starts with `prefix` (`state.db*`).
    Prefix(String),
    /// Everything under this directory except public files (`*.pub`, `known_hosts*`, `config`,
    /// `authorized_keys*`): private keys under `~/.ssh` whatever they are called.
    PrivateKeysIn,
}

#[derive(Debug, Clone)]
struct Rule {
    /// Resolved (symlinks followed as far as the path exists).
    path: PathBuf,
    scope: Scope,
    kind: Kind,
    write: bool,
    read: bool,
}

impl Rule {
    fn covers(&self, p: &Path) -> bool {
        match &self.scope {
            Scope::File => p == self.path,
            Scope::Tree => p.starts_with(&self.path),
            Scope::Prefix(prefix) => {
                p.parent() == Some(self.path.as_path())
                    && p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with(prefix.as_str()))
            }
            Scope::PrivateKeysIn => {
                let Ok(rest) = p.strip_prefix(&self.path) else {
                    return false;
                };
                let Some(name) = rest.file_name().map(|n| n.to_string_lossy()) else {
                    return false;
                };
                let public = name.ends_with(".pub")
                    || name.starts_with("known_hosts")
                    || name.starts_with("authorized_keys")
                    || name == "config";
                !public
            }
        }
    }
}

/// Why a file tool refused a path.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Refusal {
    #[error(
        "refused: {shown} is {what}{via}, which the file tools may not change (whatever --yolo says); {instead}"
    )]
    Write {
        shown: String,
        what: &'static str,
        via: String,
        instead: &'static str,
    },
    #[error(
        "refused: {shown} is {what}{via}, which the file tools may not read (it holds secrets); {instead}"
    )]
    Read {
        shown: String,
        what: &'static str,
        via: String,
        instead: &'static str,
    },
    #[error("refused: {shown}: {reason}")]
    Unresolvable { shown: String, reason: String },
}

/// The protected paths of one process. Cheap to clone; build it once per process.
#[derive(Debug, Clone, Default)]
pub struct ProtectedPaths {
    rules: Vec<Rule>,
    /// (device, inode) of unreadable files that existed when the list was built (private keys
    /// under `~/.ssh` included); files named by a rule are also compared when checked.
    unreadable_inodes: BTreeSet<(u64, u64)>,
    /// Resolved paths nothing may write (directories cover their whole tree). For sandbox
    /// mounts: bind these read-only. Files may not exist yet (the mount code skips those).
    pub no_write: Vec<PathBuf>,
    /// Resolved paths nothing may read: existing files found when this was built plus the
    /// declared ones (which may not exist). For sandbox mounts: hide these.
    pub no_read: Vec<PathBuf>,
    /// `security.readable_paths` (resolved): secrets files by name the user lets the file tools
    /// read. Never a rule above: `$HERMES_HOME/.env` stays unreadable.
    readable: Vec<PathBuf>,
}

/// Where the roots of the list are; `for_config` fills it from the config.
#[derive(Debug, Clone, Default)]
pub struct Roots {
    pub hermes_home: PathBuf,
    /// `$HOME` as hermes sees it, and the account's home from the password database when it
    /// differs (both are protected: a changed `$HOME` must not unprotect the real one).
    pub user_homes: Vec<PathBuf>,
    /// `security.protected_paths`.
    pub extra: Vec<PathBuf>,
    /// `security.readable_paths`: files or directories whose secrets files (`secret_files`) the
    /// file tools may read.
    pub readable: Vec<PathBuf>,
}

impl ProtectedPaths {
    /// The list for this config: its `$HERMES_HOME`, `$HOME` (from the config's environment) and
    /// `security.protected_paths`.
    pub fn for_config(config: &Config) -> Self {
        let mut user_homes = Vec::new();
        if let Some(home) = config.env.get("HOME") {
            user_homes.push(PathBuf::from(home));
        }
        if let Some(home) = account_home()
            && !user_homes.contains(&home)
        {
            user_homes.push(home);
        }
        Self::new(Roots {
            hermes_home: config.home.root().to_path_buf(),
            user_homes,
            extra: config.security.protected_paths.clone(),
            readable: config.security.readable_paths.clone(),
        })
    }

    pub fn new(roots: Roots) -> Self {
        let mut rules = Vec::new();
        let mut add = |path: PathBuf, scope: Scope, kind: Kind, read: bool| {
            rules.push(Rule {
                path: resolve_lenient(&path),
                scope,
                kind,
                write: true,
                read,
            });
        };
        let h = &roots.hermes_home;
        // Specific entries first: the first rule that matches decides the message.
        add(h.join("config.yaml"), Scope::File, Kind::Config, false);
        add(h.join(".env"), Scope::File, Kind::Secrets, true);
        add(h.join("auth.json"), Scope::File, Kind::Secrets, true);
        add(h.join("auth.lock"), Scope::File, Kind::Secrets, false);
        add(h.join("SOUL.md"), Scope::File, Kind::Soul, false);
        add(h.join("hooks"), Scope::Tree, Kind::Hooks, false);
        add(h.join("skills"), Scope::Tree, Kind::Skills, false);
        add(h.join("memories"), Scope::Tree, Kind::Memories, false);
        add(h.join("cron"), Scope::Tree, Kind::Cron, false);
        add(
            h.clone(),
            Scope::Prefix("state.db".into()),
            Kind::Sessions,
            false,
        );
        add(h.join("sessions"), Scope::Tree, Kind::Sessions, false);
        add(h.join("checkpoints"), Scope::Tree, Kind::Checkpoints, false);
        add(h.clone(), Scope::Tree, Kind::HermesHome, false);

        for home in &roots.user_homes {
            add(
                home.join(".ssh"),
                Scope::PrivateKeysIn,
                Kind::Credentials,
                true,
            );
            add(home.join(".ssh"), Scope::Tree, Kind::Credentials, false);
            for (rel, read) in CREDENTIALS {
                let scope = if rel.ends_with('/') {
                    Scope::Tree
                } else {
                    Scope::File
                };
                add(
                    home.join(rel.trim_end_matches('/')),
                    scope,
                    Kind::Credentials,
                    *read,
                );
            }
            for rel in STARTUP {
                let scope = if rel.ends_with('/') {
                    Scope::Tree
                } else {
                    Scope::File
                };
                add(
                    home.join(rel.trim_end_matches('/')),
                    scope,
                    Kind::Startup,
                    false,
                );
            }
        }
        for dir in SYSTEM {
            add(PathBuf::from(dir), Scope::Tree, Kind::System, false);
        }
        for extra in &roots.extra {
            add(extra.clone(), Scope::Tree, Kind::UserListed, true);
        }

        let mut me = ProtectedPaths {
            rules,
            readable: roots.readable.iter().map(|p| resolve_lenient(p)).collect(),
            ..Default::default()
        };
        me.fill_lists();
        me
    }

    /// Builds the concrete lists for the sandbox and the inode set.
    fn fill_lists(&mut self) {
        let mut no_write = BTreeSet::new();
        let mut no_read = BTreeSet::new();
        for rule in &self.rules {
            match &rule.scope {
                Scope::File | Scope::Tree => {
                    if rule.write {
                        no_write.insert(rule.path.clone());
                    }
                    if rule.read {
                        no_read.insert(rule.path.clone());
                    }
                }
                Scope::Prefix(prefix) => {
                    for suffix in ["", "-wal", "-shm", "-journal"] {
                        no_write.insert(rule.path.join(format!("{prefix}{suffix}")));
                    }
                }
                Scope::PrivateKeysIn => {
                    // Only keys that exist now can be named; the rule itself still covers
                    // keys created later for the file tools.
                    for entry in std::fs::read_dir(&rule.path)
                        .into_iter()
                        .flatten()
                        .flatten()
                    {
                        let p = entry.path();
                        if entry.file_type().is_ok_and(|t| t.is_file()) && rule.covers(&p) {
                            no_read.insert(p);
                        }
                    }
                }
            }
        }
        // A directory already listed covers its children.
        let prune = |set: BTreeSet<PathBuf>| -> Vec<PathBuf> {
            let mut out: Vec<PathBuf> = Vec::new();
            for p in set {
                if !out.iter().any(|kept| p.starts_with(kept) && kept.is_dir()) {
                    out.push(p);
                }
            }
            out
        };
        self.unreadable_inodes = no_read
            .iter()
            .filter_map(|p| std::fs::metadata(p).ok())
            .filter(|m| m.is_file())
            .map(|m| (m.dev(), m.ino()))
            .collect();
        self.no_write = prune(no_write);
        self.no_read = prune(no_read);
    }

    /// Resolves `path` (absolute) and refuses it when a file tool may not write there.
    /// Returns the resolved path to write to. `shown` is the path as the model gave it.
    pub fn check_write(&self, path: &Path, shown: &str) -> Result<PathBuf, Refusal> {
        self.check_write_in(None, path, shown)
    }

    /// `check_write` for a tool that is the door to the directory `door` (skill_manage is the
    /// door to a skill's directory): the rules covering `door` itself are that tool's business
    /// and are skipped; every rule about something inside it still holds.
    pub fn check_write_in(
        &self,
        door: Option<&Path>,
        path: &Path,
        shown: &str,
    ) -> Result<PathBuf, Refusal> {
        let resolved = resolve_checked(path, shown)?;
        let door = door.map(resolve_lenient);
        let applies = |r: &&Rule| r.write && door.as_ref().is_none_or(|d| !r.covers(d));
        for candidate in [path, resolved.as_path()] {
            if let Some(rule) = self
                .rules
                .iter()
                .filter(applies)
                .find(|r| r.covers(candidate))
            {
                return Err(Refusal::Write {
                    shown: shown.to_string(),
                    what: rule.kind.what(),
                    via: via(path, &resolved),
                    instead: rule.kind.instead(),
                });
            }
        }
        Ok(resolved)
    }

    /// Resolves `path` (absolute) and refuses it when a file tool may not read it.
    pub fn check_read(&self, path: &Path, shown: &str) -> Result<PathBuf, Refusal> {
        let resolved = resolve_checked(path, shown)?;
        if let Some(kind) = self.unreadable_kind(path, &resolved) {
            return Err(Refusal::Read {
                shown: shown.to_string(),
                what: kind.what(),
                via: via(path, &resolved),
                instead: kind.instead(),
            });
        }
        Ok(resolved)
    }

    /// Whether an already resolved path may not be read (for walks that resolve themselves).
    pub fn is_unreadable(&self, resolved: &Path) -> bool {
        self.unreadable_kind(resolved, resolved).is_some()
    }

    fn unreadable_kind(&self, path: &Path, resolved: &Path) -> Option<Kind> {
        for candidate in [path, resolved] {
            if let Some(rule) = self.rules.iter().find(|r| r.read && r.covers(candidate)) {
                return Some(rule.kind);
            }
            if is_process_secret(candidate) {
                return Some(Kind::Secrets);
            }
        }
        if secret_files::is_secret_file(resolved)
            && !self.readable.iter().any(|r| resolved.starts_with(r))
        {
            return Some(Kind::SecretFile);
        }
        // A hard link elsewhere is the same secret under another name. Only files with more
        // than one link need the comparison, which keeps walks cheap.
        if let Ok(meta) = std::fs::metadata(resolved)
            && meta.is_file()
            && meta.nlink() > 1
        {
            let id = (meta.dev(), meta.ino());
            let linked = self.unreadable_inodes.contains(&id)
                || self
                    .rules
                    .iter()
                    .filter(|r| r.read && r.scope == Scope::File)
                    .filter_map(|r| std::fs::metadata(&r.path).ok())
                    .any(|m| (m.dev(), m.ino()) == id);
            if linked {
                return Some(Kind::Secrets);
            }
        }
        None
    }
}

/// Credential stores under a home directory (`/` = whole tree) and whether reading is refused.
const CREDENTIALS: &[(&str, bool)] = &[
    (".aws/", true),
    (".gnupg/", true),
    (".kube/", true),
    (".docker/config.json", true),
    (".netrc", true),
    (".git-credentials", true),
    (".pgpass", true),
    (".npmrc", true),
    (".pypirc", true),
    (".config/gh/", true),
    (".config/gcloud/", true),
    (".azure/", true),
    (".password-store/", true),
    (".local/share/keyrings/", true),
    (".cargo/credentials.toml", true),
    (".cargo/credentials", true),
    (".gitconfig", false),
    (".config/git/", false),
];

/// Files that run code when the user logs in or opens a shell.
const STARTUP: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".kshrc",
    ".cshrc",
    ".tcshrc",
    ".xprofile",
    ".xinitrc",
    ".config/fish/",
    ".config/autostart/",
    ".config/systemd/",
    ".config/environment.d/",
    ".local/bin/",
];

/// System directories: configuration and the programs every command runs.
const SYSTEM: &[&str] = &[
    "/etc",
    "/boot",
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/var/spool/cron",
];

/// `/proc/<pid>/environ` and `/proc/<pid>/mem` hold a process's environment (API keys).
fn is_process_secret(p: &Path) -> bool {
    let Ok(rest) = p.strip_prefix("/proc") else {
        return false;
    };
    rest.file_name()
        .is_some_and(|n| n == "environ" || n == "mem")
}

/// " (through a symlink, it resolves to …)" when the resolved path differs from the given one.
fn via(path: &Path, resolved: &Path) -> String {
    if paths::normalize(path) == resolved {
        String::new()
    } else {
        format!(" (it resolves to {})", resolved.display())
    }
}

fn resolve_checked(path: &Path, shown: &str) -> Result<PathBuf, Refusal> {
    if path.as_os_str().as_encoded_bytes().contains(&0) {
        return Err(Refusal::Unresolvable {
            shown: shown.escape_debug().to_string(),
            reason: "the path contains a NUL byte".into(),
        });
    }
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    };
    paths::resolve(&absolute).map_err(|e| Refusal::Unresolvable {
        shown: shown.to_string(),
        reason: format!("cannot resolve it ({e}); give a path that exists or whose parent exists"),
    })
}

/// Resolves a rule's path; a path with no existing part is kept as written (normalised).
fn resolve_lenient(path: &Path) -> PathBuf {
    paths::resolve(path).unwrap_or_else(|_| paths::normalize(path))
}

/// The home directory of the account hermes runs as, from the password database.
fn account_home() -> Option<PathBuf> {
    // SAFETY: getpwuid_r writes into the buffers we own and pass with their lengths; the
    // returned pointer, when non-null, points at `pwd`, whose strings live in `buf`.
    unsafe {
        let mut pwd: libc::passwd = std::mem::zeroed();
        let mut buf = vec![0 as libc::c_char; 4096];
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        let rc = libc::getpwuid_r(
            libc::getuid(),
            &mut pwd,
            buf.as_mut_ptr(),
            buf.len(),
            &mut result,
        );
        if rc != 0 || result.is_null() || pwd.pw_dir.is_null() {
            return None;
        }
        let dir = std::ffi::CStr::from_ptr(pwd.pw_dir);
        let dir = PathBuf::from(std::ffi::OsStr::from_bytes(dir.to_bytes()));
        (dir.is_absolute() && dir != Path::new("/")).then_some(dir)
    }
}

#[cfg(test)]
#[path = "protected_tests.rs"]
mod tests;
