//! `hermes doctor [--fix] [--json]`: checks of this installation (config, permissions, state.db,
//! skills, the provider answering a tool call, gateway settings, disk space) and a report of how
//! commands run. `--fix` makes only safe repairs and says what it did. A subsystem adds a check to
//! `checks.rs` (or an informational block with one `Section` builder in `sections`).

mod checks;
pub mod roundtrip;

use serde::Serialize;

use crate::cli::{CliError, exit};
use crate::config::Config;

/// How a check came out. `Fail` makes `hermes doctor` exit 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Info,
    Warn,
    Fail,
}

impl Status {
    fn mark(self) -> &'static str {
        match self {
            Status::Ok => "ok  ",
            Status::Info => "info",
            Status::Warn => "warn",
            Status::Fail => "FAIL",
        }
    }
}

/// One check's outcome: a one-line summary and, when useful, more lines (what to do).
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub status: Status,
    pub summary: String,
    pub details: Vec<String>,
}

impl Check {
    pub fn new(name: &'static str, status: Status, summary: impl Into<String>) -> Check {
        Check {
            name,
            status,
            summary: summary.into(),
            details: Vec::new(),
        }
    }

    pub fn with_details(mut self, details: Vec<String>) -> Check {
        self.details = details;
        self
    }
}

/// One titled block of `label: value` rows (informational, never a failure).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Section {
    pub title: &'static str,
    pub rows: Vec<(String, String)>,
}

/// The whole report; `--json` prints it as it is (field names are a contract for scripts).
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub version: &'static str,
    pub home: String,
    /// No check failed.
    pub healthy: bool,
    pub checks: Vec<Check>,
    /// What `--fix` changed (empty without `--fix`).
    pub fixed: Vec<String>,
    pub sections: Vec<Section>,
}

/// Every informational section, in display order.
pub fn sections(config: &Config) -> Vec<Section> {
    vec![
        Section {
            title: "hermes",
            rows: vec![
                ("version".into(), env!("CARGO_PKG_VERSION").into()),
                ("home".into(), config.home.root().display().to_string()),
            ],
        },
        Section {
            title: "terminal",
            rows: crate::security::sandbox::report(config),
        },
    ]
}

/// Plain text: a heading per section, aligned rows.
pub fn render(sections: &[Section]) -> String {
    let mut out = String::new();
    for s in sections {
        out.push_str(s.title);
        out.push('\n');
        let width = s.rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
        for (k, v) in &s.rows {
            out.push_str(&format!("  {k:<width$}  {v}\n"));
        }
    }
    out
}

/// The checks as text: `  ok    name         summary`, details indented below.
pub fn render_checks(checks: &[Check], fixed: &[String]) -> String {
    let width = checks.iter().map(|c| c.name.len()).max().unwrap_or(0);
    let mut out = String::from("checks\n");
    for c in checks {
        out.push_str(&format!(
            "  {} {:<width$}  {}\n",
            c.status.mark(),
            c.name,
            c.summary
        ));
        for d in &c.details {
            out.push_str(&format!("       {:<width$}  {d}\n", ""));
        }
    }
    for f in fixed {
        out.push_str(&format!("fixed: {f}\n"));
    }
    out
}

/// What the doctor was asked to do; `run` are the chat flags given before `doctor`
/// (`hermes -m X doctor` checks that model).
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub json: bool,
    pub fix: bool,
    pub run: crate::cli::args::RunArgs,
}

/// Runs every check against `config`; `config_error` is why config.yaml did not load (the
/// checks then run on defaults, so a broken config does not hide the rest).
pub fn report(
    runtime: &tokio::runtime::Runtime,
    config: &Config,
    config_error: Option<String>,
    options: &Options,
) -> Report {
    let fix = options.fix;
    let mut fixed = Vec::new();
    let mut checks = vec![checks::config(config, config_error)];
    checks.push(checks::permissions(config, fix, &mut fixed));
    checks.push(checks::state_db(config, fix, &mut fixed));
    checks.push(checks::skills(config));
    checks.push(runtime.block_on(roundtrip::check(config, &options.run)));
    checks.push(checks::gateway(config));
    checks.push(checks::disk(config));
    Report {
        version: env!("CARGO_PKG_VERSION"),
        home: config.home.root().display().to_string(),
        healthy: checks.iter().all(|c| c.status != Status::Fail),
        checks,
        fixed,
        sections: sections(config),
    }
}

pub fn run(
    runtime: &tokio::runtime::Runtime,
    config: &Config,
    config_error: Option<String>,
    options: Options,
) -> Result<u8, CliError> {
    let report = report(runtime, config, config_error, &options);
    if options.json {
        let value = serde_json::to_string_pretty(&report)
            .map_err(|e| CliError::Setup(format!("cannot encode the report: {e}")))?;
        println!("{value}");
    } else {
        print!(
            "{}{}",
            render_checks(&report.checks, &report.fixed),
            render(&report.sections)
        );
    }
    Ok(if report.healthy {
        exit::OK
    } else {
        exit::FAILURE
    })
}

/// `hermes doctor` when config.yaml (or .env) does not load: the checks run on defaults and the
/// config check reports the error.
pub fn run_without_config(
    runtime: &tokio::runtime::Runtime,
    error: CliError,
    options: Options,
) -> Result<u8, CliError> {
    let home = crate::config::HermesHome::from_env().map_err(|_| error.to_string());
    let Ok(home) = home else {
        return Err(error);
    };
    let env = crate::config::EnvVars::load(&home.env_path()).unwrap_or_default();
    let config = Config::defaults(home, env);
    run(runtime, &config, Some(error.to_string()), options)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_aligned_under_their_section() {
        let text = render(&[Section {
            title: "terminal",
            rows: vec![
                ("backend".into(), "sandbox".into()),
                ("limit".into(), "processes ≤ 512".into()),
            ],
        }]);
        assert_eq!(
            text,
            "terminal\n  backend  sandbox\n  limit    processes ≤ 512\n"
        );
    }

    #[test]
    fn checks_render_with_status_and_details() {
        let text = render_checks(
            &[
                Check::new("config", Status::Ok, "valid"),
                Check::new("state.db", Status::Fail, "index behind")
                    .with_details(vec!["run --fix".into()]),
            ],
            &["rebuilt".into()],
        );
        assert_eq!(
            text,
            "checks\n  ok   config    valid\n  FAIL state.db  index behind\n                 run --fix\nfixed: rebuilt\n"
        );
    }
}
