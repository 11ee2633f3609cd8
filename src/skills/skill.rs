//! The SKILL.md model: splitting the `---` YAML frontmatter from the Markdown body, reading every
//! field Python Hermes skills use (reference §9.1), and the naming rules of skill_manage.
//!
//! SKILL.md arrives from hubs and from the model itself, so it is untrusted: parsing never panics,
//! unknown fields are kept (not rejected), and every refusal says what is wrong and where.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

/// Longest skill or category name.
pub const MAX_NAME_CHARS: usize = 64;
/// Longest frontmatter description.
pub const MAX_DESCRIPTION_CHARS: usize = 1_024;
/// Longest SKILL.md an agent may write.
pub const MAX_SKILL_CONTENT_CHARS: usize = 100_000;
/// Largest SKILL.md the store reads at all (hand-made trees may exceed the agent's write limit).
pub const MAX_SKILL_READ_BYTES: u64 = 1_048_576;

static NAME_RE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^[a-z0-9][a-z0-9._-]*$").ok());

/// Why a SKILL.md could not be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParseError {
    #[error(
        "SKILL.md has no frontmatter: it must start with a `---` line, YAML with name and description, and a closing `---` line"
    )]
    NoFrontmatter,
    #[error("the frontmatter opened with `---` is never closed by a `---` line")]
    Unclosed,
    #[error("the frontmatter is not valid YAML: {0}")]
    Yaml(String),
    #[error(
        "the frontmatter is YAML but not a mapping of keys (found {0}); write `name: ...` and `description: ...` lines"
    )]
    NotMapping(&'static str),
    #[error("the frontmatter has no `{0}` (a non-empty string is required)")]
    Missing(&'static str),
    #[error("the description has {0} characters; the limit is {MAX_DESCRIPTION_CHARS}")]
    DescriptionTooLong(usize),
    #[error("the SKILL.md body after the frontmatter is empty; write the instructions there")]
    EmptyBody,
}

/// One required environment variable (`required_environment_variables` or legacy
/// `prerequisites.env_vars`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EnvRequirement {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
    #[serde(default)]
    pub optional: bool,
}

/// Everything read from a SKILL.md frontmatter. Serializable so the store's persistent index
/// (`skills::store_cache`) can keep it between processes.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Frontmatter {
    pub name: Option<String>,
    pub description: Option<String>,
    pub version: Option<String>,
    pub author: Option<String>,
    pub license: Option<String>,
    pub compatibility: Option<String>,
    /// `macos`, `linux`, `windows`; empty means every platform.
    pub platforms: Vec<String>,
    pub environments: Vec<String>,
    pub tags: Vec<String>,
    pub related_skills: Vec<String>,
    /// `metadata.hermes.category` (the directory decides the category; this is informative).
    pub category: Option<String>,
    pub required_env: Vec<EnvRequirement>,
    pub required_commands: Vec<String>,
    pub required_credential_files: Vec<String>,
    pub setup_help: Option<String>,
    pub dependencies: Option<Value>,
    pub requires_toolsets: Vec<String>,
    pub fallback_for_toolsets: Vec<String>,
    pub requires_tools: Vec<String>,
    pub fallback_for_tools: Vec<String>,
    /// The whole `metadata` mapping, as written.
    pub metadata: Option<Value>,
    /// Top-level keys this program does not interpret, kept as written.
    pub extra: Map<String, Value>,
}

/// A SKILL.md split into its parsed frontmatter and body.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillDoc {
    pub frontmatter: Frontmatter,
    pub body: String,
}

/// Splits `---` frontmatter from the body. A leading BOM and CRLF line ends are tolerated.
pub fn split_frontmatter(text: &str) -> Result<(&str, &str), ParseError> {
    let text = text.trim_start_matches('\u{feff}');
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or(ParseError::NoFrontmatter)?;
    // The closing line is `---` alone (trailing spaces allowed).
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            let yaml = &rest[..offset];
            let body = &rest[offset + line.len()..];
            return Ok((yaml, body));
        }
        offset += line.len();
    }
    // `---` as the very last line without a newline is handled by split_inclusive above.
    Err(ParseError::Unclosed)
}

/// Parses a SKILL.md leniently, as the store does: YAML first, then (for hand-written files that
/// are not quite YAML) simple `key: value` lines. Name and description may be missing here.
pub fn parse_lenient(text: &str) -> Result<SkillDoc, ParseError> {
    let (yaml, body) = split_frontmatter(text)?;
    let map = match parse_yaml_mapping(yaml) {
        Ok(map) => map,
        Err(ParseError::Yaml(e)) => {
            let fallback = key_value_fallback(yaml);
            if fallback.contains_key("name") || fallback.contains_key("description") {
                tracing::debug!(error = %e, "SKILL.md frontmatter read with the key: value fallback");
                fallback
            } else {
                return Err(ParseError::Yaml(e));
            }
        }
        Err(e) => return Err(e),
    };
    let mut frontmatter = frontmatter_from(map);
    if frontmatter.description.is_none() {
        frontmatter.description = description_from_body(body);
    }
    Ok(SkillDoc {
        frontmatter,
        body: body.to_string(),
    })
}

