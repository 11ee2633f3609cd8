//! Memory: the curated MEMORY.md / USER.md notes (`builtin`), their editing rules (`edit`), the
//! lock that serialises writers across processes (`lock`), the `memory:` config section
//! (`settings`), external providers and the per-turn manager (`provider`, `recall`, `manager`),
//! and what memory asks of the shared threat scanner (`scan`: refusals and blocked entries).

pub mod builtin;
pub mod edit;
/// The lock helper, shared with the credential pool and `.usage.json` (it lives in `util`).
pub use crate::util::file_lock as lock;
pub mod manager;
pub mod provider;
pub mod recall;
pub mod scan;
pub mod settings;

pub use builtin::{Applied, MemoryError, MemoryStore, Target, Usage};
pub use edit::MemoryOp;
pub use manager::MemoryManager;
pub use provider::MemoryProvider;
pub use settings::MemorySettings;

use crate::config::Config;

const GUIDANCE: &str = include_str!("../prompts/memory_guidance.md");

/// The frozen MEMORY and USER PROFILE blocks for the system prompt, or `None` when memory is off
/// or the memory tool is not offered. Read once when a session starts; later writes show in the
/// next session (the prompt prefix stays cacheable).
pub fn prompt_block(config: &Config, tool_names: &[String]) -> Option<String> {
    if !tool_names.iter().any(|t| t == "memory") {
        return None;
    }
    let store = MemoryStore::from_config(config);
    if store.settings().all_disabled() {
        return None;
    }
    let guidance = GUIDANCE.trim();
    Some(match store.prompt_block() {
        Some(blocks) => format!("{guidance}\n\n{blocks}"),
        None => guidance.to_string(),
    })
}
