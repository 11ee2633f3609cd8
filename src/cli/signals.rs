//! The signals that stop hermes (SIGINT, SIGTERM, SIGHUP): front ends turn them into a
//! cancelled turn, so a running command is killed with its process group and recorded as
//! interrupted instead of being left running.

use tokio::signal::unix::{SignalKind, signal};

/// Waits for SIGINT, SIGTERM or SIGHUP and returns its number. If the handlers cannot be
/// installed, waits for Ctrl-C only.
pub async fn stop_signal() -> i32 {
    let (Ok(mut term), Ok(mut hup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        let _ = tokio::signal::ctrl_c().await;
        return libc::SIGINT;
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => libc::SIGINT,
        _ = term.recv() => libc::SIGTERM,
        _ = hup.recv() => libc::SIGHUP,
    }
}

/// Waits for SIGTERM or SIGHUP (the REPL leaves SIGINT to the line editor and the turn).
pub async fn terminate_signal() -> i32 {
    let (Ok(mut term), Ok(mut hup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => libc::SIGTERM,
        _ = hup.recv() => libc::SIGHUP,
    }
}

/// The exit code a shell reports for a process stopped by `signal`.
pub fn exit_code(signal: i32) -> u8 {
    u8::try_from(128 + signal).unwrap_or(super::exit::FAILURE)
}
