//! The `name = value` rule of the `Redactor` (`redact.rs`): after a secret-ish name (`password`,
//! `token`, `secret`, `…_key`, `apiKey`, …) found by the trigger search, the hand scan that finds
//! its value in `name = value`, `"name": "value"`, `NAME=value` or `name: Bearer value`, and what
//! makes a hit no secret: code (`token = make_token(…)`, `Token::new`), placeholders
//! (`${VAR}`, `<your-key>`), setting words (`disabled`), and harmless `…_key` names
//! (`cache_key`, `sort_key`, `primary_key`).

use crate::security::redact::{REDACTED, TOKEN_WINDOW};

/// Words that make a `…_key` / `…-key` name harmless: the key of a cache, an index, a table
/// row, a public key. Only the word right before the `_key` counts, whole and in any case
/// (`cache_key`, `SORT_KEY`, `db_primary_key`, `foreign-key`), so `api_key`, `secret_key`,
/// `private_key`, `access_key`, `x-api-key`, `OPENAI_API_KEY`, and any word not listed here
/// (`resort_key`, `session_key`, `hash_key`: a session or an HMAC key may be a secret) stay
/// secret names. A value shaped like a token or a known secret value is still hidden under any
/// name. Lower case, at most [`HARMLESS_WORD_MAX`] bytes.
pub(crate) const HARMLESS_KEY_WORDS: &[&str] = &[
    "cache",
    "sort",
    "primary",
    "foreign",
    "partition",
    "range",
    "row",
    "lookup",
    "index",
    "dedup",
    "dedupe",
    "idempotency",
    "group",
    "cluster",
    "shard",
    "routing",
    "composite",
    "unique",
    "column",
    "object",
    "translation",
    "i18n",
    "public",
];
/// The longest word in [`HARMLESS_KEY_WORDS`] rounded up; a longer word before `_key` is
/// never harmless (and a stream cut further back cannot change that: `redact_stream.rs`).
pub(crate) const HARMLESS_WORD_MAX: usize = 16;

/// Bytes that may continue a name: `api_key_id`, `token.value`.
pub(crate) const NAME_TAIL: [bool; 256] = byte_set(ByteClass::Alphanumeric, b"_.-");
/// Bytes that end an unquoted value.
pub(crate) const VALUE_STOP: [bool; 256] = byte_set(ByteClass::BlankOrControl, b"\"',;&<>(){}[]`|");

#[derive(Clone, Copy)]
enum ByteClass {
    Alphanumeric,
    BlankOrControl,
}

/// A 256-entry table of the bytes in `class` or `extra`, built at compile time: the hand scans
/// run on ~25,000 rejected names per MB of code, and a lookup per byte beats a comparison
/// with each member.
const fn byte_set(class: ByteClass, extra: &[u8]) -> [bool; 256] {
    let mut set = [false; 256];
    let mut b = 0;
    while b < 256 {
        let byte = b as u8;
        set[b] = match class {
            ByteClass::Alphanumeric => byte.is_ascii_alphanumeric(),
            ByteClass::BlankOrControl => byte.is_ascii_whitespace() || byte.is_ascii_control(),
        };
        b += 1;
    }
    let mut i = 0;
    while i < extra.len() {
        set[extra[i] as usize] = true;
        i += 1;
    }
    set
}

/// Whether the name trigger at `start` is the `_key`/`-key` of a harmless name (`cache_key`):
/// the whole alphanumeric word before it is one of [`HARMLESS_KEY_WORDS`].
#[inline]
pub(crate) fn harmless_key_name(bytes: &[u8], start: usize) -> bool {
    let is_key = matches!(bytes.get(start), Some(b'_' | b'-'))
        && bytes
            .get(start + 1..start + 4)
            .is_some_and(|k| k.eq_ignore_ascii_case(b"key"));
    if !is_key {
        return false;
    }
    let mut word = start;
    while word > 0 && bytes[word - 1].is_ascii_alphanumeric() {
        if start - word == HARMLESS_WORD_MAX {
            return false;
        }
        word -= 1;
    }
    let word = &bytes[word..start];
    HARMLESS_KEY_WORDS
        .iter()
        .any(|w| word.eq_ignore_ascii_case(w.as_bytes()))
}

