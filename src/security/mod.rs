//! Guards: dangerous-command approval, path traversal checks, secret redaction, and the one
//! scanner for text that enters the prompt (`scan`).

pub mod approval;
pub mod paths;
pub mod redact;
pub mod scan;
