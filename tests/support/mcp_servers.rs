//! Where the stdio MCP test server binary is (`target/<profile>/examples/mcp_stdio_server`), and
//! `McpHome`, a test home with MCP servers configured.
//! `cargo test` builds it; `cargo test --test all` does not, so it is built here when it is
//! missing or older than its sources (a stale one would test old server code).

use std::path::PathBuf;
use std::sync::OnceLock;

/// The test server's path; built once per test process if it is missing or stale.
pub fn stdio_server() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let hermes = PathBuf::from(env!("CARGO_BIN_EXE_hermes"));
        let path = hermes
            .parent()
            .expect("the binary's directory")
            .join("examples")
            .join("mcp_stdio_server");
        if is_stale(&path) {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let status = std::process::Command::new(cargo)
                .args(["build", "--example", "mcp_stdio_server"])
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .status()
                .expect("run cargo build --example mcp_stdio_server");
            assert!(status.success(), "building the MCP test server failed");
        }
        path
    })
    .clone()
}

/// A `mcp_servers:` entry for the stdio test server (YAML lines indented under the name).
pub fn stdio_entry(extra: &str) -> String {
    format!("    command: {}\n{extra}", stdio_server().display())
}

/// Missing, or older than one of the files it is built from.
fn is_stale(binary: &std::path::Path) -> bool {
    let Ok(built) = std::fs::metadata(binary).and_then(|m| m.modified()) else {
        return true;
    };
    let support = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support");
    ["mcp_stdio_server.rs", "mcp_tools.rs"].iter().any(|f| {
        std::fs::metadata(support.join(f))
            .and_then(|m| m.modified())
            .is_ok_and(|changed| changed > built)
    })
}

/// A test home with MCP servers in its config.yaml: the set-up every MCP client test repeats.
/// `stdio`/`url` add servers, `top` adds top-level lines; `write` (or `warm`) writes the file.
pub struct McpHome {
    env: crate::support::harness::TestEnv,
    top: String,
    servers: Vec<(String, String)>,
}

impl std::ops::Deref for McpHome {
    type Target = crate::support::harness::TestEnv;
    fn deref(&self) -> &Self::Target {
        &self.env
    }
}

impl Default for McpHome {
    fn default() -> Self {
        Self::new()
    }
}

impl McpHome {
    pub fn new() -> Self {
        McpHome {
            env: crate::support::harness::TestEnv::new(),
            top: String::new(),
            servers: Vec::new(),
        }
    }

    /// Top-level YAML lines (e.g. `mcp_discovery_timeout: 0.3`).
    pub fn top(mut self, yaml: &str) -> Self {
        self.top.push_str(yaml.trim_end());
        self.top.push('\n');
        self
    }

    /// The stdio test server as `name`; `extra` is YAML indented by four spaces.
    pub fn stdio(mut self, name: &str, extra: &str) -> Self {
        self.servers.push((name.to_string(), stdio_entry(extra)));
        self
    }

    /// A Streamable HTTP server at `url` as `name`; `extra` as for `stdio`.
    pub fn url(mut self, name: &str, url: &str, extra: &str) -> Self {
        self.servers
            .push((name.to_string(), format!("    url: {url}\n{extra}")));
        self
    }

    /// Replaces server `name`'s entry (a changed config under a running hermes).
    pub fn replace(&mut self, name: &str, extra: &str) {
        self.servers.retain(|(n, _)| n != name);
        self.servers.push((name.to_string(), stdio_entry(extra)));
        self.env.config(&self.yaml());
    }

    /// config.yaml as it is written.
    pub fn yaml(&self) -> String {
        let mut out = self.top.clone();
        out.push_str("mcp_servers:\n");
        for (name, entry) in &self.servers {
            out.push_str(&format!("  {name}:\n{entry}"));
        }
        out
    }

    /// Writes config.yaml.
    pub fn write(self) -> Self {
        self.env.config(&self.yaml());
        self
    }

    /// Writes config.yaml and runs `hermes mcp test NAME` for every server: their tool lists
    /// are saved, so the first session sends their tools directly (as after a first run).
    pub fn warm(self) -> Self {
        let names: Vec<String> = self.servers.iter().map(|(n, _)| n.clone()).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        self.write().warm_only(&names)
    }

    /// `hermes mcp test NAME` for these servers (config.yaml already written).
    pub fn warm_only(self, names: &[&str]) -> Self {
        for name in names {
            let out = self
                .env
                .bare_cmd()
                .args(["mcp", "test", name])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "hermes mcp test {name}: {}",
                crate::support::harness::stderr(&out)
            );
        }
        self
    }

    /// `hermes -z PROMPT` against `mock`; asserts it succeeded.
    pub fn ask(
        &self,
        mock: &crate::support::mock_llm::MockLlm,
        prompt: &str,
    ) -> std::process::Output {
        let out = self
            .env
            .cmd(&mock.base_url())
            .args(["-z", prompt])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            crate::support::harness::stderr(&out)
        );
        out
    }
}
