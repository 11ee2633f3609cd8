//! Redaction of streamed text (the answer deltas a model sends), before a front end shows them:
//! the REPL's terminal, a gateway's live message, the API server's stream.
//!
//! A secret may arrive split over two deltas (`sk-proj-ab` + `cdef…`), and each half alone is no
//! longer recognisable. So a `StreamRedactor` holds back a short tail and only lets out text that
//! later deltas cannot change: everything up to `hold` bytes before the end, moved further back
//! to where a secret (or what identifies it: the `password=` name, the `Bearer` word) that crosses
//! the cut begins. `hold` is longer than the longest known secret value and than any token shape
//! needs to be recognised, so a secret that crosses the cut is already visible whole (or open, as
//! a PEM block without its end line) and is held back entirely. `finish` lets out the rest.
//! What comes out is redacted by the process `Redactor`, exactly as the persisted text is.

use crate::security::redact::{REDACTED, Redactor, SecretSpan};
use crate::security::redact_named::HARMLESS_WORD_MAX;

/// The shortest tail held back: more than any token shape needs to be recognised (a 48-byte
/// `name=` prefix and a 6-byte value, a 10-digit bot id + `:AA` + 33, `AIza` + 35).
const MIN_HOLD: usize = 96;

/// Redacts one stream of text deltas (one model call's answer).
pub struct StreamRedactor<'a> {
    redactor: &'a Redactor,
    pending: String,
    hold: usize,
}

impl<'a> StreamRedactor<'a> {
    pub fn new(redactor: &'a Redactor) -> Self {
        StreamRedactor {
            redactor,
            pending: String::new(),
            hold: MIN_HOLD.max(redactor.longest_value() + 1),
        }
    }

    /// Takes one delta; returns the text that may be shown now (redacted), if any.
    pub fn push(&mut self, delta: &str) -> Option<String> {
        if !self.redactor.is_enabled() {
            return (!delta.is_empty()).then(|| delta.to_string());
        }
        self.pending.push_str(delta);
        // Wait for a little more than the tail, so each release is worth a message.
        if self.pending.len() < self.hold * 2 {
            return None;
        }
        let (cut, spans) = self.safe_cut();
        if cut == 0 {
            return None;
        }
        // Redacted with the secrets found in all that arrived, not by redacting the released
        // part alone: cut off there, an open quote (`token: "abc…`) would run to its end and hide
        // text the whole answer shows (its value is rejected once the rest is seen).
        let mut ready = String::with_capacity(cut);
        let mut copied = 0;
        for span in spans.iter().take_while(|s| s.end <= cut) {
            ready.push_str(&self.pending[copied..span.start]);
            ready.push_str(REDACTED);
            copied = span.end;
        }
        ready.push_str(&self.pending[copied..cut]);
        self.pending.drain(..cut);
        Some(ready)
    }

    /// The end of the stream: everything still held, redacted.
    pub fn finish(&mut self) -> Option<String> {
        let rest = std::mem::take(&mut self.pending);
        (!rest.is_empty()).then(|| self.redactor.redact_string(rest))
    }

    /// The longest prefix of `pending` no later delta can turn into (part of) a secret, and the
    /// secrets in `pending`.
    fn safe_cut(&self) -> (usize, Vec<SecretSpan>) {
        let text = self.pending.as_str();
        let mut cut = text.len().saturating_sub(self.hold);
        while cut > 0 && !text.is_char_boundary(cut) {
            cut -= 1;
        }
        // Spans come in order and do not overlap: one pass from the last moves the cut before
        // every secret that crosses it (a moved cut is then checked against earlier spans).
        let mut spans = Vec::new();
        self.redactor.find_secrets(text, |span| spans.push(span));
        loop {
            let before = cut;
            cut = word_start(text.as_bytes(), cut);
            for span in spans.iter().rev() {
                if span.context < cut && cut < span.end {
                    cut = span.context;
                }
            }
            if cut == before {
                break;
            }
        }
        // A span that reaches the end of what arrived may still grow (a token, an open PEM
        // block): nothing from its context on is released.
        if let Some(last) = spans.last()
            && last.end == text.len()
        {
            cut = cut.min(last.context);
        }
        (cut, spans)
    }
}

