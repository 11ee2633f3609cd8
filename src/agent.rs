//! The conversation loop (being written).

pub mod budget;
pub mod events;

pub struct Agent;
