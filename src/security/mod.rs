//! Guards: dangerous-command approval, path resolution, protected paths, secret redaction.

pub mod approval;
pub mod paths;
pub mod protected;
pub mod redact;
pub mod sandbox;
pub mod secrets;
pub mod shield;
