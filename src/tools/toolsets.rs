//! Toolsets as data: the built-in table (name, description, included toolsets) and their
//! resolution, recursive with cycle detection. Membership is not listed here: a tool joins a
//! toolset by naming it (`TypedTool::TOOLSET`, or `Tool::toolset()` for a tool registered at run
//! time), and a toolset no table describes (`mcp-<server>`, `test`) exists while it has tools.

use std::collections::{BTreeMap, BTreeSet};

use crate::config::ToolsetDef;
use crate::tools::registry::ToolsetError;

/// A built-in toolset: what it is for and which toolsets it includes. Its own tools are the
/// registered tools whose toolset has this name.
pub struct ToolsetSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub includes: &'static [&'static str],
}

/// Toolset name → registered tool names (`ToolRegistry::members`).
pub type Members = BTreeMap<String, BTreeSet<String>>;

/// Names follow Python Hermes (reference §6.4).
pub const BUILTIN: &[ToolsetSpec] = &[
    ToolsetSpec {
        name: "file",
        description: "read, write, patch and search files",
        includes: &[],
    },
    ToolsetSpec {
        name: "terminal",
        description: "run shell commands",
        includes: &[],
    },
    ToolsetSpec {
        name: "todo",
        description: "a task list for the current session",
        includes: &[],
    },
    ToolsetSpec {
        name: "skills",
        description: "list, view and manage skills",
        includes: &[],
    },
    ToolsetSpec {
        name: "skills_hub",
        description: "search, inspect and (with the user's yes) install skills from the hub",
        includes: &[],
    },
    ToolsetSpec {
        name: "memory",
        description: "persistent notes about the user and environment",
        includes: &[],
    },
    ToolsetSpec {
        name: "session_search",
        description: "search past conversations",
        includes: &[],
    },
    ToolsetSpec {
        name: "delegation",
        description: "hand tasks to child agents",
        includes: &[],
    },
    ToolsetSpec {
        name: "debugging",
        description: "terminal plus files",
        includes: &["terminal", "file"],
    },
    ToolsetSpec {
        name: "hermes-cli",
        description: "everything the interactive CLI offers",
        includes: &[
            "file",
            "terminal",
            "todo",
            "skills",
            "skills_hub",
            "memory",
            "session_search",
            "delegation",
        ],
    },
];

/// Where a toolset's definition comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolsetOrigin {
    /// The built-in table above.
    Builtin,
    /// `custom_toolsets:` in config.yaml (may shadow a built-in one).
    Custom,
    /// Only the registered tools that name it (a runtime toolset such as `mcp-<server>`).
    Registered,
}

/// One toolset as `hermes tools` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolsetInfo {
    pub name: String,
    pub description: String,
    /// Its own tools (not those of included toolsets), sorted.
    pub tools: Vec<String>,
    pub includes: Vec<String>,
    pub origin: ToolsetOrigin,
}

/// Every toolset known under `custom` and the registered tools, sorted by name.
pub fn describe(custom: &BTreeMap<String, ToolsetDef>, members: &Members) -> Vec<ToolsetInfo> {
    let mut out: BTreeMap<String, ToolsetInfo> = BTreeMap::new();
    let own = |name: &str| -> Vec<String> {
        members
            .get(name)
            .map(|m| m.iter().cloned().collect())
            .unwrap_or_default()
    };
    for (name, tools) in members {
        out.insert(
            name.clone(),
            ToolsetInfo {
                name: name.clone(),
                description: String::new(),
                tools: tools.iter().cloned().collect(),
                includes: Vec::new(),
                origin: ToolsetOrigin::Registered,
            },
        );
    }
    for spec in BUILTIN {
        out.insert(
            spec.name.to_string(),
            ToolsetInfo {
                name: spec.name.to_string(),
                description: spec.description.to_string(),
                tools: own(spec.name),
                includes: spec.includes.iter().map(|s| s.to_string()).collect(),
                origin: ToolsetOrigin::Builtin,
            },
        );
    }
    for (name, def) in custom {
        out.insert(
            name.clone(),
            ToolsetInfo {
                name: name.clone(),
                description: def.description.clone(),
                tools: def.tools.clone(),
                includes: def.includes.clone(),
                origin: ToolsetOrigin::Custom,
            },
        );
    }
    out.into_values().collect()
}

fn known_names(custom: &BTreeMap<String, ToolsetDef>, members: &Members) -> String {
    let mut names: BTreeSet<&str> = BUILTIN.iter().map(|s| s.name).collect();
    names.extend(custom.keys().map(String::as_str));
    names.extend(members.keys().map(String::as_str));
    let mut names: Vec<&str> = names.into_iter().collect();
    names.push("all");
    names.join(", ")
}

/// Resolves toolset names against the tools linked into the binary (for callers that hold no
/// registry; a session resolves against its process's registry, runtime tools included).
pub fn resolve(
    names: &[String],
    custom: &BTreeMap<String, ToolsetDef>,
) -> Result<BTreeSet<String>, ToolsetError> {
    crate::tools::ToolRegistry::discover().resolve_toolsets(names, custom)
}

