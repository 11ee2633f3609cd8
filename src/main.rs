//! The `hermes` binary: parse arguments, run, map errors to stderr and an exit code.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // `--version` must stay instant: clap answers it before anything else is set up.
    let cli = hermes::cli::Cli::parse();
    let _ = rustls::crypto::ring::default_provider().install_default();
    match hermes::cli::run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("hermes: error: {e}");
            ExitCode::from(hermes::cli::exit::FAILURE)
        }
    }
}
