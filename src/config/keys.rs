//! Which keys of config.yaml are ours, which only Python Hermes knows, and which are typos.
//!
//! Nothing here is a hand-written list of keys. Our keys are the fields of the typed document
//! (`file::ConfigFile` and its sections): a key serde did not take is reported to
//! [`Classifier::ignored`]. Python's keys come from `python_keys.rs`, generated from the real
//! package. A key serde left is then either Python's ("not supported yet": one warning line and
//! `hermes doctor`) or nobody's (an error naming the file, the key and the closest known key).
//!
//! Python Hermes' defaults do not list every key it accepts below the second level (per-platform
//! display settings, per-voice TTS settings, ...), so under a Python-only section keys deeper
//! than `section.key` are accepted as Python's; under our own sections every level is checked.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::ConfigError;
use super::python_keys::PYTHON_KEYS;

/// The shape of a key in Python Hermes' default config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PyShape {
    /// A value (string, number, list, ...).
    Leaf,
    /// A mapping whose keys are listed in the table.
    Section,
    /// A mapping that may hold any key (`providers: {}`, `mcp_servers`, ...).
    Open,
}

/// Depth (1 = top level) to which keys under a Python-only section are checked.
const PYTHON_STRICT_DEPTH: usize = 2;

fn python_shape(path: &str) -> Option<PyShape> {
    PYTHON_KEYS
        .binary_search_by(|(k, _)| (*k).cmp(path))
        .ok()
        .map(|i| PYTHON_KEYS[i].1)
}

/// Python's keys directly under `parent` ("" for the top level).
fn python_children(parent: &str) -> impl Iterator<Item = &'static str> + '_ {
    PYTHON_KEYS.iter().filter_map(move |(k, _)| {
        let rest = if parent.is_empty() {
            *k
        } else {
            k.strip_prefix(parent)?.strip_prefix('.')?
        };
        (!rest.contains('.')).then_some(rest)
    })
}

/// Whether Python Hermes accepts `segs` (the full path of a key our structs did not take).
/// `ours` says the key's parent is one of our typed sections (checked at every depth); else it
/// lies inside a Python-only section.
fn python_knows(segs: &[String], ours: bool) -> bool {
    for d in 1..=segs.len() {
        match python_shape(&segs[..d].join(".")) {
            Some(PyShape::Section) => continue,
            Some(PyShape::Open | PyShape::Leaf) => return true,
            None => return !ours && d > PYTHON_STRICT_DEPTH,
        }
    }
    true
}

/// Collects what serde left while reading the document, then sorts it into "not supported yet"
/// and errors.
#[derive(Default)]
pub(super) struct Classifier {
    ignored: Vec<Vec<String>>,
}

impl Classifier {
    /// The callback for `serde_ignored`.
    pub fn ignored(&mut self, path: serde_ignored::Path<'_>) {
        self.ignored.push(segments(&path));
    }

    /// Returns the Python-only keys in document order, or the first unknown key as an error.
    pub fn finish(self, doc: &Value, file: &Path) -> Result<Vec<String>, ConfigError> {
        let mut unsupported = Vec::new();
        for segs in self.ignored {
            let parent = &segs[..segs.len().saturating_sub(1)];
            if super::providers::closed(parent) || !python_knows(&segs, true) {
                return Err(unknown(&segs, file));
            }
            // A Python section we do not read: check the keys the user wrote inside it.
            if let Some(value) = lookup(doc, &segs) {
                check_python_subtree(value, &mut segs.clone(), file)?;
            }
            unsupported.push(segs.join("."));
        }
        Ok(unsupported)
    }
}

fn check_python_subtree(
    value: &Value,
    segs: &mut Vec<String>,
    file: &Path,
) -> Result<(), ConfigError> {
    let Value::Object(map) = value else {
        return Ok(());
    };
    if python_shape(&segs.join(".")) != Some(PyShape::Section) {
        return Ok(());
    }
    for (key, child) in map {
        segs.push(key.clone());
        if !python_knows(segs, false) {
            return Err(unknown(segs, file));
        }
        check_python_subtree(child, segs, file)?;
        segs.pop();
    }
    Ok(())
}

