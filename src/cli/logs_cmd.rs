//! `hermes logs [NAME|list] [-f] [-n N] [--level L] [--session ID]`: the last lines of a log in
//! `$HERMES_HOME/logs/` (as `setup::init_logging` writes them through tracing), filtered, or followed.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;

use crate::cli::{CliError, exit};
use crate::config::Config;

/// How often `-f` looks for new lines (a log is written in bursts; 200 ms feels live).
const FOLLOW_POLL: Duration = Duration::from_millis(200);

#[derive(Debug, Args)]
pub struct LogsArgs {
    /// Log to show: agent (default), errors, gateway, any file name in the logs folder, or `list`.
    #[arg(default_value = "agent")]
    pub name: String,
    /// Number of lines to show.
    #[arg(short = 'n', long = "lines", default_value_t = 50)]
    pub lines: usize,
    /// Keep printing new lines as they are written (Ctrl-C stops).
    #[arg(short = 'f', long)]
    pub follow: bool,
    /// Only lines at this level or above: trace, debug, info, warn(ing), error.
    #[arg(long, value_name = "LEVEL")]
    pub level: Option<String>,
    /// Only lines that contain this session id (or any text).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
}

/// A line filter: minimum level and a substring.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    min_level: Option<u8>,
    needle: Option<String>,
}

/// The rank of a level word (tracing writes `WARN`, Python Hermes `WARNING`).
fn rank(word: &str) -> Option<u8> {
    match word.to_ascii_uppercase().as_str() {
        "TRACE" => Some(0),
        "DEBUG" => Some(1),
        "INFO" => Some(2),
        "WARN" | "WARNING" => Some(3),
        "ERROR" | "CRITICAL" => Some(4),
        _ => None,
    }
}

impl Filter {
    pub fn new(level: Option<&str>, needle: Option<&str>) -> Result<Filter, CliError> {
        let min_level = match level {
            None => None,
            Some(word) => Some(rank(word).ok_or_else(|| {
                CliError::Usage(format!(
                    "unknown log level `{word}`; use one of trace, debug, info, warn, error"
                ))
            })?),
        };
        Ok(Filter {
            min_level,
            needle: needle.map(str::to_string),
        })
    }

    /// The level of a log line: the first level word among its first few fields (after the
    /// timestamp). Continuation lines (a multi-line message) have none.
    fn level_of(line: &str) -> Option<u8> {
        line.split_whitespace().take(3).find_map(rank)
    }

    /// Keeps the lines that pass; a line without a level inherits its predecessor's verdict, so
    /// a multi-line message stays whole.
    pub fn apply<'a>(&self, text: &'a str, carry: &mut bool) -> Vec<&'a str> {
        let mut kept = Vec::new();
        for line in text.lines() {
            let pass_level = match (self.min_level, Self::level_of(line)) {
                (None, _) => true,
                (Some(min), Some(level)) => level >= min,
                (Some(_), None) => *carry,
            };
            *carry = pass_level;
            let pass_text = self.needle.as_deref().is_none_or(|n| line.contains(n));
            if pass_level && pass_text {
                kept.push(line);
            }
        }
        kept
    }
}

/// The file a log name means: `agent` → agent.log, a name with an extension as it is.
fn log_path(config: &Config, name: &str) -> Result<PathBuf, CliError> {
    if name.contains('/') || name.contains('\\') || name.starts_with('.') {
        return Err(CliError::Usage(format!(
            "`{name}` is not a log name; `hermes logs list` shows the logs"
        )));
    }
    let file = if name.contains('.') {
        name.to_string()
    } else {
        format!("{name}.log")
    };
    Ok(config.home.logs_dir().join(file))
}

