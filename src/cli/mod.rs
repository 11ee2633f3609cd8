//! Terminal front end (being written).
