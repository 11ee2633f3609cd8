//! `hermes memory show|edit|add|remove`: the user's view of MEMORY.md and USER.md. Writes go
//! through the same store as the agent's memory tool (lock, re-read, threat scan, limits).

use clap::Subcommand;
use serde_json::{Value, json};

use crate::cli::{CliError, exit};
use crate::config::Config;
use crate::memory::{MemoryError, MemoryOp, MemoryStore, Target, edit};

#[derive(Debug, Subcommand)]
pub enum MemoryCommand {
    /// Show the entries of MEMORY.md and USER.md with their usage.
    Show {
        /// Only this store: memory or user.
        target: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Edit a store in $VISUAL / $EDITOR (entries separated by a line with `§`).
    Edit {
        /// memory (default) or user.
        #[arg(default_value = "memory")]
        target: String,
    },
    /// Add an entry.
    Add {
        content: String,
        /// memory (default) or user.
        #[arg(long, default_value = "memory")]
        target: String,
    },
    /// Remove the entry containing OLD_TEXT (or with index [N] as `show` lists it).
    Remove {
        old_text: String,
        /// memory (default) or user.
        #[arg(long, default_value = "memory")]
        target: String,
    },
}

fn target(raw: &str) -> Result<Target, CliError> {
    Target::parse(raw).ok_or_else(|| {
        CliError::Setup(format!(
            "unknown memory store `{raw}`: use `memory` (agent notes) or `user` (user profile)"
        ))
    })
}

fn failed(e: MemoryError) -> CliError {
    CliError::Setup(e.to_string())
}

pub fn run(config: &Config, action: MemoryCommand) -> Result<u8, CliError> {
    let store = MemoryStore::from_config(config);
    match action {
        MemoryCommand::Show { target: t, json } => {
            let targets = match t {
                Some(t) => vec![target(&t)?],
                None => Target::ALL.to_vec(),
            };
            if json {
                let mut doc = serde_json::Map::new();
                for t in targets {
                    let entries = store.read(t).map_err(failed)?;
                    doc.insert(
                        t.as_str().into(),
                        json!({
                            "path": store.path(t),
                            "enabled": store.enabled(t),
                            "usage": store.usage(t, &entries).to_string(),
                            "entries": entries,
                        }),
                    );
                }
                println!("{}", Value::Object(doc));
            } else {
                print!("{}", show_text(&store, &targets)?);
            }
            Ok(exit::OK)
        }
        MemoryCommand::Add { content, target: t } => {
            let applied = store
                .apply(target(&t)?, &[MemoryOp::Add { content }])
                .map_err(failed)?;
            println!("{} {} ({})", t, applied.message, applied.usage);
            Ok(exit::OK)
        }
        MemoryCommand::Remove {
            old_text,
            target: t,
        } => {
            let applied = store
                .apply(target(&t)?, &[MemoryOp::Remove { old_text }])
                .map_err(failed)?;
            println!("{} {} ({})", t, applied.message, applied.usage);
            Ok(exit::OK)
        }
        MemoryCommand::Edit { target: t } => edit_in_editor(&store, target(&t)?),
    }
}

/// The listing `show` prints (also used by `/memory` in the REPL).
pub fn show_text(store: &MemoryStore, targets: &[Target]) -> Result<String, CliError> {
    let mut out = String::new();
    for t in targets {
        let entries = store.read(*t).map_err(failed)?;
        let state = if store.enabled(*t) { "" } else { " (disabled)" };
        out.push_str(&format!(
            "{} — {}{state}\n{}\n\n",
            t.file_name(),
            store.usage(*t, &entries),
            edit::listing(&entries)
        ));
    }
    Ok(out)
}

fn edit_in_editor(store: &MemoryStore, t: Target) -> Result<u8, CliError> {
    let original = store.read_raw(t).map_err(failed)?;
    let tmp = std::env::temp_dir().join(format!("hermes-{}-{}.md", t.as_str(), std::process::id()));
    std::fs::write(&tmp, original.as_bytes())?;
    let editor = std::env::var("VISUAL")
        .or_else(|_| std::env::var("EDITOR"))
        .unwrap_or_else(|_| "vi".to_string());
    // The editor may carry arguments (`code --wait`): run it through the shell, with the file
    // as a positional parameter so its name is never parsed as shell syntax.
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(&tmp)
        .status()
        .map_err(|e| CliError::Setup(format!("cannot start the editor `{editor}`: {e}")))?;
    if !status.success() {
        return Err(CliError::Setup(format!(
            "the editor `{editor}` exited with {status}; nothing was saved (your text is in {})",
            tmp.display()
        )));
    }
    let edited = std::fs::read_to_string(&tmp)?;
    if edited == original {
        let _ = std::fs::remove_file(&tmp);
        println!("no changes");
        return Ok(exit::OK);
    }
    match store.replace_all(t, &original, &edited) {
        Ok(applied) => {
            let _ = std::fs::remove_file(&tmp);
            println!("{} {} ({})", t.file_name(), applied.message, applied.usage);
            Ok(exit::OK)
        }
        Err(e) => Err(CliError::Setup(format!(
            "{e} (your text is kept in {})",
            tmp.display()
        ))),
    }
}

/// What `/memory [memory|user]` prints in the REPL.
pub fn slash_text(config: &Config, which: Option<&str>) -> String {
    let store = MemoryStore::from_config(config);
    let targets = match which {
        None => Target::ALL.to_vec(),
        Some(w) => match Target::parse(w) {
            Some(t) => vec![t],
            None => {
                return format!(
                    "unknown memory store `{w}`; use /memory, /memory memory or /memory user"
                );
            }
        },
    };
    match show_text(&store, &targets) {
        Ok(text) => format!(
            "{}(the current session's prompt keeps the notes as they were when it started)",
            text
        ),
        Err(e) => format!("error: {e}"),
    }
}

/// At exit: gives background reviews (and any other child agent) a bounded time to finish.
pub fn finish_reviews(
    runtime: &tokio::runtime::Runtime,
    services: &crate::agent::Services,
    announce: bool,
) {
    if announce && services.children.running() > 0 {
        eprintln!("finishing a background review…");
    }
    runtime.block_on(services.children.wait_idle(crate::agent::child::EXIT_WAIT));
}
