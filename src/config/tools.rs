//! The `tools:` section of config.yaml (Python Hermes names). Today it holds `tool_search`, the
//! deferred tool loading settings `tools/deferred.rs` applies. Parsed once at load like every
//! typed section: a misspelt key is an error with a "did you mean", a bad value an error naming
//! it.

use serde::de::value::MapAccessDeserializer;
use serde::de::{Error as _, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::file::num;

/// `tools:` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ToolsFile {
    /// `tools.tool_search`: `true`/`false`, or a mapping (below).
    #[serde(deserialize_with = "tool_search")]
    pub tool_search: ToolSearchFile,
}

/// `tools.tool_search` as a mapping; the bare boolean form sets `enabled` only.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct ToolSearchFile {
    #[serde(deserialize_with = "toggle")]
    pub enabled: Option<Toggle>,
    /// Percent of the context window the deferrable schemas may take before they are deferred.
    #[serde(deserialize_with = "num")]
    pub threshold_pct: Option<f64>,
    #[serde(deserialize_with = "num")]
    pub search_default_limit: Option<usize>,
    #[serde(deserialize_with = "num")]
    pub max_search_limit: Option<usize>,
}

/// `tools.tool_search.enabled`: Python Hermes writes `auto`, a boolean or `on`/`off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Toggle {
    Auto,
    On,
    Off,
}

fn toggle<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Toggle>, D::Error> {
    match Option::<serde_json::Value>::deserialize(d)? {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::Bool(b)) => Ok(Some(if b { Toggle::On } else { Toggle::Off })),
        Some(serde_json::Value::String(s)) => match s.trim().to_ascii_lowercase().as_str() {
            "" => Ok(None),
            "auto" => Ok(Some(Toggle::Auto)),
            "on" | "true" | "yes" => Ok(Some(Toggle::On)),
            "off" | "false" | "no" => Ok(Some(Toggle::Off)),
            _ => Err(D::Error::custom(format!(
                "expected auto, true or false, found `{s}`"
            ))),
        },
        Some(other) => Err(D::Error::custom(format!(
            "expected auto, true or false, found {}",
            super::kind_of(&other)
        ))),
    }
}

/// `tool_search: true|false|auto` or a mapping. The mapping is read through the document's own
/// map access, so a misspelt key inside still reaches `keys.rs`.
fn tool_search<'de, D: Deserializer<'de>>(d: D) -> Result<ToolSearchFile, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = ToolSearchFile;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("true, false, auto or a mapping (enabled, threshold_pct, ...)")
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(ToolSearchFile::default())
        }
        fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(ToolSearchFile::default())
        }
        fn visit_bool<E: serde::de::Error>(self, b: bool) -> Result<Self::Value, E> {
            Ok(ToolSearchFile {
                enabled: Some(if b { Toggle::On } else { Toggle::Off }),
                ..ToolSearchFile::default()
            })
        }
        fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Self::Value, E> {
            let enabled = toggle(serde_json::Value::String(s.to_string())).map_err(E::custom)?;
            Ok(ToolSearchFile {
                enabled,
                ..ToolSearchFile::default()
            })
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            ToolSearchFile::deserialize(MapAccessDeserializer::new(map))
        }
    }
    d.deserialize_any(V)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::{Config, EnvVars, HermesHome};

    fn parse(text: &str) -> Result<ToolSearchFile, String> {
        Config::from_yaml(
            HermesHome::new("/h"),
            EnvVars::default(),
            text,
            Path::new("/h/config.yaml"),
        )
        .map(|c| c.file.tools.tool_search)
        .map_err(|e| e.to_string())
    }

    #[test]
    fn boolean_text_and_mapping_forms() {
        assert_eq!(parse("").unwrap(), ToolSearchFile::default());
        assert_eq!(
            parse("tools:\n  tool_search: true\n").unwrap().enabled,
            Some(Toggle::On)
        );
        assert_eq!(
            parse("tools:\n  tool_search: auto\n").unwrap().enabled,
            Some(Toggle::Auto)
        );
        let t = parse(
            "tools:\n  tool_search:\n    enabled: off\n    threshold_pct: '12.5'\n    max_search_limit: 9\n",
        )
        .unwrap();
        assert_eq!(t.enabled, Some(Toggle::Off));
        assert_eq!(t.threshold_pct, Some(12.5));
        assert_eq!(t.max_search_limit, Some(9));
        assert_eq!(
            parse("tools:\n  tool_search:\n").unwrap(),
            ToolSearchFile::default()
        );
    }

    #[test]
    fn typos_and_bad_values_are_named() {
        let e = parse("tools:\n  tool_search:\n    threshold_pc: 5\n").unwrap_err();
        assert!(
            e.contains("tools.tool_search.threshold_pc") && e.contains("threshold_pct"),
            "{e}"
        );
        let e = parse("tools:\n  tool_serch: true\n").unwrap_err();
        assert!(e.contains("tool_search"), "{e}");
        let e = parse("tools:\n  tool_search:\n    enabled: sometimes\n").unwrap_err();
        assert!(
            e.contains("expected auto, true or false, found `sometimes`"),
            "{e}"
        );
        let e = parse("tools:\n  tool_search:\n    threshold_pct: lots\n").unwrap_err();
        assert!(e.contains("expected a number, found `lots`"), "{e}");
        assert!(parse("tools:\n  tool_search: [1]\n").is_err());
    }
}
