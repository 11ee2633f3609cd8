//! Secret redaction for everything hermes persists, sends, exports or logs.
//!
//! A `Redactor` knows two things: the exact values of the secrets this process has loaded (API
//! keys from the environment, `.env`, `auth.json`, config.yaml — see `secrets.rs`) and the shapes
//! of well-known tokens (`sk-…`, `ghp_…`, `xoxb-…`, Telegram bot tokens, AWS key ids, JWTs, PEM
//! private keys, `password=…`). Each is found by a case-sensitive SIMD literal search (Teddy,
//! `redact_find.rs`): one over a rare slice of each exact value, one over a short literal that
//! starts each shape (its "trigger": `sk-`, `ghp_`, `-----BEGIN`, `password`, `Token`, `_KEY`, …,
//! the names in lower, UPPER and Capitalised case and `apiKey`). Only at a trigger hit is a small
//! anchored regex or a hand scan run, so text without secrets costs two vectorised scans (a 1 MB
//! tool result in well under the 2 ms target; `cargo bench --bench redact`). (One
//! case-insensitive automaton over both, the first design, gets no prefilter at all: 1.7 ms per
//! clean MB and ~9 ms for a secret-heavy one.)
//!
//! The value after a secret-ish name (`password=…`, `"api_key": …`) is found by the hand scan in
//! `redact_named.rs`; a `…_key` name is a secret name unless the word before the `_key` is a
//! harmless one (`cache_key`, `sort_key`, `primary_key`). A value shaped like a token or equal
//! to a known secret is hidden under any name.
//!
//! `redact()` (a shared pattern-only redactor) remains for call sites that have no process state
//! (error bodies, the compaction transcript).

use std::borrow::Cow;
use std::sync::{LazyLock, OnceLock};

use regex::Regex;

use crate::security::redact_find::{Hits, Literals, ValueIndex};
#[cfg(test)]
use crate::security::redact_named::{HARMLESS_KEY_WORDS, HARMLESS_WORD_MAX, NAME_TAIL, VALUE_STOP};
use crate::security::redact_named::{harmless_key_name, named_value};

/// What replaces a secret.
pub const REDACTED: &str = "[REDACTED]";
/// Shorter known values are not redacted by value (too likely to be ordinary words).
pub const MIN_SECRET_LEN: usize = 8;

/// The token shapes and the literal each one starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// A token with a fixed prefix (`sk-`, `ghp_` …); `regex` matches the whole token.
    Prefixed(usize),
    /// `123456789:AA…` — the trigger is `:AA`, the digits are before it.
    Telegram,
    /// `Bearer <token>`: the scheme word stays, the token goes.
    Bearer,
    /// `password=…`, `"api_key": "…"`, `GITHUB_TOKEN=…`: the name stays, the value goes.
    Named,
}

/// How far past its trigger a token or an unquoted value is looked for.
pub(crate) const TOKEN_WINDOW: usize = 4096;
/// How far past its `-----BEGIN` line a PEM block's end is looked for.
const PEM_WINDOW: usize = 64 * 1024;

impl Shape {
    /// The most bytes checking one trigger of this shape may read.
    fn scan_limit(self) -> usize {
        match self {
            Shape::Prefixed(i) if PREFIXED[i].0 == "-----BEGIN" => PEM_WINDOW,
            Shape::Prefixed(_) | Shape::Bearer => TOKEN_WINDOW,
            Shape::Telegram => 64,
            // The rest of the name, blanks, then the value.
            Shape::Named => TOKEN_WINDOW + 64,
        }
    }
}

