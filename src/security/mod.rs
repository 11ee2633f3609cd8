//! Guards: dangerous-command approval, path resolution, protected paths, secret redaction, and
//! the one scanner for text that enters the prompt (`scan`).

pub mod approval;
pub mod paths;
pub mod protected;
pub mod redact;
pub mod redact_stream;
pub mod sandbox;
pub mod scan;
pub mod secret_files;
pub mod secrets;
pub mod shield;
