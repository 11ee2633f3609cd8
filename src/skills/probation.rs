//! Probation for agent-made skills: a skill `skill_manage create` wrote is marked
//! `probation: true` in `.usage.json` and stays so until it has been used successfully
//! `skills.probation_uses` times (default 3; 0 = no probation). A successful use is a turn
//! that loaded the skill with `skill_view` and ended with an answer (not interrupted, not
//! failed); background reviews and children do not count.
//!
//! What probation changes: `skill_view` tells the model the skill is unproven (follow it, check
//! its steps, patch what is wrong) and `hermes skills list` shows it; nothing is hidden or
//! refused.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Mutex;

use crate::config::Config;
use crate::llm::ToolCall;
use crate::skills::usage;
use crate::tools::ToolOutput;
use crate::turn::{ReviewRequest, TurnExtension, TurnInfo};

/// `skills.probation_uses` when not set.
pub const DEFAULT_PROBATION_USES: u64 = 3;

/// `skills.probation_uses`: successful uses that end a new skill's probation (0 = none).
pub fn required_uses(config: &Config) -> u64 {
    config
        .file
        .skills
        .probation_uses
        .unwrap_or(DEFAULT_PROBATION_USES)
}

/// The extension registered in `cli::services()`: remembers which skills each session's turn
/// loaded, and counts them as used successfully when the turn ends with an answer.
pub struct Probation {
    skills_dir: PathBuf,
    required: u64,
    /// Skills loaded in the running turn, per session.
    loaded: Mutex<HashMap<String, BTreeSet<String>>>,
}

impl Probation {
    pub fn new(config: &Config) -> Self {
        Probation {
            skills_dir: config.home.skills_dir(),
            required: required_uses(config),
            loaded: Mutex::new(HashMap::new()),
        }
    }

    fn loaded(&self) -> std::sync::MutexGuard<'_, HashMap<String, BTreeSet<String>>> {
        self.loaded.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The skill a successful `skill_view` call loaded.
fn viewed_skill(call: &ToolCall, output: &ToolOutput) -> Option<String> {
    if call.name != "skill_view" || output.is_error {
        return None;
    }
    let result: serde_json::Value = serde_json::from_str(&output.content).ok()?;
    if result.get("success") != Some(&serde_json::Value::Bool(true)) {
        return None;
    }
    result.get("name")?.as_str().map(str::to_string)
}

#[async_trait::async_trait]
impl TurnExtension for Probation {
    fn name(&self) -> &'static str {
        "skills-probation"
    }

    /// A turn that was interrupted or failed never reached `after_turn`: what it loaded does
    /// not count for the next one.
    async fn before_turn(&self, info: &TurnInfo) -> Option<String> {
        self.loaded().remove(&info.session_id);
        None
    }

    fn after_iteration(&self, info: &TurnInfo, calls: &[ToolCall], outputs: &[ToolOutput]) {
        if info.ephemeral {
            return;
        }
        let names: Vec<String> = calls
            .iter()
            .zip(outputs)
            .filter_map(|(c, o)| viewed_skill(c, o))
            .collect();
        if !names.is_empty() {
            self.loaded()
                .entry(info.session_id.clone())
                .or_default()
                .extend(names);
        }
    }

    fn after_turn(&self, info: &TurnInfo, _answer: &str) -> Option<ReviewRequest> {
        let names = self.loaded().remove(&info.session_id)?;
        let dir = self.skills_dir.clone();
        let required = self.required;
        // A few small locked file writes: off the runtime, like the view counts.
        crate::util::offload::offload_detached("skill probation", move || {
            for name in names {
                match usage::mark_used_successfully(&dir, &name, required) {
                    Ok(true) => tracing::info!(skill = %name, "skill passed probation"),
                    Ok(false) => {}
                    Err(e) => {
                        tracing::debug!(skill = %name, error = %e, "cannot count a skill use")
                    }
                }
            }
        });
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_with_an_answer_counts_each_loaded_skill_once() {
        let home = tempfile::tempdir().unwrap();
        let mut cfg = Config::defaults(
            crate::config::HermesHome::new(home.path()),
            crate::config::EnvVars::default(),
        );
        cfg.file.skills.probation_uses = Some(2);
        let skills = cfg.home.skills_dir();
        usage::mark_created(&skills, "fresh", true).unwrap();
        let p = Probation::new(&cfg);
        let info = |ephemeral| TurnInfo {
            session_id: "s".into(),
            source: "cli".into(),
            system_prompt: String::new(),
            user_text: "hi".into(),
            ephemeral,
            reviews: crate::turn::Admission::new(1, 1),
        };
        let view = ToolCall {
            id: "1".into(),
            name: "skill_view".into(),
            arguments: r#"{"name":"fresh"}"#.into(),
        };
        let ok = ToolOutput {
            content: r#"{"success":true,"name":"fresh"}"#.into(),
            is_error: false,
            fatal: false,
        };
        let failed = ToolOutput {
            content: "no skill named `fresh`".into(),
            is_error: true,
            fatal: false,
        };
        // Viewed twice in one turn: one use.
        p.after_iteration(
            &info(false),
            &[view.clone(), view.clone()],
            &[ok.clone(), ok.clone()],
        );
        assert!(p.after_turn(&info(false), "done").is_none());
        let r = usage::record(&skills, "fresh").unwrap();
        assert_eq!(r.successful_uses, 1);
        assert!(r.on_probation(2));
        // A failed view, or a background review's view, does not count.
        p.after_iteration(&info(false), std::slice::from_ref(&view), &[failed]);
        p.after_iteration(
            &info(true),
            std::slice::from_ref(&view),
            std::slice::from_ref(&ok),
        );
        p.after_turn(&info(false), "done");
        assert_eq!(usage::record(&skills, "fresh").unwrap().successful_uses, 1);
        // The second successful turn ends probation.
        p.after_iteration(
            &info(false),
            std::slice::from_ref(&view),
            std::slice::from_ref(&ok),
        );
        p.after_turn(&info(false), "done");
        let r = usage::record(&skills, "fresh").unwrap();
        assert!(!r.probation && !r.on_probation(2));
    }
}
