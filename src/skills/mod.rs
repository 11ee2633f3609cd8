//! Skills: the SKILL.md store, progressive disclosure, self-management and the guard.
//! (Being built; the prompt hook below is the agreed seam.)

use crate::config::Config;

/// The skills index for the frozen system prompt, or `None` when no skills tool is offered.
pub fn prompt_index(_config: &Config, _tool_names: &[String]) -> Option<String> {
    None
}
