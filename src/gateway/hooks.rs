//! Gateway event hooks: `$HERMES_HOME/hooks/<name>/HOOK.yaml` (`name`, `description`, `events`,
//! optional `timeout` seconds) plus an executable `handler` in the same directory. The handler
//! gets `{"event": ..., "context": {...}}` as JSON on stdin. Events: `gateway:startup`,
//! `session:start|end|reset`, `agent:start|step|end`, `command:<name>`; `<prefix>:*` matches a
//! family. A `command:` hook may print a decision on stdout: `{"decision": "allow"}`,
//! `{"decision": "deny"|"handled", "message": ...}` or `{"decision": "rewrite", "command_name":
//! ..., "raw_args": ...}`.
//!
//! Hooks never block or crash the gateway: each run has a timeout (then the process is killed),
//! at most a few run at once (extra notifications are dropped with a log line), and every
//! failure (missing file, exit status, garbage output) is logged and otherwise ignored.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Semaphore;

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Concurrent processes of one hook for notifications: a hook that hangs only loses its own
/// events, never another hook's.
const MAX_RUNNING: usize = 4;
/// Hook stdout beyond this is ignored.
const MAX_OUTPUT: u64 = 64 * 1024;

#[derive(Debug, Deserialize)]
struct HookFile {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    events: Vec<String>,
    #[serde(default)]
    timeout: Option<f64>,
}

/// One loaded hook.
#[derive(Debug, Clone)]
pub struct Hook {
    pub name: String,
    pub description: String,
    pub events: Vec<String>,
    pub handler: PathBuf,
    pub timeout: Duration,
    running: Arc<Semaphore>,
}

impl Hook {
    fn matches(&self, event: &str) -> bool {
        self.events.iter().any(|e| {
            e == event
                || e.strip_suffix('*')
                    .is_some_and(|prefix| prefix.ends_with(':') && event.starts_with(prefix))
        })
    }
}

/// What a `command:` hook decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandDecision {
    Allow,
    Deny(String),
    Handled(String),
    /// The message text to use instead (`/<command_name> <raw_args>`).
    Rewrite(String),
}

pub struct Hooks {
    hooks: Vec<Hook>,
}

impl Hooks {
    pub fn empty() -> Self {
        Hooks { hooks: Vec::new() }
    }

    /// Loads every valid hook under `dir` (a missing directory means no hooks).
    pub fn load(dir: &Path) -> Self {
        let mut hooks = Vec::new();
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Self::empty();
        };
        let mut dirs: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        dirs.sort();
        for d in dirs {
            match load_one(&d) {
                Ok(h) => hooks.push(h),
                Err(e) => tracing::warn!(dir = %d.display(), error = %e, "hook skipped"),
            }
        }
        Hooks { hooks }
    }

    pub fn list(&self) -> &[Hook] {
        &self.hooks
    }

    /// Fires a notification event in the background; never waits, never fails.
    pub fn emit(&self, event: &str, context: Value) {
        let matching: Vec<Hook> = self
            .hooks
            .iter()
            .filter(|h| h.matches(event))
            .cloned()
            .collect();
        if matching.is_empty() {
            return;
        }
        let payload = json!({ "event": event, "context": context }).to_string();
        for hook in matching {
            let Ok(permit) = hook.running.clone().try_acquire_owned() else {
                tracing::warn!(hook = %hook.name, event, "too many hooks running; event dropped for this hook");
                continue;
            };
            let payload = payload.clone();
            tokio::spawn(async move {
                let _ = run(&hook, &payload).await;
                drop(permit);
            });
        }
    }

    /// Asks `command:<name>` hooks (in order) whether a command may run.
    pub async fn command(&self, name: &str, context: Value) -> CommandDecision {
        let event = format!("command:{name}");
        let payload = json!({ "event": event, "context": context }).to_string();
        for hook in self.hooks.iter().filter(|h| h.matches(&event)) {
            let Some(out) = run(hook, &payload).await else {
                continue;
            };
            match parse_decision(&out) {
                Some(CommandDecision::Allow) | None => {}
                Some(d) => return d,
            }
        }
        CommandDecision::Allow
    }
}

fn load_one(dir: &Path) -> Result<Hook, String> {
    let file = dir.join("HOOK.yaml");
    let text = std::fs::read_to_string(&file)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let parsed: HookFile = serde_saphyr::from_str(&text)
        .map_err(|e| format!("{} is not valid: {e}", file.display()))?;
    if parsed.events.is_empty() {
        return Err(format!("{} lists no `events`", file.display()));
    }
    let handler = dir.join("handler");
    if !handler.is_file() {
        return Err(format!(
            "{} has no executable `handler` file",
            dir.display()
        ));
    }
    let dir_name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(Hook {
        name: parsed.name.unwrap_or(dir_name),
        description: parsed.description.unwrap_or_default(),
        events: parsed.events,
        handler,
        timeout: parsed
            .timeout
            .filter(|t| t.is_finite() && *t > 0.0)
            .map(|t| Duration::from_secs_f64(t.min(300.0)))
            .unwrap_or(DEFAULT_TIMEOUT),
        running: Arc::new(Semaphore::new(MAX_RUNNING)),
    })
}

