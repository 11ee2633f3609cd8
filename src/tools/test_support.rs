//! Test-only helpers for tool unit tests: a `ToolContext` rooted in a temp directory and a way to
//! call any registered tool by name through the real registry dispatch.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tempfile::TempDir;
use tokio_util::sync::CancellationToken;

use crate::config::home::HermesHome;
use crate::config::{ApprovalMode, Config, EnvVars};
use crate::llm::ToolCall;
use crate::security::approval::{ApprovalGate, NoPrompt};
use crate::tools::registry::{SessionScratch, ToolContext, ToolOutput, ToolRegistry};

/// A temp directory with `home/` (HERMES_HOME) and `work/` (the tools' working directory).
pub struct TestEnv {
    pub dir: TempDir,
    pub ctx: ToolContext,
}

pub fn env() -> TestEnv {
    env_with(|_| {})
}

/// Like [`env`], letting the test adjust the config first.
pub fn env_with(adjust: impl FnOnce(&mut Config)) -> TestEnv {
    build(adjust, ApprovalMode::Off, Vec::new())
}

/// Like [`env`], with an approval gate in `mode` and user deny patterns.
pub fn env_with_approvals(mode: ApprovalMode, deny: Vec<String>) -> TestEnv {
    build(|_| {}, mode, deny)
}

fn build(adjust: impl FnOnce(&mut Config), mode: ApprovalMode, deny: Vec<String>) -> TestEnv {
    let dir = tempfile::tempdir().unwrap();
    let home = HermesHome::new(dir.path().join("home"));
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let mut config = Config::defaults(home.clone(), EnvVars::default());
    adjust(&mut config);
    let shield = Arc::new(crate::security::shield::Shield::for_config(&config));
    let checkpoints = Arc::new(crate::checkpoints::Checkpointer::for_config(&config));
    let approvals = ApprovalGate::new(
        mode,
        false,
        Vec::new(),
        deny,
        home.config_path(),
        Duration::from_secs(1),
    );
    let skills = crate::skills::SkillStore::from_config(&config);
    let ctx = ToolContext {
        skills,
        role: Default::default(),
        depth: 0,
        delegator: None,
        config: Arc::new(config),
        cwd: work,
        session_id: "test-session".into(),
        call_id: "call-1".into(),
        cancel: CancellationToken::new(),
        approvals: Arc::new(approvals),
        prompt: Arc::new(NoPrompt),
        scratch: Arc::new(SessionScratch::default()),
        shield,
        checkpoints,
    };
    TestEnv { dir, ctx }
}

impl TestEnv {
    /// A path inside the working directory.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.ctx.cwd.join(rel)
    }

    /// Writes a file (creating parents) inside the working directory.
    pub fn write(&self, rel: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let p = self.path(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, bytes).unwrap();
        p
    }

    /// Calls a tool through `ToolRegistry::dispatch`, as the agent loop does.
    pub async fn call(&self, tool: &str, args: serde_json::Value) -> ToolOutput {
        self.call_raw(tool, &args.to_string()).await
    }

    pub async fn call_raw(&self, tool: &str, arguments: &str) -> ToolOutput {
        let call = ToolCall {
            id: "call-1".into(),
            name: tool.into(),
            arguments: arguments.into(),
        };
        ToolRegistry::discover().dispatch(&call, &self.ctx).await
    }

    /// Calls a tool and requires success; returns the text.
    pub async fn ok(&self, tool: &str, args: serde_json::Value) -> String {
        let out = self.call(tool, args).await;
        assert!(!out.is_error, "{tool} failed: {}", out.content);
        out.content
    }

    /// Calls a tool and requires a readable failure; returns the error message.
    pub async fn err(&self, tool: &str, args: serde_json::Value) -> String {
        let out = self.call(tool, args).await;
        assert!(
            out.is_error,
            "{tool} should have failed, got: {}",
            out.content
        );
        let v: serde_json::Value = serde_json::from_str(&out.content).unwrap();
        v["error"].as_str().unwrap().to_string()
    }
}

#[cfg(test)]
mod tests {
    use crate::tools::registry::ToolRegistry;

    /// Every schema byte is sent on every request: the six first tools must stay small.
    #[test]
    fn first_six_tool_schemas_are_compact() {
        let registry = ToolRegistry::discover();
        let names = [
            "read_file",
            "write_file",
            "patch",
            "search_files",
            "terminal",
            "todo",
        ];
        let schemas: Vec<serde_json::Value> = names
            .iter()
            .map(|n| {
                let s = registry.get(n).unwrap_or_else(|| panic!("{n} not registered")).schema();
                serde_json::json!({"name": s.name, "description": s.description, "parameters": s.parameters})
            })
            .collect();
        let text = serde_json::to_string(&schemas).unwrap();
        println!("six tool schemas: {} bytes\n{text}", text.len());
        assert!(text.len() < 3_500, "{} bytes", text.len());
        for s in &schemas {
            assert_eq!(s["parameters"]["type"], "object", "{s}");
        }
    }
}