/// Prefixed token shapes: (trigger literal, regex anchored at the trigger).
const PREFIXED: &[(&str, &str)] = &[
    ("sk-", r"^sk-[A-Za-z0-9_\-]{16,}"),
    ("sk_live_", r"^sk_live_[A-Za-z0-9]{16,}"),
    ("sk_test_", r"^sk_test_[A-Za-z0-9]{16,}"),
    ("rk_live_", r"^rk_live_[A-Za-z0-9]{16,}"),
    ("ghp_", r"^ghp_[A-Za-z0-9]{20,}"),
    ("gho_", r"^gho_[A-Za-z0-9]{20,}"),
    ("ghu_", r"^ghu_[A-Za-z0-9]{20,}"),
    ("ghs_", r"^ghs_[A-Za-z0-9]{20,}"),
    ("ghr_", r"^ghr_[A-Za-z0-9]{20,}"),
    ("github_pat_", r"^github_pat_[A-Za-z0-9_]{20,}"),
    ("glpat-", r"^glpat-[A-Za-z0-9_\-]{20,}"),
    ("xoxa-", r"^xoxa-[A-Za-z0-9\-]{10,}"),
    ("xoxb-", r"^xoxb-[A-Za-z0-9\-]{10,}"),
    ("xoxe-", r"^xoxe-[A-Za-z0-9\-]{10,}"),
    ("xoxp-", r"^xoxp-[A-Za-z0-9\-]{10,}"),
    ("xoxr-", r"^xoxr-[A-Za-z0-9\-]{10,}"),
    ("xoxs-", r"^xoxs-[A-Za-z0-9\-]{10,}"),
    ("hf_", r"^hf_[A-Za-z0-9]{30,}"),
    ("AIza", r"^AIza[0-9A-Za-z_\-]{35}"),
    ("AKIA", r"^AKIA[0-9A-Z]{16}\b"),
    ("ASIA", r"^ASIA[0-9A-Z]{16}\b"),
    (
        "eyJ",
        r"^eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*",
    ),
    (
        "-----BEGIN",
        r"^-----BEGIN[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----(?s:.*?)(-----END[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\z)",
    ),
];

/// Names whose value is a secret in `name=value` / `name: value` text.
const NAMES: &[&str] = &[
    "password",
    "passwd",
    "secret",
    "token",
    "_key",
    "-key",
    "apikey",
    "authorization",
];

struct Shapes {
    /// Trigger literals in automaton order, then their shapes.
    triggers: Vec<(String, Shape)>,
    /// The search over `triggers` (built once per process).
    automaton: Option<Literals>,
    /// Each shape's regex, compiled the first time its trigger is met: most texts meet
    /// none, and compiling all 25 up front cost every process ~1.5 ms at its first log line.
    prefixed: Vec<OnceLock<Regex>>,
    telegram: OnceLock<Regex>,
    bearer: OnceLock<Regex>,
}

/// `pattern` compiled once into `slot`.
fn compiled<'a>(slot: &'a OnceLock<Regex>, pattern: &str) -> &'a Regex {
    // The patterns are fixed and tested: a failure is a programming error caught by tests.
    slot.get_or_init(|| Regex::new(pattern).unwrap_or_else(|_| never_matches()))
}

const TELEGRAM: &str = r"^:AA[A-Za-z0-9_\-]{33}\b";
const BEARER: &str = r"^(?i:bearer)\s+([A-Za-z0-9._~+/=\-]{12,})";

static SHAPES: LazyLock<Shapes> = LazyLock::new(|| {
    let mut triggers = Vec::new();
    let mut prefixed = Vec::new();
    for (i, (lit, _)) in PREFIXED.iter().enumerate() {
        triggers.push((lit.to_string(), Shape::Prefixed(i)));
        prefixed.push(OnceLock::new());
    }
    triggers.push((":AA".to_string(), Shape::Telegram));
    for word in case_variants("bearer") {
        triggers.push((word, Shape::Bearer));
    }
    for name in NAMES {
        for word in case_variants(name) {
            triggers.push((word, Shape::Named));
        }
    }
    // camelCase keys in JSON and code (`"apiKey": …`).
    for word in ["apiKey", "ApiKey", "APIKey"] {
        triggers.push((word.to_string(), Shape::Named));
    }
    let literals: Vec<&str> = triggers.iter().map(|(t, _)| t.as_str()).collect();
    let automaton = Literals::new(&literals, Hits::Dense);
    Shapes {
        triggers,
        automaton,
        prefixed,
        telegram: OnceLock::new(),
        bearer: OnceLock::new(),
    }
});

/// `word` as written in lower case, UPPER case and Capitalised (after a `_`/`-` lead too).
fn case_variants(word: &str) -> Vec<String> {
    let upper = word.to_ascii_uppercase();
    let mut capital = String::with_capacity(word.len());
    let mut first = true;
    for c in word.chars() {
        if first && c.is_ascii_alphabetic() {
            capital.push(c.to_ascii_uppercase());
            first = false;
        } else {
            capital.push(c);
        }
    }
    let mut out = vec![word.to_string(), upper, capital];
    out.dedup();
    out.sort();
    out.dedup();
    out
}

fn never_matches() -> Regex {
    #[allow(clippy::unwrap_used)] // a constant, valid pattern
    Regex::new(r"[^\s\S]").unwrap()
}

