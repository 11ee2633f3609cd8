//! Re-indenting the replacement of a whitespace-tolerant `patch` match to the file's own
//! indentation. The model often sends `old_string`/`new_string` with its own indentation (2
//! spaces where the file has 4, spaces where a Makefile has tabs, or the first line's indentation
//! dropped). The matched lines tell how each indentation the model used maps to the file's; lines
//! of `new_string` nested deeper than anything matched are converted level by level (the model's
//! indent unit to the file's), so a block the model indented by 2 lands 4 deeper in a 4-space file
//! — not 2, which would silently change a Python program.

use std::collections::HashMap;

/// Leading spaces and tabs of a line.
pub fn leading_ws(line: &str) -> &str {
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

/// How the model's indentation maps to the file's, learned from the lines that matched.
pub struct IndentMap {
    /// (model indentation, file indentation), one per distinct model indentation.
    pairs: Vec<(String, String)>,
    /// One indentation level as the model writes it (e.g. two spaces), if it can be told.
    model_unit: Option<String>,
    /// One indentation level in the file (four spaces, a tab), if it can be told.
    file_unit: Option<String>,
    /// The model dropped the first line's indentation (it copied from the first word) while the
    /// other lines kept the file's: the first new line gets the file's first-line indentation.
    first_line: Option<String>,
}

impl IndentMap {
    /// `matched` pairs each non-blank line of `old_string` with the file line it matched, in
    /// order; `new_lines` is the replacement; `file` is the whole file (to learn its unit).
    pub fn learn(matched: &[(&str, &str)], new_lines: &[&str], file: &str) -> IndentMap {
        let mut first_line = None;
        let mut pairs_src: &[(&str, &str)] = matched;
        if let [(old0, file0), rest @ ..] = matched {
            let stripped_first = leading_ws(old0).is_empty() && !leading_ws(file0).is_empty();
            let rest_identity = !rest.is_empty()
                && rest
                    .iter()
                    .all(|(o, f)| leading_ws(o) == leading_ws(f) && !leading_ws(o).is_empty());
            if stripped_first && rest_identity {
                first_line = Some(leading_ws(file0).to_string());
                pairs_src = rest;
            }
        }
        let mut pairs: Vec<(String, String)> = Vec::new();
        for (old, file_line) in pairs_src {
            let from = leading_ws(old);
            if pairs.iter().all(|(f, _)| f != from) {
                pairs.push((from.to_string(), leading_ws(file_line).to_string()));
            }
        }
        // The model's own indentation is the file's: nothing to convert.
        let model_unit = if pairs.iter().all(|(from, to)| from == to) {
            None
        } else {
            unit(matched.iter().map(|(o, _)| *o)).or_else(|| unit(new_lines.iter().copied()))
        };
        IndentMap {
            pairs,
            model_unit,
            file_unit: file_unit(file),
            first_line,
        }
    }

    /// The replacement's line `index`, moved from the model's indentation to the file's.
    pub fn apply(&self, index: usize, line: &str) -> String {
        if line.trim().is_empty() {
            return String::new();
        }
        let indent = leading_ws(line);
        let text = &line[indent.len()..];
        if index == 0
            && indent.is_empty()
            && let Some(first) = &self.first_line
        {
            return format!("{first}{text}");
        }
        if let Some((_, to)) = self.pairs.iter().find(|(from, _)| from == indent) {
            return format!("{to}{text}");
        }
        // Deeper than a known indentation: keep the known part, convert the extra levels.
        if let Some((from, to)) = self
            .pairs
            .iter()
            .filter(|(from, _)| indent.starts_with(from.as_str()))
            .max_by_key(|(from, _)| from.len())
        {
            let extra = &indent[from.len()..];
            return format!("{to}{}{text}", self.convert(extra));
        }
        // Shallower than every known indentation: take whole levels off the shallowest one.
        if let Some((from, to)) = self
            .pairs
            .iter()
            .filter(|(from, _)| from.starts_with(indent))
            .min_by_key(|(from, _)| from.len())
            && let (Some(mu), Some(fu)) = (&self.model_unit, &self.file_unit)
            && let Some(levels) = whole_units(&from[indent.len()..], mu)
        {
            let cut = fu.repeat(levels);
            if let Some(kept) = to.strip_suffix(cut.as_str()) {
                return format!("{kept}{text}");
            }
        }
        line.to_string()
    }

    /// Extra indentation written in the model's unit, rewritten in the file's unit.
    fn convert(&self, extra: &str) -> String {
        match (&self.model_unit, &self.file_unit) {
            (Some(mu), Some(fu)) if mu != fu => match whole_units(extra, mu) {
                Some(levels) => fu.repeat(levels),
                None => extra.to_string(),
            },
            _ => extra.to_string(),
        }
    }
}

/// How many whole `unit`s `ws` is made of.
fn whole_units(ws: &str, unit: &str) -> Option<usize> {
    if unit.is_empty() || !ws.len().is_multiple_of(unit.len()) {
        return None;
    }
    let n = ws.len() / unit.len();
    (unit.repeat(n) == ws).then_some(n)
}

/// The file's indentation step, when the file shows it clearly: a tab, or a run of spaces seen
/// nesting at least twice (one nested line of a small file is too little to go by).
fn file_unit(file: &str) -> Option<String> {
    let (step, seen) = steps(file.lines().take(20_000))?;
    (step.starts_with('\t') || seen >= 2).then_some(step)
}

/// The indentation step of a text: the most frequent extra indentation of a line over the
/// non-blank line before it (all tabs or all spaces; ties go to the shorter). `None` when no line
/// is nested under another.
pub fn unit<'a>(lines: impl Iterator<Item = &'a str>) -> Option<String> {
    steps(lines).map(|(step, _)| step)
}

