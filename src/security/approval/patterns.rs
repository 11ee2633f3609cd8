//! What makes a command dangerous: the hardline floor and the dangerous-pattern catalogue.
//!
//! Every finding has a stable snake_case key (what `command_allowlist` and session approvals
//! store) and a short description. Descriptions follow Python Hermes' wording, and `legacy`
//! lists the Python descriptions a key absorbed, so an allowlist written by Python Hermes (which
//! stores descriptions) keeps working. Detection reads the de-obfuscated views from
//! `normalize.rs`: regexes with a scope, plus a few checks written as code where flag order or
//! argument meaning matters (rm targets, kill -1, chown owner, fork bombs, DELETE without WHERE).

use std::collections::HashSet;
use std::sync::LazyLock;

use regex::Regex;

use super::normalize::{self, Views};

/// One reason a command is dangerous.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Finding {
    /// Stable snake_case id (what allowlists and session approvals store).
    pub key: &'static str,
    /// Short human description.
    pub description: &'static str,
}

struct Entry {
    key: &'static str,
    description: &'static str,
    /// Python Hermes descriptions this key also answers to in `command_allowlist`.
    legacy: &'static [&'static str],
    hardline: bool,
}

const fn hard(key: &'static str, description: &'static str) -> Entry {
    Entry {
        key,
        description,
        legacy: &[],
        hardline: true,
    }
}
const fn danger(
    key: &'static str,
    description: &'static str,
    legacy: &'static [&'static str],
) -> Entry {
    Entry {
        key,
        description,
        legacy,
        hardline: false,
    }
}

