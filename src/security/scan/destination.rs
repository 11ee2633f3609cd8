//! Where a request goes, as far as the text says: the extent of one shell command, the hosts of
//! its URLs, and the hosts behind the variables it sends to (`curl "$URL"`,
//! `https://$HOST/x`, `requests.get(url, …)`), read from the last assignment of that variable
//! earlier in the same text (`URL="https://api.airtable.com/v0/…"`, `url = "https://…"`).
//!
//! A variable nobody assigns in the text (`$SIYUAN_URL`, set by the user in `.env`) stays a
//! variable: `secret_dest` may still read its name. A host that is a template (`{{host}}`) or a
//! command substitution cannot be read at all, and says so ([`Dest::unknown`]).
//!
//! What counts as "earlier in the text" ([`scope`]): inside a fenced Markdown code block, that
//! block (a `.env` example in another block is what the user is told to set, not what the
//! command does); elsewhere (a script, prose) everything before. An assignment from a
//! positional parameter (`BASE_URL="$2"`) is what the user types, not what the skill does: the
//! skill's own earlier assignment (its default) is read instead.

/// One place a request may go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Host {
    /// A literal host name or address, lowercase.
    Literal(String),
    /// A variable holding the URL or host, unassigned in the text (its name, as written).
    Var(String),
}

/// Every place a command may send to.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Dest {
    pub hosts: Vec<Host>,
    /// A URL whose host cannot be read (a template, a substitution).
    pub unknown: bool,
}

/// How many assignments deep a variable is followed (`URL="$BASE/x"`, `BASE=https://…`).
const MAX_DEPTH: usize = 3;

/// Last parts of a variable name that say it holds where to send (`$BASE_URL`, `$GITHUB_API`).
const URL_ENDINGS: &[&str] = &[
    "URL", "URI", "HOST", "ENDPOINT", "BASE", "API", "SERVER", "ADDR", "ADDRESS", "DOMAIN",
    "ORIGIN", "WEBHOOK",
];

