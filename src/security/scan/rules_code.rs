//! Rules for what skill code and instructions do to the machine: destructive commands,
//! persistence, network listeners and reverse shells, obfuscation, process execution, path
//! traversal, mining, supply chain (downloads run unseen) and privilege escalation. They apply
//! to skill files only: the same words in a memory entry or an AGENTS.md are descriptions, not
//! actions, and the prose and exfiltration rules cover what matters there.
//!
//! Ids and categories follow Python Hermes' skills guard (reference §9.5); the expressions and
//! several severities are ours. Severity is about what a line can do, not about how unusual it
//! is: `sudo apt install` or `pip install x` in installation notes is ordinary (medium, noted),
//! piping an unpinned download into a shell is high, deleting `/` is critical.
//!
//! Precision on real skills (the 177 official Python Hermes skills are the yardstick): a rule
//! matches what a line *does*, not a word it mentions. A tunnel is a tunnel command
//! (`ngrok http 8080`), not the word "cloudflared" in a sentence; a pipe into Python is code
//! only when Python reads its program from the pipe (`| python3 -m json.tool` parses data);
//! another agent's settings file counts when written, not when listed; `.exec(` on an object
//! is a method, not Python's `exec`.

use super::engine::{Check, Rule};
use super::reach::SKILL;
use super::{Category as C, Severity as S};

macro_rules! rule {
    ($id:literal, $sev:ident, $cat:ident, $re:expr, $desc:literal) => {
        rule!($id, $sev, $cat, $re, $desc, None)
    };
    ($id:literal, $sev:ident, $cat:ident, $re:expr, $desc:literal, $check:expr) => {
        Rule {
            id: $id,
            severity: S::$sev,
            category: C::$cat,
            reach: SKILL,
            regex: $re,
            description: $desc,
            check: $check,
        }
    };
}

/// `sandbox.exec("python", …)` or `cursor.exec(…)` is a method of some object, not the
/// language's `exec`/`eval` of a string.
fn not_a_method(_matched: &[u8], before: &[u8], _after: &[u8]) -> Check {
    let lower = before.to_ascii_lowercase();
    if lower.ends_with(b"builtins.") || lower.ends_with(b"builtins__.") {
        // `builtins.exec(...)` is the language's exec under another name.
        return Check::Keep;
    }
    match before.last() {
        Some(b'.') => Check::Drop,
        _ => Check::Keep,
    }
}

/// A download piped into Python is code only when Python reads its program from the pipe:
/// `| python3` or `| python3 -`. With `-c '…'`, `-m json.tool` or a script file, the download
/// is the program's input data — unless the `-c` program executes what it reads.
fn python_reads_program(matched: &[u8], _before: &[u8], _after: &[u8]) -> Check {
    let text = String::from_utf8_lossy(matched).to_ascii_lowercase();
    let Some(at) = text.find("| python").or_else(|| text.find("|python")) else {
        return Check::Keep;
    };
    let tail = &text[at..];
    let Some(start) = tail.find("python") else {
        return Check::Keep;
    };
    let tail = &tail[start..];
    let args = tail.split_whitespace().skip(1);
    for arg in args {
        if arg == "-" {
            return Check::Keep;
        }
        if arg.starts_with("-c") {
            let runs_input = ["exec(", "eval(", "compile("]
                .iter()
                .any(|f| tail.contains(f));
            return if runs_input { Check::Keep } else { Check::Drop };
        }
        if arg.starts_with("-m") {
            return Check::Drop;
        }
        if arg.contains(['>', '<']) {
            break;
        }
        if !arg.starts_with('-') {
            // A script file: it gets the download on stdin.
            return Check::Drop;
        }
    }
    Check::Keep
}

