//! DM pairing (reference §12.3): the rules, codes and outcomes. Storage is in state.db
//! (`SessionStore::pairing_*`); the runner offers a code to unknown users in a DM and
//! `hermes pairing approve PLATFORM CODE` lets them in.

pub const CODE_ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
pub const CODE_TTL_SECS: f64 = 3600.0;
pub const MAX_PENDING: i64 = 3;
pub const REQUEST_INTERVAL_SECS: f64 = 600.0;
pub const MAX_FAILURES: i64 = 5;
pub const LOCKOUT_SECS: f64 = 3600.0;

/// What a pairing request produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PairingRequest {
    /// A fresh code for the user.
    New(String),
    /// The user asked less than 10 minutes ago: nothing new is issued.
    TooSoon,
    /// Three codes are already waiting on this platform.
    TooMany,
}

/// What approving a code did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PairingApproval {
    /// The user (id, name) is now allowed.
    Approved(String, Option<String>),
    /// No such pending code (counted as a failure).
    Unknown,
    /// Too many wrong codes: approving is locked for a while.
    Locked,
}

/// A code waiting for approval: (code, user id, user name, created_at).
pub type PendingCode = (String, String, Option<String>, f64);

/// A random 8-character pairing code.
pub fn new_code() -> String {
    (0..8)
        .map(|_| CODE_ALPHABET[rand::random_range(0..CODE_ALPHABET.len())] as char)
        .collect()
}