/// Parses a SKILL.md strictly, as skill_manage requires before writing: real YAML mapping with
/// `name` and `description` (≤ 1,024 chars), and a non-empty body.
pub fn parse_strict(text: &str) -> Result<SkillDoc, ParseError> {
    let (yaml, body) = split_frontmatter(text)?;
    let map = parse_yaml_mapping(yaml)?;
    let frontmatter = frontmatter_from(map);
    if frontmatter.name.is_none() {
        return Err(ParseError::Missing("name"));
    }
    let Some(description) = &frontmatter.description else {
        return Err(ParseError::Missing("description"));
    };
    let chars = description.chars().count();
    if chars > MAX_DESCRIPTION_CHARS {
        return Err(ParseError::DescriptionTooLong(chars));
    }
    if body.trim().is_empty() {
        return Err(ParseError::EmptyBody);
    }
    Ok(SkillDoc {
        frontmatter,
        body: body.to_string(),
    })
}

fn parse_yaml_mapping(yaml: &str) -> Result<Map<String, Value>, ParseError> {
    if yaml.trim().is_empty() {
        return Ok(Map::new());
    }
    // YAML 1.2 booleans only: `description: y` or `name: no` are strings, not booleans.
    let options = serde_saphyr::options! { strict_booleans: true };
    let value: Value = serde_saphyr::from_str_with_options(yaml, options)
        .map_err(|e| ParseError::Yaml(first_line(&e.to_string())))?;
    match value {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(Map::new()),
        Value::Array(_) => Err(ParseError::NotMapping("a list")),
        Value::String(_) => Err(ParseError::NotMapping("a string")),
        Value::Number(_) => Err(ParseError::NotMapping("a number")),
        Value::Bool(_) => Err(ParseError::NotMapping("a boolean")),
    }
}

fn first_line(s: &str) -> String {
    crate::util::truncate_chars(s.lines().next().unwrap_or(s), 300).to_string()
}

/// `key: value` lines at column 0, for frontmatter that is not valid YAML.
fn key_value_fallback(yaml: &str) -> Map<String, Value> {
    let mut map = Map::new();
    for line in yaml.lines() {
        if line.starts_with([' ', '\t', '-', '#']) {
            continue;
        }
        if let Some((k, v)) = line.split_once(':') {
            let key = k.trim();
            let value = v.trim().trim_matches(|c| c == '"' || c == '\'');
            if !key.is_empty() && !value.is_empty() {
                map.insert(key.to_string(), Value::String(value.to_string()));
            }
        }
    }
    map
}

/// The first non-heading, non-empty body line (Python Hermes' description fallback).
fn description_from_body(body: &str) -> Option<String> {
    body.lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| crate::util::truncate_chars(l, MAX_DESCRIPTION_CHARS).to_string())
}

fn frontmatter_from(mut map: Map<String, Value>) -> Frontmatter {
    let mut fm = Frontmatter {
        name: take_string(&mut map, "name"),
        description: take_string(&mut map, "description"),
        version: take_string(&mut map, "version"),
        author: take_string(&mut map, "author"),
        license: take_string(&mut map, "license"),
        compatibility: take_string(&mut map, "compatibility"),
        platforms: take_list(&mut map, "platforms")
            .into_iter()
            .map(|p| p.to_ascii_lowercase())
            .collect(),
        environments: take_list(&mut map, "environments"),
        tags: take_list(&mut map, "tags"),
        related_skills: take_list(&mut map, "related_skills"),
        dependencies: map.remove("dependencies"),
        required_credential_files: take_list(&mut map, "required_credential_files"),
        ..Frontmatter::default()
    };
    if let Some(prereq) = map.remove("prerequisites") {
        fm.required_env
            .extend(
                list_of(prereq.get("env_vars"))
                    .into_iter()
                    .map(|name| EnvRequirement {
                        name,
                        prompt: None,
                        help: None,
                        optional: false,
                    }),
            );
        fm.required_commands = list_of(prereq.get("commands"));
        fm.extra.insert("prerequisites".into(), prereq);
    }
    if let Some(Value::Array(items)) = map.remove("required_environment_variables") {
        for item in &items {
            if let Some(req) = env_requirement(item)
                && !fm.required_env.iter().any(|r| r.name == req.name)
            {
                fm.required_env.push(req);
            }
        }
    }
    if let Some(setup) = map.remove("setup") {
        fm.setup_help = setup.get("help").and_then(scalar_string);
        if let Some(Value::Array(secrets)) = setup.get("collect_secrets") {
            for item in secrets {
                if let Some(req) = env_requirement(item)
                    && !fm.required_env.iter().any(|r| r.name == req.name)
                {
                    fm.required_env.push(req);
                }
            }
        }
        fm.extra.insert("setup".into(), setup);
    }
    if let Some(metadata) = map.remove("metadata") {
        if let Some(hermes) = metadata.get("hermes") {
            let get = |k: &str| list_of(hermes.get(k));
            for tag in get("tags") {
                if !fm.tags.contains(&tag) {
                    fm.tags.push(tag);
                }
            }
            for rel in get("related_skills") {
                if !fm.related_skills.contains(&rel) {
                    fm.related_skills.push(rel);
                }
            }
            fm.category = hermes.get("category").and_then(scalar_string);
            fm.requires_toolsets = get("requires_toolsets");
            fm.fallback_for_toolsets = get("fallback_for_toolsets");
            fm.requires_tools = get("requires_tools");
            fm.fallback_for_tools = get("fallback_for_tools");
        }
        fm.metadata = Some(metadata);
    }
    fm.extra.extend(map);
    fm
}

