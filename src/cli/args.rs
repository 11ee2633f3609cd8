//! Command-line arguments (clap derive). Names follow Python Hermes where they overlap.

use std::ffi::OsString;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(name = "hermes", version, about = "A self-improving personal AI agent")]
pub struct Cli {
    /// One-shot: answer PROMPT, print only the final answer, exit.
    #[arg(short = 'z', long = "oneshot", value_name = "PROMPT")]
    pub oneshot: Option<String>,

    #[command(flatten)]
    pub run: RunArgs,

    /// Use profile NAME ($HERMES_HOME/profiles/NAME) for this command (before or after it).
    /// Not `global`: [`take_profile`] lifts it out of the whole command line before clap
    /// parses, as Python Hermes does, so it works anywhere without showing in every
    /// subcommand's help.
    #[arg(short = 'p', long = "profile", value_name = "NAME")]
    pub profile: Option<String>,

    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Options shared by the REPL, `-z`, `chat` and `gateway run`. They belong to the top-level command
/// and to `chat` only (not `global`), so they stay out of every other subcommand's help;
/// `hermes -m X gateway run` still passes them on.
#[derive(Debug, Clone, Default, Args)]
pub struct RunArgs {
    /// Model name.
    #[arg(short = 'm', long = "model")]
    pub model: Option<String>,
    /// Provider: custom, openai, openrouter, anthropic, ollama, llamacpp, vllm.
    #[arg(long)]
    pub provider: Option<String>,
    /// Base URL of an OpenAI-compatible API (e.g. http://127.0.0.1:8080/v1).
    #[arg(long = "base-url")]
    pub base_url: Option<String>,
    /// API key (prefer the environment or $HERMES_HOME/.env).
    #[arg(long = "api-key", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Comma-separated toolsets (default: config.yaml `toolsets`).
    #[arg(short = 't', long = "toolsets", value_delimiter = ',')]
    pub toolsets: Vec<String>,
    /// Resume a session by id or title.
    #[arg(short = 'r', long = "resume", value_name = "SESSION")]
    pub resume: Option<String>,
    /// Continue the most recent CLI session.
    #[arg(short = 'c', long = "continue")]
    pub continue_last: bool,
    /// Iteration budget per turn (default: agent.max_turns, 90).
    #[arg(long = "max-turns")]
    pub max_turns: Option<u32>,
    /// Run dangerous commands without asking (the hardline floor still applies).
    #[arg(long)]
    pub yolo: bool,
    /// With -z: answer yes where the agent asks for a plain yes (installing a hub skill).
    #[arg(long)]
    pub yes: bool,
}

impl RunArgs {
    /// These options with `inner`'s (given after `chat`) taking precedence over ours (given
    /// before it), so `hermes -m a chat -m b` uses `b` and `hermes -m a chat` uses `a`.
    pub fn overlaid(&self, inner: &RunArgs) -> RunArgs {
        RunArgs {
            model: inner.model.clone().or_else(|| self.model.clone()),
            provider: inner.provider.clone().or_else(|| self.provider.clone()),
            base_url: inner.base_url.clone().or_else(|| self.base_url.clone()),
            api_key: inner.api_key.clone().or_else(|| self.api_key.clone()),
            toolsets: if inner.toolsets.is_empty() {
                self.toolsets.clone()
            } else {
                inner.toolsets.clone()
            },
            resume: inner.resume.clone().or_else(|| self.resume.clone()),
            continue_last: inner.continue_last || self.continue_last,
            max_turns: inner.max_turns.or(self.max_turns),
            yolo: inner.yolo || self.yolo,
            yes: inner.yes || self.yes,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Chat interactively, or answer one question with -q.
    Chat(ChatArgs),
    /// Inspect, export and delete stored sessions.
    Sessions {
        #[command(subcommand)]
        action: SessionsCommand,
    },
    /// Show or change the agent's memory (MEMORY.md, USER.md).
    Memory {
        #[command(subcommand)]
        action: crate::cli::memory_cmd::MemoryCommand,
    },
    /// List, view, audit and delete skills.
    Skills {
        #[command(subcommand)]
        action: crate::cli::skills_cmd::SkillsCommand,
    },
    /// List, restore and prune the checkpoints taken before file changes.
    Checkpoints {
        #[command(subcommand)]
        action: crate::cli::checkpoints_cmd::CheckpointsCommand,
    },
    /// Import from OpenClaw (`hermes claw migrate`).
    Claw {
        #[command(subcommand)]
        action: crate::cli::claw::ClawCommand,
    },
    /// Usage, tokens and estimated spend over recent days.
    Insights {
        /// How many days back to look.
        #[arg(long, default_value_t = 30)]
        days: u32,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Serve the agent on the configured chat platforms and API server, or show its health.
    Gateway {
        #[command(subcommand)]
        action: crate::cli::gateway_cmd::GatewayCommand,
    },
    /// Approve chat users who asked for access with a DM pairing code.
    Pairing {
        #[command(subcommand)]
        action: crate::cli::gateway_cmd::PairingCommand,
    },
    /// Check the installation: config, permissions, state.db, skills, provider, gateway, disk, limits.
    Doctor {
        /// Print one JSON object (stable keys) instead of text.
        #[arg(long)]
        json: bool,
        /// Make the safe repairs (secret files to mode 0600, rebuild the search index) and say what was done.
        #[arg(long)]
        fix: bool,
    },
    /// Choose a provider and model, save the key to .env, write config.yaml, make a test call.
    Setup(crate::cli::setup::wizard::SetupArgs),
    /// Show the default model and where it comes from, list the endpoint's models, or switch.
    Model(crate::cli::model_cmd::ModelArgs),
    /// Show the last lines of $HERMES_HOME/logs, or follow them.
    Logs(crate::cli::logs_cmd::LogsArgs),
    /// Print a shell completion script: `hermes completion bash > ~/.local/share/bash-completion/completions/hermes`.
    Completion {
        #[arg(value_enum, default_value_t = crate::cli::completion_cmd::Shell::Bash)]
        shell: crate::cli::completion_cmd::Shell,
    },
    /// Show, check or change config.yaml (comments and key order are kept).
    Config {
        #[command(subcommand)]
        action: crate::cli::config_cmd::ConfigCommand,
    },
    /// List tools and switch toolsets or single tools off and on.
    Tools {
        #[command(subcommand)]
        action: crate::cli::tools_cmd::ToolsCommand,
    },
    /// Separate homes (config, keys, sessions, memories, skills): list, create, use, delete.
    Profile {
        #[command(subcommand)]
        action: crate::cli::profile_cmd::ProfileCommand,
    },
    /// Serve the Agent Client Protocol on stdio for an editor (Zed: `agent_servers`).
    Acp,
    /// MCP servers: list, add, remove, test them; `serve` offers hermes to MCP clients.
    Mcp {
        #[command(subcommand)]
        action: crate::cli::mcp_cmd::McpCommand,
    },
    /// Send one message to a chat, e.g. `hermes send telegram:123456 "done"`.
    Send {
        /// PLATFORM:CHAT_ID
        target: String,
        text: String,
    },
}

#[derive(Debug, Args)]
pub struct ChatArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Answer this question and exit (prints the answer and the session id).
    #[arg(short = 'q', long = "query")]
    pub query: Option<String>,
    /// Print only the final answer and the session id.
    #[arg(short = 'Q', long = "quiet")]
    pub quiet: bool,
}

#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// List sessions, newest first.
    List {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// Show one session's messages.
    Show {
        id: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Export a session.
    Export {
        id: String,
        #[arg(long, value_enum, default_value_t = ExportFormat::Jsonl)]
        format: ExportFormat,
        /// Write to this file instead of stdout.
        #[arg(short = 'o', long)]
        output: Option<std::path::PathBuf>,
    },
    /// Set a session's title (an empty title clears it); `-r TITLE` resumes by it.
    Rename { id: String, title: Vec<String> },
    /// Delete a session and its messages.
    Delete {
        id: String,
        /// Do not ask for confirmation.
        #[arg(short = 'y', long)]
        yes: bool,
    },
    /// Full-text search over every past conversation.
    Search {
        query: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Conversations to show (1-10).
        #[arg(long, default_value_t = 5)]
        limit: usize,
    },
    /// Counts of sessions and messages, by source, and the database size.
    Stats {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Delete sessions with no activity for longer than a period (e.g. 90d, 12w, 36h).
    Prune {
        #[arg(long = "older-than", default_value = "90d")]
        older_than: String,
        /// Only list what would be deleted.
        #[arg(long = "dry-run")]
        dry_run: bool,
    },
}

impl SessionsCommand {
    /// Whether the command never writes state.db (it may then open it read-only).
    pub fn only_reads(&self) -> bool {
        matches!(
            self,
            SessionsCommand::List { .. }
                | SessionsCommand::Show { .. }
                | SessionsCommand::Export { .. }
                | SessionsCommand::Search { .. }
                | SessionsCommand::Stats { .. }
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    Jsonl,
    Md,
}

/// Options whose next word is their value, so a `-p` there is not ours (Python Hermes's
/// `_apply_profile_override` skips the same top-level ones).
const VALUE_FLAGS: &[&str] = &[
    "-z",
    "--oneshot",
    "-m",
    "--model",
    "--provider",
    "--base-url",
    "--api-key",
    "-t",
    "--toolsets",
    "-r",
    "--resume",
    "--max-turns",
];

/// Removes `-p NAME`, `--profile NAME` or `--profile=NAME` from anywhere in `argv` (before or
/// after the subcommand) and returns NAME, as Python Hermes does before its argparse runs.
/// Scanning stops at `--` and at `mcp add … --args` (the rest is another program's argv). A
/// `-p` with no word after it is left for clap to report.
pub fn take_profile(argv: &mut Vec<OsString>) -> Option<String> {
    let words: Vec<String> = argv
        .iter()
        .map(|w| w.to_string_lossy().into_owned())
        .collect();
    let mut i = 1;
    while i < words.len() {
        let word = words[i].as_str();
        if word == "--" {
            return None;
        }
        if word == "--args"
            && let Some(mcp) = words[1..i].iter().position(|w| w == "mcp")
            && words[mcp + 2..i].iter().any(|w| w == "add")
        {
            return None;
        }
        if matches!(word, "-p" | "--profile") && i + 1 < words.len() {
            argv.drain(i..i + 2);
            return Some(words[i + 1].clone());
        }
        if let Some(name) = word.strip_prefix("--profile=") {
            argv.remove(i);
            return Some(name.to_string());
        }
        i += if VALUE_FLAGS.contains(&word) { 2 } else { 1 };
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn take(args: &[&str]) -> (Option<String>, Vec<String>) {
        let mut argv: Vec<OsString> = args.iter().map(Into::into).collect();
        let profile = take_profile(&mut argv);
        let rest = argv
            .iter()
            .map(|w| w.to_string_lossy().into_owned())
            .collect();
        (profile, rest)
    }

    #[test]
    fn profile_is_taken_before_or_after_the_subcommand() {
        for args in [
            &["hermes", "-p", "work", "sessions", "list"][..],
            &["hermes", "sessions", "list", "-p", "work"],
            &["hermes", "sessions", "--profile", "work", "list"],
            &["hermes", "--profile=work", "sessions", "list"],
        ] {
            let (profile, rest) = take(args);
            assert_eq!(profile.as_deref(), Some("work"), "{args:?}");
            assert_eq!(rest, ["hermes", "sessions", "list"], "{args:?}");
        }
    }

    #[test]
    fn values_and_passthrough_are_left_alone() {
        assert_eq!(take(&["hermes", "-z", "-p", "x"]).0, None);
        assert_eq!(take(&["hermes", "-m", "-p"]).0, None);
        assert_eq!(take(&["hermes", "send", "t", "--", "-p", "x"]).0, None);
        assert_eq!(
            take(&["hermes", "mcp", "add", "d", "--args", "--profile", "x"]).0,
            None
        );
        let (profile, rest) = take(&["hermes", "-p"]);
        assert_eq!(profile, None);
        assert_eq!(rest, ["hermes", "-p"]);
    }

    #[test]
    fn profile_shows_in_top_level_help_only() {
        let mut command = Cli::command();
        // Built, as `--help` sees it (a global option reaches subcommands only then).
        command.build();
        let top = command.render_long_help().to_string();
        assert!(top.contains("--profile"), "{top}");
        let sessions = command
            .find_subcommand_mut("sessions")
            .map(|c| c.render_long_help().to_string())
            .unwrap_or_default();
        assert!(sessions.contains("Usage"), "{sessions}");
        assert!(!sessions.contains("--profile"), "{sessions}");
    }
}
