//! Tool names for MCP tools: `mcp__<server>__<tool>` (the convention Python Hermes, Claude Code and
//! Codex share), every character outside `[A-Za-z0-9_]` replaced by `_` so that providers accept
//! the name, and capped at 64 characters (OpenAI's limit) with a short hash keeping it unique.

/// The prefix every MCP tool name starts with.
pub const PREFIX: &str = "mcp__";

/// `value` with every character outside `[A-Za-z0-9_]` replaced by `_` (Python Hermes's rule).
pub fn sanitize(value: &str) -> String {
    value
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The toolset of a server's tools.
pub fn toolset(server: &str) -> String {
    format!("mcp-{server}")
}

/// The registered name of `tool` on `server`.
pub fn tool_name(server: &str, tool: &str) -> String {
    let full = format!("{PREFIX}{}__{}", sanitize(server), sanitize(tool));
    if full.len() <= 64 {
        return full;
    }
    // Two long names may share their first 55 characters: a hash of the whole keeps them apart.
    let hash = full.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{}_{:08x}", &full[..55], hash as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_provider_safe_and_bounded() {
        assert_eq!(
            tool_name("git-hub", "list.repos"),
            "mcp__git_hub__list_repos"
        );
        assert_eq!(toolset("git-hub"), "mcp-git-hub");
        let a = tool_name("srv", &"x".repeat(80));
        let b = tool_name("srv", &format!("{}y", "x".repeat(79)));
        assert!(a.len() <= 64 && b.len() <= 64 && a != b, "{a} {b}");
        assert!(a.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
    }
}