/// `cut` moved back to the start of the word it falls in: whether `…_key` is a secret name
/// depends on the whole word before it (`cache_key` is harmless, `api_key` is not), and a cut
/// inside `resort_key` would leave `sort_key` to be judged alone. A word longer than
/// `HARMLESS_WORD_MAX` is never harmless, so the cut need not move further than that.
fn word_start(bytes: &[u8], mut cut: usize) -> usize {
    let floor = cut.saturating_sub(HARMLESS_WORD_MAX + 1);
    while cut > floor && bytes[cut - 1].is_ascii_alphanumeric() {
        cut -= 1;
    }
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Streams `text` in chunks of `n` bytes (on char boundaries) and joins what comes out.
    fn stream(redactor: &Redactor, text: &str, n: usize) -> String {
        let mut s = StreamRedactor::new(redactor);
        let mut out = String::new();
        let mut i = 0;
        while i < text.len() {
            let mut j = (i + n).min(text.len());
            while !text.is_char_boundary(j) {
                j += 1;
            }
            if let Some(part) = s.push(&text[i..j]) {
                out.push_str(&part);
            }
            i = j;
        }
        out.push_str(&s.finish().unwrap_or_default());
        out
    }

    #[test]
    fn a_secret_split_across_deltas_is_caught_at_every_split_point() {
        let known = "known-value-Zx9q7PwL-0123";
        let r = Redactor::new(vec![known.to_string()], true);
        let filler = "Some ordinary words of an answer. ".repeat(8);
        let texts = [
            format!("{filler}the key is {known} — keep it safe. {filler}"),
            format!("{filler}use sk-proj-abcdefghijklmnopqrstuvwx now {filler}"),
            format!("{filler}password = hunter2hunter2 ok {filler}"),
            format!("{filler}Authorization: Bearer abcdef0123456789xyz {filler}"),
            format!("{filler}bot 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1 {filler}"),
            format!(
                "{filler}-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg\n{}\n-----END PRIVATE KEY-----\n{filler}",
                "A".repeat(300)
            ),
        ];
        for text in &texts {
            let whole = r.redact(text).into_owned();
            assert!(whole.contains(REDACTED), "{text}");
            for n in [1, 2, 3, 5, 7, 16, 40, 97, 1000] {
                assert_eq!(stream(&r, text, n), whole, "chunks of {n}: {text}");
            }
        }
    }

    #[test]
    fn a_key_name_split_anywhere_is_judged_whole() {
        // A cut inside `resort_key` must not leave `sort_key` (harmless) to be judged alone,
        // nor a cut inside `cache_key` leave `_key` (a secret name).
        let r = Redactor::new(Vec::new(), true);
        let filler = "Some ordinary words of an answer. ".repeat(8);
        for (name, hidden) in [
            ("resort_key", true),
            ("cache_key", false),
            ("api_key", true),
        ] {
            let text = format!("{filler}{name}=abcdefgh1234 and more {filler}");
            let whole = r.redact(&text).into_owned();
            assert_eq!(whole.contains(REDACTED), hidden, "{whole}");
            for n in 1..=40 {
                assert_eq!(stream(&r, &text, n), whole, "chunks of {n}: {name}");
            }
            // The stream cuts `MIN_HOLD` bytes before the end of what arrived: put that cut at
            // every position around the name.
            let at = filler.len() + MIN_HOLD;
            for end in at - 20..at + name.len() + 8 {
                let mut s = StreamRedactor::new(&r);
                let mut out = String::new();
                out.push_str(&s.push(&text[..end]).unwrap_or_default());
                out.push_str(&s.push(&text[end..]).unwrap_or_default());
                out.push_str(&s.finish().unwrap_or_default());
                assert_eq!(out, whole, "cut at {}: {name}", end - MIN_HOLD);
            }
        }
    }

    #[test]
    fn clean_text_passes_through_unchanged_and_is_released_before_the_end() {
        let r = Redactor::new(Vec::new(), true);
        let text = "Plain answer text, nothing secret in it at all. ".repeat(40);
        let mut s = StreamRedactor::new(&r);
        let mut early = String::new();
        for chunk in text.as_bytes().chunks(10) {
            if let Some(out) = s.push(std::str::from_utf8(chunk).unwrap()) {
                early.push_str(&out);
            }
        }
        assert!(
            early.len() > text.len() / 2,
            "released only {}",
            early.len()
        );
        early.push_str(&s.finish().unwrap_or_default());
        assert_eq!(early, text);
    }

    #[test]
    fn disabled_redaction_passes_every_delta_at_once() {
        let r = Redactor::new(Vec::new(), false);
        let mut s = StreamRedactor::new(&r);
        assert_eq!(
            s.push("password=hunter2hunter2").as_deref(),
            Some("password=hunter2hunter2")
        );
        assert_eq!(s.finish(), None);
    }
}