/// Resolves toolset names (built-in, from `custom_toolsets`, or named by registered tools) to
/// the set of tool names. `all` / `*` select every registered tool. A custom toolset may shadow
/// a built-in one.
pub fn resolve_in(
    names: &[String],
    custom: &BTreeMap<String, ToolsetDef>,
    members: &Members,
) -> Result<BTreeSet<String>, ToolsetError> {
    let mut out = BTreeSet::new();
    for name in names {
        let mut stack = Vec::new();
        visit(name.trim(), custom, members, &mut stack, &mut out)?;
    }
    Ok(out)
}

fn visit(
    name: &str,
    custom: &BTreeMap<String, ToolsetDef>,
    members: &Members,
    stack: &mut Vec<String>,
    out: &mut BTreeSet<String>,
) -> Result<(), ToolsetError> {
    if name == "all" || name == "*" {
        out.extend(members.values().flatten().cloned());
        return Ok(());
    }
    if stack.iter().any(|s| s == name) {
        stack.push(name.to_string());
        return Err(ToolsetError::Cycle(stack.join(" -> ")));
    }
    stack.push(name.to_string());
    if let Some(def) = custom.get(name) {
        out.extend(def.tools.iter().cloned());
        for inc in &def.includes {
            visit(inc, custom, members, stack, out)?;
        }
    } else if let Some(spec) = BUILTIN.iter().find(|s| s.name == name) {
        out.extend(members.get(name).into_iter().flatten().cloned());
        for inc in spec.includes {
            visit(inc, custom, members, stack, out)?;
        }
    } else if let Some(tools) = members.get(name) {
        out.extend(tools.iter().cloned());
    } else {
        return Err(ToolsetError::Unknown(
            name.to_string(),
            known_names(custom, members),
        ));
    }
    stack.pop();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members() -> Members {
        crate::tools::ToolRegistry::discover().members()
    }

    #[test]
    fn membership_comes_from_the_tools_and_registered_toolsets_resolve() {
        let mut m = members();
        assert!(m["file"].contains("read_file"));
        m.entry("mcp-x".into())
            .or_default()
            .insert("mcp_x_a".into());
        let set = resolve_in(&["mcp-x".into()], &BTreeMap::new(), &m).unwrap();
        assert_eq!(set.into_iter().collect::<Vec<_>>(), ["mcp_x_a"]);
        let all = resolve_in(&["all".into()], &BTreeMap::new(), &m).unwrap();
        assert!(all.contains("mcp_x_a") && all.contains("terminal"));
        let info = describe(&BTreeMap::new(), &m);
        let x = info.iter().find(|t| t.name == "mcp-x").unwrap();
        assert_eq!(x.origin, ToolsetOrigin::Registered);
        let file = info.iter().find(|t| t.name == "file").unwrap();
        assert_eq!(file.origin, ToolsetOrigin::Builtin);
        assert!(file.tools.contains(&"patch".to_string()) && !file.description.is_empty());
        let err = resolve_in(&["nope".into()], &BTreeMap::new(), &m).unwrap_err();
        assert!(err.to_string().contains("mcp-x"), "{err}");
    }

    fn def(tools: &[&str], includes: &[&str]) -> ToolsetDef {
        ToolsetDef {
            description: String::new(),
            tools: tools.iter().map(|s| s.to_string()).collect(),
            includes: includes.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn builtin_includes_resolve() {
        let set = resolve(&["hermes-cli".into()], &BTreeMap::new()).unwrap();
        for t in ["read_file", "terminal", "todo", "patch", "search_files"] {
            assert!(set.contains(t), "{t}");
        }
    }

    #[test]
    fn custom_toolsets_nest() {
        let mut custom = BTreeMap::new();
        custom.insert("mine".to_string(), def(&["todo"], &["file"]));
        let set = resolve(&["mine".into()], &custom).unwrap();
        assert!(set.contains("todo") && set.contains("read_file"));
        assert!(!set.contains("terminal"));
    }

    #[test]
    fn cycles_are_errors() {
        let mut custom = BTreeMap::new();
        custom.insert("a".to_string(), def(&[], &["b"]));
        custom.insert("b".to_string(), def(&[], &["a"]));
        let err = resolve(&["a".into()], &custom).unwrap_err();
        assert_eq!(err, ToolsetError::Cycle("a -> b -> a".into()));
        custom.insert("self".to_string(), def(&[], &["self"]));
        assert!(matches!(
            resolve(&["self".into()], &custom),
            Err(ToolsetError::Cycle(_))
        ));
    }

    #[test]
    fn unknown_names_are_errors() {
        let err = resolve(&["nope".into()], &BTreeMap::new()).unwrap_err();
        assert!(err.to_string().contains("nope"));
        assert!(err.to_string().contains("hermes-cli"));
    }

    #[test]
    fn diamond_is_not_a_cycle() {
        let mut custom = BTreeMap::new();
        custom.insert("top".to_string(), def(&[], &["l", "r"]));
        custom.insert("l".to_string(), def(&[], &["file"]));
        custom.insert("r".to_string(), def(&[], &["file"]));
        assert!(resolve(&["top".into()], &custom).is_ok());
    }
}
