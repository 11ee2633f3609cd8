//! Rules for sending secrets or private data off the machine, wherever the text comes from: an
//! environment secret in a request body or URL, DNS lookups carrying command output or
//! variables, the whole environment piped to a network tool, language HTTP clients posting the
//! environment (a combined rule: the two halves are often lines apart), archives of `~/.hermes`
//! or `~/.ssh` sent with nc/scp/curl/rsync, uploads of `auth.json` or `.env`, PowerShell
//! download-and-run, markdown images that leak data in their URL.
//!
//! Precision matters as much as recall: sending `$OPENAI_API_KEY` in an `Authorization` header
//! or an `?api_key=` parameter to its own API is how every API skill works, so a secret in a
//! header or under an auth parameter name counts only when it goes to a host it does not belong
//! to (`secret_dest`); anywhere else in a body, a query string or a host name it always counts.

use std::sync::LazyLock;

use regex::bytes::Regex;

use super::engine::{Check, Combo, Rule};
use super::reach::{ALL, EXTERNAL, OWN, SIGNAL, SKILL};
use super::{Category as C, Severity as S};
use super::{destination, secret_dest};

/// Secret-looking variable names.
macro_rules! secret_var {
    () => {
        r"\$\{?\w*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|API|AUTH)\w*"
    };
}

/// Files and directories that hold credentials.
macro_rules! secret_path {
    () => {
        r"(?:\.hermes\b|\.ssh\b|\.aws\b|\.gnupg\b|\.kube\b|\.docker/config|\bauth\.json\b|\.env(?:\s|$|['\x22|;)&>])|\bid_(?:rsa|ed25519|ecdsa|dsa)\b|\bcredentials\b|\.netrc\b|\.pgpass\b|\.npmrc\b|\.pypirc\b)"
    };
}

/// Programs that move bytes to another machine.
macro_rules! net_tool {
    () => {
        r"\b(?:nc|ncat|netcat|socat|telnet|curl|wget|ssh|scp|sftp|rsync|openssl\s+s_client|ftp|tftp|http|https|xh)\b"
    };
}

/// Where a secret variable sits in a request: a body or form field, a query string, a host
/// name, a header (curl/wget `-H "Name: [scheme ]$X"`, `--header=Name:$X`, httpie
/// `Name:"Bearer $X"`). Each alternative ends at the variable.
macro_rules! secret_spot {
    () => {
        concat!(
            // in a header, any variable (`T=$OPENAI_API_KEY` then `Bearer $T`: `secret_dest`
            // follows the copy and drops what is no secret)
            r"[\s'\x22=][\w-]+:[ \t]*['\x22]?(?:[\w-]+[ \t]+)?\$\{?[a-z_]\w*",
            r"|",
            // in a body or form field
            r"(?:\s-d|\s--data(?:-\w+)?|\s-F|\s--form|\s--post-data|\s--body-data)[=\s]\s*['\x22]?[^'\x22\s]*",
            secret_var!(),
            // in a query string or a host name
            r"|[?&][\w-]+=",
            secret_var!(),
            r"|https?://[^\s/'\x22]*",
            secret_var!()
        )
    };
}

/// Every secret spot of a request, to judge each (the rule's match ends at the first).
static SPOTS: LazyLock<Option<Regex>> = LazyLock::new(|| {
    super::engine::builder(secret_spot!())
        .map_err(|e| tracing::error!(error = %e, "secret_spot does not compile"))
        .ok()
});

/// A secret under any parameter name that is not about authentication (`?k=$OPENAI_API_KEY`,
/// a bare `-d "$KEY"`, a host name) is being sent away. Under an auth-looking name
/// (`?api_key=`, `-d token=`) it may be how the API authenticates: `secret_dest` decides from
/// the variable and the host the request goes to.
fn secret_sent_away(matched: &[u8], before: &[u8], after: &[u8]) -> Check {
    let Some(spots) = SPOTS.as_ref() else {
        return Check::Keep;
    };
    let command = destination::command(matched, after);
    spots
        .find_iter(command.as_bytes())
        .map(|spot| judge_spot(spot.as_bytes(), &command, before))
        .reduce(secret_dest::worse)
        .unwrap_or(Check::Keep)
}

/// A header spot: `Name: [scheme ]$VAR` (what `secret_spot`'s first alternative matches).
static HEADER_SPOT: LazyLock<Option<Regex>> = LazyLock::new(|| {
    super::engine::builder(r"^[\s'\x22=][\w-]+:[ \t]*['\x22]?(?:[\w-]+[ \t]+)?\$")
        .map_err(|e| tracing::error!(error = %e, "header spot does not compile"))
        .ok()
});

