//! Path traversal guards (being written).
