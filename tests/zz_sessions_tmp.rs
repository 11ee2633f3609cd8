#![allow(clippy::unwrap_used, clippy::expect_used)]
#[path = "suite/sessions_compat.rs"]
mod sessions_compat;
