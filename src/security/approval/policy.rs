//! One policy for every run mode: [`decide`] turns (run mode, configuration, classification)
//! into allow / ask the model / ask a human / refuse with a reason. Front ends never decide;
//! they only answer the questions the gate asks through their `ApprovalPrompt`.
//!
//! | run mode | dangerous or cannot-verify command |
//! |---|---|
//! | `Repl` (hermes chat) | ask the user on stdin |
//! | `OneShot` (`-z`, `chat -q`) | refuse unless `--yolo` |
//! | `Gateway` (a chat platform) | ask in the chat: `/approve` or `/deny`, no answer = deny |
//! | `ApiServer` | refuse unless `api_server.approvals: allow` |
//! | `Cron` | refuse unless `approvals.cron_mode: approve` (default `deny`) |
//! | `Child` (a delegated or background agent) | refuse unless `delegation.subagent_auto_approve: true` |
//! | `Acp` (an editor) | ask through the editor's permission request (the prompt callback) |
//!
//! Before any of that: the hardline floor and the user's deny rules refuse in every mode, even
//! under `--yolo` or `approvals.mode: off`; then yolo / `off` allow; then approvals the user
//! already gave (session, `command_allowlist`) allow; then `approvals.mode: smart` asks the
//! auxiliary model first (APPROVE runs, DENY refuses, ESCALATE or any failure falls through to the
//! human question above, or to refusal where no one can be asked).
//!
//! For the children engineer: a child agent gets `RunMode::Child` when its `AgentOptions.source`
//! is `"subagent"` (see [`RunMode::infer`]), or explicitly through `ApprovalGate::set_run_mode`.

use serde_json::Value;

use crate::config::{ApprovalMode, Config};

use super::patterns::Classification;

/// Where a command comes from: decides who, if anyone, can be asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunMode {
    Repl,
    OneShot,
    Gateway,
    ApiServer,
    Cron,
    Child,
    Acp,
}

impl RunMode {
    /// The run mode of an agent from its session source and whether someone can answer:
    /// `cli` + interactive = REPL, `cli` alone = one-shot, `api_server`, `cron`, `subagent` /
    /// `review` / `delegate` = child, `acp`, and any other interactive source is a chat platform.
    pub fn infer(source: &str, interactive: bool) -> Self {
        match (source, interactive) {
            ("api_server" | "api-server" | "api", _) => RunMode::ApiServer,
            ("cron", _) => RunMode::Cron,
            ("subagent" | "child" | "review" | "delegate" | "background", _) => RunMode::Child,
            ("acp", _) => RunMode::Acp,
            ("cli", true) => RunMode::Repl,
            ("cli", false) => RunMode::OneShot,
            (_, true) => RunMode::Gateway,
            (_, false) => RunMode::OneShot,
        }
    }

    /// True where a person can answer an approval question.
    pub fn can_ask(self) -> bool {
        matches!(self, RunMode::Repl | RunMode::Gateway | RunMode::Acp)
    }
}

/// The configuration the policy reads (Python Hermes key names where they exist).
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// `approvals.mode`.
    pub mode: ApprovalMode,
    /// `approvals.cron_mode: approve` (default `deny`).
    pub cron_allows: bool,
    /// `api_server.approvals: allow` (also read under `platforms.api_server`; default deny).
    pub api_server_allows: bool,
    /// `delegation.subagent_auto_approve: true` (default false).
    pub child_allows: bool,
}

fn word(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.trim().to_lowercase()),
        Value::Bool(b) => Some(if *b { "true" } else { "false" }.to_string()),
        _ => None,
    }
}

impl Policy {
    /// From a loaded config. Unknown values fall back to the safe side (deny).
    pub fn from_config(config: &Config) -> Self {
        let f = &config.file;
        let allows = |v: Option<String>| {
            v.is_some_and(|s| matches!(s.as_str(), "allow" | "approve" | "true" | "yes" | "on"))
        };
        let cron_mode = f.approvals.cron_mode.as_deref().map(str::to_lowercase);
        if let Some(m) = &cron_mode
            && !matches!(m.as_str(), "deny" | "approve" | "allow")
        {
            tracing::warn!(value = %m, "approvals.cron_mode is neither deny nor approve; using deny");
        }
        let api = word(f.api_server.approvals.as_ref()).or_else(|| {
            word(
                f.platforms
                    .get("api_server")
                    .and_then(|p| p.approvals.as_ref()),
            )
        });
        Policy {
            mode: config.approvals.mode,
            cron_allows: allows(cron_mode),
            api_server_allows: allows(api),
            child_allows: f.delegation.subagent_auto_approve.unwrap_or(false),
        }
    }
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            mode: ApprovalMode::Manual,
            cron_allows: false,
            api_server_allows: false,
            child_allows: false,
        }
    }
}