fn env_requirement(item: &Value) -> Option<EnvRequirement> {
    match item {
        Value::String(s) if !s.trim().is_empty() => Some(EnvRequirement {
            name: s.trim().to_string(),
            prompt: None,
            help: None,
            optional: false,
        }),
        Value::Object(m) => {
            let name = ["name", "env_var"]
                .iter()
                .find_map(|k| m.get(*k).and_then(scalar_string))?;
            let help = ["help", "provider_url", "url"]
                .iter()
                .find_map(|k| m.get(*k).and_then(scalar_string));
            Some(EnvRequirement {
                name,
                prompt: m.get("prompt").and_then(scalar_string),
                help,
                optional: m.get("optional").and_then(Value::as_bool).unwrap_or(false),
            })
        }
        _ => None,
    }
}

fn scalar_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.trim().to_string()).filter(|s| !s.is_empty()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn take_string(map: &mut Map<String, Value>, key: &str) -> Option<String> {
    match map.get(key).and_then(scalar_string) {
        Some(s) => {
            map.remove(key);
            Some(s)
        }
        // A non-scalar value stays in `extra` so nothing the author wrote is lost.
        None => None,
    }
}

fn take_list(map: &mut Map<String, Value>, key: &str) -> Vec<String> {
    let list = list_of(map.get(key));
    if !list.is_empty() || matches!(map.get(key), Some(Value::Null)) {
        map.remove(key);
    }
    list
}

/// A list of strings from a YAML list, or a comma-separated string.
fn list_of(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::Array(items)) => items.iter().filter_map(scalar_string).collect(),
        Some(Value::String(s)) => s
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

/// Checks a skill or category name: `^[a-z0-9][a-z0-9._-]*$`, at most 64 characters.
pub fn validate_name(kind: &str, name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err(format!("the {kind} name is empty"));
    }
    let chars = name.chars().count();
    if chars > MAX_NAME_CHARS {
        return Err(format!(
            "the {kind} name has {chars} characters; the limit is {MAX_NAME_CHARS}"
        ));
    }
    let ok = NAME_RE.as_ref().is_some_and(|re| re.is_match(name));
    if !ok {
        return Err(format!(
            "`{}` is not a valid {kind} name: use lowercase letters, digits, `.`, `_` and `-`, starting with a letter or digit (no `/`, spaces or uppercase)",
            crate::util::truncate_chars(name, 80)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL: &str = include_str!("../../tests/fixtures/skills/full-frontmatter/SKILL.md");

    #[test]
    fn every_documented_field_is_read() {
        let doc = parse_strict(FULL).unwrap();
        let fm = &doc.frontmatter;
        assert_eq!(fm.name.as_deref(), Some("full-frontmatter"));
        assert_eq!(
            fm.description.as_deref(),
            Some("A fixture that uses every field")
        );
        assert_eq!(fm.version.as_deref(), Some("1.2.0"));
        assert_eq!(fm.author.as_deref(), Some("Hermes Tests"));
        assert_eq!(fm.license.as_deref(), Some("MIT"));
        assert_eq!(fm.compatibility.as_deref(), Some("needs a POSIX shell"));
        assert_eq!(fm.platforms, ["linux", "macos"]);
        assert_eq!(fm.environments, ["docker"]);
        assert_eq!(fm.tags, ["testing", "fixtures", "meta"]);
        assert_eq!(fm.related_skills, ["other-skill", "third-skill"]);
        assert_eq!(fm.category.as_deref(), Some("testing"));
        assert_eq!(fm.requires_toolsets, ["terminal"]);
        assert_eq!(fm.fallback_for_toolsets, ["browser"]);
        assert_eq!(fm.requires_tools, ["read_file"]);
        assert_eq!(fm.fallback_for_tools, ["web_search"]);
        let env: Vec<&str> = fm.required_env.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            env,
            [
                "LEGACY_TOKEN",
                "FIXTURE_API_KEY",
                "OTHER_KEY",
                "PLAIN_VAR",
                "SECRET_ONE"
            ]
        );
        assert_eq!(
            fm.required_env[1].help.as_deref(),
            Some("https://example.com/keys")
        );
        assert!(fm.required_env[2].optional);
        assert_eq!(fm.required_commands, ["git", "jq"]);
        assert_eq!(fm.required_credential_files, ["~/.config/fixture.json"]);
        assert_eq!(fm.setup_help.as_deref(), Some("Run the setup once."));
        assert!(fm.dependencies.is_some());
        assert!(fm.metadata.is_some());
        // Unknown fields are kept, not rejected.
        assert_eq!(fm.extra["x-custom"], Value::String("kept".into()));
        assert!(doc.body.contains("# Full frontmatter"));
    }

    #[test]
    fn frontmatter_shapes_are_refused_precisely() {
        assert_eq!(
            parse_strict("# Title\nbody").unwrap_err(),
            ParseError::NoFrontmatter
        );
        assert_eq!(
            parse_strict("---\nname: a\ndescription: b\nbody").unwrap_err(),
            ParseError::Unclosed
        );
        assert_eq!(
            parse_strict("---\n- a\n- b\n---\nbody").unwrap_err(),
            ParseError::NotMapping("a list")
        );
        assert_eq!(
            parse_strict("---\njust text\n---\nbody").unwrap_err(),
            ParseError::NotMapping("a string")
        );
        assert!(matches!(
            parse_strict("---\nname: [unclosed\n---\nbody").unwrap_err(),
            ParseError::Yaml(_)
        ));
        assert_eq!(
            parse_strict("---\nname: a\n---\nbody").unwrap_err(),
            ParseError::Missing("description")
        );
        assert_eq!(
            parse_strict("---\nname: a\ndescription: b\n---\n  \n").unwrap_err(),
            ParseError::EmptyBody
        );
        let long = format!(
            "---\nname: a\ndescription: {}\n---\nbody",
            "d".repeat(10_000)
        );
        assert_eq!(
            parse_strict(&long).unwrap_err(),
            ParseError::DescriptionTooLong(10_000)
        );
    }

    #[test]
    fn lenient_parse_tolerates_bom_crlf_and_broken_yaml() {
        let doc =
            parse_lenient("\u{feff}---\r\nname: x\r\ndescription: y\r\n---\r\nbody\r\n").unwrap();
        assert_eq!(doc.frontmatter.name.as_deref(), Some("x"));
        assert_eq!(doc.frontmatter.description.as_deref(), Some("y"));
        // Not YAML (a colon inside an unquoted value followed by a tab mapping), still usable.
        let doc =
            parse_lenient("---\nname: x\ndescription: uses: colons: everywhere\n\t- bad\n---\nb")
                .unwrap();
        assert_eq!(doc.frontmatter.name.as_deref(), Some("x"));
        // Description falls back to the first body line.
        let doc = parse_lenient("---\nname: x\n---\n# Heading\n\nDoes a thing.\n").unwrap();
        assert_eq!(
            doc.frontmatter.description.as_deref(),
            Some("Does a thing.")
        );
    }

    #[test]
    fn hostile_yaml_does_not_panic() {
        for text in [
            "---\n&a [*a]\n---\nb",
            "---\n!!binary xyz\n---\nb",
            "---\nname: *undefined\n---\nb",
            "---\n{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{\n---\nb",
            "---\n---\n",
            "---",
        ] {
            let _ = parse_lenient(text);
            let _ = parse_strict(text);
        }
        let deep = format!("---\nname: {}\n---\nb", "[".repeat(5_000));
        assert!(parse_strict(&deep).is_err());
    }

    #[test]
    fn names_follow_the_rule() {
        assert!(validate_name("skill", "git-workflow").is_ok());
        assert!(validate_name("skill", "a.b_c-9").is_ok());
        for bad in ["", "Upper", "a/b", "-lead", "has space", "..", "é"] {
            assert!(validate_name("skill", bad).is_err(), "{bad}");
        }
        assert!(validate_name("skill", &"a".repeat(65)).is_err());
        assert!(
            validate_name("skill", "A/b")
                .unwrap_err()
                .contains("no `/`, spaces or uppercase")
        );
    }
}
