//! The second look at a secret environment variable sent by a language HTTP client (Python
//! requests/httpx, JS fetch/axios): in the call itself (`requests.get(url,
//! headers={…os.environ["X"]…})`) or through a dict built a few lines before and passed by name
//! (`headers = {…os.environ["X"]…}` then `requests.post(url, headers=headers)`; also `json=`,
//! `data=`, `params=`). Either way the secret passes only on its way to a host it belongs to
//! (`secret_dest`), the host read from the call's URL or its URL variable (`destination`).
//!
//! A dict holding a secret that no HTTP call within a few lines sends (a subprocess `env=`, a
//! config) is not a finding here.

use std::sync::LazyLock;

use regex::bytes::Regex;

use super::destination;
use super::engine::Check;
use super::secret_dest;

/// How far after a dict's assignment a call that sends it is looked for.
const CALL_WINDOW_LINES: usize = 20;
/// The longest call read (its arguments may span lines).
const MAX_CALL_BYTES: usize = 2048;

/// The start of a Python HTTP call.
static CALL: LazyLock<Option<Regex>> = LazyLock::new(|| {
    super::engine::builder(
        r"\b(?:requests|httpx|session|client)\.(?:get|post|put|patch|delete|head|request|stream)\s*\(",
    )
    .map_err(|e| tracing::error!(error = %e, "client call pattern does not compile"))
    .ok()
});

/// The name a match ends with (the environment variable).
fn last_word(matched: &[u8]) -> String {
    let start = matched
        .iter()
        .rposition(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
        .map_or(0, |i| i + 1);
    String::from_utf8_lossy(&matched[start..]).into_owned()
}

/// `env_exfil_http_client`'s check: a dict assignment (`NAME = {…`) or a call.
pub(super) fn judge(matched: &[u8], before: &[u8], after: &[u8]) -> Check {
    let name_len = matched
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
        .count();
    let rest = &matched[name_len..];
    let rest = &rest[rest.iter().take_while(|b| b.is_ascii_whitespace()).count()..];
    if rest.starts_with(b"=") {
        secret_in_dict(matched, before, after)
    } else {
        secret_in_call(matched, before, after)
    }
}

/// A call with the secret written in its arguments.
fn secret_in_call(matched: &[u8], before: &[u8], _after: &[u8]) -> Check {
    let var = last_word(matched);
    let call = String::from_utf8_lossy(matched);
    secret_dest::judge_dest(&var, &destination::call_destination(&call, before))
}

/// A dict `NAME = {…os.environ["X"]…}`: judged by the first HTTP call a few lines on that
/// sends `NAME` as its headers, body or parameters; dropped when none does.
fn secret_in_dict(matched: &[u8], before: &[u8], after: &[u8]) -> Check {
    let var = last_word(matched);
    let name_len = matched
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
        .count();
    let name = String::from_utf8_lossy(&matched[..name_len]).into_owned();
    let Some(call_re) = CALL.as_ref() else {
        return Check::Keep;
    };
    let Ok(sends) = super::engine::builder(&format!(
        r"\b(?:headers|json|data|params)\s*=\s*{}\b",
        regex::escape(&name)
    )) else {
        return Check::Keep;
    };
    let window_end = after
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .nth(CALL_WINDOW_LINES)
        .map_or(after.len(), |(i, _)| i);
    let window = &after[..window_end];
    for found in call_re.find_iter(window) {
        let call = call_text(&window[found.start()..]);
        if !sends.is_match(call) {
            continue;
        }
        // The call's URL variable may be assigned anywhere before the call.
        let mut prior = Vec::with_capacity(before.len() + matched.len() + found.start());
        prior.extend_from_slice(before);
        prior.extend_from_slice(matched);
        prior.extend_from_slice(&window[..found.start()]);
        let call = String::from_utf8_lossy(call);
        return secret_dest::judge_dest(&var, &destination::call_destination(&call, &prior));
    }
    Check::Drop
}

/// A call from its name through its closing parenthesis (or [`MAX_CALL_BYTES`]).
fn call_text(from: &[u8]) -> &[u8] {
    let limit = from.len().min(MAX_CALL_BYTES);
    let mut depth = 0usize;
    for (i, b) in from[..limit].iter().enumerate() {
        match b {
            b'(' => depth += 1,
            b')' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return &from[..=i];
                }
            }
            _ => {}
        }
    }
    &from[..limit]
}