/// Where one secret is in a text (byte offsets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SecretSpan {
    /// Where what identified it starts: the name of `password=…`, the `Bearer` word, the
    /// digits of a bot token; `start` for a known value or a prefixed token. Text cut between
    /// `context` and `end` would no longer be recognised.
    pub context: usize,
    /// What is replaced: `start..end`.
    pub start: usize,
    pub end: usize,
}

/// Finds and replaces secrets. Build one per process (`Redactor::new` with the loaded secret
/// values) and share it; `Redactor::patterns_only()` knows the token shapes alone.
#[derive(Clone)]
pub struct Redactor {
    /// Over the exact values (`None` without any).
    values: Option<ValueIndex>,
    secrets: Vec<String>,
    enabled: bool,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the values themselves.
        write!(
            f,
            "Redactor({} known secrets, enabled: {})",
            self.secrets.len(),
            self.enabled
        )
    }
}

impl Default for Redactor {
    fn default() -> Self {
        Self::patterns_only()
    }
}

impl Redactor {
    /// A redactor for the token shapes and these exact values (shorter than
    /// [`MIN_SECRET_LEN`] are ignored). `enabled: false` (`security.redact_secrets: false`)
    /// makes `redact` return its input.
    pub fn new(secret_values: impl IntoIterator<Item = String>, enabled: bool) -> Self {
        let mut secrets: Vec<String> = secret_values
            .into_iter()
            .map(|s| s.trim().to_string())
            .filter(|s| s.len() >= MIN_SECRET_LEN && s != REDACTED)
            .collect();
        // A value with a quote, a backslash or a control character is written otherwise inside
        // JSON (tool arguments, exported sessions): that form is a secret too.
        let escaped: Vec<String> = secrets
            .iter()
            .filter_map(|s| {
                let json = serde_json::to_string(s).ok()?;
                let inner = json.get(1..json.len() - 1)?;
                (inner != s).then(|| inner.to_string())
            })
            .collect();
        secrets.extend(escaped);
        secrets.sort();
        secrets.dedup();
        Redactor {
            values: ValueIndex::new(&secrets),
            secrets,
            enabled,
        }
    }

    /// Token shapes only (no known values).
    pub fn patterns_only() -> Self {
        Self::new(Vec::new(), true)
    }

    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// How many exact values this redactor knows.
    pub fn known_values(&self) -> usize {
        self.secrets.len()
    }

    /// `text` with every secret replaced by `[REDACTED]` (borrowed when nothing was found).
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if !self.enabled || text.is_empty() {
            return Cow::Borrowed(text);
        }
        let mut out: Option<String> = None;
        let mut copied = 0usize;
        self.find_secrets(text, |span| {
            let buf = out.get_or_insert_with(|| String::with_capacity(text.len()));
            buf.push_str(&text[copied..span.start]);
            buf.push_str(REDACTED);
            copied = span.end;
        });
        match out {
            None => Cow::Borrowed(text),
            Some(mut buf) => {
                buf.push_str(&text[copied..]);
                Cow::Owned(buf)
            }
        }
    }

    /// Calls `found` for every secret in `text`, in order, never overlapping: secrets that
    /// overlap are reported as one (also when the redactor is disabled: the caller decides).
    pub fn find_secrets(&self, text: &str, mut found: impl FnMut(SecretSpan)) {
        let bytes = text.as_bytes();
        // Every occurrence of every known value (overlapping ones too) and every shape; where
        // two overlap, their union is one secret.
        let mut spans: Vec<SecretSpan> = Vec::new();
        if let Some(index) = &self.values {
            index.find(&self.secrets, bytes, |start, end| {
                spans.push(SecretSpan {
                    context: start,
                    start,
                    end,
                })
            });
        }
        let shapes = &*SHAPES;
        if let Some(triggers) = &shapes.automaton {
            // Every trigger is looked at, also one inside another (`sk-key=…`: `sk-` fails,
            // `-key` holds) or inside a secret already found (`token: abcSecret = hunter2…`:
            // the second name's value runs past the first). Each look may read a window
            // (`Shape::scan_limit`), and text made of nested triggers (`sk-sk-sk-…`) would make
            // the looks inside found secrets quadratic: past a budget of a few readings of the
            // whole text, those are skipped (the secrets around them are hidden anyway).
            let mut budget = 4 * text.len() + 256 * 1024;
            let mut covered = 0;
            let mut at = 0;
            while let Some((pattern, m_start, m_end)) = triggers.find_at(bytes, at) {
                at = m_start + 1;
                let shape = shapes.triggers[pattern].1;
                if m_start < covered {
                    let Some(left) = budget.checked_sub(shape.scan_limit()) else {
                        at = covered;
                        continue;
                    };
                    budget = left;
                }
                if let Some((start, end)) = shape_span(text, m_start, m_end, shape) {
                    spans.push(SecretSpan {
                        context: start.min(m_start),
                        start,
                        end,
                    });
                    covered = covered.max(end);
                }
            }
        }
        if spans.len() > 1 {
            spans.sort_unstable_by_key(|s| (s.start, std::cmp::Reverse(s.end)));
        }
        let mut current: Option<SecretSpan> = None;
        for span in spans {
            match &mut current {
                Some(c) if span.start < c.end => {
                    c.end = c.end.max(span.end);
                    c.context = c.context.min(span.context);
                }
                _ => {
                    if let Some(c) = current.replace(span) {
                        found(c);
                    }
                }
            }
        }
        if let Some(c) = current {
            found(c);
        }
    }

    /// Length in bytes of the longest known value (0 with none).
    pub fn longest_value(&self) -> usize {
        self.secrets.iter().map(String::len).max().unwrap_or(0)
    }

    /// Like [`Redactor::redact`], into an owned string.
    pub fn redact_string(&self, text: String) -> String {
        match self.redact(&text) {
            Cow::Borrowed(_) => text,
            Cow::Owned(s) => s,
        }
    }
}

