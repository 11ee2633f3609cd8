//! Runs the real `hermes` binary with a temporary HERMES_HOME and working directory, pointed at
//! a mock LLM, with an environment free of the developer's own provider settings.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use tempfile::TempDir;

/// One `messages` row: role, content, tool_calls, tool_call_id, tool_name.
pub type Row = (String, Opt, Opt, Opt, Opt);
type Opt = Option<String>;

/// A throwaway home + project directory for one test.
pub struct TestEnv {
    pub home: TempDir,
    pub cwd: TempDir,
}

impl TestEnv {
    pub fn new() -> Self {
        TestEnv {
            home: tempfile::tempdir().unwrap(),
            cwd: tempfile::tempdir().unwrap(),
        }
    }

    pub fn home_path(&self) -> &Path {
        self.home.path()
    }

    /// `hermes` with a clean environment and no provider configured.
    pub fn bare_cmd(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_hermes"));
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home.path())
            .env("HERMES_HOME", self.home.path())
            .env("HERMES_RETRY_BASE_DELAY_MS", "5")
            .env("LANG", "C.UTF-8")
            .current_dir(self.cwd.path())
            .timeout(std::time::Duration::from_secs(60));
        cmd
    }

    /// `hermes --provider custom -m test-model` talking to `base_url`.
    pub fn cmd(&self, base_url: &str) -> Command {
        let mut cmd = self.bare_cmd();
        cmd.env("CUSTOM_BASE_URL", base_url)
            .args(["--provider", "custom", "-m", "test-model"]);
        cmd
    }

    /// `hermes` as a `std::process::Command` the test drives itself (an MCP server over stdio, a
    /// server whose address it reads): only `PATH`, `HOME` and `HERMES_HOME` from the
    /// environment, run in the test's directory, no provider. `tokio::process::Command::from`
    /// makes it async.
    pub fn bare_process(&self) -> std::process::Command {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_hermes"));
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home.path())
            .env("HERMES_HOME", self.home.path())
            .current_dir(self.cwd.path());
        cmd
    }

    /// A `std::process::Command` for a child the test signals itself (same environment as
    /// [`TestEnv::cmd`], output piped).
    pub fn spawnable(&self, base_url: &str, args: &[&str]) -> std::process::Command {
        let mut cmd = self.bare_process();
        cmd.env("CUSTOM_BASE_URL", base_url)
            .args(["--provider", "custom", "-m", "test-model"])
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        cmd
    }

    /// `hermes ARGS` (no args: the REPL) running as a child with its stdin piped, for a test
    /// that types into it; output piped as in [`TestEnv::spawnable`].
    pub fn spawn_repl(&self, base_url: &str, args: &[&str]) -> std::process::Child {
        self.spawnable(base_url, args)
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// Writes `$HERMES_HOME/config.yaml`.
    pub fn config(&self, yaml: &str) {
        std::fs::write(self.home.path().join("config.yaml"), yaml).unwrap();
    }

    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.cwd.path().join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, text).unwrap();
        p
    }

    /// A read connection to the test's state.db.
    pub fn db(&self) -> rusqlite::Connection {
        rusqlite::Connection::open(self.home.path().join("state.db")).unwrap()
    }

    /// `(role, content, tool_calls, tool_call_id, tool_name)` of every active message, in order.
    pub fn rows(&self) -> Vec<Row> {
        let db = self.db();
        let mut stmt = db
            .prepare(
                "SELECT role, content, tool_calls, tool_call_id, tool_name FROM messages \
                 WHERE active = 1 ORDER BY id",
            )
            .unwrap();
        stmt.query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
    }

    pub fn session_ids(&self) -> Vec<String> {
        let db = self.db();
        let mut stmt = db
            .prepare("SELECT id FROM sessions ORDER BY started_at")
            .unwrap();
        stmt.query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    }
}

/// stdout of a finished command as text.
pub fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// stderr of a finished command as text.
pub fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}
