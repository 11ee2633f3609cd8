//! Session modes (`session/set_mode`): how much an editor session does without asking. The ids
//! and the first three meanings are Python Hermes's ACP modes, so an editor that remembers a
//! mode id keeps it across the two programs:
//!
//! | mode | file edits | dangerous commands |
//! |---|---|---|
//! | `default` | asked | asked |
//! | `accept_edits` | in the workspace (the session's cwd) and the temp dir: go ahead; elsewhere asked | asked |
//! | `dont_ask` | go ahead | asked |
//! | `yolo` | go ahead | go ahead (as `--yolo`) |
//!
//! No mode reaches past the boundary: protected paths and secret files are refused by the file
//! tools' path policy before any edit question, and the hardline floor and the user's deny rules
//! refuse a command in every mode, `yolo` included (`security::approval`). A session starts in
//! `default`, or `yolo` when `hermes acp` runs with `--yolo`. A mode the editor sets is stored
//! with the session (`KEY` in state.db's `sessions.model_config`), so `session/load` or
//! `session/resume`, from a later connection too, opens the session in it again.

use std::path::Path;

use agent_client_protocol::v1::schema::{SessionMode, SessionModeState};

use crate::security::approval::{ApprovalGate, EditScope};

pub const DEFAULT: &str = "default";
pub const ACCEPT_EDITS: &str = "accept_edits";
pub const DONT_ASK: &str = "dont_ask";
pub const YOLO: &str = "yolo";

/// The `sessions.model_config` key a session's mode is stored under.
pub const KEY: &str = "acp_mode";

/// Every mode: id, name, description (what the editor shows).
const MODES: [(&str, &str, &str); 4] = [
    (
        DEFAULT,
        "Default",
        "Ask before file edits and dangerous commands.",
    ),
    (
        ACCEPT_EDITS,
        "Accept Edits",
        "Edit files in the workspace and the temp dir without asking; ask for other edits and for dangerous commands.",
    ),
    (
        DONT_ASK,
        "Don't Ask",
        "Edit files without asking (protected paths stay refused); ask for dangerous commands.",
    ),
    (
        YOLO,
        "YOLO",
        "Edit and run commands without asking, except what is always refused (the hardline floor, your deny rules, protected paths).",
    ),
];

/// The modes the editor can pick, with `current` selected.
pub fn state(current: &str) -> SessionModeState {
    let modes = MODES
        .iter()
        .map(|(id, name, description)| {
            SessionMode::new(*id, *name).description(description.to_string())
        })
        .collect();
    SessionModeState::new(current.to_string(), modes)
}

/// The mode a session starts in.
pub fn initial(yolo: bool) -> &'static str {
    if yolo { YOLO } else { DEFAULT }
}

/// The known mode `id` (its static name), or a readable error listing the modes.
pub fn known(id: &str) -> Result<&'static str, String> {
    MODES
        .iter()
        .map(|(m, ..)| *m)
        .find(|m| *m == id)
        .ok_or_else(|| {
            let ids: Vec<&str> = MODES.iter().map(|(m, ..)| *m).collect();
            format!("unknown mode `{id}`: hermes offers {}", ids.join(", "))
        })
}

/// Puts the session's approval gate in `mode` (one of [`known`]'s); `cwd` is its workspace.
pub fn apply(mode: &str, gate: &ApprovalGate, cwd: &Path) {
    let (scope, yolo) = match mode {
        ACCEPT_EDITS => (EditScope::under(&[cwd, &std::env::temp_dir()]), false),
        DONT_ASK => (EditScope::Any, false),
        YOLO => (EditScope::Any, true),
        _ => (EditScope::Ask, false),
    };
    gate.set_edit_scope(scope);
    gate.set_yolo(yolo);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_are_listed_and_unknown_ones_named() {
        let s = state(ACCEPT_EDITS);
        assert_eq!(&*s.current_mode_id.0, ACCEPT_EDITS);
        assert_eq!(s.available_modes.len(), 4);
        assert_eq!(known("dont_ask"), Ok(DONT_ASK));
        let err = known("bypass").unwrap_err();
        assert!(
            err.contains("default, accept_edits, dont_ask, yolo"),
            "{err}"
        );
        assert_eq!(initial(true), YOLO);
    }
}
