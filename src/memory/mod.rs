//! Memory: MEMORY.md / USER.md, the memory tool, external providers.
//! (Being built; the prompt hook below is the agreed seam.)

use crate::config::Config;

/// The frozen MEMORY and USER PROFILE blocks for the system prompt, or `None` when memory is off
/// or the memory tool is not offered.
pub fn prompt_block(_config: &Config, _tool_names: &[String]) -> Option<String> {
    None
}
