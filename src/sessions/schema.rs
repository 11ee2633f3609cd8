//! state.db schema (being written).
