//! MCP servers an editor brings in `session/new|load|resume|fork` (`mcpServers`): each becomes
//! an `mcp_servers:`-style entry (stdio `command/args/env`, Streamable HTTP `url/headers`) run by
//! the MCP client for that session only (`mcp::client::SessionMcp`): their tools are
//! `mcp__<name>__<tool>` in that session's tool set, and the servers stop when the session's
//! agent goes (the connection ends). The legacy SSE transport is passed on as `transport: sse`,
//! which the client reports as unsupported in the server's status and log; `initialize`
//! therefore advertises `http` only.

use std::collections::BTreeMap;
use std::sync::Arc;

use agent_client_protocol::v1::schema::{HttpHeader, McpCapabilities, McpServer};

use super::invalid;
use crate::agent::Services;
use crate::config::mcp::McpServerConfig;
use crate::mcp::client::SessionMcp;

/// What `initialize` says about the editor's MCP servers.
pub fn capabilities() -> McpCapabilities {
    McpCapabilities::new().http(true).sse(false)
}

/// The editor's servers as config entries by name; a nameless or repeated name is an error
/// the editor reads.
pub fn entries(
    servers: &[McpServer],
) -> Result<BTreeMap<String, McpServerConfig>, agent_client_protocol::Error> {
    let mut out = BTreeMap::new();
    for server in servers {
        let (name, entry) = match server {
            McpServer::Stdio(s) => (
                &s.name,
                McpServerConfig {
                    command: Some(s.command.display().to_string()),
                    args: s.args.clone(),
                    env: s
                        .env
                        .iter()
                        .map(|v| (v.name.clone(), v.value.clone()))
                        .collect(),
                    ..Default::default()
                },
            ),
            McpServer::Http(s) => (&s.name, http_entry(&s.url, &s.headers, None)),
            McpServer::Sse(s) => (&s.name, http_entry(&s.url, &s.headers, Some("sse"))),
            _ => {
                return Err(invalid(
                    "an MCP server of a transport hermes does not know (it takes stdio and http)",
                ));
            }
        };
        if name.trim().is_empty() {
            return Err(invalid("an MCP server in mcpServers has no name"));
        }
        if out.insert(name.clone(), entry).is_some() {
            return Err(invalid(format!(
                "two MCP servers in mcpServers are named `{name}`: give each its own name"
            )));
        }
    }
    Ok(out)
}

/// An entry for a server reached over HTTP (`transport: sse` for the legacy transport).
fn http_entry(url: &str, headers: &[HttpHeader], transport: Option<&str>) -> McpServerConfig {
    McpServerConfig {
        url: Some(url.to_string()),
        headers: headers
            .iter()
            .map(|h| (h.name.clone(), h.value.clone()))
            .collect(),
        transport: transport.map(str::to_string),
        ..Default::default()
    }
}

/// Starts the editor's servers for one session (none: `None`). Never waits for them: servers
/// still connecting when the session freezes its tools are reached through `tool_search`.
pub fn start(
    services: &Services,
    servers: &[McpServer],
) -> Result<Option<Arc<SessionMcp>>, agent_client_protocol::Error> {
    let entries = entries(servers)?;
    if entries.is_empty() {
        return Ok(None);
    }
    tracing::info!(servers = ?entries.keys().collect::<Vec<_>>(), "starting the editor's MCP servers");
    Ok(Some(SessionMcp::start(
        &services.config,
        &services.http,
        entries,
    )))
}

#[cfg(test)]
mod tests {
    use agent_client_protocol::v1::schema::{EnvVariable, McpServerHttp, McpServerStdio};

    use super::*;

    #[test]
    fn editor_servers_become_config_entries() {
        let servers = vec![
            McpServer::Stdio(
                McpServerStdio::new("files", "/usr/bin/srv")
                    .args(vec!["--ro".into()])
                    .env(vec![EnvVariable::new("TOKEN", "t")]),
            ),
            McpServer::Http(McpServerHttp::new("web", "http://127.0.0.1:9/mcp")),
        ];
        let found = entries(&servers).unwrap();
        let files = &found["files"];
        assert_eq!(files.command.as_deref(), Some("/usr/bin/srv"));
        assert_eq!(files.args, ["--ro"]);
        assert_eq!(files.env["TOKEN"], "t");
        assert_eq!(found["web"].url.as_deref(), Some("http://127.0.0.1:9/mcp"));

        let twice = vec![servers[0].clone(), servers[0].clone()];
        let err = entries(&twice).unwrap_err().to_string();
        assert!(err.contains("named `files`"), "{err}");
    }
}
