//! The rule engine: every rule of the `rules_*` tables compiled into one `RegexSet`, run in one
//! pass over the normalised text; only the rules that matched are then located (line, excerpt).
//! Combined rules ("reads the whole environment" and "sends an HTTP request" within a few lines)
//! are decided from those locations, so a multi-line script is caught without a regex that
//! spans lines.
//!
//! Why bytes and ASCII classes: the text is already NFKC-normalised and folded, and with
//! Unicode word boundaries the regex crate's lazy DFA gives up on non-ASCII input and falls back
//! to a much slower engine; ASCII `\b`/`\w` keep the whole pass in the DFA (a 1 MB skill in a
//! few milliseconds).

use std::collections::HashMap;
use std::sync::{LazyLock, OnceLock};

use regex::bytes::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};

use super::{Category, Finding, Severity};

/// One row of a rule table.
pub(crate) struct Rule {
    pub id: &'static str,
    pub severity: Severity,
    pub category: Category,
    /// Origins it applies to (`reach::*` bits); `reach::SIGNAL` = only feeds combined rules.
    pub reach: u8,
    pub regex: &'static str,
    pub description: &'static str,
    /// A second look at a match, for what a regex cannot express (placeholders are not keys;
    /// a quoted phrase is a mention). Gets the match and the text before and after it.
    pub check: Option<Checker>,
}

/// A rule's second look: (the match, the text before it, the text after it) → what to do
/// with the match.
pub(crate) type Checker = fn(&[u8], &[u8], &[u8]) -> Check;

/// What a rule's `check` decides about one match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Check {
    Keep,
    Drop,
    /// Keep, with this severity instead of the rule's.
    Severity(Severity),
}

/// A finding made of two rules matching within `within` lines of each other.
pub(crate) struct Combo {
    pub id: &'static str,
    pub severity: Severity,
    pub category: Category,
    pub reach: u8,
    pub needs: [&'static str; 2],
    pub within: usize,
    pub description: &'static str,
}

/// The same rule is reported at most this many times (distinct lines) per text.
const MAX_HITS_PER_RULE: usize = 5;

struct Compiled {
    rules: Vec<&'static Rule>,
    set: Option<RegexSet>,
    /// Each rule on its own, compiled the first time the set says it matched (most never do,
    /// and compiling all of them would double the start-up cost).
    each: Vec<OnceLock<Option<Regex>>>,
}

impl Compiled {
    fn rule_regex(&self, i: usize) -> Option<&Regex> {
        self.each[i]
            .get_or_init(|| {
                let r = self.rules[i];
                builder(r.regex)
                    .map_err(
                        |e| tracing::error!(id = r.id, error = %e, "scan rule does not compile"),
                    )
                    .ok()
            })
            .as_ref()
    }
}

pub(super) fn rules() -> impl Iterator<Item = &'static Rule> {
    super::rules_prompt::RULES
        .iter()
        .chain(super::rules_exfil::RULES)
        .chain(super::rules_code::RULES)
        .chain(super::rules_secrets::RULES)
}

fn combos() -> &'static [Combo] {
    super::rules_exfil::COMBOS
}

pub(super) fn builder(pattern: &str) -> Result<Regex, regex::Error> {
    RegexBuilder::new(pattern)
        .case_insensitive(true)
        .multi_line(true)
        .unicode(false)
        .build()
}

static COMPILED: LazyLock<Compiled> = LazyLock::new(|| {
    let rules: Vec<&'static Rule> = rules().collect();
    let set = RegexSetBuilder::new(rules.iter().map(|r| r.regex))
        .case_insensitive(true)
        .multi_line(true)
        .unicode(false)
        .size_limit(64 << 20)
        .dfa_size_limit(64 << 20)
        .build()
        .map_err(|e| tracing::error!(error = %e, "scan rule set does not compile; every rule runs on its own"))
        .ok();
    let each = rules.iter().map(|_| OnceLock::new()).collect();
    Compiled { rules, set, each }
});

/// Line numbers for byte offsets, built only when something matched.
struct Lines<'a> {
    text: &'a [u8],
    starts: Option<Vec<usize>>,
}

