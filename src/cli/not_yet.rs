//! Parsing the command line, with one kindness on top of clap: a Python Hermes command we do not
//! have yet (`hermes cron`, `hermes mcp`, …) is told so plainly, exit 2, instead of clap's bare
//! "unrecognized subcommand" — a user switching over should know it is missing, not mistyped.

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{CommandFactory, Parser};

use crate::cli::{Cli, exit};

/// Python Hermes 0.19's top-level commands (`_BUILTIN_SUBCOMMANDS` in `hermes_cli/main.py`).
/// Names we implement never reach the check below (clap accepts them), so this list can stay
/// whole as commands land.
const PYTHON_COMMANDS: &[&str] = &[
    "acp",
    "auth",
    "backup",
    "bundles",
    "checkpoints",
    "claw",
    "completion",
    "computer-use",
    "config",
    "console",
    "cron",
    "curator",
    "dashboard",
    "serve",
    "debug",
    "doctor",
    "dump",
    "fallback",
    "gateway",
    "hooks",
    "import",
    "insights",
    "gui",
    "desktop",
    "kanban",
    "login",
    "logout",
    "logs",
    "lsp",
    "mcp",
    "memory",
    "migrate",
    "moa",
    "journey",
    "memory-graph",
    "learning",
    "model",
    "pairing",
    "pets",
    "plugins",
    "portal",
    "postinstall",
    "profile",
    "project",
    "proxy",
    "prompt-size",
    "send",
    "sessions",
    "setup",
    "skills",
    "slack",
    "status",
    "tools",
    "uninstall",
    "update",
    "version",
    "webhook",
    "whatsapp",
    "whatsapp-cloud",
    "chat",
    "secrets",
    "security",
];

/// Python Hermes top-level options we do not have yet.
const PYTHON_FLAGS: &[&str] = &["-s", "--skills", "--usage-file"];

/// Parses `std::env::args`, exiting as clap does on `--help`, `--version` and errors.
pub fn parse() -> Cli {
    let mut argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let profile = crate::cli::args::take_profile(&mut argv);
    match Cli::try_parse_from(&argv) {
        Ok(mut cli) => {
            cli.profile = profile.or(cli.profile);
            cli
        }
        Err(e) => {
            if let Some(message) = not_available(&e, &argv) {
                eprintln!("{message}");
                std::process::exit(i32::from(exit::USAGE));
            }
            e.exit()
        }
    }
}

/// The message for a Python Hermes command or option we lack, when that is what `e` is about.
pub fn not_available(e: &clap::Error, argv: &[std::ffi::OsString]) -> Option<String> {
    let offending = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    match e.kind() {
        ErrorKind::InvalidSubcommand => {
            let name = offending(ContextKind::InvalidSubcommand)?;
            // Only at the top level: `hermes sessions cron` is a plain mistake.
            (PYTHON_COMMANDS.contains(&name.as_str())
                && first_positional(argv).as_deref() == Some(name.as_str()))
            .then(|| {
                format!(
                    "hermes: `hermes {name}` is not available yet in this version; \
                     `hermes --help` lists the commands it has"
                )
            })
        }
        ErrorKind::UnknownArgument => {
            let arg = offending(ContextKind::InvalidArg)?;
            let flag = arg.split('=').next().unwrap_or(&arg).to_string();
            PYTHON_FLAGS.contains(&flag.as_str()).then(|| {
                format!(
                    "hermes: the option `{flag}` is not available yet in this version; \
                     `hermes --help` lists the options it has"
                )
            })
        }
        _ => None,
    }
}

/// The first word of `argv` (after the program) that is neither an option nor an option's value.
fn first_positional(argv: &[std::ffi::OsString]) -> Option<String> {
    let command = Cli::command();
    let takes_value = |word: &str| {
        command.get_arguments().any(|a| {
            a.get_action().takes_values()
                && (a.get_long().is_some_and(|l| word == format!("--{l}"))
                    || a.get_short().is_some_and(|s| word == format!("-{s}")))
        })
    };
    let mut words = argv
        .iter()
        .skip(1)
        .map(|w| w.to_string_lossy().into_owned());
    while let Some(word) = words.next() {
        if word == "--" {
            return words.next();
        }
        if word.starts_with('-') {
            if takes_value(&word) {
                words.next();
            }
            continue;
        }
        return Some(word);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(args: &[&str]) -> Option<String> {
        let argv: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
        let e = Cli::try_parse_from(&argv).err()?;
        not_available(&e, &argv)
    }

    #[test]
    fn python_commands_we_lack_are_named() {
        let m = message(&["hermes", "-m", "cron", "cron", "list"]).unwrap_or_default();
        assert!(m.contains("`hermes cron` is not available yet"), "{m}");
        assert!(
            message(&["hermes", "mcp"])
                .unwrap_or_default()
                .contains("`hermes mcp`")
        );
    }

    #[test]
    fn typos_and_nested_names_stay_clap_errors() {
        assert_eq!(message(&["hermes", "sesions"]), None);
        assert_eq!(message(&["hermes", "sessions", "cron"]), None);
    }
}
