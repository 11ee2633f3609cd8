//! The catalogue of findings: every stable pattern key with its description.
//!
//! Keys are snake_case ids (what `command_allowlist` and session approvals store). Descriptions
//! follow Python Hermes' wording, and `legacy` lists the Python descriptions a key absorbed, so
//! an allowlist written by Python Hermes (which stores descriptions) keeps working.

/// How a finding is treated: the three verdicts of the classifier (plus "safe" = no finding).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// The hardline floor: refused in every mode, whatever `--yolo` or the allowlist say.
    Floor,
    /// Dangerous for a named reason: asked about, refused where no one can answer.
    Dangerous,
    /// What runs depends on text produced at run time, so the analyser cannot say what it
    /// does. Treated exactly like `Dangerous`; the message says why.
    CannotVerify,
}

/// One reason a command is dangerous (or cannot be verified).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Finding {
    /// Stable snake_case id (what allowlists and session approvals store).
    pub key: &'static str,
    /// Short human description.
    pub description: &'static str,
    pub kind: Kind,
}

pub(super) struct Entry {
    pub(super) key: &'static str,
    pub(super) description: &'static str,
    /// Python Hermes descriptions this key also answers to in `command_allowlist`.
    pub(super) legacy: &'static [&'static str],
    pub(super) kind: Kind,
}

const fn hard(key: &'static str, description: &'static str) -> Entry {
    Entry {
        key,
        description,
        legacy: &[],
        kind: Kind::Floor,
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
        kind: Kind::Dangerous,
    }
}
const fn opaque(key: &'static str, description: &'static str) -> Entry {
    Entry {
        key,
        description,
        legacy: &[],
        kind: Kind::CannotVerify,
    }
}

/// Every key, hardline first; findings are reported in this order.
pub(super) const CATALOG: &[Entry] = &[
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
    hard(
        "move_protected_dir",
        "move away the root filesystem, a system directory or the home directory",
    ),
    hard(
        "recursive_perm_protected",
        "recursive chmod/chown of the root filesystem, a system directory or the home directory",
    ),
    hard(
        "wipe_block_device",
        "wipe, discard, partition or overwrite a raw block device",
    ),
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
    danger(
        "truncate_system_file",
        "truncate a system or sensitive file",
        &[],
    ),
    danger(
        "git_push_mirror",
        "git push --mirror (overwrites or deletes every remote ref)",
        &[],
    ),
    danger(
        "git_push_delete",
        "git push deleting a remote branch or tag",
        &[],
    ),
    Entry {
        key: "script_exec_flag",
        description: "interpreter code (-c/-e) whose effect the analyser cannot read",
        legacy: &["script execution via -e/-c flag"],
        kind: Kind::CannotVerify,
    },
    opaque(
        "uninspectable_nesting",
        "command nested too deeply to inspect",
    ),
    opaque(
        "dynamic_command_word",
        "the command name is produced at run time ($(…), backticks or a variable in command position)",
    ),
    opaque("eval_dynamic", "eval of text produced at run time"),
    opaque(
        "generated_to_shell",
        "text produced at run time is piped or fed into a shell or interpreter",
    ),
    opaque(
        "run_written_file",
        "runs a script written or downloaded by the same command",
    ),
    opaque(
        "function_runs_args",
        "a function or alias runs its arguments as a command",
    ),
    opaque(
        "ifs_change",
        "changes IFS, so the words that run cannot be read from the text",
    ),
    opaque(
        "positional_exec",
        "runs positional parameters as a command (set -- … then \"$@\")",
    ),
];

/// The other names (Python Hermes descriptions) a finding answers to in an allowlist.
pub(super) fn names_of(key: &str) -> impl Iterator<Item = &'static str> {
    CATALOG
        .iter()
        .filter(move |e| e.key == key)
        .flat_map(|e| std::iter::once(e.description).chain(e.legacy.iter().copied()))
}

pub(super) fn finding(e: &Entry) -> Finding {
    Finding {
        key: e.key,
        description: e.description,
        kind: e.kind,
    }
}