/// The shell command a match belongs to: from the match through the end of the line, across
/// `\` line continuations, up to an unquoted `|`, `;`, `&&` or a closing `)`.
pub(super) fn command(matched: &[u8], after: &[u8]) -> String {
    let mut out = Vec::with_capacity(matched.len() + 128);
    let (mut single, mut double) = (false, false);
    let mut depth = 0usize;
    let all = matched.iter().chain(after.iter()).copied();
    let mut prev = 0u8;
    for b in all {
        match b {
            b'\'' if !double => single = !single,
            b'"' if !single => double = !double,
            b'(' if !single && !double => depth += 1,
            b')' if !single && !double => {
                if depth == 0 {
                    break;
                }
                depth -= 1;
            }
            b'|' | b';' if !single && !double => break,
            b'&' if !single && !double && prev == b'&' => break,
            b'\n' if prev != b'\\' => break,
            _ => {}
        }
        out.push(b);
        prev = b;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Where `command` sends to; `before` is the text before it (for assignments); `skip` is a
/// variable that is not a destination (the secret being judged).
pub(super) fn destination(command: &str, before: &[u8], skip: &str) -> Dest {
    let mut dest = Dest::default();
    urls(command, before, 0, &mut dest);
    for (name, at) in variables(command) {
        if name == skip || preceded_by_scheme(command, at) {
            continue;
        }
        let prev = command[..at].bytes().next_back().unwrap_or(b' ');
        if !matches!(prev, b' ' | b'\t' | b'"' | b'\'' | b'=' | b'(' | b',') {
            continue;
        }
        match resolve(name, before, 1) {
            Some(found) => merge(&mut dest, found),
            None if url_like(name) => dest.hosts.push(Host::Var(name.to_string())),
            None => {}
        }
    }
    dest
}

/// Where a language HTTP call sends to (`requests.get(url, headers=…)`,
/// `fetch("https://…", {…})`): the URLs written in the call, else its first two positional
/// arguments — a string that is a URL, or a variable read from its assignment in `before`.
pub(super) fn call_destination(call: &str, before: &[u8]) -> Dest {
    let mut dest = Dest::default();
    urls(call, before, 0, &mut dest);
    if !dest.hosts.is_empty() || dest.unknown {
        return dest;
    }
    let args = call.split_once('(').map_or("", |(_, a)| a);
    for arg in args.split(',').take(2).map(str::trim) {
        let ident = arg
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
            && arg.bytes().next().is_some_and(|b| !b.is_ascii_digit());
        if ident {
            match resolve(arg, before, 1) {
                Some(found) => merge(&mut dest, found),
                None if url_like(arg) => dest.hosts.push(Host::Var(arg.to_string())),
                None => dest.unknown = true,
            }
            return dest;
        }
        if arg.contains('{') || arg.starts_with('`') {
            // A templated string (`f"{BASE}/x"`): its host cannot be read.
            dest.unknown = true;
            return dest;
        }
    }
    dest
}

/// The literal host of `scheme://host[:port]/…`, lowercase; `None` when it is a variable, a
/// template or empty.
pub(super) fn url_host(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest
        .split(|c: char| {
            matches!(c, '/' | '?' | '#' | '\'' | '"' | ')' | ']' | '>' | '}') || c.is_whitespace()
        })
        .next()
        .unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = host_port
        .split_once(':')
        .map_or(host_port, |(h, _)| h)
        .trim_end_matches('.');
    let literal = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
    literal.then(|| host.to_ascii_lowercase())
}

/// The hosts of every `http(s)://` / `ws(s)://` URL of `text`.
fn urls(text: &str, before: &[u8], depth: usize, dest: &mut Dest) {
    let lower = text.to_ascii_lowercase();
    let mut from = 0;
    while let Some(at) = lower[from..].find("://") {
        let at = from + at;
        from = at + 3;
        let scheme_start = lower[..at]
            .rfind(|c: char| !c.is_ascii_alphanumeric())
            .map_or(0, |i| i + 1);
        if !matches!(&lower[scheme_start..at], "http" | "https" | "ws" | "wss") {
            continue;
        }
        if let Some(host) = url_host(&lower[scheme_start..]) {
            dest.hosts.push(Host::Literal(host));
            continue;
        }
        // `https://$HOST/…`: the host is a variable (names keep their case).
        match variables(&text[from..]).next() {
            Some((name, 0)) => match resolve(name, before, depth + 1) {
                Some(found) => merge(dest, found),
                None => dest.hosts.push(Host::Var(name.to_string())),
            },
            _ => dest.unknown = true,
        }
    }
}

fn merge(into: &mut Dest, from: Dest) {
    into.hosts.extend(from.hosts);
    into.unknown |= from.unknown;
}

/// `$NAME` and `${NAME…}` of a text, with the offset of their `$`.
fn variables(text: &str) -> impl Iterator<Item = (&str, usize)> {
    text.match_indices('$').filter_map(move |(at, _)| {
        let rest = &text[at + 1..];
        let rest = rest.strip_prefix('{').unwrap_or(rest);
        let len = rest
            .bytes()
            .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
            .count();
        let name = &rest[..len];
        let starts_well = name.bytes().next().is_some_and(|b| !b.is_ascii_digit());
        starts_well.then_some((name, at))
    })
}

fn preceded_by_scheme(text: &str, at: usize) -> bool {
    text[..at].ends_with("://")
}

/// Does a variable's name say it holds a URL or host?
pub(super) fn url_like(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    upper
        .rsplit('_')
        .next()
        .is_some_and(|last| URL_ENDINGS.contains(&last))
}

/// Where the last assignment of `name` in `before` points (`NAME=value`, `NAME = "value"`,
/// `export NAME=…`, `NAME: value`), when its value is a URL or another variable that is;
/// `None` when there is no such assignment or its value is not a URL.
pub(super) fn resolve(name: &str, before: &[u8], depth: usize) -> Option<Dest> {
    if depth > MAX_DEPTH || name.is_empty() {
        return None;
    }
    let (value, at) = assignments(name, before).find(|(v, _)| !is_positional(v))?;
    let value = String::from_utf8_lossy(value);
    let mut dest = Dest::default();
    if value.contains("://") {
        urls(&value, &before[..at], depth, &mut dest);
    } else if let Some((inner, 0)) = variables(&value).next() {
        match resolve(inner, &before[..at], depth + 1) {
            Some(found) => merge(&mut dest, found),
            None if url_like(inner) => dest.hosts.push(Host::Var(inner.to_string())),
            None => return None,
        }
    } else {
        return None;
    }
    Some(dest)
}

/// `$1`…`$9`, `${2}`, `$@`, `$*`: a value the user gives on the command line.
fn is_positional(value: &[u8]) -> bool {
    let v = value.strip_prefix(b"$").unwrap_or(b"");
    let v = v.strip_prefix(b"{").unwrap_or(v);
    matches!(v.first(), Some(b'1'..=b'9' | b'@' | b'*'))
}

/// The value last assigned to `name` in `before` and where, if any.
pub(super) fn assigned<'a>(name: &str, before: &'a [u8]) -> Option<(&'a [u8], usize)> {
    assignments(name, before).next()
}

/// Every assignment of `name` in `before` (`NAME=value`, `NAME = "value"`, `NAME: value`),
/// the last one first: (its value, the offset of the name).
fn assignments<'a>(name: &str, before: &'a [u8]) -> impl Iterator<Item = (&'a [u8], usize)> {
    let needle = name.as_bytes().to_vec();
    let mut end = before.len();
    std::iter::from_fn(move || {
        while !needle.is_empty() {
            let at = rfind(&before[..end], &needle)?;
            end = at;
            let word_start = at == 0 || {
                let b = before[at - 1];
                !(b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b == b'{')
            };
            let rest = &before[at + needle.len()..];
            let op = rest.iter().position(|b| *b != b' ').unwrap_or(rest.len());
            let assigns =
                matches!(rest.get(op), Some(b'=' | b':')) && rest.get(op + 1) != Some(&b'=');
            if word_start && assigns {
                return Some((value_of(&rest[op + 1..]), at));
            }
        }
        None
    })
}