fn lookup<'a>(doc: &'a Value, segs: &[String]) -> Option<&'a Value> {
    segs.iter().try_fold(doc, |v, k| match v {
        Value::Object(m) => m.get(k),
        Value::Array(a) => k.parse::<usize>().ok().and_then(|i| a.get(i)),
        _ => None,
    })
}

fn segments(path: &serde_ignored::Path<'_>) -> Vec<String> {
    use serde_ignored::Path as P;
    match path {
        P::Root => Vec::new(),
        P::Seq { parent, index } => {
            let mut v = segments(parent);
            v.push(index.to_string());
            v
        }
        P::Map { parent, key } => {
            let mut v = segments(parent);
            v.push(key.clone());
            v
        }
        P::Some { parent } | P::NewtypeStruct { parent } | P::NewtypeVariant { parent } => {
            segments(parent)
        }
    }
}

fn unknown(segs: &[String], file: &Path) -> ConfigError {
    let (key, parents) = segs
        .split_last()
        .map_or(("", &[][..]), |(k, p)| (k.as_str(), p));
    let parent = parents.join(".");
    let mut candidates: Vec<&str> = python_children(&parent).collect();
    candidates.extend(super::file::our_fields(&parent));
    let hint = closest(key, &candidates)
        .map(|k| format!(" (did you mean `{k}`?)"))
        .unwrap_or_else(|| " (remove it, or check the spelling)".to_string());
    ConfigError::UnknownKey {
        path: file.to_path_buf(),
        key: segs.join("."),
        hint,
    }
}

/// The known key closest to `key` by edit distance, if close enough to be a typo.
pub fn closest<'a>(key: &str, known: &[&'a str]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| (edit_distance(key, k), *k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 4))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The field names of a struct that derives `Deserialize` (serde hands them to
/// `deserialize_struct`; this deserializer only records them).
pub fn struct_fields<T: for<'de> Deserialize<'de>>() -> &'static [&'static str] {
    struct Probe<'a>(&'a mut &'static [&'static str]);
    #[derive(Debug)]
    struct Stop;
    impl std::fmt::Display for Stop {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("probe")
        }
    }
    impl std::error::Error for Stop {}
    impl serde::de::Error for Stop {
        fn custom<M: std::fmt::Display>(_: M) -> Self {
            Stop
        }
    }
    impl<'de> serde::Deserializer<'de> for Probe<'_> {
        type Error = Stop;
        fn deserialize_any<V: serde::de::Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
            Err(Stop)
        }
        fn deserialize_struct<V: serde::de::Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Stop> {
            *self.0 = fields;
            Err(Stop)
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }
    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(Probe(&mut fields));
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(path: &str) -> Vec<String> {
        path.split('.').map(String::from).collect()
    }

    #[test]
    fn table_is_sorted_and_shaped() {
        assert!(PYTHON_KEYS.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(python_shape("agent"), Some(PyShape::Section));
        assert_eq!(python_shape("agent.max_turns"), Some(PyShape::Leaf));
        assert_eq!(python_shape("providers"), Some(PyShape::Open));
        assert_eq!(python_shape("mcp_servers"), Some(PyShape::Open));
        assert!(python_children("agent").any(|k| k == "gateway_timeout"));
    }

    #[test]
    fn python_knowledge_by_depth() {
        assert!(python_knows(&s("browser"), true));
        assert!(python_knows(&s("agent.gateway_timeout"), true));
        assert!(!python_knows(&s("agent.gateway_timeot"), true));
        assert!(!python_knows(&s("browsr"), true));
        assert!(python_knows(&s("providers.mine.base_url"), true));
        // Deeper than Python's defaults go: accepted under its sections, not under ours.
        assert!(python_knows(&s("display.platforms.slack"), false));
        assert!(!python_knows(
            &s("gateway.api_server.max_concurent_runs"),
            true
        ));
    }

    #[test]
    fn closest_and_fields() {
        assert_eq!(
            closest("max_turn", &["max_turns", "timeout"]),
            Some("max_turns")
        );
        assert_eq!(closest("zzzzzz", &["max_turns"]), None);
        #[derive(Deserialize)]
        #[allow(dead_code)]
        struct S {
            alpha: u8,
            beta: Option<String>,
        }
        assert_eq!(struct_fields::<S>(), ["alpha", "beta"]);
    }
}
