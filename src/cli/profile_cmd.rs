//! `hermes profile list|create|delete|use|show`: separate homes (own config, .env, state.db,
//! memories, skills) under `$HERMES_HOME/profiles/<name>`, as Python Hermes keeps them.

use std::io::IsTerminal;

use clap::Subcommand;

use crate::cli::{CliError, exit};
use crate::config::profiles::{self, ProfileError, Profiles};
use crate::config::{Config, HermesHome};

#[derive(Debug, Subcommand)]
pub enum ProfileCommand {
    /// List the profiles; `*` marks the sticky one (`hermes profile use`).
    List,
    /// Create a profile; `--clone` copies config.yaml, .env, SOUL.md, skills and memories.
    Create {
        name: String,
        /// Copy from the profile in use (or from `--clone-from`).
        #[arg(long)]
        clone: bool,
        /// Copy from this profile instead of the one in use (implies --clone).
        #[arg(long = "clone-from", value_name = "PROFILE")]
        clone_from: Option<String>,
    },
    /// Delete a profile and everything in it.
    Delete {
        name: String,
        /// Do not ask for confirmation (needed without a terminal).
        #[arg(short = 'y', long)]
        yes: bool,
    },
    /// Make a profile the one every command uses (`default` for the home itself).
    Use { name: String },
    /// Show a profile's home, model and contents (default: the profile in use).
    Show { name: Option<String> },
}

impl From<ProfileError> for CliError {
    fn from(e: ProfileError) -> Self {
        match e {
            ProfileError::Io { .. } | ProfileError::NoHome => CliError::Setup(e.to_string()),
            _ => CliError::Usage(e.to_string()),
        }
    }
}

/// `current` is the home this process resolved (after `-p` and the sticky profile).
pub fn run(current: &HermesHome, action: ProfileCommand) -> Result<u8, CliError> {
    let profiles = profiles::from_env()?;
    let current_name = name_of(&profiles, current);
    match action {
        ProfileCommand::List => {
            let active = profiles.active();
            let mut names = vec!["default".to_string()];
            names.extend(profiles.names()?);
            for name in names {
                let mark = if name == active { '*' } else { ' ' };
                let model = model_of(&HermesHome::new(profiles.dir(&name)));
                println!("{mark} {name:<20} {model}");
            }
            Ok(exit::OK)
        }
        ProfileCommand::Create {
            name,
            clone,
            clone_from,
        } => {
            let source = match clone_from {
                Some(src) => Some(profiles.existing(&src)?),
                None if clone => Some(current.root().to_path_buf()),
                None => None,
            };
            let dir = profiles.create(&name, source.as_deref())?;
            match &source {
                Some(src) => println!("created {} (cloned from {})", dir.display(), src.display()),
                None => println!("created {}", dir.display()),
            }
            println!(
                "use it with `hermes -p {} …`, or `hermes profile use {}`",
                profiles::normalize(&name)?,
                profiles::normalize(&name)?
            );
            Ok(exit::OK)
        }
        ProfileCommand::Delete { name, yes } => {
            let dir = profiles.existing(&name)?;
            if !yes {
                if !std::io::stdin().is_terminal() {
                    return Err(CliError::Usage(format!(
                        "not deleted: deleting profile `{name}` removes {} and everything in it; \
                         add -y to confirm",
                        dir.display()
                    )));
                }
                eprint!(
                    "Delete profile `{name}` and everything in {}? [y/N] ",
                    dir.display()
                );
                let mut answer = String::new();
                std::io::stdin().read_line(&mut answer)?;
                if !matches!(answer.trim(), "y" | "Y" | "yes") {
                    eprintln!("kept");
                    return Ok(exit::OK);
                }
            }
            let dir = profiles.delete(&name)?;
            println!("deleted {}", dir.display());
            Ok(exit::OK)
        }
        ProfileCommand::Use { name } => {
            let name = profiles.use_profile(&name)?;
            println!("profile in use: {name} ({})", profiles.dir(&name).display());
            Ok(exit::OK)
        }
        ProfileCommand::Show { name } => {
            let name = match name {
                Some(n) => profiles::normalize(&n)?,
                None => current_name,
            };
            let home = HermesHome::new(profiles.existing(&name)?);
            println!("profile: {name}");
            println!("home:    {}", home.root().display());
            println!("model:   {}", model_of(&home));
            println!(
                "sticky:  {}",
                if profiles.active() == name {
                    "yes"
                } else {
                    "no"
                }
            );
            let skills = std::fs::read_dir(home.skills_dir())
                .map(|d| {
                    d.filter_map(Result::ok)
                        .filter(|e| {
                            e.path().is_dir() && !e.file_name().to_string_lossy().starts_with('.')
                        })
                        .count()
                })
                .unwrap_or(0);
            println!("skills:  {skills} top-level entries");
            println!(
                "state:   {}",
                if home.state_db().exists() {
                    "state.db present"
                } else {
                    "no sessions yet"
                }
            );
            Ok(exit::OK)
        }
    }
}

/// The profile name of `home` (`custom` when it is neither the root nor one of its profiles).
fn name_of(profiles: &Profiles, home: &HermesHome) -> String {
    if home.root() == profiles.root() {
        return "default".into();
    }
    home.root()
        .strip_prefix(profiles.root().join("profiles"))
        .ok()
        .and_then(|rel| rel.to_str())
        .filter(|n| !n.is_empty() && !n.contains('/'))
        .map_or_else(|| "custom".into(), str::to_string)
}

/// The configured model of a home, or why there is none.
fn model_of(home: &HermesHome) -> String {
    match Config::load(home) {
        Ok(c) => c.model.default.unwrap_or_else(|| "(no model set)".into()),
        Err(_) => "(config.yaml does not load: `hermes config check`)".into(),
    }
}
