//! The literal searches under the `Redactor` (`redact.rs`): a leftmost-longest search for a set
//! of literals (the shape triggers), and an index that finds every occurrence of the exact
//! secret values.
//!
//! The triggers are searched with aho-corasick's packed searcher (Teddy, SIMD) called directly:
//! their hits are dense in code (~25,000 `token`s and `_key`s in a MB of Rust, nearly all
//! rejected at once), and through the `AhoCorasick` wrapper each hit costs about twice as much.
//! Where Teddy cannot be built (over 64 literals, a CPU without SSSE3/NEON) a DFA automaton does
//! the same search.
//!
//! Exact values are not searched from their first bytes: API keys share prefixes (`sk-proj-`,
//! `ghp_`) and a search keyed on common bytes stops at every candidate (0.38 ms per MB of code
//! with 20 known values). Each value is found by the 8-byte slice of it least likely in ordinary
//! text, and the whole value is compared around each hit; hits are rare, so the automaton's own
//! prefilter (often a memchr for two or three rare bytes) is kept: 0.06 ms for that MB, 0.01 ms
//! for a MB of prose, where Teddy needs 0.08 ms for either.

use std::collections::HashMap;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, Input, MatchKind, Span};
use aho_corasick::{packed, packed::Searcher};

/// A case-sensitive, leftmost-longest search for a set of literals.
#[derive(Clone, Debug)]
pub(crate) enum Literals {
    Packed(Searcher),
    Automaton(AhoCorasick),
}

/// How often the literals are expected in a text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Hits {
    /// Often (every few dozen bytes of code): Teddy, called directly.
    Dense,
    /// Seldom: the automaton with the prefilter it picks for these literals.
    Rare,
}

impl Literals {
    /// `None` without literals, or when no searcher can be built (only absurd inputs:
    /// gigabytes of secrets).
    pub(crate) fn new<L: AsRef<[u8]>>(literals: &[L], hits: Hits) -> Option<Literals> {
        if literals.is_empty() {
            return None;
        }
        if hits == Hits::Dense {
            let packed = packed::Config::new()
                .match_kind(packed::MatchKind::LeftmostLongest)
                .builder()
                .extend(literals)
                .build();
            if let Some(searcher) = packed {
                return Some(Literals::Packed(searcher));
            }
        }
        let built = AhoCorasickBuilder::new()
            .match_kind(MatchKind::LeftmostLongest)
            .kind(Some(AhoCorasickKind::DFA))
            .build(literals)
            .or_else(|_| {
                AhoCorasickBuilder::new()
                    .match_kind(MatchKind::LeftmostLongest)
                    .build(literals)
            });
        match built {
            Ok(a) => Some(Literals::Automaton(a)),
            Err(e) => {
                tracing::warn!(error = %e, "cannot build a redaction searcher");
                None
            }
        }
    }

    /// The leftmost-longest match that starts at `at` or later: (literal index, start, end).
    #[inline]
    pub(crate) fn find_at(&self, text: &[u8], at: usize) -> Option<(usize, usize, usize)> {
        if at >= text.len() {
            return None;
        }
        let m = match self {
            Literals::Packed(s) => s.find_in(text, Span::from(at..text.len())),
            Literals::Automaton(a) => a.find(Input::new(text).range(at..)),
        }?;
        Some((m.pattern().as_usize(), m.start(), m.end()))
    }
}

/// The length of the slice each value is found by (no value is shorter: `MIN_SECRET_LEN`).
const SLICE: usize = 8;

/// Finds the exact secret values in a text.
#[derive(Clone, Debug)]
pub(crate) struct ValueIndex {
    /// Over one `SLICE`-byte slice of each value (equal slices once).
    slices: Literals,
    /// Per slice: the values holding it, as (index into the values, offset of the slice).
    owners: Vec<Vec<(usize, usize)>>,
}

impl ValueIndex {
    /// An index over `values` (each at least `SLICE` bytes long; shorter ones are skipped).
    pub(crate) fn new(values: &[String]) -> Option<ValueIndex> {
        let mut ids: HashMap<&[u8], usize> = HashMap::new();
        let mut slices: Vec<&[u8]> = Vec::new();
        let mut owners: Vec<Vec<(usize, usize)>> = Vec::new();
        for (i, value) in values.iter().enumerate() {
            let bytes = value.as_bytes();
            if bytes.len() < SLICE {
                continue;
            }
            let offset = rarest_window(bytes);
            let slice = &bytes[offset..offset + SLICE];
            let id = *ids.entry(slice).or_insert_with(|| {
                slices.push(slice);
                owners.push(Vec::new());
                slices.len() - 1
            });
            owners[id].push((i, offset));
        }
        Some(ValueIndex {
            slices: Literals::new(&slices, Hits::Rare)?,
            owners,
        })
    }

