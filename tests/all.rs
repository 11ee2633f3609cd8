//! The one integration-test binary: drives the real `hermes` binary and the public library API
//! against the scripted mock LLM in `support/`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
mod support;
