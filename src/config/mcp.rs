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
    /// Seconds between liveness pings (Python's default 180, at least 5); a ping the server
    /// does not answer ends the connection (the supervisor reconnects).
    #[serde(deserialize_with = "num")]
    pub keepalive_interval: Option<f64>,
    /// A stdio server idle this long is stopped; the next call starts it again (0: never).
    #[serde(deserialize_with = "num")]
    pub idle_timeout_seconds: Option<f64>,
    /// A stdio server this old is stopped once idle; the next call starts it again (0: never).
    #[serde(deserialize_with = "num")]
    pub max_lifetime_seconds: Option<f64>,
    /// Python's nested form of the two keys above.
    pub lifecycle: McpLifecycle,
    /// Calls to this server may run at the same time (and beside other read-only calls);
    /// otherwise they run one at a time.
    #[serde(deserialize_with = "flag")]
    pub supports_parallel_tool_calls: Option<bool>,
    #[serde(deserialize_with = "flag")]
    pub enabled: Option<bool>,
    pub tools: McpToolFilter,
    /// OAuth and sampling (server-initiated LLM calls): not supported yet — accepted as Python
    /// writes them and reported in the "not supported yet" warning (`unsupported_keys`).
    pub auth: Option<serde_json::Value>,
    pub oauth: Option<serde_json::Value>,
    pub sampling: Option<serde_json::Value>,
}

/// The `mcp:` section.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct McpSection {
    /// The REPL reloads the MCP servers when `mcp_servers:` changes in config.yaml (default
    /// true); false only tells the user to `/reload-mcp`.
    #[serde(deserialize_with = "flag")]
    pub auto_reload_on_config_change: Option<bool>,
}

/// `lifecycle: {idle_timeout_seconds, max_lifetime_seconds}`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpLifecycle {
    #[serde(deserialize_with = "num")]
    pub idle_timeout_seconds: Option<f64>,
    #[serde(deserialize_with = "num")]
    pub max_lifetime_seconds: Option<f64>,
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

    /// `idle_timeout_seconds` or `max_lifetime_seconds` (top level first, then under
    /// `lifecycle:`), when set and positive (0 turns it off, as in Python Hermes).
    pub fn lifecycle_seconds(&self, key: &str) -> Option<std::time::Duration> {
        let (top, nested) = match key {
            "idle_timeout_seconds" => (
                self.idle_timeout_seconds,
                self.lifecycle.idle_timeout_seconds,
            ),
            "max_lifetime_seconds" => (
                self.max_lifetime_seconds,
                self.lifecycle.max_lifetime_seconds,
            ),
            _ => return None,
        };
        top.or(nested)
            .filter(|v| v.is_finite() && *v > 0.0)
            .map(|v| std::time::Duration::from_secs_f64(v.min(10.0 * 365.0 * 86_400.0)))
    }

    /// The keys of server `name` that are accepted but have no effect yet: OAuth (`auth:
    /// oauth`, `oauth:`; header auth works through `headers:`) and sampling.
    pub fn unsupported_keys(&self, name: &str) -> Vec<String> {
        let mut out = Vec::new();
        if self.auth.is_some() {
            out.push(format!("mcp_servers.{name}.auth"));
        }
        if self.oauth.is_some() {
            out.push(format!("mcp_servers.{name}.oauth"));
        }
        // Python's default is on; an explicit `enabled: false` asks for nothing.
        let sampling_off = self
            .sampling
            .as_ref()
            .and_then(|s| s.get("enabled"))
            .is_some_and(|e| e == &serde_json::Value::Bool(false));
        if self.sampling.is_some() && !sampling_off {
            out.push(format!("mcp_servers.{name}.sampling"));
        }
        out
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

    #[test]
    fn lifecycle_keys_and_unsupported_ones() {
        let servers: BTreeMap<String, McpServerConfig> = serde_saphyr::from_str(
            "a:\n  command: x\n  idle_timeout_seconds: 0\n  lifecycle:\n    idle_timeout_seconds: 5\n    max_lifetime_seconds: 9\n  sampling: {enabled: false}\nb:\n  url: https://x\n  auth: oauth\n  sampling: {max_rpm: 3}\n",
        )
        .unwrap();
        let a = &servers["a"];
        // The top-level 0 wins and turns the limit off; the nested one applies otherwise.
        assert_eq!(a.lifecycle_seconds("idle_timeout_seconds"), None);
        assert_eq!(
            a.lifecycle_seconds("max_lifetime_seconds"),
            Some(std::time::Duration::from_secs(9))
        );
        assert!(a.unsupported_keys("a").is_empty());
        assert_eq!(
            servers["b"].unsupported_keys("b"),
            ["mcp_servers.b.auth", "mcp_servers.b.sampling"]
        );
    }
}