/// At most `n` bytes of `text` from `start`, cut on a char boundary.
fn window(text: &str, start: usize, n: usize) -> &str {
    let mut end = (start + n).min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[start..end]
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The byte span to redact for a trigger hit at `start..end`, if the shape is really there.
fn shape_span(text: &str, start: usize, end: usize, shape: Shape) -> Option<(usize, usize)> {
    let bytes = text.as_bytes();
    let shapes = &*SHAPES;
    let word_before = start > 0 && is_word_byte(bytes[start - 1]);
    match shape {
        Shape::Prefixed(i) => {
            if word_before {
                return None;
            }
            // A PEM block may be long; other tokens are short.
            let limit = shape.scan_limit();
            let m =
                compiled(&shapes.prefixed[i], PREFIXED[i].1).find(window(text, start, limit))?;
            Some((start, start + m.end()))
        }
        Shape::Telegram => {
            let mut digits = start;
            while digits > 0 && bytes[digits - 1].is_ascii_digit() && start - digits < 11 {
                digits -= 1;
            }
            let n = start - digits;
            if !(8..=10).contains(&n) || (digits > 0 && is_word_byte(bytes[digits - 1])) {
                return None;
            }
            let m = compiled(&shapes.telegram, TELEGRAM).find(window(text, start, 64))?;
            Some((digits, start + m.end()))
        }
        Shape::Bearer => {
            if word_before {
                return None;
            }
            let caps =
                compiled(&shapes.bearer, BEARER).captures(window(text, start, TOKEN_WINDOW))?;
            let token = caps.get(1)?;
            Some((start + token.start(), start + token.end()))
        }
        Shape::Named => {
            // Most name hits have no value and are rejected by the scan; only a found value
            // pays for the look back at the word before `_key`.
            let span = named_value(text, end)?;
            (!harmless_key_name(bytes, start)).then_some(span)
        }
    }
}

/// A log sink that redacts what it writes. The tracing formatter writes one whole event per
/// `write` call, so a secret is never split across two calls.
pub struct RedactingWriter<W> {
    inner: W,
    redactor: Redactor,
}

impl<W> RedactingWriter<W> {
    pub fn new(inner: W, redactor: Redactor) -> Self {
        RedactingWriter { inner, redactor }
    }
}

impl<W: std::io::Write> std::io::Write for RedactingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        self.inner
            .write_all(self.redactor.redact(&text).as_bytes())?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

static PATTERNS_ONLY: LazyLock<Redactor> = LazyLock::new(Redactor::patterns_only);

/// Replaces anything shaped like a credential with `[REDACTED]` (no known values: use the
/// process's `Redactor` where there is one).
pub fn redact(text: &str) -> String {
    PATTERNS_ONLY.redact(text).into_owned()
}

/// Redacts one known secret value (e.g. the configured API key) wherever it appears.
pub fn redact_value(text: &str, secret: &str) -> String {
    if secret.len() < 6 {
        return text.to_string();
    }
    text.replace(secret, REDACTED)
}

#[cfg(test)]
#[path = "redact_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "redact_prop_tests.rs"]
mod prop_tests;