/// Every key, hardline first; findings are reported in this order.
const CATALOG: &[Entry] = &[
    hard("delete_root_fs", "recursive delete of the root filesystem"),
    hard(
        "delete_system_dir",
        "recursive delete of a system directory",
    ),
    hard("delete_home_dir", "recursive delete of the home directory"),
    hard("format_filesystem", "format filesystem (mkfs)"),
    hard("dd_block_device", "dd to a raw block device"),
    hard("redirect_block_device", "write to a raw block device"),
    hard("fork_bomb", "fork bomb"),
    hard("kill_all_processes", "kill all processes"),
    hard("system_shutdown", "system shutdown/reboot"),
    hard("init_runlevel", "init 0/6 (halt/reboot)"),
    hard("systemctl_poweroff", "systemctl poweroff/reboot"),
    hard("telinit_runlevel", "telinit 0/6 (halt/reboot)"),
    danger(
        "recursive_delete",
        "recursive delete",
        &["recursive delete (long flag)"],
    ),
    danger("delete_in_root_path", "delete in root path", &[]),
    danger(
        "windows_destructive_delete",
        "Windows cmd destructive delete",
        &[],
    ),
    danger(
        "powershell_destructive_delete",
        "Windows PowerShell destructive delete",
        &[],
    ),
    danger(
        "powershell_encoded_command",
        "PowerShell encoded command execution",
        &[],
    ),
    danger(
        "world_writable",
        "world/other-writable permissions",
        &["recursive world/other-writable (long flag)"],
    ),
    danger(
        "chown_recursive_root",
        "recursive chown to root",
        &["recursive chown to root (long flag)"],
    ),
    danger("disk_copy", "disk copy", &[]),
    danger("sql_drop", "SQL DROP", &[]),
    danger("sql_delete_without_where", "SQL DELETE without WHERE", &[]),
    danger("sql_truncate", "SQL TRUNCATE", &[]),
    danger(
        "system_file_redirect",
        "overwrite system file via redirection",
        &["overwrite system config"],
    ),
    danger("system_file_tee", "overwrite system file via tee", &[]),
    danger(
        "env_file_redirect",
        "overwrite project env/config via redirection",
        &[],
    ),
    danger("env_file_tee", "overwrite project env/config via tee", &[]),
    danger(
        "env_file_overwrite",
        "overwrite project env/config file",
        &[],
    ),
    danger(
        "sensitive_file_write",
        "overwrite sensitive credential/SSH/shell-rc file",
        &[],
    ),
    danger("service_stop", "stop/restart system service", &[]),
    danger(
        "force_kill",
        "force kill processes",
        &[
            "force kill processes (killall -KILL)",
            "force kill processes (killall -s KILL)",
        ],
    ),
    danger("killall_regex", "kill processes by regex (killall -r)", &[]),
    danger("pipe_remote_to_shell", "pipe remote content to shell", &[]),
    danger(
        "process_substitution_remote",
        "execute remote script via process substitution",
        &[],
    ),
    danger(
        "command_substitution_remote",
        "execute remote content via command substitution",
        &[],
    ),
    danger(
        "decoded_to_shell",
        "pipe decoded content to shell (possible command obfuscation)",
        &[],
    ),
    danger(
        "xxd_to_shell",
        "pipe xxd-decoded content to shell (possible command obfuscation)",
        &[],
    ),
    danger(
        "tr_to_shell",
        "pipe tr-transformed output to shell (possible command obfuscation)",
        &[],
    ),
    danger(
        "openssl_to_shell",
        "pipe openssl-decoded content to shell (possible command obfuscation)",
        &[],
    ),
    danger("xargs_rm", "xargs with rm", &[]),
    danger("find_exec_rm", "find -exec/-execdir rm", &[]),
    danger("find_delete", "find -delete", &[]),
    danger(
        "hermes_gateway_stop",
        "stop/restart hermes gateway (kills running agents)",
        &[],
    ),
    danger(
        "hermes_update",
        "hermes update (restarts gateway, kills running agents)",
        &[],
    ),
    danger(
        "gateway_outside_systemd",
        "start gateway outside systemd (use 'systemctl --user restart hermes-gateway')",
        &[],
    ),
    danger(
        "kill_hermes_process",
        "kill hermes/gateway process (self-termination)",
        &[],
    ),
    danger(
        "kill_via_pgrep",
        "kill process via pgrep/pidof expansion (self-termination)",
        &["kill process via backtick pgrep/pidof expansion (self-termination)"],
    ),
    danger(
        "hermes_launchd",
        "stop/restart hermes launchd service (kills running agents)",
        &[],
    ),
    danger(
        "docker_compose_lifecycle",
        "docker compose restart/stop/kill/down (container lifecycle)",
        &[],
    ),
    danger(
        "docker_lifecycle",
        "docker restart/stop/kill (container lifecycle)",
        &[],
    ),
    danger(
        "copy_into_system",
        "copy/move file into system config path",
        &[],
    ),
    danger(
        "copy_into_sensitive",
        "copy/move file into sensitive credential/SSH/shell-rc path",
        &[],
    ),
    danger(
        "sed_inplace_sensitive",
        "in-place edit of sensitive credential/SSH/shell-rc path",
        &[],
    ),
    danger("sed_inplace_system", "in-place edit of system config", &[]),
    danger(
        "sed_inplace_hermes",
        "in-place edit of Hermes config/env",
        &[],
    ),
    danger(
        "heredoc_exec",
        "shell execution via heredoc",
        &["script execution via heredoc"],
    ),
    danger(
        "git_reset_hard",
        "git reset --hard (destroys uncommitted changes)",
        &[],
    ),
    danger(
        "git_force_push",
        "git force push (rewrites remote history)",
        &["git force push short flag (rewrites remote history)"],
    ),
    danger(
        "git_clean_force",
        "git clean with force (deletes untracked files)",
        &[],
    ),
    danger("git_branch_force_delete", "git branch force delete", &[]),
    danger(
        "chmod_x_exec",
        "chmod +x followed by immediate execution",
        &[],
    ),
    danger(
        "sudo_privilege_flag",
        "sudo with privilege flag (stdin/askpass/shell)",
        &[
            "sudo with privilege flag (stdin/askpass/shell/list)",
            "sudo with combined-flag privilege escalation",
        ],
    ),
    danger("script_exec_flag", "script execution via -e/-c flag", &[]),
];

/// The other names (Python Hermes descriptions) a finding answers to in an allowlist.
pub(super) fn names_of(key: &str) -> impl Iterator<Item = &'static str> {
    CATALOG
        .iter()
        .filter(move |e| e.key == key)
        .flat_map(|e| std::iter::once(e.description).chain(e.legacy.iter().copied()))
}

fn finding(e: &Entry) -> Finding {
    Finding {
        key: e.key,
        description: e.description,
    }
}