pub fn run(config: &Config, args: LogsArgs) -> Result<u8, CliError> {
    if args.name == "list" {
        return list(&config.home.logs_dir());
    }
    let filter = Filter::new(args.level.as_deref(), args.session.as_deref())?;
    let path = log_path(config, &args.name)?;
    if !path.exists() && !args.follow {
        return Err(CliError::NotFound(format!(
            "no log at {}: hermes has not written it yet (`hermes logs list` shows the logs)",
            path.display()
        )));
    }
    let text = read_lossy(&path)?;
    let mut carry = true;
    let kept = filter.apply(&text, &mut carry);
    let mut out = std::io::stdout().lock();
    for line in &kept[kept.len().saturating_sub(args.lines)..] {
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    if args.follow {
        follow(&path, text.len() as u64, &filter, carry)?;
    }
    Ok(exit::OK)
}

fn read_lossy(path: &Path) -> Result<String, CliError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(CliError::Setup(format!(
            "cannot read {}: {e}",
            path.display()
        ))),
    }
}

/// Prints what is appended to `path` from `offset` on, until interrupted. A file that shrinks
/// was rotated (agent.log → agent.log.1): start again from its beginning.
fn follow(path: &Path, mut offset: u64, filter: &Filter, mut carry: bool) -> Result<(), CliError> {
    let mut pending = Vec::new();
    loop {
        std::thread::sleep(FOLLOW_POLL);
        let Ok(mut file) = std::fs::File::open(path) else {
            continue;
        };
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        if len < offset {
            offset = 0;
            pending.clear();
        }
        if len == offset {
            continue;
        }
        file.seek(SeekFrom::Start(offset))?;
        let read = file.take(len - offset).read_to_end(&mut pending)?;
        offset += read as u64;
        // Print whole lines only; a half-written line waits for its end.
        let Some(end) = pending.iter().rposition(|b| *b == b'\n') else {
            continue;
        };
        let chunk: Vec<u8> = pending.drain(..=end).collect();
        let text = String::from_utf8_lossy(&chunk);
        let mut out = std::io::stdout().lock();
        for line in filter.apply(&text, &mut carry) {
            writeln!(out, "{line}")?;
        }
        out.flush()?;
    }
}

fn list(dir: &Path) -> Result<u8, CliError> {
    let mut files: Vec<(String, u64)> = std::fs::read_dir(dir)
        .map_err(|e| CliError::Setup(format!("cannot list {}: {e}", dir.display())))?
        .filter_map(Result::ok)
        .filter_map(|e| {
            let meta = e.metadata().ok()?;
            meta.is_file()
                .then(|| (e.file_name().to_string_lossy().into_owned(), meta.len()))
        })
        .collect();
    files.sort();
    let mut out = std::io::stdout().lock();
    if files.is_empty() {
        writeln!(out, "No logs yet in {}.", dir.display())?;
    }
    for (name, size) in files {
        writeln!(out, "{name:<24} {size:>10} bytes")?;
    }
    Ok(exit::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "2026-01-01T00:00:00Z  INFO hermes::agent: turn started\n\
2026-01-01T00:00:01Z DEBUG hermes::llm: request sent\n\
2026-01-01T00:00:02Z  WARN hermes::llm: retrying session=abc\n  second line of the warning\n\
2026-01-01T00:00:03Z ERROR hermes::tools: failed session=xyz\n";

    #[test]
    fn level_filter_keeps_that_level_and_above_with_continuations() {
        let f = Filter::new(Some("warning"), None).unwrap_or_default();
        let mut carry = true;
        let kept = f.apply(LOG, &mut carry);
        assert_eq!(kept.len(), 3, "{kept:?}");
        assert!(kept[0].contains("WARN") && kept[1].contains("second line"));
        assert!(kept[2].contains("ERROR"));
    }

    #[test]
    fn session_filter_is_a_substring() {
        let f = Filter::new(None, Some("abc")).unwrap_or_default();
        let mut carry = true;
        assert_eq!(f.apply(LOG, &mut carry).len(), 1);
    }

    #[test]
    fn unknown_level_is_a_usage_error() {
        let err = Filter::new(Some("loud"), None).err().map(|e| e.to_string());
        assert!(err.unwrap_or_default().contains("unknown log level `loud`"));
    }
}
