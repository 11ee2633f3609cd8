//! Guards: dangerous-command approval, path traversal checks, secret redaction.

pub mod approval;
pub mod paths;
pub mod redact;
pub mod sandbox;