/// The most frequent indentation step and how often it was seen.
fn steps<'a>(lines: impl Iterator<Item = &'a str>) -> Option<(String, usize)> {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    let mut prev: Option<&str> = None;
    for line in lines {
        if line.trim().is_empty() {
            continue;
        }
        let indent = leading_ws(line);
        if let Some(p) = prev
            && indent.len() > p.len()
            && indent.starts_with(p)
        {
            let step = &indent[p.len()..];
            if step.bytes().all(|b| b == b' ') || step.bytes().all(|b| b == b'\t') {
                *counts.entry(step).or_default() += 1;
            }
        }
        prev = Some(indent);
    }
    counts
        .into_iter()
        .max_by(|(a, ca), (b, cb)| ca.cmp(cb).then(b.len().cmp(&a.len())))
        .map(|(step, seen)| (step.to_string(), seen))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_are_learned_from_nesting() {
        assert_eq!(
            unit("def f():\n    if x:\n        y\n    z\n".lines()).as_deref(),
            Some("    ")
        );
        assert_eq!(
            unit("all:\n\tcc x\n\t\tdeeper\n".lines()).as_deref(),
            Some("\t")
        );
        assert_eq!(unit("a\nb\n".lines()), None);
    }

    #[test]
    fn deeper_model_levels_become_file_levels() {
        let file = "def f():\n    x = 1\n    if x:\n        y()\n";
        let map = IndentMap::learn(
            &[("  x = 1", "    x = 1"), ("  if x:", "    if x:")],
            &["  x = 1", "  if x:", "    z()"],
            file,
        );
        assert_eq!(map.apply(2, "    z()"), "        z()");
        assert_eq!(map.apply(0, "  x = 1"), "    x = 1");
        assert_eq!(map.apply(1, ""), "");
    }

    #[test]
    fn stripped_first_line_gets_the_files_indentation() {
        let file = "class A:\n    def f(self):\n        return 1\n";
        let map = IndentMap::learn(
            &[
                ("def f(self):", "    def f(self):"),
                ("        return 1", "        return 1"),
            ],
            &["def f(self):", "        return 2"],
            file,
        );
        assert_eq!(map.apply(0, "def f(self):"), "    def f(self):");
        assert_eq!(map.apply(1, "        return 2"), "        return 2");
        assert_eq!(map.apply(2, "    def g(self):"), "    def g(self):");
    }

    #[test]
    fn shallower_lines_lose_whole_levels() {
        let file = "class A:\n    def f(self):\n        if x:\n            y()\n";
        let map = IndentMap::learn(
            &[
                ("    if x:", "        if x:"),
                ("      y()", "            y()"),
            ],
            &["    if x:", "      y()", "  z()"],
            file,
        );
        assert_eq!(map.apply(2, "  z()"), "    z()");
    }
}