/// Which text a regex reads (see `Views`).
#[derive(Clone, Copy)]
enum Scope {
    /// Each core simple command, starting at its command word.
    Cmd,
    /// Each whole command text, quotes removed.
    Flat,
    /// Each original command text.
    Raw,
    /// Flat and raw.
    Text,
}

struct Spec {
    key: &'static str,
    scope: Scope,
    /// All of these must match the same text.
    all: &'static [&'static str],
}

macro_rules! sys {
    () => {
        r"/(?:etc|boot|usr|bin|sbin|lib(?:32|64|x32)?|sys|proc/sys|var/spool/cron|private/etc)(?:/\S*)?"
    };
}
macro_rules! home {
    () => {
        r"(?:~|\$HOME|\$\{HOME\}|/home/[^/\s]+|/Users/[^/\s]+|/root)"
    };
}
macro_rules! sens {
    () => {
        concat!(
            home!(),
            r"/(?:\.ssh(?:/\S*)?|\.bashrc|\.bash_profile|\.bash_login|\.bash_logout|\.profile|\.zshrc|\.zprofile|\.zshenv|\.zlogin|\.config/fish/config\.fish|\.aws/\S+|\.gnupg(?:/\S*)?|\.netrc|\.pgpass|\.npmrc|\.pypirc|\.git-credentials|\.docker/config\.json|\.kube/config)"
        )
    };
}
macro_rules! hermes_cfg {
    () => {
        concat!(
            r"(?:",
            home!(),
            r"/\.hermes|\$HERMES_HOME|\$\{HERMES_HOME\})/(?:config\.yaml|\.env)"
        )
    };
}
macro_rules! env_file {
    () => {
        concat!(
            r"(?:(?:\S*/)?\.env(?:\.[\w.-]+)?|(?:\S*/)?\.envrc|",
            hermes_cfg!(),
            ")"
        )
    };
}
/// SQL only counts where something runs it: a client, or code calling `execute` / `query`.
/// (`grep -r "DROP TABLE" migrations/` is a search, not a statement.)
macro_rules! sql_context {
    () => {
        r"(?i)\b(?:psql|pg_\w+|mysql|mariadb|sqlite3?|sqlcmd|clickhouse(?:-client)?|duckdb|cockroach|cqlsh|pgcli|mycli|litecli|usql|snowsql|bq|execute|executescript|executemany|exec_driver_sql|query|raw)\b"
    };
}
macro_rules! redir {
    () => {
        r"(?:^|\s)(?:\d*>>?|\d*>\||&>>?|\d*<>)\s+"
    };
}
macro_rules! end {
    () => {
        r"(?:\s|$)"
    };
}
macro_rules! to_interp {
    () => {
        r"\|\s*(?:sudo\s+(?:-\S+\s+)*)?(?:env\s+)?(?:\S*/)?(?:(?:ba|z|da|k|mk|fi|c|tc)?sh|python[\d.]*|pypy[\d.]*|perl|ruby|node|php)(?:\s|$)"
    };
}
macro_rules! git {
    () => {
        r"^git\s+(?:(?:-C|-c|--git-dir|--work-tree|--namespace|--exec-path)\s+\S+\s+|-\S+\s+)*"
    };
}
macro_rules! editor {
    () => {
        r"^(?:sed|gsed|perl|ruby)\s"
    };
}
macro_rules! inplace {
    () => {
        r"\s(?:-[a-zA-Z]*i\S*|--in-place\S*)(?:\s|$)"
    };
}
macro_rules! copy_into {
    ($dest:expr) => {
        concat!(
            r"^(?:cp|mv|install|rsync|ln)\s(?:(?:.*\s)?(?:-t\s*|--target-directory[=\s])",
            $dest,
            r"(?:\s|$)|(?:.*\s)?",
            $dest,
            "$)"
        )
    };
}