/// For a secret-ish name ending at `name_end`: the span of its value in `name = value`,
/// `"name": "value"`, `NAME=value` or `name: Bearer value`. Scanned by hand: names such as
/// `token` and `_key` are common in code, and most hits must be rejected cheaply.
#[inline]
pub(crate) fn named_value(text: &str, name_end: usize) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let len = b.len();
    let mut i = name_end;
    // The rest of the name (`api_key_id`, `token.value`), a closing quote, blanks.
    let name_limit = (name_end + 40).min(len);
    while i < name_limit && NAME_TAIL[usize::from(b[i])] {
        i += 1;
    }
    // Its closing quote, escaped too: `\"api_key\": \"…\"` is a JSON object inside a JSON
    // string (a `curl -d` in a command's arguments).
    if b.get(i) == Some(&b'\\') && matches!(b.get(i + 1), Some(b'"' | b'\'')) {
        i += 2;
    } else if i < len && (b[i] == b'"' || b[i] == b'\'') {
        i += 1;
    }
    let skip_blanks = |mut i: usize| {
        while i < len && (b[i] == b' ' || b[i] == b'\t') {
            i += 1;
        }
        i
    };
    i = skip_blanks(i);
    // `:`, `=`, `:=` or `=>`.
    match b.get(i) {
        Some(b':') => {
            i += 1;
            if b.get(i) == Some(&b'=') {
                i += 1;
            } else if b.get(i) == Some(&b':') {
                return None; // `Token::new`: a path, not an assignment.
            }
        }
        Some(b'=') => {
            i += 1;
            if matches!(b.get(i), Some(b'>') | Some(b'=')) {
                // `=>` is an assignment; `==` a comparison.
                if b[i] == b'=' {
                    return None;
                }
                i += 1;
            }
        }
        _ => return None,
    }
    i = skip_blanks(i);
    let quote = match b.get(i) {
        Some(&q) if q == b'"' || q == b'\'' => {
            i += 1;
            Some(q)
        }
        Some(b'\\') if matches!(b.get(i + 1), Some(b'"' | b'\'')) => {
            i += 2;
            Some(b[i - 1])
        }
        _ => None,
    };
    // An auth scheme word stays readable: `Authorization: Bearer <token>`.
    for scheme in ["bearer", "basic", "token"] {
        let end = i + scheme.len();
        if end < len
            && b[i..end].eq_ignore_ascii_case(scheme.as_bytes())
            && (b[end] == b' ' || b[end] == b'\t')
        {
            i = skip_blanks(end);
            break;
        }
    }
    let value_start = i;
    let value_len = match quote {
        None => {
            let rest = &b[i..len.min(i + TOKEN_WINDOW)];
            let n = rest
                .iter()
                .position(|&c| VALUE_STOP[usize::from(c)])
                .unwrap_or(rest.len());
            // `token = make_token(...)`, `key = items[0]`: code, not a value.
            if matches!(rest.get(n), Some(b'(') | Some(b'[')) {
                return None;
            }
            n
        }
        Some(q) => {
            let window = &b[i..len.min(i + 512)];
            match window.iter().position(|&c| c == q || c == b'\n') {
                Some(n) => n,
                // The text ends inside the quotes (a stream cut there): the value runs to the end.
                None if i + 512 >= len => window.len(),
                None => return None,
            }
        }
    };
    // A backslash at the end escapes what follows (`\"` inside a JSON string): it stays, or the
    // redacted JSON would no longer parse.
    let mut value_len = value_len;
    while value_len > 0 && b[value_start + value_len - 1] == b'\\' {
        value_len -= 1;
    }
    // Fewer than 6 bytes is fewer than 6 characters: most rejections need no count.
    if value_len < 6 {
        return None;
    }
    let value = text.get(value_start..value_start + value_len)?;
    if (value_len < 24 && value.chars().count() < 6) || is_placeholder(value) {
        return None;
    }
    Some((value_start, value_start + value_len))
}

/// Values that only name a secret: `${VAR}`, `$VAR`, `<your-key>`, `***`, already redacted,
/// a path.
fn is_placeholder(value: &str) -> bool {
    is_setting_word(value)
        || value.starts_with('$')
        || value.starts_with('<')
        || value.starts_with('/')
        || value.starts_with('~')
        || value.contains(REDACTED)
        || value
            .bytes()
            .all(|b| b == b'*' || b == b'x' || b == b'X' || b == b'.')
}

/// A setting, not a secret: `secret_store=disabled`, `token_cache: optional`. Only these exact
/// words: a lowercase password such as `correcthorse` is still hidden.
fn is_setting_word(value: &str) -> bool {
    const WORDS: &[&str] = &[
        "true", "false", "enabled", "disabled", "none", "null", "required", "optional", "default",
        "auto", "unset", "inherit", "allowed", "denied", "missing",
    ];
    WORDS.iter().any(|w| value.eq_ignore_ascii_case(w))
}