/// One `name=$VAR`, header or bare `$VAR` of a request.
fn judge_spot(spot: &[u8], command: &str, before: &[u8]) -> Check {
    let Some(dollar) = spot.iter().rposition(|b| *b == b'$') else {
        return Check::Keep;
    };
    let var = String::from_utf8_lossy(&spot[dollar + 1..]);
    let var = var.trim_start_matches('{');
    let header = HEADER_SPOT
        .as_ref()
        .is_some_and(|re| re.is_match(&spot[..=dollar]));
    if header {
        return secret_dest::judge(var, command, before);
    }
    let Some(rest) = spot[..dollar].strip_suffix(b"=") else {
        return Check::Keep;
    };
    let name_start = rest
        .iter()
        .rposition(|b| !(b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-'))
        .map_or(0, |i| i + 1);
    let name = rest[name_start..].to_ascii_lowercase();
    const AUTH: &[&[u8]] = &[
        b"key",
        b"token",
        b"auth",
        b"secret",
        b"password",
        b"signature",
        b"access",
    ];
    if AUTH.iter().any(|a| name.windows(a.len()).any(|w| w == *a)) {
        secret_dest::judge(var, command, before)
    } else {
        Check::Keep
    }
}

/// A language HTTP call with a header built from a secret environment variable: it passes only
/// on its way to a host the variable belongs to.
fn client_secret_sent(matched: &[u8], before: &[u8], _after: &[u8]) -> Check {
    let var_start = matched
        .iter()
        .rposition(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
        .map_or(0, |i| i + 1);
    let var = String::from_utf8_lossy(&matched[var_start..]);
    let call = String::from_utf8_lossy(matched);
    secret_dest::judge_dest(&var, &destination::call_destination(&call, before))
}

/// The public half of a key (`id_ed25519.pub`) and `known_hosts` are not secrets.
fn not_public_key(matched: &[u8], _before: &[u8], _after: &[u8]) -> Check {
    if matched.ends_with(b".pub") || matched.ends_with(b"known_hosts") {
        Check::Drop
    } else {
        Check::Keep
    }
}

pub(super) const RULES: &[Rule] = &[
    rule!(
        "env_exfil_curl",
        Critical,
        Exfiltration,
        ALL,
        // One command, across `\` line continuations (`curl -X POST \⏎ -d … \⏎ URL`).
        concat!(
            r"\b(?:curl|wget|http|xh)\b(?:[^\n]|\\\r?\n)*?(?:",
            secret_spot!(),
            r")"
        ),
        "sends a secret environment variable in a request body, URL or host name",
        Some(secret_sent_away)
    ),
    rule!(
        "env_exfil_http_client",
        Critical,
        Exfiltration,
        ALL,
        // Python requests/httpx with `headers={…os.environ[…]}`, JS fetch/axios with
        // `headers: {…process.env.X}`, in one call (which may span lines).
        r"\b(?:requests|httpx|session|client)\.(?:get|post|put|patch|delete|head|request|stream)\s*\([^)]*?\bheaders\s*=\s*\{[^}]*?os\.(?:environ\s*\[|environ\.get\s*\(|getenv\s*\()\s*['\x22]\w+|\b(?:fetch|axios(?:\.\w+)?)\s*\([^)]*?\bheaders\s*:\s*\{[^}]*?process\.env\.\w+",
        "an HTTP call sends a secret environment variable in a header to a host it does not belong to",
        Some(client_secret_sent)
    ),
    rule!(
        "dns_exfil",
        Critical,
        Exfiltration,
        ALL,
        r"(?:\b(?:dig|nslookup|drill|resolvectl\s+query)|(?:^|[;&|(\x60]|\$\(|\bsudo)\s*host)\s[^\n;|&]*?(?:\$\([^)\n]*\)|\x60[^\x60\n]*\x60|\$\{?\w+\}?)[\w.${}-]*\.[a-z0-9-]+\.[a-z]{2,}\b",
        "puts command output or a variable into a DNS lookup"
    ),
    rule!(
        "env_dump_exfil",
        Critical,
        Exfiltration,
        ALL,
        concat!(
            r"\b(?:printenv|env|set|export\s+-p|declare\s+-x|compgen\s+-e|cat\s+/proc/(?:self|\d+)/environ)\s*\|[^\n]*",
            net_tool!(),
            r"|\b(?:curl|wget|nc|ncat|http|xh)\b[^\n]*(?:\$\(\s*(?:printenv|env|set|export\s+-p)\s*[|)]|<\(\s*(?:printenv|env)\s*\)|\x60\s*(?:printenv|env)\s*\x60)"
        ),
        "sends the whole environment to a network tool"
    ),
    rule!(
        "secret_archive_exfil",
        Critical,
        Exfiltration,
        ALL,
        concat!(
            r"\b(?:tar|zip|7z|gzip|bzip2|xz|cpio|base64|cat|xxd|openssl\s+enc)\b[^\n]*",
            secret_path!(),
            r"[^\n]*\|[^\n]*",
            net_tool!()
        ),
        "packs a credentials directory or file and sends it over the network"
    ),
    rule!(
        "secret_file_upload",
        Critical,
        Exfiltration,
        ALL,
        concat!(
            r"\b(?:scp|rsync|sftp)\b[^\n]*",
            secret_path!(),
            r"[^\n]*\s[\w.@\[\]:-]*[\w\]]:[^\s]*",
            r"|\bcurl\b[^\n]*(?:\s-T|\s--upload-file|\s-F\s*['\x22]?[\w-]*=@|\s--form\s*['\x22]?[\w-]*=@|\s--data(?:-binary|-raw|-urlencode)?\s*['\x22]?@|\s-d\s*['\x22]?@)\s*['\x22]?[^\s'\x22]*",
            secret_path!(),
            r"|\b(?:nc|ncat|netcat|socat|telnet)\b[^\n]*<\s*['\x22]?[^\s'\x22]*",
            secret_path!()
        ),
        "uploads a credentials file (auth.json, .env, SSH keys) to another machine"
    ),
    rule!(
        "powershell_download_exec",
        Critical,
        SupplyChain,
        ALL,
        r"\b(?:iex|invoke-expression)\b[^\n]*(?:\.download(?:string|data)\b|\biwr\b|\birm\b|invoke-webrequest|invoke-restmethod|net\.webclient|\bcurl\b|\bwget\b)|(?:\.download(?:string|data)\b|\biwr\b|\birm\b|invoke-webrequest|invoke-restmethod)[^\n]*\|\s*(?:iex|invoke-expression)\b",
        "PowerShell downloads code and runs it"
    ),
    rule!(
        "powershell_encoded_command",
        Critical,
        Obfuscation,
        ALL,
        r"\b(?:powershell|pwsh)(?:\.exe)?\b[^\n]*\s[-/](?:e|ec|en|enc|enco|encod|encodedcommand)\s+['\x22]?[a-z0-9+/=]{16,}",
        "PowerShell runs a base64-encoded command"
    ),
    rule!(
        "powershell_download",
        Medium,
        SupplyChain,
        SKILL,
        r"\bnew-object\s+(?:system\.)?net\.webclient\b|\.download(?:string|file|data)\s*\(|\bstart-bitstransfer\b|-executionpolicy\s+bypass\b",
        "PowerShell downloads from the network or bypasses the execution policy"
    ),
    rule!(
        "tmp_staging",
        Critical,
        Exfiltration,
        ALL,
        r"\b(?:cp|cat|tar|zip|rsync)\b[^\n]*(?:\.env\b|credentials|\.ssh|id_rsa|id_ed25519|auth\.json)[^\n]*\s/tmp/",
        "stages secrets in /tmp"
    ),
    rule!(
        "encoded_exfil",
        High,
        Exfiltration,
        ALL,
        r"\bbase64\b[^\n]*\|[^\n]*\b(?:curl|wget|nc|ncat)\b",
        "encodes data and pipes it to a network tool"
    ),
    rule!(
        "read_secrets_file",
        High,
        Exfiltration,
        ALL,
        r"\b(?:cat|less|more|head|tail|bat|strings|type|get-content|gc)\s+[^\n|;]*(?:\.env(?:\s|$|['\x22|;)])|\bcredentials\b|\.netrc\b|\.pgpass\b|\.npmrc\b|\.pypirc\b|\bauth\.json\b|\bid_(?:rsa|ed25519|ecdsa)\b(?:\s|$))",
        "prints a credentials file into the conversation"
    ),
    rule!(
        "md_image_exfil",
        High,
        Exfiltration,
        ALL,
        r"!\[[^\]\n]*\]\(https?://[^)\s]*[?&][\w-]+=(?:\$|\{\{|%7B|<)",
        "a markdown image whose URL carries templated data"
    ),
    rule!(
        "md_link_exfil",
        High,
        Exfiltration,
        ALL,
        r"\]\(https?://[^)\s]*[?&][\w-]+=(?:\$\{?\w*(?:KEY|TOKEN|SECRET)|\{\{)",
        "a markdown link whose URL carries templated data"
    ),
    rule!(
        "context_exfil",
        High,
        Exfiltration,
        ALL,
        r"\b(?:send|post|upload|transmit|forward|leak|share|exfiltrate)\s+(?:\w+\s+){0,6}?(?:conversation|chat\s+history|system\s+prompt|context\s+window|memories|memory\s+files?)\s+(?:\w+\s+){0,4}?to\s+(?:https?://|the\s+(?:url|server|endpoint|webhook)|\w+@)",
        "sends the conversation, prompt or memory elsewhere"
    ),
    rule!(
        "send_to_url",
        High,
        Exfiltration,
        OWN | EXTERNAL,
        r"\b(?:send|post|upload|exfiltrate|transmit)\s+(?:(?:the|all|every|your|my|its|these|those|this)\s+)*(?:secrets?|keys?|tokens?|credentials?|passwords?|env(?:ironment)?(?:\s+variables)?|files?|data|contents?|results?|output)\s+(?:\w+\s+){0,4}?(?:to|at)\s+https?://",
        "tells the model to send data to a URL"
    ),
    rule!(
        "exfil_service",
        High,
        Network,
        ALL,
        r"\b(?:webhook\.site|requestbin|pipedream\.net|interact\.sh|burpcollaborator|oast\.(?:fun|pro|live|site|online|me)|ngrok\.io|trycloudflare\.com)\b",
        "a known data-capture service"
    ),
    // ── reading credentials (skill code) ──
    rule!(
        "hermes_env_access",
        Medium,
        Exfiltration,
        SKILL,
        r"\.hermes/\.env\b",
        "touches the Hermes secrets file"
    ),
    // Reading a private key (or the whole directory) into a command or the conversation.
    // `ssh -i ~/.ssh/key`, `ssh-keygen -f ~/.ssh/id_ed25519` and the `.pub` half are how SSH
    // setup works and are not findings.
    rule!(
        "ssh_dir_access",
        High,
        Exfiltration,
        SKILL,
        r"\b(?:cat|cp|mv|scp|rsync|tar|zip|7z|base64|xxd|od|less|more|head|tail|strings|open|read_text|read_bytes|readfile(?:sync)?)\b[^\n|;]*?(?:~|\$HOME|\$\{HOME\}|/root|/home/[\w.-]+)/\.ssh(?:/[\w.*-]+)?|<\s*(?:~|\$HOME|\$\{HOME\}|/root|/home/[\w.-]+)/\.ssh/[\w.*-]+",
        "reads the SSH key directory",
        Some(not_public_key)
    ),
    rule!(
        "cloud_credentials_access",
        High,
        Exfiltration,
        SKILL,
        r"\.aws/credentials\b|(?:~|\$HOME|\$\{HOME\})/\.gnupg\b|\.kube/config\b|\.docker/config\.json\b",
        "reads cloud or registry credentials"
    ),
    rule!(
        "dump_all_env",
        Medium,
        Exfiltration,
        SKILL,
        r"\bprintenv\s*(?:\||>)|\benv\s*(?:\||>)\s*\S|json\.dumps\(\s*dict\(\s*os\.environ",
        "dumps the whole environment"
    ),
    rule!(
        "proc_environ_access",
        High,
        Exfiltration,
        SKILL,
        r"/proc/(?:self|\d+|\$\w+)/(?:environ|mem|maps)\b",
        "reads another process's memory or environment"
    ),
    // ── signals for the combined rule below (not reported alone) ──
    rule!(
        "whole_env_read",
        Low,
        Exfiltration,
        SIGNAL,
        r"\bdict\(\s*os\.environ\s*\)|\bos\.environ\.(?:copy|items|keys|values)\s*\(|\b(?:str|repr|json\.dumps|urlencode|bytes)\s*\(\s*(?:dict\(\s*)?os\.environ\b|\{\s*\*\*os\.environ\s*\}|\bdata\s*=\s*os\.environ\b|(?:json\.stringify|object\.(?:keys|entries|values)|new\s+urlsearchparams)\s*\(\s*process\.env\b|\bbody\s*:\s*process\.env\b|\benv\.(?:to_h|to_a|to_hash|inspect)\b|\bos\.environ\(\)|getenvironmentvariables\s*\(|\b(?:gci|get-childitem|dir|ls)\s+env:|%env\b|\bprintenv\b",
        "reads the whole environment"
    ),
    rule!(
        "http_send",
        Low,
        Network,
        SIGNAL,
        r"\burllib\.request\b|\burlopen\s*\(|\brequests\.(?:post|put|get|patch|request)\s*\(|\bhttpx\.\w+\s*\(|\bhttp\.client\b|\baiohttp\b|\bfetch\s*\(|\baxios\b|\bhttps?\.(?:request|get)\s*\(|xmlhttprequest|net::http|httparty|lwp::useragent|http::tiny|invoke-(?:webrequest|restmethod)|\b(?:curl|wget)\s|\bhttp\.(?:post|get|newrequest)\b|\bsocket\.(?:connect|create_connection)\b|\.sendall\s*\(",
        "sends a network request"
    ),
];

pub(super) const COMBOS: &[Combo] = &[Combo {
    id: "env_http_exfil",
    severity: S::Critical,
    category: C::Exfiltration,
    reach: ALL,
    needs: ["whole_env_read", "http_send"],
    within: 12,
    description: "reads the whole environment and sends a network request a few lines away",
}];
