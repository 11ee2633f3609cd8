//! `hermes checkpoints list|restore|prune` and the REPL's `/rollback [N]`: the user's side of
//! the checkpoints hermes takes before file changes (`crate::checkpoints`).

use std::path::{Path, PathBuf};

use clap::Subcommand;

use crate::checkpoints;
use crate::cli::CliError;
use crate::config::Config;

#[derive(Debug, Subcommand)]
pub enum CheckpointsCommand {
    /// List the checkpoints of a directory, newest first.
    List {
        /// The working directory (default: the current one).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Put the files of checkpoint N back (1 = newest); the current state is checkpointed first.
    Restore {
        number: usize,
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Remove checkpoints of directories that no longer exist; keep checkpoints.max_snapshots.
    Prune,
}

pub fn run(config: &Config, action: CheckpointsCommand) -> Result<u8, CliError> {
    match action {
        CheckpointsCommand::List { dir } => {
            let dir = workdir(dir)?;
            println!("{}", list_text(config, &dir)?);
        }
        CheckpointsCommand::Restore { number, dir } => {
            println!("{}", restore_text(config, &workdir(dir)?, number)?);
        }
        CheckpointsCommand::Prune => {
            let pruned = checkpoints::prune(config).map_err(|e| CliError::Setup(e.to_string()))?;
            println!(
                "removed {} store(s) of vanished directories; dropped {} old checkpoint(s)",
                pruned.orphans_removed, pruned.dropped
            );
        }
    }
    Ok(crate::cli::exit::OK)
}

fn workdir(dir: Option<PathBuf>) -> Result<PathBuf, CliError> {
    match dir {
        Some(d) => Ok(d),
        None => Ok(std::env::current_dir()?),
    }
}

/// The numbered list shown by `hermes checkpoints list`.
pub fn list_text(config: &Config, dir: &Path) -> Result<String, CliError> {
    let list = checkpoints::list(config, dir).map_err(|e| CliError::Setup(e.to_string()))?;
    if list.is_empty() {
        return Ok(format!(
            "no checkpoints for {} (hermes takes one before the first file change of a turn)",
            dir.display()
        ));
    }
    let mut out = format!("checkpoints of {} (newest first):", dir.display());
    for cp in &list {
        let when = chrono::DateTime::from_timestamp(cp.time, 0)
            .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
            .unwrap_or_default();
        out.push_str(&format!("\n  {:>3}  {when}  {}", cp.number, cp.label));
        for note in &cp.notes {
            out.push_str(&format!("\n       ({note})"));
        }
    }
    Ok(out)
}

/// Restores checkpoint `number` of `dir` and says what changed (`/rollback` uses this too).
pub fn restore_text(config: &Config, dir: &Path, number: usize) -> Result<String, CliError> {
    let restored =
        checkpoints::restore(config, dir, number).map_err(|e| CliError::Setup(e.to_string()))?;
    Ok(checkpoints::describe(&restored, number))
}
