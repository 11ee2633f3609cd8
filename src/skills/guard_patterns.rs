//! The skills guard's threat table: 121 patterns in 12 categories with the ids and severities of
//! Python Hermes' `skills_guard.py` (reference §9.5); the expressions are our own.
//!
//! Matching is case-insensitive unless a pattern opts out with `(?-i)` (key formats). Patterns
//! look at one line at a time (`[^\n]` instead of `.` where a line could otherwise be crossed).

use crate::skills::guard::{Category, Severity};

/// One row of the table.
pub struct PatternDef {
    pub id: &'static str,
    pub severity: Severity,
    pub category: Category,
    pub regex: &'static str,
    pub description: &'static str,
}

use Category as C;
use Severity as S;

macro_rules! p {
    ($id:literal, $sev:ident, $cat:ident, $re:expr, $desc:literal) => {
        PatternDef {
            id: $id,
            severity: S::$sev,
            category: C::$cat,
            regex: $re,
            description: $desc,
        }
    };
}

/// Secret-looking variable names.
macro_rules! secret {
    () => {
        r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|API)"
    };
}

pub const PATTERNS: &[PatternDef] = &[
    // ── exfiltration (25) ──
    p!(
        "env_exfil_curl",
        Critical,
        Exfiltration,
        r"\bcurl\b[^\n]*\$\{?\w*(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|API)\w*",
        "curl sends a secret environment variable"
    ),
    p!(
        "env_exfil_wget",
        Critical,
        Exfiltration,
        r"\bwget\b[^\n]*\$\{?\w*(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|API)\w*",
        "wget sends a secret environment variable"
    ),
    p!(
        "env_exfil_fetch",
        Critical,
        Exfiltration,
        r"\bfetch\s*\([^\n]*process\.env",
        "fetch() sends process.env values"
    ),
    p!(
        "env_exfil_httpx",
        Critical,
        Exfiltration,
        r"\bhttpx\.(get|post|put|patch|request)\s*\([^\n]*(os\.environ|getenv)",
        "httpx sends environment values"
    ),
    p!(
        "env_exfil_requests",
        Critical,
        Exfiltration,
        r"\brequests\.(get|post|put|patch|request)\s*\([^\n]*(os\.environ|getenv)",
        "requests sends environment values"
    ),
    p!(
        "encoded_exfil",
        High,
        Exfiltration,
        r"\bbase64\b[^\n]*\|[^\n]*\b(curl|wget|nc|ncat)\b",
        "encodes data and pipes it to a network tool"
    ),
    p!(
        "ssh_dir_access",
        High,
        Exfiltration,
        r"(~|\$HOME|\$\{HOME\}|/root|/home/[\w.-]+)/\.ssh\b",
        "reads the SSH key directory"
    ),
    p!(
        "aws_dir_access",
        High,
        Exfiltration,
        r"(~|\$HOME|\$\{HOME\})/\.aws\b|\.aws/credentials",
        "reads AWS credentials"
    ),
    p!(
        "gpg_dir_access",
        High,
        Exfiltration,
        r"(~|\$HOME|\$\{HOME\})/\.gnupg\b",
        "reads the GnuPG keyring"
    ),
    p!(
        "kube_dir_access",
        High,
        Exfiltration,
        r"\.kube/config\b",
        "reads Kubernetes credentials"
    ),
    p!(
        "docker_dir_access",
        High,
        Exfiltration,
        r"\.docker/config\.json",
        "reads Docker registry credentials"
    ),
    p!(
        "hermes_env_access",
        Critical,
        Exfiltration,
        r"\.hermes/\.env\b",
        "reads the Hermes secrets file"
    ),
    p!(
        "read_secrets_file",
        Critical,
        Exfiltration,
        r"\b(cat|less|more|head|tail|bat|strings)\s+[^\n|;]*(\.env\b|credentials\b|\.netrc\b|\.pgpass\b|\.npmrc\b|\.pypirc\b)",
        "prints a secrets file"
    ),
    p!(
        "dump_all_env",
        High,
        Exfiltration,
        r"\bprintenv\s*(\||>)|\benv\s*(\||>)\s*\S|json\.dumps\(\s*dict\(\s*os\.environ",
        "dumps the whole environment"
    ),
    p!(
        "python_os_environ",
        High,
        Exfiltration,
        r"\bdict\(\s*os\.environ\s*\)|\bos\.environ\.(copy|items|keys|values)\s*\(\s*\)",
        "reads the whole environment"
    ),
    // Reading one named secret is normal in a script that calls an API; it counts as `high`
    // (caution) here rather than `critical`, so agent-written helper scripts stay possible.
    p!(
        "python_environ_get_secret",
        High,
        Exfiltration,
        concat!(
            r"\bos\.environ(\.get\s*\(|\s*\[)\s*['\x22][^'\x22\n]*",
            secret!()
        ),
        "reads a secret from os.environ"
    ),
    p!(
        "python_getenv_secret",
        High,
        Exfiltration,
        concat!(r"\bos\.getenv\s*\(\s*['\x22][^'\x22\n]*", secret!()),
        "reads a secret with os.getenv"
    ),
    p!(
        "node_process_env",
        High,
        Exfiltration,
        r"(JSON\.stringify|Object\.(keys|entries|values))\s*\(\s*process\.env\b",
        "reads the whole process.env"
    ),
    p!(
        "ruby_env_secret",
        High,
        Exfiltration,
        concat!(r"\bENV\s*\[\s*['\x22][^'\x22\n]*", secret!()),
        "reads a secret from Ruby ENV"
    ),
    p!(
        "dns_exfil",
        Critical,
        Exfiltration,
        r"\b(dig|nslookup|host)\s+[^\n]*\$\{?\w+\}?\.[\w-]+\.[a-z]{2,}",
        "puts data into a DNS lookup"
    ),
    p!(
        "tmp_staging",
        Critical,
        Exfiltration,
        r"\b(cp|cat|tar|zip|rsync)\b[^\n]*(\.env\b|credentials|\.ssh|id_rsa|id_ed25519)[^\n]*/tmp/",
        "stages secrets in /tmp"
    ),
    p!(
        "md_image_exfil",
        High,
        Exfiltration,
        r"!\[[^\]\n]*\]\(https?://[^)\s]*[?&][\w-]+=(\$|\{\{|%7B|<)",
        "markdown image URL carrying templated data"
    ),
    p!(
        "md_link_exfil",
        High,
        Exfiltration,
        r"\]\(https?://[^)\s]*[?&][\w-]+=(\$\{?\w*(KEY|TOKEN|SECRET)|\{\{)",
        "markdown link URL carrying templated data"
    ),
    p!(
        "context_exfil",
        High,
        Exfiltration,
        r"\b(send|post|upload|transmit|forward|leak)\s+(\w+\s+){0,6}(conversation|chat\s+history|system\s+prompt|context\s+window|memories)\s+(\w+\s+){0,4}to\s+(https?://|the\s+(url|server|endpoint|webhook))",
        "sends the conversation or prompt elsewhere"
    ),
    p!(
        "send_to_url",
        High,
        Exfiltration,
        r"\b(send|post|upload|exfiltrate|transmit)\s+(\w+\s+){0,6}(to|at)\s+https?://",
        "instructs sending data to a URL"
    ),
    // ── injection (19) ──
    p!(
        "prompt_injection_ignore",
        Critical,
        Injection,
        r"\bignore\s+(\w+\s+){0,8}(previous|all|above|prior|earlier|preceding)\s+(\w+\s+){0,3}(instructions|rules|directives|prompts?|guidelines)",
        "tells the model to ignore its instructions"
    ),
    p!(
        "deception_hide",
        Critical,
        Injection,
        r"\b(do\s+not|don'?t|never)\s+(tell|inform|notify|alert|let)\s+(the\s+)?user\b",
        "tells the model to hide things from the user"
    ),
    p!(
        "sys_prompt_override",
        Critical,
        Injection,
        r"\b(new|updated|override|replacement)\s+(\w+\s+){0,3}system\s+prompt\b|\bsystem\s+prompt\s+(override|is\s+now)\b",
        "claims to replace the system prompt"
    ),
    p!(
        "disregard_rules",
        Critical,
        Injection,
        r"\bdisregard\s+(\w+\s+){0,8}(rules|instructions|guidelines|policies|safety)",
        "tells the model to disregard its rules"
    ),
    p!(
        "bypass_restrictions",
        Critical,
        Injection,
        r"\bbypass\s+(\w+\s+){0,4}(restrictions|safety|guardrails|filters|content\s+policy|approvals?)\b",
        "tells the model to bypass restrictions"
    ),
    p!(
        "translate_execute",
        Critical,
        Injection,
        r"\btranslate\s+(\w+\s+){0,8}(and|then)\s+(execute|run|eval)\b",
        "hides a command behind a translation"
    ),
    p!(
        "jailbreak_dan",
        Critical,
        Injection,
        r"(?-i:\bDAN\b)\s+(mode|prompt|jailbreak)|\bdo\s+anything\s+now\b",
        "DAN jailbreak"
    ),
    p!(
        "jailbreak_dev_mode",
        Critical,
        Injection,
        r"\bdeveloper\s+mode\s+(enabled|activated|on)\b|\benable\s+developer\s+mode\b",
        "developer-mode jailbreak"
    ),
    p!(
        "remove_filters",
        Critical,
        Injection,
        r"\b(remove|disable|turn\s+off|ignore)\s+(\w+\s+){0,3}(content\s+filters?|safety\s+(checks|guidelines|filters)|guardrails)\b",
        "tells the model to drop its safety filters"
    ),
    p!(
        "role_hijack",
        High,
        Injection,
        r"\byou\s+are\s+now\s+(a|an|the|in)\b",
        "reassigns the model's role"
    ),
    p!(
        "role_pretend",
        High,
        Injection,
        r"\b(pretend|act)\s+(\w+\s+){0,3}(to\s+be|you\s+are|as)\s+(an?\s+)?(unrestricted|uncensored|jailbroken|unfiltered|evil)",
        "asks the model to act unrestricted"
    ),
    p!(
        "leak_system_prompt",
        High,
        Injection,
        r"\b(reveal|print|output|show|repeat|leak|dump)\s+(\w+\s+){0,3}(system\s+prompt|initial\s+instructions|hidden\s+instructions)",
        "asks for the system prompt"
    ),
    p!(
        "conditional_deception",
        High,
        Injection,
        r"\bif\s+(the\s+)?user\s+(asks|questions|inquires|checks)[^\n]{0,80}\b(lie|deny|pretend|say\s+nothing)\b",
        "deceives the user on a condition"
    ),
    p!(
        "html_comment_injection",
        High,
        Injection,
        r"<!--[^>]{0,200}\b(ignore|system\s+prompt|instructions?|assistant|execute|you\s+must)\b[^>]{0,200}-->",
        "instructions hidden in an HTML comment"
    ),
    p!(
        "hidden_div",
        High,
        Injection,
        r"<(div|span|p)\b[^>]*style\s*=\s*['\x22][^'\x22]*(display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0)",
        "text hidden with CSS"
    ),
    p!(
        "hypothetical_bypass",
        High,
        Injection,
        r"\b(hypothetically|in\s+a\s+hypothetical\s+(scenario|world))\b[^\n]{0,80}\b(no\s+restrictions|without\s+(any\s+)?(rules|limits|restrictions))",
        "hypothetical framing to drop rules"
    ),
    p!(
        "fake_update",
        High,
        Injection,
        r"\b(important|urgent|critical)\s+(system\s+)?update\s*:|\bnew\s+instructions\s+from\s+(anthropic|openai|the\s+developers|nous)",
        "poses as an official update"
    ),
    p!(
        "educational_pretext",
        Medium,
        Injection,
        r"\bfor\s+(purely\s+)?educational\s+purposes\s+only\b",
        "educational pretext"
    ),
    p!(
        "fake_policy",
        Medium,
        Injection,
        r"\b(according\s+to|per)\s+(the\s+)?(new|updated)\s+(openai|anthropic|usage|content)\s+polic(y|ies)",
        "cites an invented policy"
    ),
    // ── destructive (8) ──
    p!(
        "destructive_root_rm",
        Critical,
        Destructive,
        r"\brm\s+(-[a-zA-Z]+\s+)*-[a-zA-Z]*[rRf][a-zA-Z]*\s+(--no-preserve-root\s+)?/\*?(\s|$|;|&|\x60)",
        "deletes the root filesystem"
    ),
    p!(
        "destructive_home_rm",
        Critical,
        Destructive,
        r"\brm\s+(-[a-zA-Z]+\s+)*-[a-zA-Z]*[rR][a-zA-Z]*\s+(~|\$HOME|\$\{HOME\})/?\*?(\s|$|;|&|\x60)",
        "deletes the home directory"
    ),
    p!(
        "system_overwrite",
        Critical,
        Destructive,
        r">\s*/etc/(passwd|shadow|sudoers|hosts|fstab)\b|\b(cp|mv)\s+[^\n]*\s/etc/(passwd|shadow|sudoers)\b",
        "overwrites a system file"
    ),
    p!(
        "format_filesystem",
        Critical,
        Destructive,
        r"\bmkfs(\.\w+)?\s+[^\n]*/dev/",
        "formats a disk"
    ),
    p!(
        "disk_overwrite",
        Critical,
        Destructive,
        r"\bdd\s+[^\n]*\bof=/dev/(sd|nvme|hd|disk|mmcblk|vd)|>\s*/dev/(sd[a-z]|nvme\d|disk\d)",
        "writes raw bytes over a disk"
    ),
    p!(
        "truncate_system",
        Critical,
        Destructive,
        r"(\btruncate\s+-s\s*0\s+|:\s*>\s*)/(etc|boot|var/log)/",
        "truncates system files"
    ),
    p!(
        "python_rmtree",
        High,
        Destructive,
        r"\bshutil\.rmtree\s*\(",
        "recursive delete from Python"
    ),
    p!(
        "insecure_perms",
        Medium,
        Destructive,
        r"\bchmod\s+(-R\s+)?(0?777|a\+rwx|o\+w)\b",
        "world-writable permissions"
    ),
    // ── persistence (12) ──
    p!(
        "ssh_backdoor",
        Critical,
        Persistence,
        r"(>>?|\btee\s+(-a\s+)?)\s*\S*authorized_keys\b",
        "adds an SSH key to authorized_keys"
    ),
    p!(
        "sudoers_mod",
        Critical,
        Persistence,
        r"(>>?|\btee\s+(-a\s+)?)\s*/etc/sudoers|\bvisudo\b|/etc/sudoers\.d/",
        "changes sudoers"
    ),
    p!(
        "agent_config_mod",
        Critical,
        Persistence,
        r"\b(write|edit|modify|append|overwrite|update|change)\s+([\w'’]+\s+){0,6}(AGENTS\.md|CLAUDE\.md|\.cursorrules|\.clinerules)\b|(>>?|\btee\s)\s*\S*(AGENTS\.md|CLAUDE\.md|\.cursorrules|\.clinerules)\b",
        "rewrites another agent's instructions"
    ),
    p!(
        "hermes_config_mod",
        Critical,
        Persistence,
        r"\b(write|edit|modify|append|overwrite|change)\s+(\w+\s+){0,4}\S*\.hermes/(config\.yaml|SOUL\.md)|(>>?|\btee\s)\s*\S*\.hermes/(config\.yaml|SOUL\.md)",
        "rewrites Hermes' own configuration"
    ),
    p!(
        "other_agent_config",
        High,
        Persistence,
        r"\.claude/settings(\.local)?\.json|\.codex/config\.toml|\.cursor/mcp\.json|\.gemini/settings\.json",
        "touches another agent's configuration"
    ),
    p!(
        "persistence_cron",
        Medium,
        Persistence,
        r"\bcrontab\s+-|/etc/cron\.(d|daily|hourly|weekly)\b",
        "installs a cron job"
    ),
    p!(
        "shell_rc_mod",
        Medium,
        Persistence,
        r"(>>|\btee\s+-a)\s*\S*(\.bashrc|\.zshrc|\.profile|\.bash_profile)\b",
        "appends to a shell startup file"
    ),
    p!(
        "ssh_keygen",
        Medium,
        Persistence,
        r"\bssh-keygen\b",
        "creates SSH keys"
    ),
    p!(
        "systemd_service",
        Medium,
        Persistence,
        r"\bsystemctl\s+(--user\s+)?enable\b|/etc/systemd/system/\S+\.service",
        "installs a systemd service"
    ),
    p!(
        "init_script",
        Medium,
        Persistence,
        r"/etc/init\.d/|/etc/rc\.local\b|\bupdate-rc\.d\b",
        "installs an init script"
    ),
    p!(
        "macos_launchd",
        Medium,
        Persistence,
        r"\bLaunch(Agents|Daemons)\b|\blaunchctl\s+(load|bootstrap)\b",
        "installs a launchd job"
    ),
    p!(
        "git_config_global",
        Medium,
        Persistence,
        r"\bgit\s+config\s+--global\b",
        "changes global git configuration"
    ),
    // ── network (9) ──
    p!(
        "reverse_shell",
        Critical,
        Network,
        r"\b(nc|ncat|netcat)\b[^\n]*\s-[a-z]*e\s+(/bin/)?(ba|z)?sh\b|\bsocat\b[^\n]*\bexec:",
        "reverse shell"
    ),
    p!(
        "bash_reverse_shell",
        Critical,
        Network,
        r"/dev/tcp/[\w.$\-{}]+/\d+|\bbash\s+-i\s+>&",
        "bash reverse shell"
    ),
    p!(
        "python_socket_oneliner",
        Critical,
        Network,
        r"\bpython[23]?\s+-c\s+['\x22][^\n]*\bsocket\b[^\n]*\b(connect|pty|subprocess|dup2)\b",
        "Python socket one-liner"
    ),
    p!(
        "tunnel_service",
        High,
        Network,
        r"\b(ngrok|localtunnel|cloudflared\s+tunnel|serveo\.net|localhost\.run|bore\.pub)\b",
        "exposes the machine through a tunnel"
    ),
    p!(
        "bind_all_interfaces",
        High,
        Network,
        r"\b0\.0\.0\.0:\d+|--(host|bind)[= ]0\.0\.0\.0\b|bind\(\s*\(\s*['\x22]0\.0\.0\.0",
        "listens on every interface"
    ),
    p!(
        "python_socket_connect",
        High,
        Network,
        r"\bsocket\.socket\([^\n]*\)[^\n]*\.connect\(|\.connect\(\s*\(\s*['\x22]\d{1,3}(\.\d{1,3}){3}['\x22]",
        "raw socket connection"
    ),
    p!(
        "exfil_service",
        High,
        Network,
        r"\b(webhook\.site|requestbin|pipedream\.net|interact\.sh|burpcollaborator|oast\.(fun|pro|live|site|online|me))\b",
        "known data-capture service"
    ),
    p!(
        "hardcoded_ip_port",
        Medium,
        Network,
        r"\b\d{1,3}(\.\d{1,3}){3}:\d{2,5}\b",
        "hard-coded IP address and port"
    ),
    p!(
        "paste_service",
        Medium,
        Network,
        r"\b(pastebin\.com|paste\.ee|hastebin|ghostbin|0x0\.st|transfer\.sh|termbin\.com)\b",
        "paste service"
    ),
    // ── obfuscation (14) ──
    p!(
        "echo_pipe_exec",
        Critical,
        Obfuscation,
        r"\becho\s+[^\n|]*\|\s*(base64\s+(-d|--decode)\s*\|\s*)?(ba|z|da)?sh\b",
        "pipes text into a shell"
    ),
    p!(
        "base64_decode_pipe",
        High,
        Obfuscation,
        r"\bbase64\s+(-d|--decode)\b[^\n|]*\|",
        "decodes base64 into another command"
    ),
    p!(
        "eval_string",
        High,
        Obfuscation,
        r"\beval\s*\(\s*(['\x22]|atob|base64|b64decode|unescape|String\.fromCharCode|bytes\.fromhex)",
        "evaluates a string"
    ),
    p!(
        "exec_string",
        High,
        Obfuscation,
        r"\bexec\s*\(\s*(['\x22]|base64|b64decode|compile|bytes|codecs|zlib)",
        "executes a string"
    ),
    p!(
        "python_compile_exec",
        High,
        Obfuscation,
        r"\bcompile\s*\([^\n]*['\x22]exec['\x22]\s*\)",
        "compiles code from a string"
    ),
    p!(
        "python_getattr_builtins",
        High,
        Obfuscation,
        r"\bgetattr\s*\(\s*(__builtins__|builtins)\b|__builtins__\s*(\[|\.__dict__)",
        "reaches builtins indirectly"
    ),
    p!(
        "python_import_os",
        High,
        Obfuscation,
        r"__import__\s*\(\s*['\x22](os|subprocess|pty|socket)['\x22]",
        "dynamic import of a system module"
    ),
    p!(
        "chr_building",
        High,
        Obfuscation,
        r"(\bchr\s*\(\s*\d+\s*\)\s*\+\s*){3,}",
        "builds a string from character codes"
    ),
    p!(
        "hex_encoded_string",
        Medium,
        Obfuscation,
        r"(\\x[0-9a-fA-F]{2}){8,}",
        "long hex-escaped string"
    ),
    p!(
        "python_codecs_decode",
        Medium,
        Obfuscation,
        r"\bcodecs\.decode\s*\([^\n]*(rot13|rot_13|hex)",
        "codecs decoding"
    ),
    p!(
        "js_char_code",
        Medium,
        Obfuscation,
        r"\bString\.fromCharCode\s*\(\s*\d+\s*(,\s*\d+\s*){3,}",
        "builds a string from character codes"
    ),
    p!(
        "js_base64",
        Medium,
        Obfuscation,
        r"\batob\s*\(\s*['\x22][A-Za-z0-9+/=]{16,}",
        "decodes base64 in JavaScript"
    ),
    p!(
        "unicode_escape_chain",
        Medium,
        Obfuscation,
        r"(\\u[0-9a-fA-F]{4}){6,}",
        "long unicode-escaped string"
    ),
    p!(
        "string_reversal",
        Low,
        Obfuscation,
        r"\.split\(\s*['\x22]{2}\s*\)\.reverse\(\)\.join|\[::-1\]\s*\)",
        "reversed string"
    ),
    // ── execution (6) ──
    p!(
        "python_os_system",
        High,
        Execution,
        r"\bos\.system\s*\(",
        "os.system"
    ),
    p!(
        "python_os_popen",
        High,
        Execution,
        r"\bos\.popen\s*\(",
        "os.popen"
    ),
    p!(
        "node_child_process",
        High,
        Execution,
        r"\brequire\s*\(\s*['\x22](node:)?child_process['\x22]\s*\)|\bfrom\s+['\x22](node:)?child_process['\x22]",
        "Node child_process"
    ),
    p!(
        "java_runtime_exec",
        High,
        Execution,
        r"\bRuntime\.getRuntime\(\)\.exec\s*\(",
        "Java Runtime.exec"
    ),
    p!(
        "python_subprocess",
        Medium,
        Execution,
        r"\bsubprocess\.(run|call|Popen|check_output|check_call)\s*\(",
        "subprocess"
    ),
    p!(
        "backtick_subshell",
        Medium,
        Execution,
        r"=\s*\x60[^\x60\n]+\x60",
        "backtick command substitution"
    ),
    // ── traversal (5) ──
    p!(
        "system_passwd_access",
        Critical,
        Traversal,
        r"/etc/(passwd|shadow|master\.passwd)\b",
        "reads the system account database"
    ),
    p!(
        "path_traversal_deep",
        High,
        Traversal,
        r"(\.\./){3,}",
        "climbs three or more directories"
    ),
    p!(
        "proc_access",
        High,
        Traversal,
        r"/proc/(self|\d+|\$\w+)/(environ|mem|maps|cmdline)\b",
        "reads another process's memory or environment"
    ),
    p!(
        "path_traversal",
        Medium,
        Traversal,
        r"\.\./\.\./",
        "climbs out of the directory"
    ),
    p!(
        "dev_shm",
        Medium,
        Traversal,
        r"/dev/shm/",
        "uses shared memory as a staging area"
    ),
    // ── mining (2) ──
    p!(
        "crypto_mining",
        Critical,
        Mining,
        r"\b(xmrig|cpuminer|minerd|cgminer|bfgminer|ethminer|nbminer|lolminer|phoenixminer)\b|\bstratum\+tcp://",
        "cryptocurrency miner"
    ),
    p!(
        "mining_indicators",
        Medium,
        Mining,
        r"\b(monero|hashrate|mining\s+pool|mining\s+rig)\b",
        "mining vocabulary"
    ),
    // ── supply_chain (10) ──
    p!(
        "curl_pipe_shell",
        Critical,
        SupplyChain,
        r"\bcurl\b[^\n|]*\|\s*(sudo\s+)?(ba|z|da)?sh\b",
        "pipes a download into a shell"
    ),
    p!(
        "wget_pipe_shell",
        Critical,
        SupplyChain,
        r"\bwget\b[^\n|]*\|\s*(sudo\s+)?(ba|z|da)?sh\b",
        "pipes a download into a shell"
    ),
    p!(
        "curl_pipe_python",
        Critical,
        SupplyChain,
        r"\b(curl|wget)\b[^\n|]*\|\s*(sudo\s+)?python[23]?\b",
        "pipes a download into Python"
    ),
    p!(
        "pep723_inline_deps",
        Medium,
        SupplyChain,
        r"^#\s*///\s*script\b",
        "inline script dependencies"
    ),
    p!(
        "unpinned_pip_install",
        Medium,
        SupplyChain,
        r"\bpip3?\s+install\s+(-[\w-]+\s+)*[A-Za-z][\w.\-]*(\s|$)",
        "unpinned pip install"
    ),
    p!(
        "unpinned_npm_install",
        Medium,
        SupplyChain,
        r"\bnpm\s+(install|i)\s+(-g\s+)?[a-z][\w.\-]*(\s|$)",
        "unpinned npm install"
    ),
    p!(
        "uv_run",
        Medium,
        SupplyChain,
        r"\buv\s+run\b|\buvx\s+\S",
        "runs a package with uv"
    ),
    p!(
        "remote_fetch",
        Medium,
        SupplyChain,
        r"\b(curl|wget)\s+[^\n]*https?://",
        "downloads from the network"
    ),
    p!(
        "git_clone",
        Medium,
        SupplyChain,
        r"\bgit\s+clone\b",
        "clones a repository"
    ),
    p!(
        "docker_pull",
        Medium,
        SupplyChain,
        r"\bdocker\s+(pull|run)\b",
        "pulls or runs a container image"
    ),
    // ── privilege_escalation (5) ──
    p!(
        "setuid_setgid",
        Critical,
        PrivilegeEscalation,
        r"\bos\.set(e|re|res)?[ug]id\s*\(\s*0\s*\)|\bset(e)?[ug]id\s*\(\s*0\s*\)",
        "becomes root"
    ),
    p!(
        "nopasswd_sudo",
        Critical,
        PrivilegeEscalation,
        r"\bNOPASSWD\s*:",
        "passwordless sudo"
    ),
    p!(
        "suid_bit",
        Critical,
        PrivilegeEscalation,
        r"\bchmod\s+(-R\s+)?([ugoa]*\+[rwx]*s|[4-7][0-7]{3})\b",
        "sets the setuid/setgid bit"
    ),
    p!(
        "sudo_usage",
        High,
        PrivilegeEscalation,
        r"\bsudo\s+-?\w",
        "runs commands as root"
    ),
    p!(
        "allowed_tools_field",
        Low,
        PrivilegeEscalation,
        r"^allowed-tools\s*:",
        "declares pre-approved tools"
    ),
    // ── credential_exposure (6) ──
    p!(
        "hardcoded_secret",
        Critical,
        CredentialExposure,
        r"\b(api[_-]?key|secret|token|password|passwd)\b\s*[:=]\s*['\x22][A-Za-z0-9_\-+/=.]{20,}['\x22]",
        "hard-coded secret"
    ),
    p!(
        "embedded_private_key",
        Critical,
        CredentialExposure,
        r"-----BEGIN\s+(RSA\s+|EC\s+|OPENSSH\s+|DSA\s+|PGP\s+|ENCRYPTED\s+)?PRIVATE\s+KEY",
        "embedded private key"
    ),
    p!(
        "github_token_leaked",
        Critical,
        CredentialExposure,
        r"(?-i)\b(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}\b|\bgithub_pat_[A-Za-z0-9_]{22,}",
        "GitHub token"
    ),
    p!(
        "openai_key_leaked",
        Critical,
        CredentialExposure,
        r"(?-i)\bsk-(proj-)?[A-Za-z0-9]{20,}|\bsk-proj-[A-Za-z0-9_\-]{20,}",
        "OpenAI API key"
    ),
    p!(
        "anthropic_key_leaked",
        Critical,
        CredentialExposure,
        r"(?-i)\bsk-ant-[A-Za-z0-9_\-]{20,}",
        "Anthropic API key"
    ),
    p!(
        "aws_access_key_leaked",
        Critical,
        CredentialExposure,
        r"(?-i)\b(AKIA|ASIA)[0-9A-Z]{16}\b",
        "AWS access key"
    ),
];