pub(super) const RULES: &[Rule] = &[
    rule!(
        "destructive_root_rm",
        Critical,
        Destructive,
        r"\brm\s+(-[a-zA-Z]+\s+)*-[a-zA-Z]*[rRf][a-zA-Z]*\s+(--no-preserve-root\s+)?/\*?(\s|$|;|&|\x60)",
        "deletes the root filesystem"
    ),
    rule!(
        "destructive_home_rm",
        Critical,
        Destructive,
        r"\brm\s+(-[a-zA-Z]+\s+)*-[a-zA-Z]*[rR][a-zA-Z]*\s+(~|\$HOME|\$\{HOME\})/?\*?(\s|$|;|&|\x60)",
        "deletes the home directory"
    ),
    rule!(
        "system_overwrite",
        Critical,
        Destructive,
        r">\s*/etc/(passwd|shadow|sudoers|hosts|fstab)\b|\b(cp|mv)\s+[^\n]*\s/etc/(passwd|shadow|sudoers)\b",
        "overwrites a system file"
    ),
    rule!(
        "format_filesystem",
        Critical,
        Destructive,
        r"\bmkfs(\.\w+)?\s+[^\n]*/dev/",
        "formats a disk"
    ),
    rule!(
        "disk_overwrite",
        Critical,
        Destructive,
        r"\bdd\s+[^\n]*\bof=/dev/(sd|nvme|hd|disk|mmcblk|vd)|>\s*/dev/(sd[a-z]|nvme\d|disk\d)",
        "writes raw bytes over a disk"
    ),
    rule!(
        "truncate_system",
        Critical,
        Destructive,
        r"(\btruncate\s+-s\s*0\s+|:\s*>\s*)/(etc|boot|var/log)/",
        "truncates system files"
    ),
    rule!(
        "python_rmtree",
        Medium,
        Destructive,
        r"\bshutil\.rmtree\s*\(",
        "recursive delete from Python"
    ),
    rule!(
        "insecure_perms",
        Medium,
        Destructive,
        r"\bchmod\s+(-R\s+)?(0?777|a\+rwx|o\+w)\b",
        "world-writable permissions"
    ),
    rule!(
        "ssh_backdoor",
        High,
        Persistence,
        r"(>>?|\btee\s+(-a\s+)?)\s*\S*authorized_keys\b",
        "adds an SSH key to authorized_keys"
    ),
    rule!(
        "sudoers_mod",
        Critical,
        Persistence,
        r"(>>?|\btee\s+(-a\s+)?)\s*/etc/sudoers|\bvisudo\b|/etc/sudoers\.d/",
        "changes sudoers"
    ),
    rule!(
        "agent_config_mod",
        High,
        Persistence,
        r"\b(write|edit|modify|append|overwrite|update|change)\s+([\w']+\s+){0,6}(AGENTS\.md|CLAUDE\.md|\.cursorrules|\.clinerules)\b|(>>?|\btee\s)\s*\S*(AGENTS\.md|CLAUDE\.md|\.cursorrules|\.clinerules)\b",
        "rewrites another agent's instructions"
    ),
    rule!(
        "hermes_config_mod",
        High,
        Persistence,
        r"\b(write|edit|modify|append|overwrite|change)\s+(\w+\s+){0,4}\S*\.hermes/(config\.yaml|SOUL\.md)|(>>?|\btee\s)\s*\S*\.hermes/(config\.yaml|SOUL\.md)",
        "rewrites Hermes' own configuration"
    ),
    rule!(
        "other_agent_config",
        High,
        Persistence,
        r"(?:>>?|\btee\b[^\n]*|\b(?:write|edit|modify|overwrite|append\s+to|update|change|replace)\s+(?:[\w`'\x22]+\s+){0,6}?|\b(?:cp|mv|ln|install)\s[^\n]*|\bsed\s+-i[^\n]*|write_text\s*\(\s*|writefile(?:sync)?\s*\(\s*)\s*[`'\x22]?[^\s`'\x22]*(?:\.claude/settings(?:\.local)?\.json|\.codex/config\.toml|\.cursor/mcp\.json|\.gemini/settings\.json)",
        "writes another agent's configuration"
    ),
    rule!(
        "persistence_cron",
        Medium,
        Persistence,
        r"\bcrontab\s+-|/etc/cron\.(d|daily|hourly|weekly)\b",
        "installs a cron job"
    ),
    rule!(
        "shell_rc_mod",
        Medium,
        Persistence,
        r"(>>|\btee\s+-a)\s*\S*(\.bashrc|\.zshrc|\.profile|\.bash_profile)\b",
        "appends to a shell startup file"
    ),
    rule!(
        "ssh_keygen",
        Medium,
        Persistence,
        r"\bssh-keygen\b",
        "creates SSH keys"
    ),
    rule!(
        "systemd_service",
        Medium,
        Persistence,
        r"\bsystemctl\s+(--user\s+)?enable\b|/etc/systemd/system/\S+\.service",
        "installs a systemd service"
    ),
    rule!(
        "init_script",
        Medium,
        Persistence,
        r"/etc/init\.d/|/etc/rc\.local\b|\bupdate-rc\.d\b",
        "installs an init script"
    ),
    rule!(
        "macos_launchd",
        Medium,
        Persistence,
        r"\bLaunch(Agents|Daemons)\b|\blaunchctl\s+(load|bootstrap)\b",
        "installs a launchd job"
    ),
    rule!(
        "git_config_global",
        Medium,
        Persistence,
        r"\bgit\s+config\s+--global\b",
        "changes global git configuration"
    ),
    rule!(
        "reverse_shell",
        Critical,
        Network,
        r"\b(nc|ncat|netcat)\b[^\n]*\s-[a-z]*e\s+(/bin/)?(ba|z)?sh\b|\bsocat\b[^\n]*\bexec:",
        "reverse shell"
    ),
    rule!(
        "bash_reverse_shell",
        Critical,
        Network,
        r"/dev/tcp/[\w.$\-{}]+/\d+|\bbash\s+-i\s+>&",
        "bash reverse shell"
    ),
    rule!(
        "python_socket_oneliner",
        Critical,
        Network,
        r"\bpython[23]?\s+-c\s+['\x22][^\n]*\bsocket\b[^\n]*\b(connect|pty|subprocess|dup2)\b",
        "Python socket one-liner"
    ),
    rule!(
        "tunnel_service",
        High,
        Network,
        r"\bngrok\s+(?:http|tcp|tls|start|tunnel)\b|\bcloudflared\s+tunnel\s+(?:--|run\b|create\b|route\b)|\b(?:lt|localtunnel)\s+--(?:port|subdomain)\b|\bnpx\s+localtunnel\b|\bssh\b[^\n]*\s-R\s*\S+[^\n]*\b(?:serveo\.net|localhost\.run|pinggy\.io|bore\.pub)\b|\bbore\s+local\b",
        "exposes the machine through a tunnel"
    ),
    rule!(
        "bind_all_interfaces",
        Medium,
        Network,
        r"\b0\.0\.0\.0:\d+|--(host|bind)[= ]0\.0\.0\.0\b|bind\(\s*\(\s*['\x22]0\.0\.0\.0",
        "listens on every interface"
    ),
    rule!(
        "python_socket_connect",
        High,
        Network,
        r"\bsocket\.socket\([^\n]*\)[^\n]*\.connect\(|\.connect\(\s*\(\s*['\x22]\d{1,3}(\.\d{1,3}){3}['\x22]",
        "raw socket connection"
    ),
    rule!(
        "hardcoded_ip_port",
        Medium,
        Network,
        r"\b\d{1,3}(\.\d{1,3}){3}:\d{2,5}\b",
        "hard-coded IP address and port"
    ),
    rule!(
        "paste_service",
        Medium,
        Network,
        r"\b(pastebin\.com|paste\.ee|hastebin|ghostbin|0x0\.st|transfer\.sh|termbin\.com)\b",
        "paste service"
    ),
    rule!(
        "echo_pipe_exec",
        Critical,
        Obfuscation,
        r"\becho\s+[^\n|]*\|\s*(base64\s+(-d|--decode)\s*\|\s*)?(ba|z|da)?sh\b",
        "pipes text into a shell"
    ),
    rule!(
        "base64_decode_pipe",
        High,
        Obfuscation,
        r"\bbase64\s+(-d|--decode)\b[^\n|]*\|",
        "decodes base64 into another command"
    ),
    rule!(
        "eval_string",
        High,
        Obfuscation,
        r"\beval\s*\(\s*(['\x22]|atob|base64|b64decode|unescape|String\.fromCharCode|bytes\.fromhex)",
        "evaluates a string",
        Some(not_a_method)
    ),
    rule!(
        "exec_string",
        High,
        Obfuscation,
        r"\bexec\s*\(\s*(['\x22]|base64|b64decode|compile|bytes|codecs|zlib)",
        "executes a string",
        Some(not_a_method)
    ),
    rule!(
        "python_compile_exec",
        High,
        Obfuscation,
        r"\bcompile\s*\([^\n]*['\x22]exec['\x22]\s*\)",
        "compiles code from a string"
    ),
    rule!(
        "python_getattr_builtins",
        High,
        Obfuscation,
        r"\bgetattr\s*\(\s*(__builtins__|builtins)\b|__builtins__\s*(\[|\.__dict__)",
        "reaches builtins indirectly"
    ),
    rule!(
        "python_import_os",
        High,
        Obfuscation,
        r"__import__\s*\(\s*['\x22](os|subprocess|pty|socket)['\x22]",
        "dynamic import of a system module"
    ),
    rule!(
        "chr_building",
        High,
        Obfuscation,
        r"(\bchr\s*\(\s*\d+\s*\)\s*\+\s*){3,}",
        "builds a string from character codes"
    ),
    rule!(
        "hex_encoded_string",
        Medium,
        Obfuscation,
        r"(\\x[0-9a-fA-F]{2}){8,}",
        "long hex-escaped string"
    ),
    rule!(
        "python_codecs_decode",
        Medium,
        Obfuscation,
        r"\bcodecs\.decode\s*\([^\n]*(rot13|rot_13|hex)",
        "codecs decoding"
    ),
    rule!(
        "js_char_code",
        Medium,
        Obfuscation,
        r"\bString\.fromCharCode\s*\(\s*\d+\s*(,\s*\d+\s*){3,}",
        "builds a string from character codes"
    ),
    rule!(
        "js_base64",
        Medium,
        Obfuscation,
        r"\batob\s*\(\s*['\x22][A-Za-z0-9+/=]{16,}",
        "decodes base64 in JavaScript"
    ),
    rule!(
        "unicode_escape_chain",
        Medium,
        Obfuscation,
        r"(\\u[0-9a-fA-F]{4}){6,}",
        "long unicode-escaped string"
    ),
    rule!(
        "string_reversal",
        Low,
        Obfuscation,
        r"\.split\(\s*['\x22]{2}\s*\)\.reverse\(\)\.join|\[::-1\]\s*\)",
        "reversed string"
    ),
    rule!(
        "python_os_system",
        Medium,
        Execution,
        r"\bos\.system\s*\(",
        "os.system"
    ),
    rule!(
        "python_os_popen",
        Medium,
        Execution,
        r"\bos\.popen\s*\(",
        "os.popen"
    ),
    rule!(
        "node_child_process",
        Medium,
        Execution,
        r"\brequire\s*\(\s*['\x22](node:)?child_process['\x22]\s*\)|\bfrom\s+['\x22](node:)?child_process['\x22]",
        "Node child_process"
    ),
    rule!(
        "java_runtime_exec",
        Medium,
        Execution,
        r"\bRuntime\.getRuntime\(\)\.exec\s*\(",
        "Java Runtime.exec"
    ),
    rule!(
        "python_subprocess",
        Medium,
        Execution,
        r"\bsubprocess\.(run|call|Popen|check_output|check_call)\s*\(",
        "subprocess"
    ),
    rule!(
        "backtick_subshell",
        Medium,
        Execution,
        r"=\s*\x60[^\x60\n]+\x60",
        "backtick command substitution"
    ),
    // /etc/passwd is world-readable (names, not secrets): noted. Reading the password hashes
    // is `shadow_access` (critical).
    rule!(
        "system_passwd_access",
        Medium,
        Traversal,
        r"/etc/(passwd|shadow|gshadow|master\.passwd)\b",
        "names the system account database"
    ),
    rule!(
        "path_traversal_deep",
        High,
        Traversal,
        r"(\.\./){3,}",
        "climbs three or more directories"
    ),
    rule!(
        "path_traversal",
        Medium,
        Traversal,
        r"\.\./\.\./",
        "climbs out of the directory"
    ),
    rule!(
        "dev_shm",
        Medium,
        Traversal,
        r"/dev/shm/",
        "uses shared memory as a staging area"
    ),
    rule!(
        "crypto_mining",
        Critical,
        Mining,
        r"\b(xmrig|cpuminer|minerd|cgminer|bfgminer|ethminer|nbminer|lolminer|phoenixminer)\b|\bstratum\+tcp://",
        "cryptocurrency miner"
    ),
    rule!(
        "mining_indicators",
        Medium,
        Mining,
        r"\b(monero|hashrate|mining\s+pool|mining\s+rig)\b",
        "mining vocabulary"
    ),
    rule!(
        "curl_pipe_shell",
        High,
        SupplyChain,
        // A URL, a host or a variable to download from: `curl ... | bash` naming the pattern
        // in a table of blocked commands downloads nothing.
        r"\bcurl\b[^\n|]*(?:https?://|\b[\w-]+(?:\.[\w-]+)*\.[a-z]{2,}\b|\$\{?\w)[^\n|]*\|\s*(sudo\s+)?(ba|z|da)?sh\b",
        "pipes a download into a shell"
    ),
    rule!(
        "wget_pipe_shell",
        High,
        SupplyChain,
        r"\bwget\b[^\n|]*(?:https?://|\b[\w-]+(?:\.[\w-]+)*\.[a-z]{2,}\b|\$\{?\w)[^\n|]*\|\s*(sudo\s+)?(ba|z|da)?sh\b",
        "pipes a download into a shell"
    ),
    rule!(
        "curl_pipe_python",
        High,
        SupplyChain,
        r"\b(curl|wget)\b[^\n|]*\|\s*(sudo\s+)?python[0-9.]*\b[^\n]*",
        "pipes a download into Python as its program",
        Some(python_reads_program)
    ),
    rule!(
        "pep723_inline_deps",
        Medium,
        SupplyChain,
        r"^#\s*///\s*script\b",
        "inline script dependencies"
    ),
    rule!(
        "unpinned_pip_install",
        Medium,
        SupplyChain,
        r"\bpip3?\s+install\s+(-[\w-]+\s+)*[A-Za-z][\w.\-]*(\s|$)",
        "unpinned pip install"
    ),
    rule!(
        "unpinned_npm_install",
        Medium,
        SupplyChain,
        r"\bnpm\s+(install|i)\s+(-g\s+)?[a-z][\w.\-]*(\s|$)",
        "unpinned npm install"
    ),
    rule!(
        "uv_run",
        Medium,
        SupplyChain,
        r"\buv\s+run\b|\buvx\s+\S",
        "runs a package with uv"
    ),
    rule!(
        "remote_fetch",
        Medium,
        SupplyChain,
        r"\b(curl|wget)\s+[^\n]*https?://",
        "downloads from the network"
    ),
    rule!(
        "git_clone",
        Medium,
        SupplyChain,
        r"\bgit\s+clone\b",
        "clones a repository"
    ),
    rule!(
        "docker_pull",
        Medium,
        SupplyChain,
        r"\bdocker\s+(pull|run)\b",
        "pulls or runs a container image"
    ),
    rule!(
        "setuid_setgid",
        Critical,
        PrivilegeEscalation,
        r"\bos\.set(e|re|res)?[ug]id\s*\(\s*0\s*\)|\bset(e)?[ug]id\s*\(\s*0\s*\)",
        "becomes root"
    ),
    rule!(
        "nopasswd_sudo",
        Critical,
        PrivilegeEscalation,
        r"\bNOPASSWD\s*:",
        "passwordless sudo"
    ),
    rule!(
        "suid_bit",
        Critical,
        PrivilegeEscalation,
        r"\bchmod\s+(-R\s+)?([ugoa]*\+[rwx]*s|[4-7][0-7]{3})\b",
        "sets the setuid/setgid bit"
    ),
    rule!(
        "sudo_usage",
        Medium,
        PrivilegeEscalation,
        r"\bsudo\s+-?\w",
        "runs commands as root"
    ),
    rule!(
        "allowed_tools_field",
        Low,
        PrivilegeEscalation,
        r"^allowed-tools\s*:",
        "declares pre-approved tools"
    ),
    rule!(
        "shadow_access",
        Critical,
        Traversal,
        r"\b(cat|cp|less|more|head|tail|scp|rsync|tar|zip|base64|xxd|strings|open|read_text|readFile(Sync)?)\b[^\n]*/etc/(shadow|gshadow|master\.passwd)\b",
        "copies or reads the system password hashes"
    ),
    rule!(
        "insecure_pipe_shell",
        Critical,
        SupplyChain,
        r"\b(curl|wget)\b[^\n|]*(http://|\b\d{1,3}(\.\d{1,3}){3}\b)[^\n|]*\|\s*(sudo\s+)?(ba|z|da)?sh\b",
        "pipes an unencrypted or raw-IP download into a shell"
    ),
];