/// The auxiliary model's answer in smart mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Review {
    Approve,
    Deny,
    /// Also every error, timeout and unclear answer.
    Escalate,
}

/// Why a command is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// On the hardline floor (description).
    Floor(&'static str),
    /// Matches the user's deny rule.
    DenyRule(String),
    /// The smart reviewer said DENY.
    SmartDeny,
    /// Nobody can be asked in this run mode.
    NoOneToAsk(RunMode),
}

/// What the gate does with a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// Ask the auxiliary model, then call [`decide`] again with its review.
    AskModel,
    /// Ask a person through the front end's prompt.
    AskHuman,
    Refuse(Refusal),
}

/// Everything [`decide`] looks at.
#[derive(Debug, Clone)]
pub struct Facts<'a> {
    pub run: RunMode,
    pub policy: &'a Policy,
    pub yolo: bool,
    pub classification: &'a Classification,
    /// The user's deny rule the command matches, if any.
    pub deny_rule: Option<&'a str>,
    /// Every finding is already approved (session answer or `command_allowlist`).
    pub pre_approved: bool,
    /// The smart reviewer's answer, once asked.
    pub review: Option<Review>,
}

/// THE decision (see the module header for the table and the order).
pub fn decide(f: &Facts<'_>) -> Decision {
    if let Classification::Floor(findings) = f.classification {
        let what = findings.first().map_or("hardline floor", |x| x.description);
        return Decision::Refuse(Refusal::Floor(what));
    }
    if let Some(rule) = f.deny_rule {
        return Decision::Refuse(Refusal::DenyRule(rule.to_string()));
    }
    if *f.classification == Classification::Safe
        || f.yolo
        || f.policy.mode == ApprovalMode::Off
        || f.pre_approved
    {
        return Decision::Allow;
    }
    let blanket = match f.run {
        RunMode::Cron => f.policy.cron_allows,
        RunMode::ApiServer => f.policy.api_server_allows,
        RunMode::Child => f.policy.child_allows,
        _ => false,
    };
    if blanket {
        return Decision::Allow;
    }
    match (f.policy.mode, f.review) {
        (ApprovalMode::Smart, None) => return Decision::AskModel,
        (_, Some(Review::Approve)) => return Decision::Allow,
        (_, Some(Review::Deny)) => return Decision::Refuse(Refusal::SmartDeny),
        _ => {}
    }
    if f.run.can_ask() {
        Decision::AskHuman
    } else {
        Decision::Refuse(Refusal::NoOneToAsk(f.run))
    }
}

