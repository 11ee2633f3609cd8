//! The dangerous-command regexes: which view each reads and what must match, compiled once.
//!
//! Scopes (see `normalize::Views`): `Cmd` reads each core simple command from its command word
//! (wrappers stripped), `Flat` the whole de-quoted command line (pipes, redirections), `Raw` the
//! original text, `Text` both flat and raw. Every regex in `all` must match the same text.

use std::sync::LazyLock;

use regex::Regex;

use super::normalize::Views;

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
        key: "git_push_mirror",
        scope: Scope::Cmd,
        all: &[concat!(git!(), r"push\s(?:.*\s)?--mirror(?:\s|$)")],
    },
    Spec {
        key: "git_push_delete",
        scope: Scope::Cmd,
        all: &[
            concat!(git!(), r"push(?:\s|$)"),
            r"\s(?:--delete|-d|--prune)(?:\s|$)|\s\+?:\S+",
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

/// SQL counts only where something runs it (shared with the DELETE-without-WHERE check).
pub(super) static SQL_CONTEXT: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(sql_context!()).ok());

/// Keys of every spec matching `views`, skipping keys already in `hit`.
pub(super) fn matching_keys(views: &Views, hit: &mut std::collections::HashSet<&'static str>) {
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
}

#[cfg(test)]
pub(super) fn spec_keys() -> Vec<&'static str> {
    SPECS.iter().map(|s| s.key).collect()
}

#[cfg(test)]
pub(super) fn compiled_count() -> (usize, usize) {
    (COMPILED.len(), SPECS.len())
}
