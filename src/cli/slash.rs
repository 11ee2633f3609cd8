//! Slash commands of the REPL: parsing and help text. The REPL carries them out.

/// A parsed slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlashCommand {
    Help,
    /// `/new` or `/reset`: end this session and start a fresh one.
    New,
    /// `/model` shows the model; `/model NAME` switches to NAME for later turns.
    Model(Option<String>),
    Tools,
    Usage,
    /// `/memory` shows MEMORY.md and USER.md; `/memory user` one of them.
    Memory(Option<String>),
    /// `/skills`: list the skills (`/<skill-name> text` arrives as `Unknown` and the REPL looks it up).
    Skills,
    Yolo,
    Retry,
    Undo,
    /// `/rollback [N]`: put back the files of checkpoint N (default 1, the newest).
    Rollback(Option<String>),
    /// `/compress [focus]` (alias `/compact`): fold earlier turns into a summary now.
    Compress(Option<String>),
    /// `/title` shows the session's title; `/title TEXT` sets it.
    Title(Option<String>),
    /// `/reload-mcp`: re-read `mcp_servers:` and reconnect; the next session gets the new tools.
    ReloadMcp,
    Quit,
    Unknown(String),
}

/// The commands and what they do, for `/help`.
pub const HELP: &[(&str, &str)] = &[
    ("/help", "show this list"),
    ("/new, /reset", "start a fresh session"),
    (
        "/model [NAME]",
        "show the model, or switch to NAME for later turns",
    ),
    ("/tools", "list the tools offered to the model"),
    ("/usage", "token usage of this session"),
    ("/memory [memory|user]", "show the agent's saved notes"),
    ("/skills", "list saved skills"),
    ("/<skill-name> [text]", "run a turn with that skill loaded"),
    ("/yolo", "toggle running dangerous commands without asking"),
    ("/retry", "ask the last question again"),
    ("/undo", "remove the last exchange from the conversation"),
    (
        "/rollback [N]",
        "restore the files as they were before a turn changed them (N=1: the last)",
    ),
    (
        "/compress [focus]",
        "summarise earlier turns now (originals stay searchable)",
    ),
    ("/title [TEXT]", "show or set this session's title"),
    (
        "/reload-mcp",
        "reconnect the MCP servers of config.yaml (new tools from the next session)",
    ),
    ("/quit, /exit", "leave (Ctrl-D works too)"),
];

/// Parses a line that starts with `/`; `None` for ordinary text.
pub fn parse(line: &str) -> Option<SlashCommand> {
    let rest = line.trim().strip_prefix('/')?;
    let (name, arg) = match rest.split_once(char::is_whitespace) {
        Some((n, a)) => (n, Some(a.trim().to_string()).filter(|a| !a.is_empty())),
        None => (rest, None),
    };
    Some(match name.to_ascii_lowercase().as_str() {
        "help" | "?" => SlashCommand::Help,
        "new" | "reset" => SlashCommand::New,
        "model" => SlashCommand::Model(arg),
        "tools" => SlashCommand::Tools,
        "usage" => SlashCommand::Usage,
        "memory" => SlashCommand::Memory(arg),
        "skills" => SlashCommand::Skills,
        "yolo" => SlashCommand::Yolo,
        "retry" => SlashCommand::Retry,
        "undo" => SlashCommand::Undo,
        "rollback" => SlashCommand::Rollback(arg),
        "compress" | "compact" => SlashCommand::Compress(arg),
        "title" => SlashCommand::Title(arg),
        "reload-mcp" => SlashCommand::ReloadMcp,
        "quit" | "exit" | "q" => SlashCommand::Quit,
        other => SlashCommand::Unknown(other.to_string()),
    })
}

/// The text after the command name (`/name text` → `text`), if any.
pub fn argument(line: &str) -> Option<&str> {
    let rest = line.trim().strip_prefix('/')?;
    rest.split_once(char::is_whitespace)
        .map(|(_, a)| a.trim())
        .filter(|a| !a.is_empty())
}

/// The `/help` text.
pub fn help_text() -> String {
    let width = HELP.iter().map(|(c, _)| c.len()).max().unwrap_or(0);
    HELP.iter()
        .map(|(c, d)| format!("  {c:width$}  {d}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_commands_and_arguments() {
        assert_eq!(parse("hello"), None);
        assert_eq!(parse("/help"), Some(SlashCommand::Help));
        assert_eq!(parse("  /reset "), Some(SlashCommand::New));
        assert_eq!(parse("/model"), Some(SlashCommand::Model(None)));
        assert_eq!(
            parse("/model  gpt-4o "),
            Some(SlashCommand::Model(Some("gpt-4o".into())))
        );
        assert_eq!(parse("/EXIT"), Some(SlashCommand::Quit));
        assert_eq!(parse("/frob x"), Some(SlashCommand::Unknown("frob".into())));
    }

    #[test]
    fn help_snapshot() {
        insta::assert_snapshot!(help_text());
    }
}
