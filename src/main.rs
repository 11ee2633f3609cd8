//! The `hermes` binary: parse arguments, run, map errors to stderr and an exit code.

use std::process::ExitCode;

fn main() -> ExitCode {
    // A panic stays where it happened (tool call, chat turn); a closed stdout ends quietly.
    hermes::panics::install_hook();
    // `--version` must stay instant: clap answers it before anything else is set up.
    let cli = hermes::cli::not_yet::parse();
    let _ = rustls::crypto::ring::default_provider().install_default();
    match hermes::cli::run(cli) {
        Ok(code) => ExitCode::from(code),
        // The reader of our output went away (`hermes sessions list | head -1`): not an error.
        Err(e) if hermes::panics::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hermes: error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