const SPECS: &[Spec] = &[
    Spec {
        key: "windows_destructive_delete",
        scope: Scope::Cmd,
        all: &[r"(?i)^(?:cmd(?:\.exe)?\s+/[ck]\s+)?(?:del|erase|rd|rmdir)\s(?:.*\s)?/[sq](?:\s|$)"],
    },
    Spec {
        key: "powershell_destructive_delete",
        scope: Scope::Raw,
        all: &[r"(?i)\bremove-item\b", r"(?i)\s-r(?:ecurse)?\b"],
    },
    Spec {
        key: "powershell_encoded_command",
        scope: Scope::Raw,
        all: &[r"(?i)\b(?:powershell|pwsh)(?:\.exe)?\b.*\s-e(?:c|nc\w*)?\s"],
    },
    Spec {
        key: "world_writable",
        scope: Scope::Cmd,
        all: &[concat!(
            r"^chmod\s+(?:-\S+\s+)*(?:[0-7]?[0-7][0-7][2367]|(?:\S*,)?[ugo]*[oa][ugoa]*[+=][rwxXst]*w\S*)",
            end!()
        )],
    },
    Spec {
        key: "disk_copy",
        scope: Scope::Cmd,
        all: &[r"^dd\s(?:.*\s)?(?:if|of)="],
    },
    Spec {
        key: "sql_drop",
        scope: Scope::Raw,
        all: &[r"(?i)\bdrop\s+(?:table|database|schema)\b", sql_context!()],
    },
    Spec {
        key: "sql_truncate",
        scope: Scope::Raw,
        all: &[
            r#"(?i)\btruncate\s+(?:table\s+\S|[\w.`"]+\s*;)"#,
            sql_context!(),
        ],
    },
    Spec {
        key: "system_file_redirect",
        scope: Scope::Flat,
        all: &[concat!(redir!(), sys!(), end!())],
    },
    Spec {
        key: "system_file_tee",
        scope: Scope::Cmd,
        all: &[concat!(r"^tee\s+(?:\S+\s+)*?", sys!(), end!())],
    },
    Spec {
        key: "env_file_redirect",
        scope: Scope::Flat,
        all: &[concat!(redir!(), env_file!(), end!())],
    },
    Spec {
        key: "env_file_tee",
        scope: Scope::Cmd,
        all: &[concat!(r"^tee\s+(?:\S+\s+)*?", env_file!(), end!())],
    },
    Spec {
        key: "env_file_overwrite",
        scope: Scope::Cmd,
        all: &[concat!(
            r"^(?:cp|mv|install|ln)\s(?:.*\s)?",
            env_file!(),
            "$"
        )],
    },
    Spec {
        key: "sensitive_file_write",
        scope: Scope::Flat,
        all: &[concat!(redir!(), sens!(), end!())],
    },
    Spec {
        key: "sensitive_file_write",
        scope: Scope::Cmd,
        all: &[concat!(r"^tee\s+(?:\S+\s+)*?", sens!(), end!())],
    },
    Spec {
        key: "service_stop",
        scope: Scope::Cmd,
        all: &[
            r"^(?:systemctl\s+(?:-\S+\s+)*(?:stop|restart|kill|disable|mask|isolate|try-restart|reload-or-restart)|service\s+\S+\s+(?:stop|restart|force-stop|force-reload)|rc-service\s+\S+\s+(?:stop|restart)|launchctl\s+(?:stop|unload|bootout|remove))(?:\s|$)",
        ],
    },
    Spec {
        key: "force_kill",
        scope: Scope::Cmd,
        all: &[
            r"^(?:kill|pkill|killall)\s+(?:\S+\s+)*?(?:-(?i:9|KILL|SIGKILL)|-s\s+(?i:9|KILL|SIGKILL)|--signal[=\s](?i:9|KILL|SIGKILL))(?:\s|$)",
        ],
    },
    Spec {
        key: "killall_regex",
        scope: Scope::Cmd,
        all: &[r"^killall\s+(?:\S+\s+)*?(?:-[a-zA-Z]*r[a-zA-Z]*|--regexp)(?:\s|$)"],
    },
    Spec {
        key: "pipe_remote_to_shell",
        scope: Scope::Flat,
        all: &[concat!(r"\b(?:curl|wget|fetch)\b[^;&]*", to_interp!())],
    },
    Spec {
        key: "process_substitution_remote",
        scope: Scope::Text,
        all: &[
            r"(?:^|[;&|(]\s*|\s)(?:source|\.|(?:\S*/)?(?:ba|z|da|k)?sh)\s+(?:-\S+\s+)*<\(\s*(?:curl|wget)\b",
        ],
    },
    Spec {
        key: "command_substitution_remote",
        scope: Scope::Text,
        all: &[
            r#"(?:\beval\s+|\b(?:ba|z|da|k)?sh\s+(?:-\S+\s+)*-\w*c\s+|(?:^|[;&|]\s*))["']?(?:\$\(|`)\s*(?:curl|wget)\b"#,
        ],
    },
    Spec {
        key: "decoded_to_shell",
        scope: Scope::Flat,
        all: &[concat!(
            r"\bbase64\b[^;&|]*\s(?:-d|-D|--decode|-\w*d)\b[^;&]*",
            to_interp!()
        )],
    },
    Spec {
        key: "xxd_to_shell",
        scope: Scope::Flat,
        all: &[concat!(r"\bxxd\b[^;&|]*\s-\w*r\w*\b[^;&]*", to_interp!())],
    },
    Spec {
        key: "tr_to_shell",
        scope: Scope::Flat,
        all: &[concat!(r"(?:^|[|;&]\s*)tr\s[^;&]*", to_interp!())],
    },
    Spec {
        key: "openssl_to_shell",
        scope: Scope::Flat,
        all: &[concat!(
            r"\bopenssl\b[^;&|]*\s(?:-d|enc|base64|-base64)\b[^;&]*",
            to_interp!()
        )],
    },
    Spec {
        key: "xargs_rm",
        scope: Scope::Cmd,
        all: &[r"^xargs\s(?:.*\s)?(?:\S*/)?rm(?:\s|$)"],
    },
    Spec {
        key: "find_exec_rm",
        scope: Scope::Cmd,
        all: &[r"^find\s(?:.*\s)?-(?:exec|execdir|ok|okdir)\s+(?:\S*/)?rm(?:\s|$)"],
    },
    Spec {
        key: "find_delete",
        scope: Scope::Cmd,
        all: &[r"^find\s(?:.*\s)?-delete(?:\s|$)"],
    },
    Spec {
        key: "hermes_gateway_stop",
        scope: Scope::Cmd,
        all: &[r"^hermes\s+(?:-\S+\s+)*gateway\s+(?:stop|restart|update|kill)(?:\s|$)"],
    },
    Spec {
        key: "hermes_update",
        scope: Scope::Cmd,
        all: &[r"^hermes\s+(?:-\S+\s+)*update(?:\s|$)"],
    },
    Spec {
        key: "gateway_outside_systemd",
        scope: Scope::Flat,
        all: &[r"\bhermes\s+gateway\s+run\b[^;|&]*\s&(?:\s|$)"],
    },
    Spec {
        key: "gateway_outside_systemd",
        scope: Scope::Flat,
        all: &[r"\b(?:nohup|setsid|disown|screen|tmux)\b[^;|&]*\bhermes\s+gateway\s+run\b"],
    },
    Spec {
        key: "kill_hermes_process",
        scope: Scope::Cmd,
        all: &[r"^(?:pkill|killall)\s+(?:-\S+\s+)*\S*(?:hermes|gateway)"],
    },
    Spec {
        key: "kill_via_pgrep",
        scope: Scope::Raw,
        all: &[r"\bkill\b[^;|&\n]*(?:\$\(|`)\s*(?:pgrep|pidof)\b[^)`]*(?:hermes|gateway)"],
    },
    Spec {
        key: "hermes_launchd",
        scope: Scope::Cmd,
        all: &[r"^launchctl\s+(?:stop|unload|bootout|remove|kickstart)\s.*hermes"],
    },
    Spec {
        key: "docker_compose_lifecycle",
        scope: Scope::Cmd,
        all: &[
            r"^(?:(?:docker|podman)\s+(?:.*\s)?compose|docker-compose|podman-compose)\s(?:.*\s)?(?:restart|stop|kill|down)(?:\s|$)",
        ],
    },
    Spec {
        key: "docker_lifecycle",
        scope: Scope::Cmd,
        all: &[
            r"^(?:docker|podman)\s+(?:(?:-H|--host|--context|-c|--config|-l|--log-level)\s+\S+\s+|-\S+\s+)*(?:container\s+)?(?:restart|stop|kill)(?:\s|$)",
        ],
    },
    Spec {
        key: "copy_into_system",
        scope: Scope::Cmd,
        all: &[copy_into!(sys!())],
    },
    Spec {
        key: "copy_into_sensitive",
        scope: Scope::Cmd,
        all: &[copy_into!(sens!())],
    },
    Spec {
        key: "sed_inplace_sensitive",
        scope: Scope::Cmd,
        all: &[editor!(), inplace!(), concat!(r"\s", sens!(), end!())],
    },
    Spec {
        key: "sed_inplace_system",
        scope: Scope::Cmd,
        all: &[editor!(), inplace!(), concat!(r"\s", sys!(), end!())],
    },
    Spec {
        key: "sed_inplace_hermes",
        scope: Scope::Cmd,
        all: &[editor!(), inplace!(), concat!(r"\s", hermes_cfg!(), end!())],
    },
    Spec {
        key: "git_reset_hard",
        scope: Scope::Cmd,
        all: &[concat!(git!(), r"reset\s(?:.*\s)?--hard(?:\s|$)")],
    },
    Spec {
        key: "git_force_push",
        scope: Scope::Cmd,
        all: &[
            concat!(git!(), r"push(?:\s|$)"),
            r"\s(?:--force(?:-with-lease|-if-includes)?(?:=\S*)?|-[a-zA-Z]*f[a-zA-Z]*|\+\S+)(?:\s|$)",
        ],
    },
    Spec {
        key: "git_clean_force",
        scope: Scope::Cmd,
        all: &[
            concat!(git!(), r"clean(?:\s|$)"),
            r"\s(?:-[a-zA-Z]*f[a-zA-Z]*|--force)(?:\s|$)",
        ],
    },
    Spec {
        key: "git_branch_force_delete",
        scope: Scope::Cmd,
        all: &[
            concat!(git!(), r"branch(?:\s|$)"),
            r"\s-[a-zA-Z]*D[a-zA-Z]*(?:\s|$)|\s-[a-zA-Z]*(?:df|fd)[a-zA-Z]*(?:\s|$)|\s(?:-d|--delete)\s(?:.*\s)?(?:-f|--force)(?:\s|$)|\s(?:-f|--force)\s(?:.*\s)?(?:-d|--delete)(?:\s|$)",
        ],
    },
    Spec {
        key: "chmod_x_exec",
        scope: Scope::Flat,
        all: &[
            r"\bchmod\s+(?:-\S+\s+)*[ugoa]*\+[rwxXst]*x\S*\s+\S+(?:\s+\S+)*?\s+(?:;|&&|\|\||&)\s+(?:sudo\s+)?(?:\./|/|~/|(?:ba|z|da|k)?sh\s|source\s|\.\s)",
        ],
    },
];

