//! `hermes claw migrate`: imports an OpenClaw home (`~/.openclaw`, or the legacy `~/.clawdbot`
//! / `~/.moltbot`) into the Hermes home — SOUL.md, memory and daily notes, skills (through the
//! skills guard), provider keys with `--migrate-secrets` — and reports what was imported,
//! skipped and why. It always previews first; `--dry-run` stops there, and without `--yes` it
//! asks before writing (and refuses when nobody can be asked).

mod entries;
mod migrate;
mod report;
mod secrets;
mod skills;
mod source;

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::cli::{CliError, exit};
use crate::config::Config;

use migrate::Migration;
use report::Status;
use source::OpenClawHome;

#[derive(Debug, Subcommand)]
pub enum ClawCommand {
    /// Import an OpenClaw home: SOUL.md, memory, daily notes, skills (and keys if asked).
    Migrate(MigrateArgs),
}

#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// Show what would be imported and write nothing.
    #[arg(long = "dry-run")]
    pub dry_run: bool,
    /// Import without asking.
    #[arg(short = 'y', long)]
    pub yes: bool,
    /// The OpenClaw home (default: ~/.openclaw, else ~/.clawdbot or ~/.moltbot).
    #[arg(long, value_name = "DIR")]
    pub source: Option<PathBuf>,
    /// Also copy provider API keys into $HERMES_HOME/.env (mode 0600).
    #[arg(long = "migrate-secrets")]
    pub migrate_secrets: bool,
    /// Replace a SOUL.md, skill or key that differs in Hermes (the old one is backed up).
    #[arg(long)]
    pub overwrite: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum ClawError {
    #[error(
        "no OpenClaw home found (looked at {0}); point at it with `hermes claw migrate --source DIR`"
    )]
    NoSource(String),
    #[error(
        "nothing was written: {0} item(s) would be imported, but stdin is not a terminal to ask; re-run with --yes to import (or --dry-run to only look)"
    )]
    NeedsConfirmation(usize),
}

impl From<ClawError> for CliError {
    fn from(e: ClawError) -> Self {
        CliError::Setup(e.to_string())
    }
}

pub fn run(config: &Config, action: ClawCommand) -> Result<u8, CliError> {
    match action {
        ClawCommand::Migrate(args) => migrate(config, &args),
    }
}

fn migrate(config: &Config, args: &MigrateArgs) -> Result<u8, CliError> {
    let user_home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    let source = OpenClawHome::locate(args.source.as_deref(), user_home.as_deref())?;
    let stamp = chrono::Local::now().format("%Y%m%dT%H%M%S").to_string();
    let out_dir = config
        .home
        .root()
        .join("migration")
        .join("openclaw")
        .join(stamp);
    let mut run = Migration {
        config,
        source: &source,
        user_home,
        execute: false,
        overwrite: args.overwrite,
        migrate_secrets: args.migrate_secrets,
        out_dir: out_dir.clone(),
    };
    let preview = run.run();
    let mut stdout = std::io::stdout().lock();
    if args.dry_run {
        writeln!(stdout, "Dry run: nothing was written.\n")?;
        write!(stdout, "{}", preview.render(true))?;
        return Ok(exit::OK);
    }
    let planned = preview.count(Status::Imported);
    if planned == 0 {
        write!(stdout, "{}", preview.render(true))?;
        writeln!(stdout, "Nothing new to import.")?;
        return Ok(exit::OK);
    }
    if !args.yes {
        write!(stdout, "{}", preview.render(true))?;
        if !std::io::stdin().is_terminal() {
            return Err(ClawError::NeedsConfirmation(planned).into());
        }
        write!(
            stdout,
            "\nImport these {planned} item(s) into {}? [y/N] ",
            config.home.root().display()
        )?;
        stdout.flush()?;
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        if !matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
            writeln!(stdout, "Nothing was written.")?;
            return Ok(exit::OK);
        }
        writeln!(stdout)?;
    }
    run.execute = true;
    let done = run.run();
    let text = done.render(false);
    write!(stdout, "{text}")?;
    // The report is kept beside the overflow and backups, for later reference.
    if std::fs::create_dir_all(&out_dir).is_ok() {
        let path = out_dir.join("report.txt");
        if crate::util::atomic_write(&path, text.as_bytes()).is_ok() {
            writeln!(stdout, "Report saved to {}", path.display())?;
        }
    }
    tracing::info!(
        imported = done.count(Status::Imported),
        failed = done.count(Status::Failed),
        "openclaw migration finished"
    );
    Ok(if done.count(Status::Failed) > 0 {
        exit::FAILURE
    } else {
        exit::OK
    })
}