/// What the user can change so that `run` allows such commands (for refusal messages).
pub fn how_to_allow(run: RunMode, keys: &str) -> String {
    match run {
        RunMode::ApiServer => format!(
            "The user can allow them for the API server with `api_server.approvals: allow` in \
             config.yaml, or add {keys} to command_allowlist."
        ),
        RunMode::Cron => format!(
            "The user can allow them for cron jobs with `approvals.cron_mode: approve` in \
             config.yaml, or add {keys} to command_allowlist."
        ),
        RunMode::Child => format!(
            "The user can allow them for child agents with `delegation.subagent_auto_approve: \
             true` in config.yaml, or add {keys} to command_allowlist."
        ),
        _ => format!(
            "The user can allow dangerous commands by running hermes with --yolo, or by adding \
             {keys} to command_allowlist in config.yaml."
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::approval::{Classification, Finding, Kind};

    fn danger() -> Classification {
        Classification::Dangerous(vec![Finding {
            key: "recursive_delete",
            description: "recursive delete",
            kind: Kind::Dangerous,
        }])
    }
    fn opaque() -> Classification {
        Classification::CannotVerify(vec![Finding {
            key: "dynamic_command_word",
            description: "generated",
            kind: Kind::CannotVerify,
        }])
    }
    fn floor() -> Classification {
        Classification::Floor(vec![Finding {
            key: "fork_bomb",
            description: "fork bomb",
            kind: Kind::Floor,
        }])
    }

    fn facts<'a>(run: RunMode, policy: &'a Policy, c: &'a Classification) -> Facts<'a> {
        Facts {
            run,
            policy,
            yolo: false,
            classification: c,
            deny_rule: None,
            pre_approved: false,
            review: None,
        }
    }

    const ALL: [RunMode; 7] = [
        RunMode::Repl,
        RunMode::OneShot,
        RunMode::Gateway,
        RunMode::ApiServer,
        RunMode::Cron,
        RunMode::Child,
        RunMode::Acp,
    ];

    #[test]
    fn every_mode_has_one_answer_for_dangerous_and_unverifiable() {
        let p = Policy::default();
        for c in [danger(), opaque()] {
            for run in ALL {
                let d = decide(&facts(run, &p, &c));
                let expected = if run.can_ask() {
                    Decision::AskHuman
                } else {
                    Decision::Refuse(Refusal::NoOneToAsk(run))
                };
                assert_eq!(d, expected, "{run:?} {c:?}");
            }
        }
    }

    #[test]
    fn floor_and_deny_rules_refuse_in_every_mode_under_every_bypass() {
        let p = Policy {
            mode: ApprovalMode::Off,
            cron_allows: true,
            api_server_allows: true,
            child_allows: true,
        };
        let (fl, d) = (floor(), danger());
        for run in ALL {
            let mut f = facts(run, &p, &fl);
            f.yolo = true;
            f.pre_approved = true;
            f.review = Some(Review::Approve);
            assert!(matches!(decide(&f), Decision::Refuse(Refusal::Floor(_))));
            let mut f = facts(run, &p, &d);
            f.yolo = true;
            f.deny_rule = Some("git push");
            assert!(matches!(decide(&f), Decision::Refuse(Refusal::DenyRule(_))));
        }
    }

    #[test]
    fn per_mode_switches() {
        let d = danger();
        let cron = Policy {
            cron_allows: true,
            ..Policy::default()
        };
        assert_eq!(decide(&facts(RunMode::Cron, &cron, &d)), Decision::Allow);
        assert!(matches!(
            decide(&facts(RunMode::OneShot, &cron, &d)),
            Decision::Refuse(_)
        ));
        let api = Policy {
            api_server_allows: true,
            ..Policy::default()
        };
        assert_eq!(
            decide(&facts(RunMode::ApiServer, &api, &d)),
            Decision::Allow
        );
        assert!(matches!(
            decide(&facts(RunMode::Child, &api, &d)),
            Decision::Refuse(Refusal::NoOneToAsk(RunMode::Child))
        ));
        let child = Policy {
            child_allows: true,
            ..Policy::default()
        };
        assert_eq!(decide(&facts(RunMode::Child, &child, &d)), Decision::Allow);
        let default = Policy::default();
        let mut f = facts(RunMode::OneShot, &default, &d);
        f.yolo = true;
        assert_eq!(decide(&f), Decision::Allow);
    }

    #[test]
    fn smart_mode_asks_the_model_then_falls_back() {
        let p = Policy {
            mode: ApprovalMode::Smart,
            ..Policy::default()
        };
        let c = opaque();
        for run in ALL {
            let mut f = facts(run, &p, &c);
            assert_eq!(decide(&f), Decision::AskModel);
            f.review = Some(Review::Approve);
            assert_eq!(decide(&f), Decision::Allow);
            f.review = Some(Review::Deny);
            assert_eq!(decide(&f), Decision::Refuse(Refusal::SmartDeny));
            f.review = Some(Review::Escalate);
            let expected = if run.can_ask() {
                Decision::AskHuman
            } else {
                Decision::Refuse(Refusal::NoOneToAsk(run))
            };
            assert_eq!(decide(&f), expected);
        }
        // Safe commands never reach the model.
        assert_eq!(
            decide(&facts(RunMode::Repl, &p, &Classification::Safe)),
            Decision::Allow
        );
    }

    #[test]
    fn run_modes_from_sources() {
        assert_eq!(RunMode::infer("cli", true), RunMode::Repl);
        assert_eq!(RunMode::infer("cli", false), RunMode::OneShot);
        assert_eq!(RunMode::infer("telegram", true), RunMode::Gateway);
        assert_eq!(RunMode::infer("api_server", false), RunMode::ApiServer);
        assert_eq!(RunMode::infer("cron", false), RunMode::Cron);
        assert_eq!(RunMode::infer("subagent", false), RunMode::Child);
        assert_eq!(RunMode::infer("subagent", true), RunMode::Child);
        assert_eq!(RunMode::infer("acp", true), RunMode::Acp);
    }

    #[test]
    fn config_keys() {
        use crate::config::{EnvVars, HermesHome};
        let home = tempfile::tempdir().unwrap();
        let load = |yaml: &str| {
            Config::from_yaml(
                HermesHome::new(home.path()),
                EnvVars::default(),
                yaml,
                &home.path().join("config.yaml"),
            )
            .unwrap()
        };
        assert_eq!(Policy::from_config(&load("")), Policy::default());
        let c = load(
            "approvals:\n  cron_mode: approve\napi_server:\n  approvals: allow\ndelegation:\n  subagent_auto_approve: true\n",
        );
        let p = Policy::from_config(&c);
        assert!(p.cron_allows && p.api_server_allows && p.child_allows);
        let c = load("approvals:\n  cron_mode: sometimes\n");
        assert!(!Policy::from_config(&c).cron_allows);
    }
}