impl Lines<'_> {
    fn of(&mut self, offset: usize) -> usize {
        let text = self.text;
        let starts = self.starts.get_or_insert_with(|| {
            std::iter::once(0)
                .chain(
                    text.iter()
                        .enumerate()
                        .filter(|(_, b)| **b == b'\n')
                        .map(|(i, _)| i + 1),
                )
                .collect()
        });
        starts.partition_point(|&s| s <= offset)
    }
}

/// Runs every rule that applies to `bit` (a `reach::*` origin bit) over `text`.
pub(super) fn run(text: &str, bit: u8) -> Vec<Finding> {
    let compiled = &*COMPILED;
    let bytes = text.as_bytes();
    // Without the set (a rule that does not compile — the tests forbid it), every rule runs
    // on its own: slower, never blind.
    let matched: Vec<usize> = match &compiled.set {
        Some(set) => set.matches(bytes).into_iter().collect(),
        None => (0..compiled.rules.len()).collect(),
    };
    if matched.is_empty() {
        return Vec::new();
    }
    let wanted_signals: Vec<&str> = combos()
        .iter()
        .filter(|c| c.reach & bit != 0)
        .flat_map(|c| c.needs)
        .collect();
    let mut lines = Lines {
        text: bytes,
        starts: None,
    };
    let mut findings = Vec::new();
    let mut signal_lines: HashMap<&str, Vec<usize>> = HashMap::new();
    for i in matched {
        let rule = compiled.rules[i];
        let reported = rule.reach & bit != 0;
        let signal = wanted_signals.contains(&rule.id);
        if !(reported || signal) {
            continue;
        }
        let Some(re) = compiled.rule_regex(i) else {
            continue;
        };
        let mut last_line = 0;
        let mut hits = 0;
        for m in re.find_iter(bytes) {
            let severity = match rule
                .check
                .map(|check| check(m.as_bytes(), &bytes[..m.start()], &bytes[m.end()..]))
            {
                Some(Check::Drop) => continue,
                Some(Check::Severity(s)) => s,
                Some(Check::Keep) | None => rule.severity,
            };
            let line = lines.of(m.start());
            if line == last_line {
                continue;
            }
            last_line = line;
            if signal {
                signal_lines.entry(rule.id).or_default().push(line);
            }
            if reported {
                findings.push(Finding {
                    id: rule.id.to_string(),
                    category: rule.category,
                    severity,
                    line,
                    description: rule.description.to_string(),
                    matched: excerpt(m.as_bytes()),
                });
            }
            hits += 1;
            // Signals keep every line (a combination may pair any two); findings stop at a few.
            if hits >= MAX_HITS_PER_RULE && !signal {
                break;
            }
        }
    }
    for combo in combos().iter().filter(|c| c.reach & bit != 0) {
        let (Some(a), Some(b)) = (
            signal_lines.get(combo.needs[0]),
            signal_lines.get(combo.needs[1]),
        ) else {
            continue;
        };
        let near = a.iter().find_map(|&la| {
            b.iter()
                .find(|&&lb| la.abs_diff(lb) <= combo.within)
                .map(|&lb| la.max(lb))
        });
        if let Some(line) = near {
            findings.push(Finding {
                id: combo.id.to_string(),
                category: combo.category,
                severity: combo.severity,
                line,
                description: combo.description.to_string(),
                matched: format!("{} + {}", combo.needs[0], combo.needs[1]),
            });
        }
    }
    findings
}

fn excerpt(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    crate::util::truncate_chars(text.trim(), 80).to_string()
}

#[cfg(test)]
pub(super) fn compile_errors() -> Vec<String> {
    rules()
        .filter_map(|r| builder(r.regex).err().map(|e| format!("{}: {e}", r.id)))
        .collect()
}

#[cfg(test)]
pub(super) fn set_compiled() -> bool {
    COMPILED.set.is_some()
}

#[cfg(test)]
pub(super) fn combo_list() -> &'static [Combo] {
    combos()
}
