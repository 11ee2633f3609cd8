//! Property tests for `redact.rs`: random text with secrets planted at random offsets (values
//! overlapping and next to each other, at the very start and end, inside `token=` assignments,
//! next to trigger words that are no secret, under harmless names such as `cache_key` and near
//! misses such as `resort_key`) is redacted exactly as a slow reference does it —
//! every value looked for at every byte, every trigger at every byte, overlapping finds joined —
//! whole and streamed in random pieces.

use super::*;
use crate::security::redact_stream::StreamRedactor;

/// The known values: overlapping each other, repetitive, non-ASCII, sharing prefixes.
const VALUES: &[&str] = &[
    "abcdefgh-12345",
    "abcdefgh-12345-more",
    "12345-more-ZZZZ",
    "xxxxxxxxxQ",
    "sk-proj-QZ7xK9wYb2LmNpQr",
    "ключ-секрет-12345",
    "known-secret-value-07-Zx9q7PwL",
    "tokentokentoken99",
];

/// Pieces the random texts are made of: ordinary text and code (with trigger words that are
/// no secret), pieces of assignments, token shapes.
const PIECES: &[&str] = &[
    " ",
    "\n",
    "the ",
    "é",
    "日本",
    "let tokens = lexer.tokens(input);",
    "Vec<Token>",
    "cache_key(k)",
    "cache",
    "re",
    "sort",
    "cache_key",
    "SORT_KEY",
    "public-key",
    "token",
    "TOKEN",
    "_key",
    "-key",
    "apiKey",
    "password",
    "secret_store",
    "=",
    ": ",
    " = ",
    "\"",
    "'",
    "=>",
    "::",
    "Bearer ",
    "Authorization: ",
    "sk-",
    "sk-proj-abcdefghijklmnopqrstu",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "123456789",
    ":AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1",
    "AKIAIOSFODNN7EXAMPLE",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n",
    "-----END RSA PRIVATE KEY-----",
    "hunter2hunter2",
    "${OPENAI_API_KEY}",
    "null",
    "abcdefgh-",
    "12345",
    "-more",
    "xxxx",
    "[REDACTED]",
];

/// A small deterministic generator (xorshift64*): the same cases on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// One random text of about `pieces` pieces, about a third of them secrets.
fn random_text(rng: &mut Rng, pieces: usize) -> String {
    let mut text = String::new();
    for _ in 0..pieces {
        match rng.below(6) {
            0 => text.push_str(VALUES[rng.below(VALUES.len())]),
            1 => {
                // A value inside an assignment, quoted or not.
                let name = [
                    "token",
                    "GITHUB_TOKEN",
                    "api_key",
                    "password",
                    "Secret",
                    // Harmless names (their values stay) and near misses (they do not).
                    "cache_key",
                    "PRIMARY_KEY",
                    "resort_key",
                    "x-api-key",
                    "sort",
                ];
                let op = ["=", ": ", " = ", "\": \"", "='"];
                text.push_str(name[rng.below(name.len())]);
                text.push_str(op[rng.below(op.len())]);
                text.push_str(VALUES[rng.below(VALUES.len())]);
            }
            _ => text.push_str(PIECES[rng.below(PIECES.len())]),
        }
    }
    text
}

/// The reference: every value and every trigger tried at every byte, overlapping finds joined,
/// each joined run replaced by one `[REDACTED]`.
fn reference(values: &[&str], text: &str) -> String {
    let bytes = text.as_bytes();
    let mut spans: Vec<(usize, usize)> = Vec::new();
    for p in 0..bytes.len() {
        for v in values {
            if bytes[p..].starts_with(v.as_bytes()) {
                spans.push((p, p + v.len()));
            }
        }
        for (trigger, shape) in &SHAPES.triggers {
            if bytes[p..].starts_with(trigger.as_bytes())
                && let Some(span) = shape_span(text, p, p + trigger.len(), *shape)
            {
                spans.push(span);
            }
        }
    }
    spans.sort();
    let mut out = String::new();
    let mut copied = 0;
    let mut i = 0;
    while i < spans.len() {
        let (start, mut end) = spans[i];
        while i + 1 < spans.len() && spans[i + 1].0 < end {
            i += 1;
            end = end.max(spans[i].1);
        }
        out.push_str(&text[copied..start]);
        out.push_str(REDACTED);
        copied = end;
        i += 1;
    }
    out.push_str(&text[copied..]);
    out
}

/// `text` through a `StreamRedactor` in random pieces (cut on char boundaries).
fn streamed(redactor: &Redactor, rng: &mut Rng, text: &str) -> String {
    let mut stream = StreamRedactor::new(redactor);
    let mut out = String::new();
    let mut i = 0;
    while i < text.len() {
        let mut j = (i + 1 + rng.below(40)).min(text.len());
        while !text.is_char_boundary(j) {
            j += 1;
        }
        out.push_str(&stream.push(&text[i..j]).unwrap_or_default());
        i = j;
    }
    out.push_str(&stream.finish().unwrap_or_default());
    out
}

#[test]
fn random_texts_are_redacted_as_the_reference_does() {
    let redactor = Redactor::new(VALUES.iter().map(|v| v.to_string()), true);
    assert_eq!(redactor.known_values(), VALUES.len());
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut redacted = 0;
    for case in 0..1500 {
        let pieces = 1 + rng.below(30);
        let text = random_text(&mut rng, pieces);
        let want = reference(VALUES, &text);
        let got = redactor.redact(&text);
        assert_eq!(got, want, "case {case}: {text:?}");
        for v in VALUES {
            assert!(!got.contains(v), "case {case}: {v} left in {got:?}");
        }
        if case % 5 == 0 {
            assert_eq!(
                streamed(&redactor, &mut rng, &text),
                want,
                "streamed, case {case}: {text:?}"
            );
        }
        redacted += usize::from(got != text);
    }
    // The generator really plants secrets (a test that redacts nothing proves nothing).
    assert!(redacted > 1000, "only {redacted} texts had a secret");
}

#[test]
fn long_texts_with_sparse_secrets_match_the_reference() {
    // The SIMD searches only run on haystacks of a few dozen bytes and more.
    let redactor = Redactor::new(VALUES.iter().map(|v| v.to_string()), true);
    let mut rng = Rng(42);
    for case in 0..40 {
        let mut text = String::new();
        for _ in 0..200 {
            if rng.below(20) == 0 {
                text.push_str(&random_text(&mut rng, 3));
            } else {
                text.push_str("fn tokenize(input: &str) -> Vec<Token> { cache_key(input) }\n");
            }
        }
        assert_eq!(
            redactor.redact(&text),
            reference(VALUES, &text),
            "case {case}"
        );
    }
}

#[test]
fn no_trigger_is_a_prefix_of_another() {
    // The trigger search reports the longest trigger at a position; the reference tries all.
    // They agree only while no trigger starts another.
    let triggers = &SHAPES.triggers;
    for (a, _) in triggers {
        for (b, _) in triggers {
            assert!(a == b || !b.starts_with(a.as_str()), "{a} starts {b}");
        }
    }
}

#[test]
fn the_byte_tables_match_their_definitions() {
    for b in 0..=255u8 {
        assert_eq!(
            NAME_TAIL[usize::from(b)],
            b.is_ascii_alphanumeric() || b"_.-".contains(&b),
            "{b}"
        );
        assert_eq!(
            VALUE_STOP[usize::from(b)],
            b.is_ascii_whitespace() || b.is_ascii_control() || b"\"',;&<>(){}[]`|".contains(&b),
            "{b}"
        );
    }
}