    /// Calls `found(start, end)` for every occurrence of `values` (the list this index was
    /// built over) in `text`, overlapping ones too, in no particular order.
    pub(crate) fn find(&self, values: &[String], text: &[u8], mut found: impl FnMut(usize, usize)) {
        let mut at = 0;
        // The search resumes one byte after each hit, so overlapping hits are all seen (a hit
        // whose value is not there must not hide the next one). All slices have one length, so
        // one position matches at most one slice.
        while let Some((id, hit, _)) = self.slices.find_at(text, at) {
            for &(v, offset) in &self.owners[id] {
                let value = values[v].as_bytes();
                if let Some(start) = hit.checked_sub(offset)
                    && text.get(start..start + value.len()) == Some(value)
                {
                    found(start, start + value.len());
                }
            }
            at = hit + 1;
        }
    }
}

/// Where in `value` the `SLICE` bytes least likely in ordinary text start. Teddy keys its
/// candidates on the first four bytes of each literal, so those count most.
fn rarest_window(value: &[u8]) -> usize {
    (0..=value.len().saturating_sub(SLICE))
        .min_by_key(|&k| {
            let window = &value[k..(k + SLICE).min(value.len())];
            let key: u32 = window.iter().take(4).map(|&b| commonness(b)).sum();
            let rest: u32 = window.iter().skip(4).map(|&b| commonness(b)).sum();
            (key, rest)
        })
        .unwrap_or(0)
}

/// A rough rank of how often `b` occurs in tool output (text, code, logs): higher is more
/// common.
fn commonness(b: u8) -> u32 {
    match b {
        b' ' | b'e' | b't' | b'a' | b'o' | b'i' | b'n' | b's' | b'r' => 250,
        b'h' | b'l' | b'd' | b'c' | b'u' | b'm' | b'\n' => 220,
        b'a'..=b'z' => 180,
        b'_' | b'-' | b'.' | b'/' | b':' | b'=' | b',' | b'(' | b')' | b'"' | b'\'' | b'\t' => 170,
        b'0'..=b'9' => 150,
        b'E' | b'T' | b'A' | b'S' | b'R' | b'I' | b'N' | b'O' | b'L' | b'C' => 120,
        b'A'..=b'Z' => 90,
        0x21..=0x7e => 80,
        _ => 40,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn find(values: &[String], text: &str) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        ValueIndex::new(values)
            .unwrap()
            .find(values, text.as_bytes(), |s, e| out.push((s, e)));
        out.sort();
        out
    }

    #[test]
    fn dense_literals_get_teddy_where_the_cpu_has_it() {
        let dense = Literals::new(&["token", "-key", "sk-"], Hits::Dense).unwrap();
        if cfg!(target_arch = "x86_64") && std::arch::is_x86_feature_detected!("ssse3") {
            assert!(matches!(dense, Literals::Packed(_)));
        }
        let text = b"a sk-key token";
        assert_eq!(dense.find_at(text, 0), Some((2, 2, 5)));
        assert_eq!(dense.find_at(text, 3), Some((1, 4, 8)));
        assert_eq!(dense.find_at(text, 5), Some((0, 9, 14)));
        assert_eq!(dense.find_at(text, 10), None);
        // More literals than Teddy takes: the automaton, same answers.
        let many: Vec<String> = (0..100).map(|i| format!("lit{i:03}")).collect();
        let big = Literals::new(&many, Hits::Dense).unwrap();
        assert!(matches!(big, Literals::Automaton(_)));
        assert_eq!(big.find_at(b"xx lit042 lit099", 0), Some((42, 3, 9)));
        assert_eq!(big.find_at(b"xx lit042 lit099", 4), Some((99, 10, 16)));
    }

    #[test]
    fn the_slice_is_taken_from_the_rare_part_of_a_value() {
        let v = b"sk-proj-QZ7xK9wYb2";
        let k = rarest_window(v);
        assert!(
            k >= 7,
            "slice at {k} in the common prefix: {:?}",
            &v[k..k + SLICE]
        );
    }

    #[test]
    fn overlapping_hits_of_a_repetitive_value_are_all_seen() {
        // The slice of this value is all `x`: its first hit is not the value, the second is.
        let v = values(&["xxxxxxxxxQ"]);
        assert_eq!(find(&v, "xxxxxxxxxxQ"), vec![(1, 11)]);
        assert_eq!(find(&v, "xxxxxxxxxQxxxxxxxxxQ"), vec![(0, 10), (10, 20)]);
    }

    #[test]
    fn overlapping_values_are_all_found() {
        let v = values(&["abcdefgh-12345", "abcdefgh-12345-more", "12345-more-ZZZZ"]);
        assert_eq!(
            find(&v, "..abcdefgh-12345-more-ZZZZ.."),
            vec![(2, 16), (2, 21), (11, 26)]
        );
        assert_eq!(
            find(&v, "12345-more-ZZZZ abcdefgh-12345"),
            vec![(0, 15), (16, 30)]
        );
    }

    #[test]
    fn many_values_are_found() {
        let many: Vec<String> = (0..200)
            .map(|i| format!("secret-value-{i:04}-Qx"))
            .collect();
        let index = ValueIndex::new(&many).unwrap();
        let text = format!("a {} b {} c", many[7], many[199]);
        let mut out = Vec::new();
        index.find(&many, text.as_bytes(), |s, e| out.push((s, e)));
        out.sort();
        assert_eq!(out.len(), 2);
        assert_eq!(&text[out[0].0..out[0].1], many[7]);
        assert_eq!(&text[out[1].0..out[1].1], many[199]);
    }
}