/// The part of `before` whose assignments count for a command: the fenced code block the
/// command is in, else everything before it.
pub(super) fn scope(before: &[u8]) -> &[u8] {
    let mut fences = 0usize;
    let mut last_fence_end = 0usize;
    let mut line_start = 0usize;
    for (i, b) in before.iter().enumerate() {
        if *b == b'\n' {
            let line = &before[line_start..i];
            let indent = line.iter().take_while(|c| **c == b' ').count();
            if line[indent..].starts_with(b"```") || line[indent..].starts_with(b"~~~") {
                fences += 1;
                last_fence_end = i + 1;
            }
            line_start = i + 1;
        }
    }
    if fences % 2 == 1 {
        &before[last_fence_end..]
    } else {
        before
    }
}

/// The value of an assignment: after optional spaces, an `f`/`r` string prefix and a quote,
/// up to the closing quote or the end of the word.
fn value_of(rest: &[u8]) -> &[u8] {
    let start = rest.iter().position(|b| *b != b' ').unwrap_or(rest.len());
    let mut v = &rest[start..];
    if matches!(v.first(), Some(b'f' | b'r')) && matches!(v.get(1), Some(b'"' | b'\'')) {
        v = &v[1..];
    }
    match v.first() {
        Some(q @ (b'"' | b'\'')) => {
            let v = &v[1..];
            let end = v
                .iter()
                .position(|b| b == q || *b == b'\n')
                .unwrap_or(v.len());
            &v[..end]
        }
        _ if v.starts_with(b"$(") => {
            // A command substitution, through its closing parenthesis.
            let mut depth = 1usize;
            let end = v[2..]
                .iter()
                .position(|b| {
                    match b {
                        b'(' => depth += 1,
                        b')' => depth -= 1,
                        _ => {}
                    }
                    depth == 0 || *b == b'\n'
                })
                .map_or(v.len(), |i| i + 3);
            &v[..end]
        }
        _ => {
            let end = v
                .iter()
                .position(|b| b.is_ascii_whitespace() || matches!(b, b';' | b'&' | b'|'))
                .unwrap_or(v.len());
            &v[..end]
        }
    }
}

