//! Toolsets as data: name → tools + included toolsets, resolved recursively with cycle detection.

use std::collections::{BTreeMap, BTreeSet};

use crate::config::ToolsetDef;
use crate::tools::registry::ToolsetError;

/// A built-in toolset.
pub struct ToolsetSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub tools: &'static [&'static str],
    pub includes: &'static [&'static str],
}

/// Names and members follow Python Hermes (reference §6.4); tools that are not built yet are
/// simply absent from the registry.
pub const BUILTIN: &[ToolsetSpec] = &[
    ToolsetSpec {
        name: "file",
        description: "read, write, patch and search files",
        tools: &["read_file", "write_file", "patch", "search_files"],
        includes: &[],
    },
    ToolsetSpec {
        name: "terminal",
        description: "run shell commands",
        tools: &["terminal", "process"],
        includes: &[],
    },
    ToolsetSpec {
        name: "todo",
        description: "a task list for the current session",
        tools: &["todo"],
        includes: &[],
    },
    ToolsetSpec {
        name: "skills",
        description: "list, view and manage skills",
        tools: &["skills_list", "skill_view", "skill_manage"],
        includes: &[],
    },
    ToolsetSpec {
        name: "skills_hub",
        description: "search, inspect and (with the user's yes) install skills from the hub",
        tools: &["skills_hub"],
        includes: &[],
    },
    ToolsetSpec {
        name: "memory",
        description: "persistent notes about the user and environment",
        tools: &["memory"],
        includes: &[],
    },
    ToolsetSpec {
        name: "session_search",
        description: "search past conversations",
        tools: &["session_search"],
        includes: &[],
    },
    ToolsetSpec {
        name: "delegation",
        description: "hand tasks to child agents",
        tools: &["delegate_task"],
        includes: &[],
    },
    ToolsetSpec {
        name: "debugging",
        description: "terminal plus files",
        tools: &[],
        includes: &["terminal", "file"],
    },
    ToolsetSpec {
        name: "hermes-cli",
        description: "everything the interactive CLI offers",
        tools: &[],
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

fn known_names(custom: &BTreeMap<String, ToolsetDef>) -> String {
    let mut names: Vec<&str> = BUILTIN.iter().map(|s| s.name).collect();
    names.extend(custom.keys().map(String::as_str));
    names.push("all");
    names.join(", ")
}

/// Resolves toolset names (built-in or from `custom_toolsets`) to the set of tool names.
/// `all` / `*` select every tool. A custom toolset may shadow a built-in one.
pub fn resolve(
    names: &[String],
    custom: &BTreeMap<String, ToolsetDef>,
) -> Result<BTreeSet<String>, ToolsetError> {
    let mut out = BTreeSet::new();
    for name in names {
        let mut stack = Vec::new();
        visit(name.trim(), custom, &mut stack, &mut out)?;
    }
    Ok(out)
}

fn visit(
    name: &str,
    custom: &BTreeMap<String, ToolsetDef>,
    stack: &mut Vec<String>,
    out: &mut BTreeSet<String>,
) -> Result<(), ToolsetError> {
    if name == "all" || name == "*" {
        for reg in inventory::iter::<crate::tools::registry::ToolRegistration> {
            out.insert((reg.factory)().name().to_string());
        }
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
            visit(inc, custom, stack, out)?;
        }
    } else if let Some(spec) = BUILTIN.iter().find(|s| s.name == name) {
        out.extend(spec.tools.iter().map(|t| t.to_string()));
        for inc in spec.includes {
            visit(inc, custom, stack, out)?;
        }
    } else {
        return Err(ToolsetError::Unknown(name.to_string(), known_names(custom)));
    }
    stack.pop();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
