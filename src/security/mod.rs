//! Guards: dangerous-command approval, protected paths (the path policy itself is
//! `tools::file_path`), secret redaction, and
//! the one scanner for text that enters the prompt (`scan`).

pub mod approval;
pub mod protected;
pub mod redact;
mod redact_find;
mod redact_named;
pub mod redact_stream;
pub mod sandbox;
pub mod scan;
pub mod secret_files;
pub mod secrets;
pub mod shield;