fn rfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.len() > hay.len() {
        return None;
    }
    (0..=hay.len() - needle.len())
        .rev()
        .find(|&i| hay[i..].starts_with(needle))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(h: &str) -> Host {
        Host::Literal(h.into())
    }

    #[test]
    fn the_command_stops_at_pipes_and_follows_continuations() {
        let c = command(
            b"curl -s \"https://a.example/x?q=1|2",
            b"\" | jq . ; curl https://b.example",
        );
        assert!(c.contains("a.example") && !c.contains("b.example"), "{c}");
        let c = command(b"curl -d key=$K \\", b"\n  https://c.example/ \nnext");
        assert!(c.contains("c.example") && !c.contains("next"), "{c}");
    }

    #[test]
    fn literal_template_and_variable_hosts() {
        let d = destination("curl https://u:p@API.Example.com:8443/x?a=b", b"", "");
        assert_eq!(d.hosts, vec![lit("api.example.com")]);
        assert!(!d.unknown);
        assert!(destination("curl -d k=$K https://{{host}}/x", b"", "K").unknown);
        let d = destination("curl -d k=$K \"$BASE/x\"", b"", "K");
        assert_eq!(d.hosts, vec![Host::Var("BASE".into())]);
        let d = destination("curl https://$HOST/x", b"", "");
        assert_eq!(d.hosts, vec![Host::Var("HOST".into())]);
        // `${X:-default}`: the variable, and the default.
        let d = destination("curl \"${SIYUAN_URL:-http://127.0.0.1:6806}/api\"", b"", "");
        assert!(d.hosts.contains(&Host::Var("SIYUAN_URL".into())), "{d:?}");
        assert!(d.hosts.contains(&lit("127.0.0.1")), "{d:?}");
        // A path variable is not a destination.
        let d = destination("curl https://api.github.com/repos/$OWNER/$REPO", b"", "");
        assert_eq!(d.hosts, vec![lit("api.github.com")]);
    }

    #[test]
    fn variables_are_read_from_their_last_assignment() {
        let before = b"URL=\"https://old.example/\"\nURL=\"https://api.airtable.com/v0/$B?x=1\"\n[ -n \"$O\" ] && URL=\"$URL&offset=$O\"\n";
        let d = destination(
            "curl -s \"$URL\" -H \"Authorization: Bearer $K\"",
            before,
            "K",
        );
        assert_eq!(d.hosts, vec![lit("api.airtable.com")]);
        let d = resolve("url", b"url = f\"https://collect.evil.example/{x}\"\n", 0);
        assert_eq!(d.map(|d| d.hosts), Some(vec![lit("collect.evil.example")]));
        let d = destination("curl \"$ENDPOINT\"", b"export ENDPOINT=$BASE_URL/v1\n", "");
        assert_eq!(d.hosts, vec![Host::Var("BASE_URL".into())]);
        // A comparison is not an assignment; an unassigned, non-URL name is no destination.
        let d = destination("curl \"$URL\"", b"if URL == \"https://a.example\"", "");
        assert_eq!(d.hosts, vec![Host::Var("URL".into())]);
        assert_eq!(destination("curl \"$PAYLOAD\"", b"", ""), Dest::default());
        // A positional parameter is the user's: the skill's own default is read.
        let before = b"BASE_URL=\"https://here.now\"\n  --base-url) BASE_URL=\"$2\"; shift 2 ;;\nBASE_URL=\"${BASE_URL%/}\"\n";
        let d = destination("curl -X POST \"$BASE_URL/api\"", before, "");
        assert_eq!(d.hosts, vec![lit("here.now")]);
    }

    #[test]
    fn assignments_count_inside_the_same_code_block() {
        let text = b"Put this in .env:\n```\nCANVAS_BASE_URL=https://school.example\n```\n\n```bash\nX=1\n";
        assert_eq!(scope(text), b"X=1\n");
        let outside = b"```\nA=1\n```\nprose\n";
        assert_eq!(scope(outside), &outside[..]);
        assert_eq!(assigned("X", b"X=1\nY=2\n"), Some((&b"1"[..], 0)));
        assert_eq!(assigned("X", b"if X == 1"), None);
    }

    #[test]
    fn language_calls_send_to_their_url_argument() {
        let d = call_destination("requests.get(\"https://API.openai.com/v1\", headers={", b"");
        assert_eq!(d.hosts, vec![lit("api.openai.com")]);
        let d = call_destination(
            "requests.post(url, headers={",
            b"url = 'https://c.example/x'\n",
        );
        assert_eq!(d.hosts, vec![lit("c.example")]);
        let d = call_destination("requests.request(\"POST\", api_url, headers={", b"");
        assert_eq!(d.hosts, vec![Host::Var("api_url".into())]);
        assert!(call_destination("requests.get(f\"{BASE}/x\", headers={", b"").unknown);
        assert!(call_destination("httpx.get(target, headers={", b"").unknown);
    }
}