struct Compiled {
    key: &'static str,
    scope: Scope,
    all: Vec<Regex>,
}

static COMPILED: LazyLock<Vec<Compiled>> = LazyLock::new(|| {
    SPECS
        .iter()
        .filter_map(|s| {
            let all: Result<Vec<Regex>, _> = s.all.iter().map(|p| Regex::new(p)).collect();
            match all {
                Ok(all) => Some(Compiled { key: s.key, scope: s.scope, all }),
                Err(e) => {
                    // A broken built-in pattern is a bug caught by the unit tests; never panic here.
                    tracing::error!(key = s.key, error = %e, "dangerous-command pattern does not compile");
                    None
                }
            }
        })
        .collect()
});

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
static SQL_CONTEXT: LazyLock<Option<Regex>> = LazyLock::new(|| re(sql_context!()));

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
    if let Some(rest) = home_rest {
        if rest.is_empty() || rest.starts_with('/') {
            return if rest.split('/').all(|c| matches!(c, "" | "." | ".." | "*")) {
                Target::Home
            } else {
                Target::Other
            };
        }
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
    for c in COMPILED.iter() {
        if hit.contains(c.key) {
            continue;
        }
        let texts: Box<dyn Iterator<Item = &String>> = match c.scope {
            Scope::Cmd => Box::new(views.lines.iter()),
            Scope::Flat => Box::new(views.flats.iter()),
            Scope::Raw => Box::new(views.raws.iter()),
            Scope::Text => Box::new(views.flats.iter().chain(views.raws.iter())),
        };
        let mut texts = texts;
        if texts.any(|t| c.all.iter().all(|r| r.is_match(t))) {
            hit.insert(c.key);
        }
    }
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

#[cfg(test)]
pub(super) fn spec_keys() -> Vec<&'static str> {
    SPECS.iter().map(|s| s.key).collect()
}

#[cfg(test)]
pub(super) fn compiled_count() -> (usize, usize) {
    (COMPILED.len(), SPECS.len())
}
