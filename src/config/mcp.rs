//! `mcp_servers:` entries (Python Hermes format): a stdio server (`command`, `args`, `env`) or an
//! HTTP one (`url`, `headers`, `transport: sse`), with timeouts and a tool filter. Typed now so a
//! typo is caught at load; the MCP client uses them.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::file::{flag, num};

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpServerConfig {
    pub command: Option<String>,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub url: Option<String>,
    pub headers: BTreeMap<String, String>,
    /// `sse` for the legacy SSE transport (else Streamable HTTP for `url`).
    pub transport: Option<String>,
    /// Seconds one tool call may take (Python's default 300).
    #[serde(deserialize_with = "num")]
    pub timeout: Option<f64>,
    /// Seconds to connect (Python's default 60).
    #[serde(deserialize_with = "num")]
    pub connect_timeout: Option<f64>,
    #[serde(deserialize_with = "num")]
    pub keepalive_interval: Option<f64>,
    #[serde(deserialize_with = "num")]
    pub idle_timeout_seconds: Option<f64>,
    #[serde(deserialize_with = "num")]
    pub max_lifetime_seconds: Option<f64>,
    #[serde(deserialize_with = "flag")]
    pub supports_parallel_tool_calls: Option<bool>,
    #[serde(deserialize_with = "flag")]
    pub enabled: Option<bool>,
    pub tools: McpToolFilter,
    /// OAuth and sampling settings: kept as written until the MCP client reads them.
    pub auth: Option<serde_json::Value>,
    pub oauth: Option<serde_json::Value>,
    pub sampling: Option<serde_json::Value>,
}

/// `tools.include` (only these) / `tools.exclude` (all but these).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpToolFilter {
    pub include: Vec<String>,
    pub exclude: Vec<String>,
}

impl McpServerConfig {
    /// Whether the server is used (`enabled: false` turns it off).
    pub fn is_enabled(&self) -> bool {
        self.enabled.unwrap_or(true)
    }

    /// Whether the filter lets tool `name` through.
    pub fn allows_tool(&self, name: &str) -> bool {
        let t = &self.tools;
        (t.include.is_empty() || t.include.iter().any(|i| i == name))
            && !t.exclude.iter().any(|e| e == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_format_and_typos() {
        let servers: BTreeMap<String, McpServerConfig> = serde_saphyr::from_str(
            "gh:\n  command: npx\n  args: [-y, server]\n  env: {TOKEN: x}\n  timeout: 120\n  tools:\n    exclude: [delete_repo]\nweb:\n  url: https://x/mcp\n  headers: {Authorization: Bearer t}\n  enabled: false\n",
        )
        .unwrap();
        assert_eq!(servers["gh"].args, ["-y", "server"]);
        assert!(!servers["gh"].allows_tool("delete_repo") && servers["gh"].allows_tool("list"));
        assert!(!servers["web"].is_enabled());
        let e = serde_saphyr::from_str::<BTreeMap<String, McpServerConfig>>("gh:\n  comand: x\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("comand"), "{e}");
    }
}
