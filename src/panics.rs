//! The panic policy: a panic stays where it happened.
//!
//! The release profile unwinds (`panic = "unwind"` in Cargo.toml; with `abort` every boundary
//! below would be dead code and one bad tool call would take down every chat). Boundaries that
//! catch: one tool call (`ToolRegistry::dispatch` → an error result for that call), one chat's
//! turn in the gateway (→ an error reply in that chat), one API-server turn (→ an error
//! response). Everything else keeps running.
//!
//! The process-wide hook ([`install_hook`]) replaces Rust's default backtrace dump: the panic
//! goes to the log with its location and one line goes to stderr. A print to a stdout (or
//! stderr) that was closed — `hermes sessions list | head -1` — is not a bug: the reader has
//! what it wanted, so the process ends quietly with status 0.

use std::any::Any;
use std::future::Future;
use std::io::Write;
use std::panic::AssertUnwindSafe;

use futures::FutureExt;

/// The text of a panic payload (`panic!("...")` gives a `&str` or a `String`).
pub fn message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-text payload".to_string()
    }
}

/// Runs `fut`, turning a panic inside it into `Err(panic message)`.
///
/// `AssertUnwindSafe` is sound here because every caller throws away what the panicking future
/// was working on (the tool call's result, the chat's in-memory agent) instead of reusing it.
pub async fn catch<F: Future>(fut: F) -> Result<F::Output, String> {
    AssertUnwindSafe(fut)
        .catch_unwind()
        .await
        .map_err(|payload| message(payload.as_ref()))
}

/// True for the panic `print!`/`println!` raise when the other end of stdout or stderr is gone.
pub fn is_closed_output(message: &str) -> bool {
    (message.starts_with("failed printing to stdout")
        || message.starts_with("failed printing to stderr"))
        && (message.contains("Broken pipe") || message.contains("os error 32"))
}

/// True when `err` (or anything in its source chain) is an I/O error for a closed pipe.
pub fn is_broken_pipe(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(err);
    while let Some(e) = current {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::BrokenPipe
        {
            return true;
        }
        current = e.source();
    }
    false
}

/// Installs the process-wide panic hook (see the module docs). Call once, first thing in `main`.
pub fn install_hook() {
    std::panic::set_hook(Box::new(|info| {
        let text = info
            .payload_as_str()
            .map(str::to_string)
            .unwrap_or_else(|| message(info.payload()));
        if is_closed_output(&text) {
            // The reader closed the pipe: nothing left to show, and nothing went wrong.
            std::process::exit(0);
        }
        let location = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_else(|| "unknown location".to_string());
        let thread = std::thread::current()
            .name()
            .unwrap_or("unnamed thread")
            .to_string();
        tracing::error!(%thread, %location, panic = %text, "internal error (panic)");
        let _ = writeln!(
            std::io::stderr(),
            "hermes: internal error in {thread}: {text} (at {location}); the logs in $HERMES_HOME/logs have details"
        );
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panic_becomes_its_message() {
        let caught = catch(async { panic!("boom {}", 7) }).await;
        assert_eq!(caught, Err::<(), _>("boom 7".to_string()));
        let fine = catch(async { 5 }).await;
        assert_eq!(fine, Ok(5));
        let s: &'static str = "static";
        let caught = catch(async move { std::panic::panic_any(s) }).await;
        assert_eq!(caught, Err::<(), _>("static".to_string()));
    }

    #[test]
    fn closed_output_is_recognised() {
        assert!(is_closed_output(
            "failed printing to stdout: Broken pipe (os error 32)"
        ));
        assert!(!is_closed_output("failed printing to stdout: disk full"));
        assert!(!is_closed_output("Broken pipe"));
        let pipe = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        assert!(is_broken_pipe(&pipe));
        let other = std::io::Error::other("x");
        assert!(!is_broken_pipe(&other));
    }
}