/// Runs a handler with the payload on stdin; its stdout if it exited 0 in time.
async fn run(hook: &Hook, payload: &str) -> Option<String> {
    let mut child = match tokio::process::Command::new(&hook.handler)
        .current_dir(hook.handler.parent().unwrap_or(Path::new(".")))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(hook = %hook.name, error = %e, "hook handler cannot start");
            return None;
        }
    };
    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let body = payload.to_string();
    let work = async move {
        if let Some(mut stdin) = stdin {
            // A handler that never reads stdin must not block us: errors here are ignored.
            let _ = stdin.write_all(body.as_bytes()).await;
            drop(stdin);
        }
        let mut out = String::new();
        if let Some(stdout) = stdout {
            let _ = stdout.take(MAX_OUTPUT).read_to_string(&mut out).await;
        }
        let status = child.wait().await;
        (status, out)
    };
    match tokio::time::timeout(hook.timeout, work).await {
        Ok((Ok(status), out)) if status.success() => Some(out),
        Ok((Ok(status), _)) => {
            tracing::warn!(hook = %hook.name, %status, "hook handler failed");
            None
        }
        Ok((Err(e), _)) => {
            tracing::warn!(hook = %hook.name, error = %e, "hook handler failed");
            None
        }
        Err(_) => {
            // Dropping the future drops the child: kill_on_drop ends it.
            tracing::warn!(hook = %hook.name, timeout = ?hook.timeout, "hook handler timed out and was killed");
            None
        }
    }
}

fn parse_decision(out: &str) -> Option<CommandDecision> {
    let v: Value = serde_json::from_str(out.trim()).ok()?;
    let text = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    match v.get("decision")?.as_str()? {
        "allow" => Some(CommandDecision::Allow),
        "deny" => Some(CommandDecision::Deny(
            Some(text("message"))
                .filter(|m| !m.is_empty())
                .unwrap_or_else(|| "That command is not allowed here.".into()),
        )),
        "handled" => Some(CommandDecision::Handled(text("message")))
            .filter(|d| !matches!(d, CommandDecision::Handled(m) if m.is_empty())),
        "rewrite" => {
            let name = text("command_name");
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return None;
            }
            let args = text("raw_args");
            Some(CommandDecision::Rewrite(
                format!("/{name} {args}").trim_end().to_string(),
            ))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn write_hook(root: &Path, name: &str, events: &str, script: &str) {
        let d = root.join(name);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("HOOK.yaml"),
            format!("description: t\nevents: {events}\ntimeout: 1\n"),
        )
        .unwrap();
        let h = d.join("handler");
        std::fs::write(&h, script).unwrap();
        std::fs::set_permissions(&h, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn decisions_parse_and_garbage_is_ignored() {
        assert_eq!(
            parse_decision(r#"{"decision":"allow"}"#),
            Some(CommandDecision::Allow)
        );
        assert_eq!(
            parse_decision(r#"{"decision":"deny","message":"no"}"#),
            Some(CommandDecision::Deny("no".into()))
        );
        assert_eq!(
            parse_decision(r#"{"decision":"rewrite","command_name":"new","raw_args":""}"#),
            Some(CommandDecision::Rewrite("/new".into()))
        );
        for bad in [
            "",
            "garbage",
            "{}",
            r#"{"decision":"explode"}"#,
            r#"{"decision":"rewrite","command_name":"a b"}"#,
        ] {
            assert_eq!(parse_decision(bad), None, "{bad}");
        }
    }

    #[test]
    fn wildcards_match_families_only() {
        let h = Hook {
            name: "x".into(),
            description: String::new(),
            events: vec!["agent:*".into(), "command:new".into()],
            handler: PathBuf::new(),
            timeout: DEFAULT_TIMEOUT,
            running: Arc::new(Semaphore::new(MAX_RUNNING)),
        };
        assert!(h.matches("agent:start") && h.matches("command:new"));
        assert!(!h.matches("session:start") && !h.matches("command:stop") && !h.matches("agentx"));
    }

    #[tokio::test]
    async fn failing_sleeping_and_garbage_hooks_fall_back_to_allow() {
        let dir = tempfile::tempdir().unwrap();
        write_hook(
            dir.path(),
            "a_sleep",
            "[\"command:*\"]",
            "#!/bin/sh\nexec sleep 30\n",
        );
        write_hook(
            dir.path(),
            "b_fail",
            "[\"command:*\"]",
            "#!/bin/sh\nexit 1\n",
        );
        write_hook(
            dir.path(),
            "c_garbage",
            "[\"command:*\"]",
            "#!/bin/sh\necho '}}not json'\n",
        );
        std::fs::create_dir_all(dir.path().join("d_broken")).unwrap();
        std::fs::write(dir.path().join("d_broken/HOOK.yaml"), "events: [").unwrap();
        let hooks = Hooks::load(dir.path());
        assert_eq!(hooks.list().len(), 3, "the broken one is skipped");
        let started = std::time::Instant::now();
        assert_eq!(
            hooks.command("new", json!({})).await,
            CommandDecision::Allow
        );
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the sleeper is killed at its timeout"
        );
    }

    #[tokio::test]
    async fn a_deny_hook_reads_the_event_from_stdin() {
        let dir = tempfile::tempdir().unwrap();
        write_hook(
            dir.path(),
            "deny",
            "[\"command:reset\"]",
            "#!/bin/sh\nif grep -q '\"command:reset\"'; then echo '{\"decision\":\"deny\",\"message\":\"nope\"}'; fi\n",
        );
        let hooks = Hooks::load(dir.path());
        assert_eq!(
            hooks.command("reset", json!({})).await,
            CommandDecision::Deny("nope".into())
        );
        assert_eq!(
            hooks.command("new", json!({})).await,
            CommandDecision::Allow
        );
    }
}
